// Write-back at transaction boundaries: changed pages stay in memory and are
// written into <name>_pages once, in xSync (SQLite's commit, phase zero),
// inside the same SQLite transaction as the user's other changes. So a
// million-row INSERT writes each page once, not once per row, and commit
// is still atomic and durable through SQLite's journal or WAL.
//
// Since nothing is written before xSync, <name>_pages holds the
// transaction's starting state until then, and the transaction and
// savepoint hooks undo changes from memory:
// - xSavepoint(n) keeps images of the pages changed since the previous
//   capture, so state(n)[p] = the image at the highest level <= n holding
//   p, else p as in <name>_pages;
// - xRollbackTo(n) restores the pages changed after savepoint n to that
//   state, xRollback restores every changed page from <name>_pages;
// - the restores are applied lazily (Table::pending), so the hooks
//   themselves run no SQL.
// Writing in xSavepoint instead would not work: SQLite opens a statement's
// journal savepoint before calling xSavepoint, so a statement rollback
// would also undo the pages written for the previous statements.
#include <algorithm>
#include <exception>
#include <string>

#include "forein_vtab.h"

namespace forein::sqlite {

// Moves the tree's dirty marks into the transaction's page sets (after
// Tree::sync() has written the meta page and freed retired pages).
void Table::collect() {
  if (!tree) return;
  tree->sync();
  store().take_dirty([this](PageId id) {
    txn.touched.insert(id);
    txn.unflushed.insert(id);
    txn.since_capture.insert(id);
  });
}

bool Table::has_unwritten() noexcept {
  if (!txn.active) return false;
  if (txn.poisoned) return true;
  try {
    collect();
  } catch (...) {
    return true;  // a tree that cannot be synced may hold anything
  }
  return !txn.touched.empty();
}

// Another object of this table may have begun the transaction already
// (see Table): the second xBegin changes nothing, and every hook below is
// likewise harmless when repeated for the second object.
void Table::begin_txn() {
  if (txn.active) return;
  if (!txn.touched.empty() || txn.poisoned) mark_stale();  // cannot happen
  txn = TxnState{};
  txn.active = true;
}

int Table::savepoint(int level) {
  release(level);  // re-establishing a level invalidates it and those above
  if (tree || !pending.empty()) {
    ensure_fresh();  // applies pending restores before capturing
    collect();
  }
  SavepointImages sp;
  sp.level = level;
  for (PageId id : txn.since_capture) {
    const std::byte* p = tree->store().page(id);
    PageImage img(p, p + page_size);
    std::fill(img.begin(), img.begin() + kPageLatchBytes, std::byte{0});
    sp.images.emplace(id, std::move(img));
  }
  txn.since_capture.clear();
  txn.savepoints.push_back(std::move(sp));
  return SQLITE_OK;
}

// Releasing a level drops its images; the pages they covered count as
// changed since the level below was captured.
void Table::release(int level) {
  while (!txn.savepoints.empty() && txn.savepoints.back().level >= level) {
    for (const auto& [id, img] : txn.savepoints.back().images) txn.since_capture.insert(id);
    txn.savepoints.pop_back();
  }
}

void Table::rollback_to(int level) {
  if (txn.poisoned) return;  // stays refused until xRollback
  // With restores already pending the tree has not been used since the
  // last rollback, so it has no new dirty marks to collect.
  if (pending.empty()) collect();
  std::set<PageId> changed = std::move(txn.since_capture);
  txn.since_capture.clear();
  while (!txn.savepoints.empty() && txn.savepoints.back().level > level) {
    for (const auto& [id, img] : txn.savepoints.back().images) changed.insert(id);
    txn.savepoints.pop_back();
  }
  for (PageId id : changed) {
    std::optional<PageImage> image;  // nullopt: as in <name>_pages
    for (auto sp = txn.savepoints.rbegin(); sp != txn.savepoints.rend(); ++sp) {
      if (auto it = sp->images.find(id); it != sp->images.end()) {
        image = it->second;
        break;
      }
    }
    pending[id] = std::move(image);
  }
  // A write-back of a failed COMMIT may have been undone by SQLite too.
  if (txn.wrote) txn.unflushed = txn.touched;
}

void Table::rollback() {
  if (txn.poisoned) {
    mark_stale();
  } else {
    if (pending.empty()) collect();
    // Every page ever pending or captured is in `touched`.
    for (PageId id : txn.touched) pending[id] = std::nullopt;
  }
  trim_at = cache_pages;
  txn = TxnState{};
}

// Writes every page changed since the last write-back, then the meta row,
// all inside SQLite's commit. gen+1 marks them for other connections.
int Table::sync() {
  if (!tree && pending.empty()) return SQLITE_OK;  // never loaded: nothing changed
  ensure_fresh();
  collect();
  if (txn.unflushed.empty()) return SQLITE_OK;
  prepare_write_back();  // format and free list (storage.cc)
  const std::int64_t tx_gen = gen + 1;
  for (PageId id : txn.unflushed) write_page(id, tx_gen);
  sqlite3_bind_int64(st_set_gen.get(), 1, tx_gen);
  st_set_gen.step();
  txn.unflushed.clear();
  txn.wrote = true;
  return SQLITE_OK;
}

void Table::commit() {
  trim_at = cache_pages;  // the written pages can go now
  if (txn.wrote) gen += 1;
  // Our own commit changed the data version; reading gen once confirms it.
  dv_known = false;
  if (!txn.unflushed.empty() || txn.poisoned) mark_stale();  // not written: cannot happen
  txn = TxnState{};
}

// ------------------------------------------------------------ the hooks

namespace {

template <typename Fn>
int guarded(sqlite3_vtab* vt, Fn&& fn) {
  Table* t = table_of(vt);
  try {
    return fn(t);
  } catch (const SqlError& e) {
    set_error(vt, e.msg);
    return e.rc == SQLITE_OK ? SQLITE_ERROR : e.rc;
  } catch (const std::exception& e) {
    // The tree may be half changed: refuse everything until rollback.
    if (t->txn.active) t->txn.poisoned = true;
    set_error(vt, std::string("forein: ") + e.what());
    return SQLITE_ERROR;
  }
}

}  // namespace

int x_begin(sqlite3_vtab* vt) {
  return guarded(vt, [](Table* t) {
    t->begin_txn();
    return SQLITE_OK;
  });
}
int x_sync(sqlite3_vtab* vt) {
  return guarded(vt, [](Table* t) { return t->sync(); });
}
int x_commit(sqlite3_vtab* vt) {
  return guarded(vt, [](Table* t) {
    t->commit();
    return SQLITE_OK;
  });
}
int x_rollback(sqlite3_vtab* vt) {
  return guarded(vt, [](Table* t) {
    t->rollback();
    return SQLITE_OK;
  });
}
int x_savepoint(sqlite3_vtab* vt, int n) {
  return guarded(vt, [n](Table* t) { return t->savepoint(n); });
}
int x_release(sqlite3_vtab* vt, int n) {
  return guarded(vt, [n](Table* t) {
    t->release(n);
    return SQLITE_OK;
  });
}
int x_rollback_to(sqlite3_vtab* vt, int n) {
  return guarded(vt, [n](Table* t) {
    t->rollback_to(n);
    return SQLITE_OK;
  });
}

}  // namespace forein::sqlite
