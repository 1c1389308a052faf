// The shadow-table page store, read side: each table's pages live in
// <name>_pages(id, gen, page) and its format data and change counter in
// <name>_meta. A connection reads a page when a descent first needs it and
// keeps at most cache_pages of them between operations (CLOCK eviction of
// clean pages, like SQLite's pager cache). What another connection
// committed (pages whose gen is above the one the tree reflects) and what
// a rollback restores is dropped or replaced page by page; the rest of the
// cache stays. The write side is writeback.cc.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "forein/error.h"
#include "forein_vtab.h"

namespace forein::sqlite {
namespace {

void put_le32(std::byte* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}
std::uint32_t get_le32(const std::byte* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint32_t>(p[i]);
  return v;
}
std::uint32_t page_crc(const std::byte* page, std::uint32_t page_size) {
  constexpr std::byte kZeros[kPageMagicOffset] = {};
  return crc32c(page + kPageMagicOffset, page_size - kPageMagicOffset,
                crc32c(kZeros, sizeof kZeros));
}
bool all_zero(const std::byte* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != std::byte{0}) return false;
  return true;
}

}  // namespace

Table::~Table() {
  free_spare_cursors(this);
  hints.detach();
  // The cursors' trees may outlive nothing that reads through this source.
  tree.reset();
}

void Table::prepare() {
  st_gen = Stmt(db, "SELECT gen FROM " + meta_table() + " WHERE id = 0");
  st_set_gen = Stmt(db, "UPDATE " + meta_table() + " SET gen = ?1 WHERE id = 0");
  st_write = Stmt(db, "INSERT OR REPLACE INTO " + pages_table() + "(id, gen, page) VALUES (?1, ?2, ?3)");
  // gen precedes the page, so the scan reads it without the BLOB's
  // overflow pages.
  st_changed_ids = Stmt(db, "SELECT id FROM " + pages_table() + " WHERE gen > ?1");
  st_page = Stmt(db, "SELECT page FROM " + pages_table() + " WHERE id = ?1");
  st_max_id = Stmt(db, "SELECT max(id) FROM " + pages_table());
}

std::int64_t Table::read_gen() {
  if (!st_gen.step()) throw SqlError{SQLITE_CORRUPT, "forein: " + name + "_meta has no row"};
  const std::int64_t g = sqlite3_column_int64(st_gen.get(), 0);
  st_gen.reset();
  return g;
}

TreeStats Table::own_stats() const {
  TreeStats s = tree->stats();
  if (hints.attached()) {
    s.hinted -= hints.refresh_stats().hinted;
    s.hint_hits -= hints.refresh_stats().hint_hits;
    s.fallbacks -= hints.refresh_stats().fallbacks;
  }
  return s;
}

// Called before the hint source lets go of the tree, or its counters reset.
void Table::fold_stats() {
  if (!tree) return;
  const TreeStats s = own_stats();
  base_hint_hits += s.hint_hits;
  base_fallbacks += s.fallbacks;
  base_hinted += s.hinted;
}

// Forget the tree; the next use loads it whole from <name>_pages.
void Table::mark_stale() {
  fold_stats();
  hints.detach();
  tree.reset();
  gen = -1;
  dv_known = false;
  pending.clear();
}

// A page image as stored: latch word 0, CRC32C in bytes 8..12.
void Table::write_page(PageId id, std::int64_t page_gen) {
  thread_local PageImage img;
  img.resize(page_size);
  const std::byte* p = tree->store().page(id);
  std::memset(img.data(), 0, kPageMagicOffset);
  std::memcpy(img.data() + kPageMagicOffset, p + kPageMagicOffset, page_size - kPageMagicOffset);
  put_le32(img.data() + kPageChecksumOffset, page_crc(img.data(), page_size));
  sqlite3_bind_int64(st_write.get(), 1, id);
  sqlite3_bind_int64(st_write.get(), 2, page_gen);
  sqlite3_bind_blob(st_write.get(), 3, img.data(), static_cast<int>(img.size()), SQLITE_STATIC);
  st_write.step();
  sqlite3_clear_bindings(st_write.get());
  ++pages_written;
}

