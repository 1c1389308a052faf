// Row and key encoding: the tagged serialization of the non-key columns,
// and the key encoding with SQLite-like affinity for writes and the
// conservative bounds used for searches.
#include <cmath>
#include <cstdint>
#include <cstring>
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
      std::uint32_t n = 0;
      for (int b = 3; b >= 0; --b) n = (n << 8) | static_cast<unsigned char>(row[i + b]);
      i += 4 + n;
    }
  }
}

void result_value(sqlite3_context* ctx, std::string_view row, std::size_t off) {
  const char tag = row[off];
  const char* p = row.data() + off + 1;
  switch (tag) {
    case 1: {
      std::uint64_t i = 0;
      for (int b = 7; b >= 0; --b) i = (i << 8) | static_cast<unsigned char>(p[b]);
      sqlite3_result_int64(ctx, static_cast<sqlite3_int64>(i));
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
      std::uint32_t n = 0;
      for (int b = 3; b >= 0; --b) n = (n << 8) | static_cast<unsigned char>(p[b]);
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
