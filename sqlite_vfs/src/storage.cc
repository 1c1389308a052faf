// The shadow-table page store, read side: each table's pages live in
// <name>_pages(id, gen, page), its free pages are listed in <name>_free(id)
// (format 3), and its format data and change counter are in <name>_meta.
// A connection reads a page when a descent first needs it and
// keeps at most cache_pages of them between operations (CLOCK eviction of
// clean pages, like SQLite's pager cache). What another connection
// committed (pages whose gen is above the one the tree reflects) and what
// a rollback restores is dropped or replaced page by page; the rest of the
// cache stays. The write side is writeback.cc (write_page, the free list's
// upkeep and the format-2 conversion are here).
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
  st_gen = Stmt(db, "SELECT gen, format FROM " + meta_table() + " WHERE id = 0");
  st_set_gen = Stmt(db, "UPDATE " + meta_table() + " SET gen = ?1 WHERE id = 0");
  st_write = Stmt(db, "INSERT OR REPLACE INTO " + pages_table() + "(id, gen, page) VALUES (?1, ?2, ?3)");
  // Through <name>_pages_gen (a covering index) where it exists; else a
  // scan, where gen precedes the page, so it skips the BLOBs' overflow pages.
  st_changed_ids = Stmt(db, "SELECT id FROM " + pages_table() + " WHERE gen > ?1");
  st_page = Stmt(db, "SELECT page FROM " + pages_table() + " WHERE id = ?1");
  st_max_id = Stmt(db, "SELECT max(id) FROM " + pages_table());
  // Prepared again on first use (a format-2 table has no <name>_free).
  st_free_ids = Stmt();
  st_free_add = Stmt();
  st_free_del = Stmt();
}

namespace {

void prepare_free_statements(Table& t) {
  if (t.st_free_ids.get() != nullptr) return;
  t.st_free_ids = Stmt(t.db, "SELECT id FROM " + t.free_table());
  t.st_free_add = Stmt(t.db, "INSERT OR IGNORE INTO " + t.free_table() + "(id) VALUES (?1)");
  t.st_free_del = Stmt(t.db, "DELETE FROM " + t.free_table() + " WHERE id = ?1");
}

bool is_free_image(const std::byte* page) {
  std::uint32_t magic;
  std::memcpy(&magic, page + kPageMagicOffset, sizeof magic);
  return magic == 0;
}

}  // namespace