namespace {

// Checks one stored page (size, checksum) and copies it into `frame`.
void check_page(const Table& t, sqlite3_int64 id, const void* blob, int n, std::byte* frame) {
  if (n != static_cast<int>(t.page_size)) {
    throw CorruptionError("forein: " + t.name + "_pages: page " + std::to_string(id) + " has " +
                          std::to_string(n) + " bytes, expected " + std::to_string(t.page_size));
  }
  std::memcpy(frame, blob, t.page_size);
  const std::uint32_t stored = get_le32(frame + kPageChecksumOffset);
  if (stored != page_crc(frame, t.page_size) && !(stored == 0 && all_zero(frame, t.page_size))) {
    throw CorruptionError("forein: " + t.name + "_pages: page " + std::to_string(id) +
                          ": checksum mismatch");
  }
  std::memset(frame, 0, kPageLatchBytes);
}

}  // namespace

void Table::read_page(PageId id, std::byte* frame) {
  const StmtReset reset(st_page);
  sqlite3_bind_int64(st_page.get(), 1, id);
  if (!st_page.step()) {
    std::memset(frame, 0, page_size);  // not stored: a free page
    return;
  }
  check_page(*this, id, sqlite3_column_blob(st_page.get(), 0), sqlite3_column_bytes(st_page.get(), 0),
             frame);
  ++pages_read;
}

// Free pages keep their (zeroed-magic) image in <name>_pages, so finding
// them reads every stored page once; it runs before the first allocation
// after an open or refresh, not at open.
std::vector<PageId> Table::stored_free_pages(PageId count) {
  Stmt q(db, "SELECT id, substr(page, " + std::to_string(kPageMagicOffset + 1) +
                 ", 4) = x'00000000' FROM " + pages_table() + " ORDER BY id");
  std::vector<PageId> ids;
  PageId next = 1;  // page 0 is the meta page
  while (q.step()) {
    const sqlite3_int64 id = sqlite3_column_int64(q.get(), 0);
    if (id < next || id >= count) continue;
    for (; next < id; ++next) ids.push_back(next);  // not stored
    if (sqlite3_column_int(q.get(), 1) != 0) ids.push_back(static_cast<PageId>(id));
    next = static_cast<PageId>(id) + 1;
  }
  for (; next < count; ++next) ids.push_back(next);
  return ids;
}

void Table::trim_cache_now() {
  constexpr std::size_t kSlack = 64;  // pages a stopped-short trim waits for
  detach_scans();                     // their rows may view frames about to go
  store().trim(cache_pages, [this](PageId id) { return txn.touched.count(id) != 0 || pending.count(id) != 0; });
  const std::size_t resident = store().resident_pages();
  trim_at = resident > cache_pages ? resident + kSlack : cache_pages;
}

PageId Table::stored_page_count() {
  const StmtReset reset(st_max_id);
  if (!st_max_id.step() || sqlite3_column_type(st_max_id.get(), 0) == SQLITE_NULL) return 0;
  const sqlite3_int64 max_id = sqlite3_column_int64(st_max_id.get(), 0);
  if (max_id < 0 || max_id >= (std::int64_t{1} << 24)) {
    throw CorruptionError("forein: " + name + "_pages: page id " + std::to_string(max_id) + " out of range");
  }
  return static_cast<PageId>(max_id + 1);
}

void Table::load_all() {
  const std::int64_t g = read_gen();
  mark_stale();
  const PageId count = stored_page_count();
  if (count == 0) throw CorruptionError("forein: " + name + "_pages is empty");
  TreeOptions opts;
  opts.observer = &hints;
  opts.append_fast_path = true;  // ascending INSERTs skip the root descent
  tree = std::shared_ptr<Tree>(Tree::open(std::make_unique<ShadowPageStore>(page_size, this, count), opts));
  gen = g;
  ++loads;
}

