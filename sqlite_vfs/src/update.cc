// Writes: xUpdate (INSERT, UPDATE including the key, DELETE) with SQLite's
// ON CONFLICT modes, and the transaction methods.
#include <optional>
#include <string>

#include "forein_vtab.h"

namespace forein::sqlite {

int x_update(sqlite3_vtab* vt, int argc, sqlite3_value** argv, sqlite3_int64*) {
  auto* t = reinterpret_cast<Table*>(vt);
  try {
    // Validate everything before touching the tree: bad input changes nothing.
    std::optional<std::string> old_key;
    if (sqlite3_value_type(argv[0]) != SQLITE_NULL) old_key = key_for_write(t, argv[0]);
    std::optional<std::string> new_key;
    std::string row;
    if (argc > 1) {
      const int ncols = argc - 2;
      if (ncols != static_cast<int>(t->columns.size())) {
        throw SqlError{SQLITE_ERROR, "forein: wrong number of columns"};
      }
      new_key = key_for_write(t, argv[2]);
      for (int i = 1; i < ncols; ++i) encode_value(row, argv[2 + i]);
      if (row.size() > t->max_value()) {
        throw SqlError{SQLITE_TOOBIG, "forein: row of " + std::to_string(row.size()) +
                                          " bytes (non-key columns, encoded) exceeds the limit of " +
                                          std::to_string(t->max_value()) + " bytes for page_size " +
                                          std::to_string(t->page_size)};
      }
    }
    t->ensure_fresh();
    Tree& tree = *t->tree;
    const int on_conflict = sqlite3_vtab_on_conflict(t->db);
    // Conflict check: the new key is taken by another row.
    bool replace_other = false;
    if (new_key && (!old_key || *old_key != *new_key)) {
      const StartHints h = t->hint_for(*new_key);
      ++t->lookups;
      if (tree.get(*new_key, nullptr, &h)) {
        if (on_conflict == SQLITE_IGNORE) return SQLITE_OK;
        if (on_conflict != SQLITE_REPLACE) {
          set_error(vt, "UNIQUE constraint failed: " + t->name + "." + t->columns[0]);
          return SQLITE_CONSTRAINT_PRIMARYKEY;
        }
        replace_other = true;
      }
    }
    (void)replace_other;  // put() replaces the other row's value in place
    t->begin_write();
    try {
      if (old_key && (!new_key || *old_key != *new_key)) {
        const StartHints h = t->hint_for(*old_key);
        tree.erase(*old_key, &h);
      }
      if (new_key) {
        const StartHints h = t->hint_for(*new_key);
        tree.put(*new_key, row, &h);
      }
      tree.sync();
    } catch (...) {
      t->mark_stale();  // the shadow table is the truth; reload next time
      throw;
    }
    return SQLITE_OK;
  } catch (const SqlError& e) {
    set_error(vt, e.msg);
    return e.rc;
  } catch (const std::exception& e) {
    set_error(vt, std::string("forein: ") + e.what());
    return SQLITE_ERROR;
  }
}

// Transactions: pages are written to the shadow table inside every xUpdate,
// so SQLite's own journal covers them. After any rollback the in-memory tree
// is dropped and reloaded from the (rolled back) shadow table on next use.
int x_begin(sqlite3_vtab* vt) {
  reinterpret_cast<Table*>(vt)->bumped = false;
  return SQLITE_OK;
}
int x_sync(sqlite3_vtab*) { return SQLITE_OK; }
int x_commit(sqlite3_vtab* vt) {
  reinterpret_cast<Table*>(vt)->bumped = false;
  return SQLITE_OK;
}
int x_rollback(sqlite3_vtab* vt) {
  reinterpret_cast<Table*>(vt)->mark_stale();
  return SQLITE_OK;
}
int x_savepoint(sqlite3_vtab*, int) { return SQLITE_OK; }
int x_release(sqlite3_vtab*, int) { return SQLITE_OK; }
int x_rollback_to(sqlite3_vtab* vt, int) {
  reinterpret_cast<Table*>(vt)->mark_stale();
  return SQLITE_OK;
}

}  // namespace forein::sqlite