std::int64_t Table::read_meta() {
  const StmtReset reset(st_gen);
  if (!st_gen.step()) throw SqlError{SQLITE_CORRUPT, "forein: " + name + "_meta has no row"};
  const std::int64_t g = sqlite3_column_int64(st_gen.get(), 0);
  const int f = sqlite3_column_int(st_gen.get(), 1);
  if (f != kFormat && f != kFormatNoFreeTable) {
    throw SqlError{SQLITE_ERROR, "forein: " + name + ": unsupported format " + std::to_string(f)};
  }
  format = f;
  return g;
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

// A page image as stored: latch word 0, CRC32C in bytes 8..12. In format
// 3 a free page (magic 0) is stored as an empty BLOB and listed in
// <name>_free, and any other page is taken off that list (unless it is
// above free_bound, so never on it), in the same transaction; format 2
// stores the free page's image.
void Table::write_page(PageId id, std::int64_t page_gen) {
  const std::byte* p = tree->store().page(id);
  const bool listed = format == kFormat;
  sqlite3_bind_int64(st_write.get(), 1, id);
  sqlite3_bind_int64(st_write.get(), 2, page_gen);
  thread_local PageImage img;
  const bool free_page = listed && is_free_image(p);
  if (free_page) {
    sqlite3_bind_zeroblob(st_write.get(), 3, 0);
  } else {
    // Only the latch word is zeroed; the rest is copied (no fill first).
    img.resize(page_size);
    std::memset(img.data(), 0, kPageMagicOffset);
    std::memcpy(img.data() + kPageMagicOffset, p + kPageMagicOffset, page_size - kPageMagicOffset);
    put_le32(img.data() + kPageChecksumOffset, page_crc(img.data(), page_size));
    sqlite3_bind_blob(st_write.get(), 3, img.data(), static_cast<int>(img.size()), SQLITE_STATIC);
  }
  st_write.step();
  sqlite3_clear_bindings(st_write.get());
  if (listed && (free_page || id < free_bound)) {
    prepare_free_statements(*this);
    Stmt& st = free_page ? st_free_add : st_free_del;
    sqlite3_bind_int64(st.get(), 1, id);
    st.step();
  }
  ++pages_written;
}

namespace {

// Checks one stored page (size, checksum) and copies it into `frame`. An
// empty BLOB is a free page (format 3).
void check_page(const Table& t, sqlite3_int64 id, const void* blob, int n, std::byte* frame) {
  if (n == 0) {
    std::memset(frame, 0, t.page_size);
    return;
  }
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
  hints.note_fetched(id);  // the hint path learns the pages descents read
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

// The free pages are those stored free below max(id) + 1 and every id
// from there to `count` (pages allocated in memory but never written, e.g.
// by a rolled-back transaction). Runs before the first allocation or free
// after an open or refresh, not at open. The format is read again first:
// another connection may have converted the table, or a rollback undone
// our conversion.
std::vector<PageId> Table::stored_free_pages(PageId count) {
  read_meta();
  const PageId stored = stored_page_count();
  std::vector<PageId> ids = stored_free_below(stored);
  std::erase_if(ids, [count](PageId id) { return id >= count; });
  for (PageId id = std::max<PageId>(stored, 1); id < count; ++id) ids.push_back(id);
  return ids;
}

// Format 3: the ids in <name>_free; no page is read. Format 2: free pages
// keep a zero-magic image in <name>_pages (or none at all), so this reads
// every stored page (counted in pages_read); inside a write transaction,
// before its write-back, the result is kept for the transaction (the
// stored pages do not change until xSync) and becomes <name>_free at its
// commit (prepare_write_back).
std::vector<PageId> Table::stored_free_below(PageId stored) {
  std::vector<PageId> ids;
  if (format == kFormat) {
    prepare_free_statements(*this);
    const StmtReset reset(st_free_ids);
    while (st_free_ids.step()) {
      const sqlite3_int64 id = sqlite3_column_int64(st_free_ids.get(), 0);
      if (id > 0 && id < stored) ids.push_back(static_cast<PageId>(id));
    }
    return ids;
  }
  const bool keep = txn.active && !txn.wrote;
  if (keep && txn.scanned_free) return *txn.scanned_free;
  Stmt q(db, "SELECT id, substr(page, " + std::to_string(kPageMagicOffset + 1) +
                 ", 4) = x'00000000' FROM " + pages_table() + " ORDER BY id");
  PageId next = 1;  // page 0 is the meta page
  while (q.step()) {
    ++pages_read;
    const sqlite3_int64 id = sqlite3_column_int64(q.get(), 0);
    if (id < next || id >= stored) continue;
    for (; next < id; ++next) ids.push_back(next);  // not stored
    if (sqlite3_column_int(q.get(), 1) != 0) ids.push_back(static_cast<PageId>(id));
    next = static_cast<PageId>(id) + 1;
  }
  for (; next < stored; ++next) ids.push_back(next);
  if (keep) txn.scanned_free = ids;
  return ids;
}

// Format 2 -> 3, inside the committing transaction (xSync, before the
// pages are written): only when this transaction scanned the free pages
// before any write-back, so the conversion reads nothing more. The pages
// written next then keep <name>_free up to date (write_page). A table
// named <name>_free that is not ours keeps the table in format 2.
namespace {

// Whether an object of that name (any case) exists in the table's schema.
bool name_taken(const Table& t, const std::string& object) {
  Stmt q(t.db, "SELECT 1 FROM " + quote_ident(t.schema) + ".sqlite_schema WHERE name = ?1 COLLATE NOCASE");
  sqlite3_bind_text(q.get(), 1, object.data(), static_cast<int>(object.size()), SQLITE_TRANSIENT);
  return q.step();
}

}  // namespace

void Table::ensure_gen_index() {
  if (gen_index_checked) return;
  gen_index_checked = true;
  const std::string pages = name + "_pages";
  Stmt has(db, "SELECT 1 FROM " + quote_ident(schema) + ".sqlite_schema AS s, pragma_index_info(s.name, ?2) AS i " +
                   "WHERE s.type = 'index' AND s.tbl_name = ?1 AND i.seqno = 0 AND i.name = 'gen'");
  sqlite3_bind_text(has.get(), 1, pages.data(), static_cast<int>(pages.size()), SQLITE_TRANSIENT);
  sqlite3_bind_text(has.get(), 2, schema.data(), static_cast<int>(schema.size()), SQLITE_TRANSIENT);
  if (has.step()) return;
  for (int n = 1; n <= 100; ++n) {
    const std::string index = pages + "_gen" + (n > 1 ? std::to_string(n) : "");
    if (name_taken(*this, index)) continue;
    // Prepared statements see the schema change and are planned again, so
    // st_changed_ids uses the index from its next step on.
    exec(db, "CREATE INDEX " + quote_ident(schema) + "." + quote_ident(index) + " ON " + quote_ident(pages) +
                 "(gen)");
    return;
  }
}

void Table::prepare_write_back() {
  ensure_gen_index();
  read_meta();
  // Every id listed in <name>_free has a row (written together), so none
  // is at or above max(id) + 1: new pages written need no delete.
  free_bound = stored_page_count();
  std::optional<std::vector<PageId>> scanned = std::move(txn.scanned_free);
  txn.scanned_free.reset();
  if (format == kFormat || !scanned || txn.wrote) return;
  if (name_taken(*this, name + "_free")) return;
  exec(db, "CREATE TABLE " + free_table() + "(id INTEGER PRIMARY KEY)");
  {
    Stmt add(db, "INSERT INTO " + free_table() + "(id) VALUES (?1)");
    for (PageId id : *scanned) {
      sqlite3_bind_int64(add.get(), 1, id);
      add.step();
    }
  }
  // Free pages (zero-magic images, or not stored at all) become empty
  // rows, with this commit's gen like any page it writes.
  exec(db, "INSERT OR REPLACE INTO " + pages_table() + "(id, gen, page) SELECT id, " +
               std::to_string(gen + 1) + ", x'' FROM " + free_table());
  exec(db, "UPDATE " + meta_table() + " SET format = " + std::to_string(kFormat) + " WHERE id = 0");
  format = kFormat;
  st_free_ids = Stmt();  // prepared again, on the new table
  st_free_add = Stmt();
  st_free_del = Stmt();
}

namespace {

[[noreturn]] void free_list_corrupt(const Table& t, PageId id, const std::string& what,
                                    std::size_t more) {
  std::string msg = "forein: " + t.name + ": page " + std::to_string(id) + " " + what;
  if (more > 0) msg += " (and " + std::to_string(more) + " more page" + (more > 1 ? "s" : "") + ")";
  throw CorruptionError(msg);
}

}  // namespace

void Table::check_free_list(bool in_memory) {
  ShadowPageStore& s = store();
  const PageId count = s.page_count();
  read_meta();
  const PageId stored = stored_page_count();
  const std::string free_name = name + "_free";

  // Reachable: the meta page and every live node (tree->check() has
  // verified that the levels' right-link chains are the downlinks).
  constexpr std::uint8_t kReachable = 1, kStoredFree = 2, kStored = 4;
  std::vector<std::uint8_t> state(count, 0);
  std::vector<std::uint16_t> level(count, 0);
  if (count > 0) state[0] = kReachable;
  tree->for_each_node([&](const NodeInterval& iv) {
    if (iv.node == kNoPage || iv.node >= count) {
      throw CorruptionError("forein: " + name + ": node page " + std::to_string(iv.node) +
                            " is outside the table's " + std::to_string(count) + " pages");
    }
    if (state[iv.node] & kReachable) {
      throw CorruptionError("forein: " + name + ": page " + std::to_string(iv.node) +
                            " is reached twice");
    }
    state[iv.node] |= kReachable;
    level[iv.node] = iv.level;
  });
  {
    Stmt q(db, "SELECT id FROM " + pages_table());
    while (q.step()) {
      const sqlite3_int64 id = sqlite3_column_int64(q.get(), 0);
      if (id >= 0 && id < count) state[id] |= kStored;
    }
  }
  for (PageId id : stored_free_below(stored)) {
    if (id < count) state[id] |= kStoredFree;
  }
  for (PageId id = std::max<PageId>(stored, 1); id < count; ++id) state[id] |= kStoredFree;

  // Each page is reachable or free, not both. During a transaction that
  // changed the table the pages in memory are the truth (as for the
  // engine's free list: a resident frame with magic 0 is free).
  PageId first_both = kNoPage, first_neither = kNoPage;
  std::size_t both = 0, neither = 0;
  for (PageId id = 1; id < count; ++id) {
    const bool reachable = (state[id] & kReachable) != 0;
    const bool free = in_memory && s.resident(id) ? is_free_image(s.page(id))
                                                  : (state[id] & kStoredFree) != 0;
    if (reachable && free) {
      if (both++ == 0) first_both = id;
    } else if (!reachable && !free) {
      if (neither++ == 0) first_neither = id;
    }
  }
  const std::string listed = format == kFormat ? "listed in " + name + "_free"
                                                : "a zero-magic or missing image in " + name + "_pages";
  if (both > 0) {
    free_list_corrupt(*this, first_both,
                      "is both free (" + listed + ") and reachable from the tree (a level-" +
                          std::to_string(level[first_both]) + " node)",
                      both - 1);
  }
  if (neither > 0) {
    std::string what = "is neither reachable from the tree nor free (not " + listed;
    if ((state[first_neither] & kStored) == 0) what += "; not stored";
    free_list_corrupt(*this, first_neither, what + "): a leaked page", neither - 1);
  }

  if (format == kFormat) {
    // <name>_free against <name>_pages: every listed page is stored, below
    // max(id) + 1, as an empty BLOB (a zero-magic image would do too).
    Stmt q(db, "SELECT f.id, p.id IS NULL, length(p.page) > 0 AND substr(p.page, " +
                   std::to_string(kPageMagicOffset + 1) + ", 4) <> x'00000000' FROM " + free_table() +
                   " AS f LEFT JOIN " + pages_table() + " AS p ON p.id = f.id ORDER BY f.id");
    while (q.step()) {
      const sqlite3_int64 id = sqlite3_column_int64(q.get(), 0);
      if (id < 1 || id >= stored) {
        throw CorruptionError("forein: " + free_name + " lists page " + std::to_string(id) +
                              ", not a stored page above the meta page (max(id) is " +
                              std::to_string(static_cast<std::int64_t>(stored) - 1) + ")");
      }
      if (sqlite3_column_int(q.get(), 1) != 0) {
        free_list_corrupt(*this, static_cast<PageId>(id), "is listed in " + free_name + " but not stored", 0);
      }
      if (sqlite3_column_int(q.get(), 2) != 0) {
        free_list_corrupt(*this, static_cast<PageId>(id),
                          "is listed in " + free_name + " but its stored image is a node", 0);
      }
    }
  }
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
// The hint path keeps what it knows of the other pages: it is told which
// ones changed underneath (hints.cc).
void Table::refresh(bool foreign, std::int64_t new_gen) {
  detach_scans();  // their rows may view frames about to change
  ShadowPageStore& s = store();
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
      hints.note_replaced(id);
    }
  }
  s.grow(stored_page_count());
  for (const auto& [id, image] : pending) {
    hints.note_replaced(id);
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
  tree->reload();
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
