// The cursor: xOpen/xFilter/xNext/xEof/xColumn/xRowid/xClose. A filter is
// either a list of point lookups (= and IN) or one tree scan (ranges, or
// everything), in key order or reversed.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "forein_vtab.h"

namespace forein::sqlite {
namespace {

struct Cur {
  sqlite3_vtab_cursor base{};
  std::shared_ptr<Tree> tree;
  // Point mode: keys to look up, in output order.
  bool point = false;
  std::vector<std::string> keys;
  std::size_t ki = 0;
  // Scan mode.
  std::optional<Cursor> scan;
  bool eof = true;
  std::string key, value;
  std::vector<std::size_t> offs;
};

void advance(Table* t, Cur* c) {
  if (c->point) {
    while (c->ki < c->keys.size()) {
      const std::string& k = c->keys[c->ki++];
      const StartHints h = t->hint_for(k);
      ++t->lookups;
      if (c->tree->get(k, &c->value, &h)) {
        c->key = k;
        c->offs = column_offsets(c->value);
        c->eof = false;
        return;
      }
    }
    c->eof = true;
    return;
  }
  if (c->scan && c->scan->next()) {
    c->key = std::string(c->scan->key());
    c->value = std::string(c->scan->value());
    c->offs = column_offsets(c->value);
    c->eof = false;
    return;
  }
  c->eof = true;
}

}  // namespace

int x_open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  auto* c = new Cur();
  *out = &c->base;
  return SQLITE_OK;
}
int x_close(sqlite3_vtab_cursor* cur) {
  delete reinterpret_cast<Cur*>(cur);
  return SQLITE_OK;
}

int x_filter(sqlite3_vtab_cursor* cur, int idx, const char*, int argc, sqlite3_value** argv) {
  auto* c = reinterpret_cast<Cur*>(cur);
  auto* t = reinterpret_cast<Table*>(cur->pVtab);
  try {
    t->ensure_fresh();
    c->tree = t->tree;
    c->point = false;
    c->keys.clear();
    c->ki = 0;
    c->scan.reset();
    c->eof = true;
    const bool desc = (idx & kDesc) != 0;
    int ai = 0;
    if (idx & (kEq | kIn)) {
      if (argc < 1) return SQLITE_ERROR;
      // Values from sqlite3_vtab_in_next may reuse one object: convert
      // each to a key before fetching the next.
      bool all_exact = true;
      auto take = [&](sqlite3_value* v) {
        bool empty = false, exact = false;
        auto k = key_for_search(t, v, true, &empty, &exact);
        if (empty) return;
        // A value of another type (e.g. 4.5 against an INTEGER key): let
        // SQLite decide on a full scan (rare).
        if (!k || !exact) {
          all_exact = false;
          return;
        }
        c->keys.push_back(*k);
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
        std::sort(c->keys.begin(), c->keys.end());
        c->keys.erase(std::unique(c->keys.begin(), c->keys.end()), c->keys.end());
        if (desc) std::reverse(c->keys.begin(), c->keys.end());
        c->point = true;
        advance(t, c);
        return SQLITE_OK;
      }
      c->keys.clear();
      ScanSpec spec;
      spec.direction = desc ? Direction::kBackward : Direction::kForward;
      ++t->lookups;
      c->scan.emplace(c->tree->scan(spec));
      advance(t, c);
      return SQLITE_OK;
    }
    ScanSpec spec;
    spec.direction = desc ? Direction::kBackward : Direction::kForward;
    bool empty = false;
    if (idx & kLower) {
      bool exact = false;
      auto k = key_for_search(t, argv[ai++], true, &empty, &exact);
      if (k) spec.lower = KeyBound{*k, exact ? (idx & kLowerIncl) != 0 : true};
    }
    if (idx & kUpper) {
      bool exact = false;
      auto k = key_for_search(t, argv[ai++], false, &empty, &exact);
      if (k) spec.upper = KeyBound{*k, exact ? (idx & kUpperIncl) != 0 : true};
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
    c->scan.emplace(c->tree->scan(spec, start ? &h : nullptr));
    advance(t, c);
    return SQLITE_OK;
  } catch (const SqlError& e) {
    set_error(cur->pVtab, e.msg);
    return e.rc;
  } catch (const std::exception& e) {
    t->mark_stale();
    set_error(cur->pVtab, std::string("forein: ") + e.what());
    return SQLITE_ERROR;
  }
}

int x_next(sqlite3_vtab_cursor* cur) {
  try {
    advance(reinterpret_cast<Table*>(cur->pVtab), reinterpret_cast<Cur*>(cur));
  } catch (const std::exception& e) {
    set_error(cur->pVtab, std::string("forein: ") + e.what());
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
}

int x_eof(sqlite3_vtab_cursor* cur) { return reinterpret_cast<Cur*>(cur)->eof ? 1 : 0; }

int x_column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int col) {
  auto* c = reinterpret_cast<Cur*>(cur);
  auto* t = reinterpret_cast<Table*>(cur->pVtab);
  if (col == 0) {
    if (t->key_type == KeyType::kInteger) {
      sqlite3_result_int64(ctx, decode_int64(c->key));
    } else {
      sqlite3_result_text(ctx, c->key.data(), static_cast<int>(c->key.size()), SQLITE_TRANSIENT);
    }
    return SQLITE_OK;
  }
  const auto i = static_cast<std::size_t>(col - 1);
  if (i < c->offs.size()) {
    result_value(ctx, c->value, c->offs[i]);
  } else {
    sqlite3_result_null(ctx);
  }
  return SQLITE_OK;
}

int x_rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* rowid) {
  // WITHOUT ROWID: SQLite does not call this; answer something sane.
  auto* c = reinterpret_cast<Cur*>(cur);
  *rowid = c->key.size() == 8 ? decode_int64(c->key) : 0;
  return SQLITE_OK;
}

}  // namespace forein::sqlite
