// The cursor: xOpen/xFilter/xNext/xEof/xColumn/xRowid/xClose. A filter is
// either a list of point lookups (= and IN) or one tree scan (ranges, or
// everything), in key order or reversed.
//
// A prepared point lookup runs xOpen, xFilter, xColumn..., xNext, xClose
// per execution, so this path avoids allocations: closed cursors are kept
// by the table and reused with their buffers, a looked-up value is copied
// into a string that keeps its capacity, a scanned row is not copied at
// all, and a row's column offsets are decoded once, on the first xColumn
// that needs them.
//
// Scans run in place (ScanSpec::in_place): the tree cursor hands out a
// run of a leaf's slots at once (Cursor::next_run), copying nothing, and
// xNext only moves to the next slot while xColumn reads the key and value
// straight from it (an INTEGER key from its word); neither calls into the
// engine. SQLite may read a cursor's columns after the table changed under
// it (an outer cursor's columns after an inner cursor's xNext, which trims
// the cache, or after a write through xUpdate), so the table lists its
// open scans, and before a write, a trim or a refresh
// (Table::detach_scans) each copies its current row and drops the rest of
// its run; its next step resumes the tree cursor after that row's key.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "forein_vtab.h"

namespace forein::sqlite {
namespace {

struct Cur {
  sqlite3_vtab_cursor base{};
  // Holds the tree the cursor reads: a refresh may replace the table's.
  std::shared_ptr<Tree> tree;
  // Point mode: keys to look up, in output order.
  bool point = false;
  std::vector<std::string> keys;
  std::size_t ki = 0;
  // Scan mode.
  Cursor scan;            // kept between scans for its buffers
  bool scanning = false;  // `scan` belongs to this filter
  LeafRun run;            // while in_run, its current row is the cursor's
  bool in_run = false;
  bool resume = false;  // detached (detach_scans): resume the scan after `key`
  bool eof = true;
  bool int_keys = false;  // the table's key type is INTEGER
  // The current row when not in a run: a looked-up row (point mode) or a
  // detached one, in key_buf / value_buf.
  std::string_view key, value;
  std::string key_buf, value_buf;
  std::uint64_t key_bytes = 0;  // a run row's short key, for row_key()
  bool listed = false;          // in the table's open_scans
  std::vector<std::size_t> offs;
  bool offs_valid = false;
};

std::string_view row_key(Cur* c) { return c->in_run ? c->run.key(&c->key_bytes) : c->key; }
std::string_view row_value(const Cur* c) { return c->in_run ? c->run.value() : c->value; }

// encode_int64's inverse for a key known to be 8 bytes.
std::int64_t int_key(std::string_view k) {
  std::uint64_t w;
  std::memcpy(&w, k.data(), sizeof w);
  return static_cast<std::int64_t>(__builtin_bswap64(w) ^ (std::uint64_t{1} << 63));
}

void advance(Table* t, Cur* c) {
  c->offs_valid = false;
  if (c->point) {
    while (c->ki < c->keys.size()) {
      const std::string& k = c->keys[c->ki++];
      const StartHints h = t->hint_for(k);
      ++t->lookups;
      if (c->tree->get(k, &c->value_buf, &h)) {
        c->key = k;
        c->value = c->value_buf;
        c->eof = false;
        return;
      }
    }
    c->eof = true;
    return;
  }
  if (!c->scanning) {
    c->eof = true;
    return;
  }
  if (c->resume) {
    c->resume = false;
    c->scan.resume_after(c->key);
  }
  c->run = c->scan.next_run();
  c->in_run = !c->run.empty();
  c->eof = !c->in_run;
}

void start_scan(Table* t, Cur* c, const ScanSpec& spec, const StartHints* h) {
  // Reuses the tree cursor's buffers from the previous scan.
  c->tree->rescan(c->scan, spec, h);
  c->scanning = true;
  t->open_scans.push_back(c);
  c->listed = true;
}

// Drops what ties the cursor to a tree; keeps its buffers.
void clear(Table* t, Cur* c) {
  if (c->listed) {
    auto& v = t->open_scans;
    v.erase(std::find(v.begin(), v.end(), static_cast<void*>(c)));
    c->listed = false;
  }
  c->scanning = false;
  c->run = {};
  c->in_run = false;
  c->resume = false;
  c->tree.reset();
  c->keys.clear();
  c->ki = 0;
  c->point = false;
  c->eof = true;
  c->key = c->value = {};
}

}  // namespace

void Table::detach_scans_now() {
  for (void* p : open_scans) {
    auto* c = static_cast<Cur*>(p);
    if (c->eof || !c->in_run) continue;
    c->key_buf.assign(row_key(c));
    c->value_buf.assign(row_value(c));
    c->key = c->key_buf;
    c->value = c->value_buf;
    c->in_run = false;
    c->resume = true;
  }
}

int x_open(sqlite3_vtab* vt, sqlite3_vtab_cursor** out) {
  Table* t = table_of(vt);
  Cur* c;
  if (!t->spare_cursors.empty()) {
    c = static_cast<Cur*>(t->spare_cursors.back());
    t->spare_cursors.pop_back();
    c->base = sqlite3_vtab_cursor{};
  } else {
    c = new Cur();
  }
  *out = &c->base;
  return SQLITE_OK;
}

int x_close(sqlite3_vtab_cursor* cur) {
  auto* c = reinterpret_cast<Cur*>(cur);
  Table* t = table_of(cur->pVtab);
  clear(t, c);
  constexpr std::size_t kMaxSpare = 4;
  if (t->spare_cursors.size() < kMaxSpare) {
    t->spare_cursors.push_back(c);
  } else {
    delete c;
  }
  return SQLITE_OK;
}

void free_spare_cursors(Table* t) {
  for (void* c : t->spare_cursors) delete static_cast<Cur*>(c);
  t->spare_cursors.clear();
}

int x_filter(sqlite3_vtab_cursor* cur, int idx, const char*, int argc, sqlite3_value** argv) {
  auto* c = reinterpret_cast<Cur*>(cur);
  Table* t = table_of(cur->pVtab);
  try {
    t->ensure_fresh();
    clear(t, c);
    c->tree = t->tree;
    c->int_keys = t->key_type == KeyType::kInteger;
    const bool desc = (idx & kDesc) != 0;
    int ai = 0;
    if (idx & (kEq | kIn)) {
      if (argc < 1) return SQLITE_ERROR;
      // Values from sqlite3_vtab_in_next may reuse one object: convert
      // each to a key before fetching the next.
      bool all_exact = true;
      auto take = [&](sqlite3_value* v) {
        if (t->key_type == KeyType::kInteger) {
          const IntBound b = int_key_bound(v, SQLITE_INDEX_CONSTRAINT_EQ);
          if (b.kind == IntBound::kKey) c->keys.push_back(encode_int64(b.key));
          return;
        }
        bool empty = false, exact = false;
        auto k = key_for_search(t, v, true, &empty, &exact);
        if (empty) return;
        // A value of another type (e.g. 4.5 against an INTEGER key): let
        // SQLite decide on a full scan (rare).
        if (!k || !exact) {
          all_exact = false;
          return;
        }
        c->keys.push_back(std::move(*k));
      };
      if (idx & kIn) {
        sqlite3_value* v = nullptr;
        for (int rc = sqlite3_vtab_in_first(argv[0], &v); rc == SQLITE_OK && v;
             rc = sqlite3_vtab_in_next(argv[0], &v)) {
          take(v);
        }
      } else {
        take(argv[0]);
      }
      if (all_exact) {
        if (c->keys.size() > 1) {
          std::sort(c->keys.begin(), c->keys.end());
          c->keys.erase(std::unique(c->keys.begin(), c->keys.end()), c->keys.end());
          if (desc) std::reverse(c->keys.begin(), c->keys.end());
        }
        c->point = true;
        advance(t, c);
        return SQLITE_OK;
      }
      c->keys.clear();
      ScanSpec spec;
      spec.direction = desc ? Direction::kBackward : Direction::kForward;
      spec.in_place = true;
      ++t->lookups;
      start_scan(t, c, spec, nullptr);
      advance(t, c);
      return SQLITE_OK;
    }
    ScanSpec spec;
    spec.direction = desc ? Direction::kBackward : Direction::kForward;
    spec.in_place = true;
    bool empty = false;
    // One side's bound: exact for INTEGER keys (SQLite does not re-check
    // them), conservative for TEXT keys (SQLite re-checks every row).
    auto bound = [&](sqlite3_value* v, bool lower, bool incl, std::optional<KeyBound>* out) {
      if (t->key_type == KeyType::kInteger) {
        const int op = lower ? (incl ? SQLITE_INDEX_CONSTRAINT_GE : SQLITE_INDEX_CONSTRAINT_GT)
                             : (incl ? SQLITE_INDEX_CONSTRAINT_LE : SQLITE_INDEX_CONSTRAINT_LT);
        const IntBound b = int_key_bound(v, op);
        if (b.kind == IntBound::kEmpty) empty = true;
        if (b.kind == IntBound::kKey) *out = KeyBound{encode_int64(b.key), b.inclusive};
        return;
      }
      bool exact = false;
      auto k = key_for_search(t, v, lower, &empty, &exact);
      if (k) *out = KeyBound{*k, exact ? incl : true};
    };
    if (idx & kLower) bound(argv[ai++], true, (idx & kLowerIncl) != 0, &spec.lower);
    if (idx & kUpper) bound(argv[ai++], false, (idx & kUpperIncl) != 0, &spec.upper);
    if (idx & kLimit) {
      // LIMIT n [OFFSET m]: the rows SQLite will take (a negative LIMIT
      // means none; a non-integer one is an error SQLite reports itself).
      const std::int64_t limit = ai < argc ? sqlite3_value_int64(argv[ai++]) : 0;
      const std::int64_t offset = (idx & kOffset) && ai < argc ? sqlite3_value_int64(argv[ai++]) : 0;
      if (limit > 0) {
        constexpr std::int64_t kMax = std::int64_t{1} << 40;  // a hint: saturate, never overflow
        spec.expected_rows = static_cast<std::size_t>(std::min(limit, kMax) + std::clamp<std::int64_t>(offset, 0, kMax));
      }
    }
    if (empty) return SQLITE_OK;
    if (spec.lower && spec.upper) {
      const int cmp = compare_keys(spec.lower->key, spec.upper->key);
      if (cmp > 0 || (cmp == 0 && !(spec.lower->inclusive && spec.upper->inclusive))) {
        return SQLITE_OK;
      }
    }
    const std::optional<KeyBound>& start = desc ? spec.upper : spec.lower;
    StartHints h;
    if (start) h = t->hint_for(start->key);
    ++t->lookups;
    start_scan(t, c, spec, start ? &h : nullptr);
    advance(t, c);
    return SQLITE_OK;
  } catch (const SqlError& e) {
    set_error(cur->pVtab, e.msg);
    return e.rc;
  } catch (const std::exception& e) {
    // A damaged page: reload from <name>_pages, unless unwritten changes
    // live only in this tree.
    if (!t->has_unwritten()) {
      t->mark_stale();
    } else {
      t->txn.poisoned = true;
    }
    set_error(cur->pVtab, std::string("forein: ") + e.what());
    return SQLITE_ERROR;
  }
}

namespace {

[[gnu::noinline]] int next_slow(sqlite3_vtab_cursor* cur) {
  try {
    Table* t = table_of(cur->pVtab);
    t->trim_cache();  // between steps no frame is in use
    advance(t, reinterpret_cast<Cur*>(cur));
  } catch (const std::exception& e) {
    set_error(cur->pVtab, std::string("forein: ") + e.what());
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
}

[[gnu::noinline]] int column_slow(Cur* c, sqlite3_context* ctx, int col) {
  if (col == 0) {
    const std::string_view key = row_key(c);
    if (c->int_keys && key.size() == 8) {
      sqlite3_result_int64(ctx, int_key(key));
    } else {
      sqlite3_result_text(ctx, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
    }
    return SQLITE_OK;
  }
  const std::string_view value = row_value(c);
  // The first value column starts the row: no offsets needed (the common
  // two-column table reads only it).
  if (col == 1) {
    if (value.empty()) {
      sqlite3_result_null(ctx);
    } else {
      result_value(ctx, value, 0);
    }
    return SQLITE_OK;
  }
  if (!c->offs_valid) {
    column_offsets(value, &c->offs);
    c->offs_valid = true;
  }
  const auto i = static_cast<std::size_t>(col - 1);
  if (i < c->offs.size()) {
    result_value(ctx, value, c->offs[i]);
  } else {
    sqlite3_result_null(ctx);
  }
  return SQLITE_OK;
}

}  // namespace

// xNext and xColumn run once per row and column: their common cases are
// kept small (no frame to set up), the rest is in the functions above.
int x_next(sqlite3_vtab_cursor* cur) {
  auto* c = reinterpret_cast<Cur*>(cur);
  // The next slot of the run: no page is read, so nothing to trim.
  if (!c->in_run || !c->run.advance()) return next_slow(cur);
  c->offs_valid = false;
  return SQLITE_OK;
}

int x_eof(sqlite3_vtab_cursor* cur) { return reinterpret_cast<Cur*>(cur)->eof ? 1 : 0; }

int x_column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int col) {
  auto* c = reinterpret_cast<Cur*>(cur);
  if (c->in_run) {
    // An INTEGER key is encode_int64's 8 bytes: its word is the integer
    // with its sign bit flipped.
    if (col == 0 && c->int_keys) {
      sqlite3_result_int64(ctx, static_cast<sqlite3_int64>(c->run.key_word() ^ (std::uint64_t{1} << 63)));
      return SQLITE_OK;
    }
    if (col == 1 && result_leading_text(ctx, c->run.value())) return SQLITE_OK;
  } else {
    if (col == 0 && c->int_keys && c->key.size() == 8) {
      sqlite3_result_int64(ctx, int_key(c->key));
      return SQLITE_OK;
    }
    if (col == 1 && result_leading_text(ctx, c->value)) return SQLITE_OK;
  }
  return column_slow(c, ctx, col);
}

int x_rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* rowid) {
  // WITHOUT ROWID: SQLite does not call this; answer something sane.
  auto* c = reinterpret_cast<Cur*>(cur);
  const std::string_view key = row_key(c);
  *rowid = key.size() == 8 ? int_key(key) : 0;
  return SQLITE_OK;
}

}  // namespace forein::sqlite
