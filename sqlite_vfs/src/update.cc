// Writes: xUpdate (INSERT, UPDATE including the key, DELETE) with SQLite's
// ON CONFLICT modes. Changes stay in the in-memory tree; writeback.cc
// writes the pages back at commit.
#include <optional>
#include <string>

#include "forein_vtab.h"

namespace forein::sqlite {

int x_update(sqlite3_vtab* vt, int argc, sqlite3_value** argv, sqlite3_int64*) {
  Table* t = table_of(vt);
  try {
    // Validate everything before touching the tree: bad input changes nothing.
    std::optional<std::string> old_key;
    if (sqlite3_value_type(argv[0]) != SQLITE_NULL) old_key = key_for_write(t, argv[0]);
    std::optional<std::string> new_key;
    // The encoded row, in a buffer the table keeps (no allocation per row;
    // one that an oversized row, refused below, grew is let go).
    std::string& row = t->row_buf;
    if (row.capacity() > 4 * t->max_value()) row = std::string();
    row.clear();
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
    // Open scans' current rows view leaf frames that this write may change.
    t->detach_scans();
    t->ensure_fresh();
    Tree& tree = *t->tree;
    const int on_conflict = sqlite3_vtab_on_conflict(t->db);
    // One hint for the new key serves the conflict check and the put.
    StartHints new_hint;
    if (new_key) new_hint = t->hint_for(*new_key);
    // A plain INSERT: one descent that inserts unless the key is taken
    // (then nothing changed), instead of a lookup and then a put.
    if (new_key && !old_key && on_conflict != SQLITE_REPLACE) {
      ++t->lookups;
      ++t->writes;
      bool inserted;
      try {
        inserted = tree.insert(*new_key, row, &new_hint);
      } catch (...) {
        t->txn.poisoned = true;  // as below: a failed split leaves the tree half changed
        throw;
      }
      if (inserted) return SQLITE_OK;
      // OR IGNORE: SQLITE_CONSTRAINT with no message, nothing changed, so
      // SQLite skips the row without counting it in changes() (we declared
      // SQLITE_VTAB_CONSTRAINT_SUPPORT); SQLITE_OK would count it.
      if (on_conflict == SQLITE_IGNORE) return SQLITE_CONSTRAINT;
      set_error(vt, "UNIQUE constraint failed: " + t->name + "." + t->columns[0]);
      return SQLITE_CONSTRAINT_PRIMARYKEY;
    }
    // Conflict check: the new key is taken by another row.
    bool replace_other = false;
    if (new_key && (!old_key || *old_key != *new_key)) {
      ++t->lookups;
      if (tree.get(*new_key, nullptr, &new_hint)) {
        if (on_conflict == SQLITE_IGNORE) return SQLITE_CONSTRAINT;  // skipped, not counted (above)
        if (on_conflict != SQLITE_REPLACE) {
          set_error(vt, "UNIQUE constraint failed: " + t->name + "." + t->columns[0]);
          return SQLITE_CONSTRAINT_PRIMARYKEY;
        }
        replace_other = true;
      }
    }
    (void)replace_other;  // put() replaces the other row's value in place
    try {
      // Each write is a tree operation that may come with a hint: counted
      // in lookups, so forein_stats keeps hinted <= lookups.
      if (old_key && (!new_key || *old_key != *new_key)) {
        const StartHints h = t->hint_for(*old_key);
        ++t->lookups;
        ++t->writes;
        tree.erase(*old_key, &h);
      }
      if (new_key) {
        ++t->lookups;
        ++t->writes;
        tree.put(*new_key, row, &new_hint);
      }
    } catch (...) {
      // The tree may be half changed and its unwritten changes are only in
      // memory: refuse this table until the transaction rolls back.
      t->txn.poisoned = true;
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

}  // namespace forein::sqlite
