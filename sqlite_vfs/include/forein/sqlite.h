/* forein's SQLite variant: the `forein` virtual table module.
 *
 *   CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v, extra);
 *   SELECT forein_stats('kv');   -- JSON counters
 *   SELECT forein_check('kv');   -- 'ok' or an error
 *
 * An application that links the static library (forein_sqlite) calls
 * forein_sqlite_register() once per connection. The loadable extension
 * (forein.so, entry point sqlite3_forein_init) does the same on .load.
 * See docs/sqlite.md. */
#ifndef FOREIN_SQLITE_H
#define FOREIN_SQLITE_H

#include <sqlite3.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Registers the `forein` module and the forein_stats / forein_check /
 * forein_debug_hints SQL functions on `db`. Returns an SQLite result code. */
int forein_sqlite_register(sqlite3* db);

#ifdef __cplusplus
}
#endif

#endif /* FOREIN_SQLITE_H */
