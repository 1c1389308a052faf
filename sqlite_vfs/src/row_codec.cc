// Row and key encoding: the tagged serialization of the non-key columns,
// and the key encoding with SQLite-like affinity for writes, the exact
// bounds of INTEGER keys and the conservative bounds of TEXT keys used for
// searches.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "forein_vtab.h"

namespace forein::sqlite {

// ------------------------------------------------------------ row values

// Non-key columns, each as a tag byte then its payload:
//   0 NULL; 1 integer (8 bytes LE); 2 real (8 bytes); 3 text, 4 blob
//   (4-byte LE length, bytes).
void encode_value(std::string& out, sqlite3_value* v) {
  char buf[9];
  switch (sqlite3_value_type(v)) {
    case SQLITE_NULL:
      out += '\0';
      break;
    case SQLITE_INTEGER: {
      buf[0] = '\1';
      const auto i = static_cast<std::uint64_t>(sqlite3_value_int64(v));
      for (int b = 0; b < 8; ++b) buf[1 + b] = static_cast<char>(i >> (8 * b));
      out.append(buf, 9);
      break;
    }
    case SQLITE_FLOAT: {
      buf[0] = '\2';
      const double d = sqlite3_value_double(v);
      std::memcpy(buf + 1, &d, 8);
      out.append(buf, 9);
      break;
    }
    default: {
      const bool text = sqlite3_value_type(v) == SQLITE_TEXT;
      // Text: sqlite3_value_bytes() first, which leaves the value in UTF-8
      // (converting a UTF-16 one), then its bytes through
      // sqlite3_value_blob() (TEXT to BLOB is "no change" in SQLite's
      // conversion table): sqlite3_value_text() would copy a value bound
      // with an explicit length just to add a terminator we do not need.
      const auto n = static_cast<std::uint32_t>(sqlite3_value_bytes(v));
      const void* p = sqlite3_value_blob(v);
      buf[0] = text ? '\3' : '\4';
      for (int b = 0; b < 4; ++b) buf[1 + b] = static_cast<char>(n >> (8 * b));
      out.append(buf, 5);
      if (n > 0) out.append(static_cast<const char*>(p), n);
      break;
    }
  }
}

namespace {

// A little-endian integer of the row format (one load, not a byte loop:
// xColumn runs per row and column).
template <typename T>
T load_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) {
    if constexpr (sizeof v == 8) v = __builtin_bswap64(v);
    if constexpr (sizeof v == 4) v = __builtin_bswap32(v);
  }
  return v;
}

}  // namespace

// Offsets of each column's tag inside an encoded row.
void column_offsets(std::string_view row, std::vector<std::size_t>* offs) {
  offs->clear();
  std::size_t i = 0;
  while (i < row.size()) {
    offs->push_back(i);
    const char tag = row[i++];
    if (tag == 1 || tag == 2) {
      i += 8;
    } else if (tag == 3 || tag == 4) {
      if (i + 4 > row.size()) break;  // a cut row: no length to read
      i += 4 + load_le<std::uint32_t>(row.data() + i);
    }
  }
}

void result_value(sqlite3_context* ctx, std::string_view row, std::size_t off) {
  // A cut row (only a damaged page has one) gives NULL, or the bytes it
  // holds, never bytes past its end.
  const char tag = off < row.size() ? row[off] : 0;
  const std::size_t rest = off < row.size() ? row.size() - off - 1 : 0;
  const char* p = row.data() + off + 1;
  if (rest < ((tag == 1 || tag == 2) ? 8 : 4)) {
    sqlite3_result_null(ctx);
    return;
  }
  switch (tag) {
    case 1: {
      sqlite3_result_int64(ctx, static_cast<sqlite3_int64>(load_le<std::uint64_t>(p)));
      return;
    }
    case 2: {
      double d;
      std::memcpy(&d, p, 8);
      sqlite3_result_double(ctx, d);
      return;
    }
    case 3:
    case 4: {
      const auto n = std::min<std::size_t>(load_le<std::uint32_t>(p), rest - 4);
      if (tag == 3) {
        sqlite3_result_text(ctx, p + 4, static_cast<int>(n), SQLITE_TRANSIENT);
      } else {
        sqlite3_result_blob(ctx, p + 4, static_cast<int>(n), SQLITE_TRANSIENT);
      }
      return;
    }
    default:
      sqlite3_result_null(ctx);
  }
}

// ------------------------------------------------------------ keys

// The encoded key for a value written to the table, or an error.
std::string key_for_write(Table* t, sqlite3_value* v) {
  const int type = sqlite3_value_type(v);
  if (type == SQLITE_NULL) {
    throw SqlError{SQLITE_CONSTRAINT_NOTNULL, "NOT NULL constraint failed: " + t->name + "." + t->columns[0]};
  }
  if (t->key_type == KeyType::kInteger) {
    int nt = type;
    if (nt == SQLITE_TEXT) nt = sqlite3_value_numeric_type(v);  // '42' -> 42 (INTEGER affinity)
    if (nt == SQLITE_INTEGER) return encode_int64(sqlite3_value_int64(v));
    if (nt == SQLITE_FLOAT) {
      const double d = sqlite3_value_double(v);
      if (d >= -9.2233720368547758e18 && d < 9.2233720368547758e18 &&
          static_cast<double>(static_cast<std::int64_t>(d)) == d) {
        return encode_int64(static_cast<std::int64_t>(d));
      }
    }
    throw SqlError{SQLITE_MISMATCH, "forein: " + t->name + "." + t->columns[0] +
                                        " is an INTEGER key; value is not an integer"};
  }
  if (type == SQLITE_BLOB) {
    throw SqlError{SQLITE_MISMATCH,
                   "forein: " + t->name + "." + t->columns[0] + " is a TEXT key; value is a BLOB"};
  }
  // TEXT affinity: numbers become their text.
  const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(v));
  std::string k(p ? p : "", static_cast<std::size_t>(sqlite3_value_bytes(v)));
  if (k.size() > t->max_key()) {
    throw SqlError{SQLITE_TOOBIG, "forein: key of " + std::to_string(k.size()) +
                                      " bytes is longer than the limit of " +
                                      std::to_string(t->max_key())};
  }
  return k;
}

