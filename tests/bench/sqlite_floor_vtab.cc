#include "sqlite_floor_vtab.h"

#include <algorithm>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

namespace forein::bench {
namespace {

struct Table {
  sqlite3_vtab base{};
  std::vector<std::int64_t> keys;  // ascending
  std::vector<std::string> values;
};

struct Cursor {
  sqlite3_vtab_cursor base{};
  std::size_t at = 0, end = 0;
};

enum Plan { kAll = 0, kEq = 1, kGe = 2, kGt = 3 };

Table* table_of(sqlite3_vtab* vt) { return reinterpret_cast<Table*>(vt); }

int x_connect(sqlite3* db, void*, int, const char* const*, sqlite3_vtab** out, char**) {
  const int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(k INTEGER, v)");
  if (rc != SQLITE_OK) return rc;
  auto* t = new (std::nothrow) Table;
  if (t == nullptr) return SQLITE_NOMEM;
  *out = &t->base;
  return SQLITE_OK;
}

int x_disconnect(sqlite3_vtab* vt) {
  delete table_of(vt);
  return SQLITE_OK;
}

int x_best_index(sqlite3_vtab*, sqlite3_index_info* info) {
  int use = -1;
  Plan plan = kAll;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (!c.usable || c.iColumn != 0) continue;
    if (c.op == SQLITE_INDEX_CONSTRAINT_EQ) {
      use = i;
      plan = kEq;
      break;
    }
    if (c.op == SQLITE_INDEX_CONSTRAINT_GE || c.op == SQLITE_INDEX_CONSTRAINT_GT) {
      use = i;
      plan = c.op == SQLITE_INDEX_CONSTRAINT_GE ? kGe : kGt;
    }
  }
  if (use >= 0) {
    // Integer arguments only (the benchmark binds integers): exact, so no
    // re-check by SQLite, like forein's INTEGER keys.
    info->aConstraintUsage[use].argvIndex = 1;
    info->aConstraintUsage[use].omit = 1;
  }
  if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn == 0 && !info->aOrderBy[0].desc) {
    info->orderByConsumed = 1;
  }
  info->idxNum = plan;
  info->estimatedCost = plan == kEq ? 10 : plan == kAll ? 1e7 : 1e5;
  info->estimatedRows = plan == kEq ? 1 : 100000;
  if (plan == kEq) info->idxFlags |= SQLITE_INDEX_SCAN_UNIQUE;
  return SQLITE_OK;
}

int x_open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  auto* c = new (std::nothrow) Cursor;
  if (c == nullptr) return SQLITE_NOMEM;
  *out = &c->base;
  return SQLITE_OK;
}

int x_close(sqlite3_vtab_cursor* cur) {
  delete reinterpret_cast<Cursor*>(cur);
  return SQLITE_OK;
}

int x_filter(sqlite3_vtab_cursor* cur, int plan, const char*, int, sqlite3_value** argv) {
  auto* c = reinterpret_cast<Cursor*>(cur);
  const Table* t = table_of(cur->pVtab);
  const auto& keys = t->keys;
  c->at = 0;
  c->end = keys.size();
  if (plan == kAll) return SQLITE_OK;
  if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) return SQLITE_MISMATCH;
  const std::int64_t k = sqlite3_value_int64(argv[0]);
  const auto lo = plan == kGt ? std::upper_bound(keys.begin(), keys.end(), k)
                              : std::lower_bound(keys.begin(), keys.end(), k);
  c->at = static_cast<std::size_t>(lo - keys.begin());
  if (plan == kEq) c->end = c->at < keys.size() && keys[c->at] == k ? c->at + 1 : c->at;
  return SQLITE_OK;
}

int x_next(sqlite3_vtab_cursor* cur) {
  ++reinterpret_cast<Cursor*>(cur)->at;
  return SQLITE_OK;
}

int x_eof(sqlite3_vtab_cursor* cur) {
  const auto* c = reinterpret_cast<Cursor*>(cur);
  return c->at >= c->end ? 1 : 0;
}

int x_column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int col) {
  const auto* c = reinterpret_cast<Cursor*>(cur);
  const Table* t = table_of(cur->pVtab);
  if (col == 0) {
    sqlite3_result_int64(ctx, t->keys[c->at]);
  } else {
    const std::string& v = t->values[c->at];
    sqlite3_result_text(ctx, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  return SQLITE_OK;
}

int x_rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* rowid) {
  *rowid = static_cast<sqlite3_int64>(reinterpret_cast<Cursor*>(cur)->at);
  return SQLITE_OK;
}

// INSERT (k, v) with k above every key so far.
int x_update(sqlite3_vtab* vt, int argc, sqlite3_value** argv, sqlite3_int64*) {
  Table* t = table_of(vt);
  if (argc != 4 || sqlite3_value_type(argv[0]) != SQLITE_NULL ||
      sqlite3_value_type(argv[2]) != SQLITE_INTEGER) {
    return SQLITE_MISUSE;
  }
  const std::int64_t k = sqlite3_value_int64(argv[2]);
  if (!t->keys.empty() && k <= t->keys.back()) return SQLITE_CONSTRAINT;
  const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(argv[3]));
  t->keys.push_back(k);
  t->values.emplace_back(p ? p : "", static_cast<std::size_t>(sqlite3_value_bytes(argv[3])));
  return SQLITE_OK;
}

sqlite3_module make_module() {
  sqlite3_module m{};
  m.iVersion = 1;
  m.xCreate = x_connect;
  m.xConnect = x_connect;
  m.xBestIndex = x_best_index;
  m.xDisconnect = x_disconnect;
  m.xDestroy = x_disconnect;
  m.xOpen = x_open;
  m.xClose = x_close;
  m.xFilter = x_filter;
  m.xNext = x_next;
  m.xEof = x_eof;
  m.xColumn = x_column;
  m.xRowid = x_rowid;
  m.xUpdate = x_update;
  return m;
}

const sqlite3_module kModule = make_module();

}  // namespace

int register_floor_vtab(sqlite3* db) { return sqlite3_create_module(db, "floor_vtab", &kModule, nullptr); }

}  // namespace forein::bench
