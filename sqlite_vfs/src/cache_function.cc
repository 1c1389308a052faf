// forein_cache_pages(table[, pages]): how many of a table's pages this
// connection keeps in memory between operations (like PRAGMA cache_size),
// returning the setting in force afterwards. A smaller setting takes effect
// at the table's next operation. Per connection; not stored.
#include <string>

#include "forein_vtab.h"

namespace forein::sqlite {

void fn_cache_pages(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  try {
    Table* t = find_table(ctx, 1, argv);
    if (argc > 1) {
      const sqlite3_int64 pages = sqlite3_value_int64(argv[1]);
      // A descent needs a root-to-leaf path and its neighbours resident.
      if (sqlite3_value_type(argv[1]) != SQLITE_INTEGER || pages < 16) {
        throw SqlError{SQLITE_ERROR, "forein_cache_pages: pages is an integer >= 16"};
      }
      t->cache_pages = static_cast<std::size_t>(pages);
      t->trim_at = t->cache_pages;
    }
    sqlite3_result_int64(ctx, static_cast<sqlite3_int64>(t->cache_pages));
  } catch (const SqlError& e) {
    sqlite3_result_error(ctx, e.msg.c_str(), -1);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, (std::string("forein: ") + e.what()).c_str(), -1);
  }
}

}  // namespace forein::sqlite