namespace {

constexpr double kTwoTo63 = 9.2233720368547758e18;  // 2^63, exactly

// A value in [-2^63, 2^63) that is a whole number.
bool is_int64_valued(double d) {
  return d >= -kTwoTo63 && d < kTwoTo63 && static_cast<double>(static_cast<std::int64_t>(d)) == d;
}

}  // namespace

// Exact, because SQLite does not re-check constraints it was told are
// handled (best_index.cc sets omit for INTEGER keys): the key column's
// INTEGER affinity gives the value numeric affinity ('7' is 7, 'x' stays
// text), an integer compares with a real exactly, every number sorts
// before any text or blob, and a comparison with NULL is never true.
IntBound int_key_bound(sqlite3_value* v, int op) {
  const bool lower = op == SQLITE_INDEX_CONSTRAINT_GT || op == SQLITE_INDEX_CONSTRAINT_GE;
  const bool upper = op == SQLITE_INDEX_CONSTRAINT_LT || op == SQLITE_INDEX_CONSTRAINT_LE;
  const bool inclusive = op == SQLITE_INDEX_CONSTRAINT_GE || op == SQLITE_INDEX_CONSTRAINT_LE;
  int type = sqlite3_value_type(v);
  std::int64_t i = 0;
  double d = 0;
  if (type == SQLITE_TEXT) {
    // Apply the affinity to a copy: the argument may be read again.
    sqlite3_value* copy = sqlite3_value_dup(v);
    if (copy == nullptr) throw std::bad_alloc();
    type = sqlite3_value_numeric_type(copy);
    i = sqlite3_value_int64(copy);
    d = sqlite3_value_double(copy);
    sqlite3_value_free(copy);
  } else {
    i = sqlite3_value_int64(v);
    d = sqlite3_value_double(v);
  }
  switch (type) {
    case SQLITE_NULL:
      return {IntBound::kEmpty};
    case SQLITE_INTEGER:
      return {IntBound::kKey, i, inclusive || !(lower || upper)};
    case SQLITE_FLOAT:
      if (std::isnan(d)) return {IntBound::kEmpty};
      if (is_int64_valued(d)) return {IntBound::kKey, static_cast<std::int64_t>(d), inclusive || !(lower || upper)};
      if (!lower && !upper) return {IntBound::kEmpty};  // = 4.5: no integer
      // Above every int64: nothing is greater, everything is less.
      if (d >= kTwoTo63) return {lower ? IntBound::kEmpty : IntBound::kNone};
      if (d < -kTwoTo63) return {lower ? IntBound::kNone : IntBound::kEmpty};
      // k > 4.5 and k >= 4.5 are k >= 5; k < 4.5 and k <= 4.5 are k <= 4.
      return {IntBound::kKey, static_cast<std::int64_t>(lower ? std::ceil(d) : std::floor(d)), true};
    default:  // text that is not a number, or a blob: above every integer
      return {upper ? IntBound::kNone : IntBound::kEmpty};
  }
}

// A search bound for a constraint value: the key itself, or, when the value
// does not map exactly, a conservative replacement. Returns nullopt when
// the side must be left open (SQLite re-checks every row anyway).
// `empty` is set when no row can match (NULL comparisons).
std::optional<std::string> key_for_search(Table* t, sqlite3_value* v, bool lower_side,
                                          bool* empty, bool* exact) {
  *exact = false;
  const int type = sqlite3_value_type(v);
  if (type == SQLITE_NULL) {
    *empty = true;
    return std::nullopt;
  }
  if (t->key_type == KeyType::kInteger) {
    if (type == SQLITE_INTEGER) {
      *exact = true;
      return encode_int64(sqlite3_value_int64(v));
    }
    if (type == SQLITE_FLOAT) {
      const double d = sqlite3_value_double(v);
      if (std::isnan(d)) return std::nullopt;
      const double r = lower_side ? std::floor(d) : std::ceil(d);
      if (r < -9.2233720368547758e18 || r >= 9.2233720368547758e18) return std::nullopt;
      *exact = static_cast<double>(static_cast<std::int64_t>(r)) == d;
      return encode_int64(static_cast<std::int64_t>(r));
    }
    return std::nullopt;  // text/blob: leave the side open
  }
  if (type == SQLITE_TEXT) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(v));
    *exact = true;
    return std::string(p ? p : "", static_cast<std::size_t>(sqlite3_value_bytes(v)));
  }
  return std::nullopt;
}

}  // namespace forein::sqlite
