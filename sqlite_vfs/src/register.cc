// Registration: the module table, forein_sqlite_register for the static
// library and sqlite3_forein_init for the loadable extension.
//
// Compiled twice: with SQLITE_CORE for the static library (direct calls
// into libsqlite3) and without it for the loadable extension (calls go
// through the sqlite3_api routine table, defined here).
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include "forein/sqlite.h"
#include "forein_vtab.h"

namespace forein::sqlite {
namespace {

sqlite3_module make_module() {
  sqlite3_module m{};
  m.iVersion = 3;
  m.xCreate = x_create;
  m.xConnect = x_connect;
  m.xBestIndex = x_best_index;
  m.xDisconnect = x_disconnect;
  m.xDestroy = x_destroy;
  m.xOpen = x_open;
  m.xClose = x_close;
  m.xFilter = x_filter;
  m.xNext = x_next;
  m.xEof = x_eof;
  m.xColumn = x_column;
  m.xRowid = x_rowid;
  m.xUpdate = x_update;
  m.xBegin = x_begin;
  m.xSync = x_sync;
  m.xCommit = x_commit;
  m.xRollback = x_rollback;
  m.xRename = x_rename;
  m.xSavepoint = x_savepoint;
  m.xRelease = x_release;
  m.xRollbackTo = x_rollback_to;
  m.xShadowName = x_shadow_name;
  return m;
}

const sqlite3_module kModule = make_module();

void free_registry(void* p) { delete static_cast<Registry*>(p); }

}  // namespace

int register_all(sqlite3* db) {
  auto* reg = new Registry();
  int rc = sqlite3_create_module_v2(db, "forein", &kModule, reg, free_registry);
  if (rc != SQLITE_OK) return rc;  // the destructor already ran
  const int flags = SQLITE_UTF8 | SQLITE_DIRECTONLY;
  // forein_stats and forein_check take (name) or (schema, table).
  for (int n = 1; n <= 2 && rc == SQLITE_OK; ++n) {
    rc = sqlite3_create_function(db, "forein_stats", n, flags, reg, fn_stats, nullptr, nullptr);
    if (rc == SQLITE_OK)
      rc = sqlite3_create_function(db, "forein_check", n, flags, reg, fn_check, nullptr, nullptr);
  }
  // forein_cache_pages takes (name) or (name, pages).
  for (int n = 1; n <= 2 && rc == SQLITE_OK; ++n) {
    rc = sqlite3_create_function(db, "forein_cache_pages", n, flags, reg, fn_cache_pages, nullptr,
                                 nullptr);
  }
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(db, "forein_debug_hints", 2, flags, reg, fn_debug_hints, nullptr,
                                 nullptr);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(db, "forein_debug_hints", 3, flags, reg, fn_debug_hints, nullptr,
                                 nullptr);
  return rc;
}

}  // namespace forein::sqlite

extern "C" int forein_sqlite_register(sqlite3* db) { return forein::sqlite::register_all(db); }

#ifndef SQLITE_CORE
extern "C" __attribute__((visibility("default"))) int sqlite3_forein_init(
    sqlite3* db, char** err, const sqlite3_api_routines* api) {
  SQLITE_EXTENSION_INIT2(api);
  const int rc = forein::sqlite::register_all(db);
  if (rc != SQLITE_OK && err) *err = sqlite3_mprintf("forein: registration failed (%d)", rc);
  return rc;
}
#endif