// Makes the cache reflect the database: drops the pages another connection
// committed after `gen` (when `foreign`) and applies the pending restores,
// then re-reads the meta page. Pages read again later are checked again.
// After a rollback the hint path starts over on its next use (restored
// pages may carry older node versions than its manager has seen); after
// only other connections' commits it keeps its manager (whose refresh
// scans every key), told which changed pages are now free, and replays
// the live nodes (versions only grow, the manager keeps the newer ones).
void Table::refresh(bool foreign, std::int64_t new_gen) {
  detach_scans();  // their rows may view frames about to change
  ShadowPageStore& s = store();
  const bool keep_hints = foreign && pending.empty() && hints.attached();
  std::vector<PageId> changed;
  if (foreign) {
    const StmtReset reset(st_changed_ids);
    sqlite3_bind_int64(st_changed_ids.get(), 1, gen);
    while (st_changed_ids.step()) {
      const auto id = static_cast<PageId>(sqlite3_column_int64(st_changed_ids.get(), 0));
      if (txn.touched.count(id) != 0) {
        txn.poisoned = true;
        throw CorruptionError("forein: " + name + "_pages: page " + std::to_string(id) +
                              " changed by another connection inside our transaction");
      }
      s.evict(id);
      changed.push_back(id);
    }
  }
  s.grow(stored_page_count());
  for (const auto& [id, image] : pending) {
    if (id >= s.page_count()) continue;
    if (image) {
      // Resident (pending pages are never evicted); a new latch version
      // sends in-place cursors that remember this leaf to find it again.
      s.overwrite(id, image->data());
    } else {
      s.evict(id);
    }
  }
  pending.clear();
  s.forget_free_list();
  fold_stats();
  tree->reset_stats();
  if (keep_hints) {
    hints.suspend();
  } else {
    hints.detach();
  }
  tree->reload();
  if (keep_hints) {
    // Freed pages are deleted nodes; their version is not visible here,
    // so the deletion gets the highest one.
    std::vector<NodeEvent> events;
    for (PageId id : changed) {
      std::uint32_t magic;
      std::memcpy(&magic, s.page(id) + kPageMagicOffset, sizeof magic);
      if (magic != 0) continue;
      NodeInterval iv;
      iv.node = id;
      iv.version = ~std::uint64_t{0};
      events.push_back({NodeEventKind::kDeleted, iv});
    }
    hints.resume(*tree, events, changed.size());
  }
  if (foreign) gen = new_gen;
  ++refreshes;
}
// Makes `tree` reflect the database. Inside a write transaction (after the
// first check) no other connection can commit, so only pending restores
// matter; otherwise SQLite's data version says whether anything was
// committed since we last looked, and only then is <name>_meta.gen read.
void Table::ensure_fresh() {
  if (txn.poisoned) {
    throw SqlError{SQLITE_ERROR, "forein: " + name +
                                     ": a change failed midway; the transaction must be rolled back"};
  }
  if (tree && txn.active && txn.checked) {
    if (!pending.empty()) refresh(false, gen);
    trim_cache();
    return;
  }
  unsigned dv = 0;
  const bool dv_ok =
      sqlite3_file_control(db, schema.c_str(), SQLITE_FCNTL_DATA_VERSION, &dv) == SQLITE_OK;
  if (!tree) {
    load_all();
  } else if (!dv_ok || !dv_known || dv != data_version) {
    dv_known = false;
    const std::int64_t g = read_gen();
    if (g < gen) {
      // The committed counter went back, which no rollback of ours does
      // (rollbacks never change gen): trust nothing, reload everything.
      load_all();
    } else if (g != gen || !pending.empty()) {
      refresh(g != gen, g);
    }
  } else if (!pending.empty()) {
    refresh(false, gen);
  }
  // Only now: a check that threw must run again on the next call.
  data_version = dv;
  dv_known = dv_ok;
  if (txn.active) txn.checked = true;
  trim_cache();
}

}  // namespace forein::sqlite
