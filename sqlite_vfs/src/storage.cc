// The shadow-table page store, read side: each table's pages live in
// <name>_pages(id, gen, page) and its format data and change counter in
// <name>_meta. A connection keeps the tree in memory; it loads every page
// once, and afterwards re-reads only what changed: the pages another
// connection committed (their gen is above the one the tree reflects) and
// the pages a rollback restores. The write side is writeback.cc.
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
}

void Table::prepare() {
  st_gen = Stmt(db, "SELECT gen FROM " + meta_table() + " WHERE id = 0");
  st_set_gen = Stmt(db, "UPDATE " + meta_table() + " SET gen = ?1 WHERE id = 0");
  st_write = Stmt(db, "INSERT OR REPLACE INTO " + pages_table() + "(id, gen, page) VALUES (?1, ?2, ?3)");
  // gen precedes the page, so the scan reads it without the BLOB's
  // overflow pages.
  st_changed = Stmt(db, "SELECT id, page FROM " + pages_table() + " WHERE gen > ?1");
  st_page = Stmt(db, "SELECT page FROM " + pages_table() + " WHERE id = ?1");
  st_max_id = Stmt(db, "SELECT max(id) FROM " + pages_table());
}

std::int64_t Table::read_gen() {
  if (!st_gen.step()) throw SqlError{SQLITE_CORRUPT, "forein: " + name + "_meta has no row"};
  const std::int64_t g = sqlite3_column_int64(st_gen.get(), 0);
  st_gen.reset();
  return g;
}

// Called before the hint source lets go of the tree.
void Table::fold_stats() {
  if (!tree) return;
  const TreeStats s = hints.own_stats();
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
  img.assign(page_size, std::byte{0});
  const std::byte* p = tree->store().page(id);
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
void read_page(const Table& t, sqlite3_int64 id, const void* blob, int n, std::byte* frame) {
  if (id < 0 || id >= (std::int64_t{1} << 24)) {
    throw CorruptionError("forein: " + t.name + "_pages: page id " + std::to_string(id) + " out of range");
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

// Opens the tree on `store` and makes it current, with a fresh hint path
// attached, or with the current one suspended (the caller resumes it).
// Nothing changes if the new tree does not open.
void Table::install(std::unique_ptr<ShadowPageStore> s, bool keep_hints) {
  if (s->page_count() == 0) throw CorruptionError("forein: " + name + "_pages is empty");
  s->finish_load();
  TreeOptions opts;
  opts.observer = &hints;
  std::shared_ptr<Tree> t(Tree::open(std::move(s), opts));
  fold_stats();
  if (keep_hints) {
    hints.suspend();
  } else {
    hints.detach();
  }
  tree = std::move(t);
  if (!keep_hints) hints.attach(*tree);
}

void Table::load_all() {
  const std::int64_t g = read_gen();
  mark_stale();
  auto s = std::make_unique<ShadowPageStore>(page_size);
  Stmt q(db, "SELECT id, page FROM " + pages_table() + " ORDER BY id");
  while (q.step()) {
    const sqlite3_int64 id = sqlite3_column_int64(q.get(), 0);
    const void* blob = sqlite3_column_blob(q.get(), 1);
    const int n = sqlite3_column_bytes(q.get(), 1);
    if (id >= 0 && id < (std::int64_t{1} << 24) && static_cast<PageId>(id) >= s->page_count()) {
      s->grow(static_cast<PageId>(id) + 1);
    }
    read_page(*this, id, blob, n, s->page(static_cast<PageId>(id)));
    ++pages_read;
  }
  install(std::move(s), false);
  gen = g;
  ++loads;
}

// Rebuilds the tree from the current pages plus those that changed: the
// pending restores and, when `foreign`, every page committed after `gen`.
// The engine caches root, height and key count and owns its store, so the
// unchanged pages are copied into a new store (a memcpy per page, no SQL,
// no checksums) rather than patched in place.
void Table::refresh(bool foreign, std::int64_t new_gen) {
  std::unordered_map<PageId, PageImage> fetched;
  // Statements are reset even when a page fails its checks.
  const StmtReset r1(st_changed), r2(st_page), r3(st_max_id);
  auto fetch_into = [&](sqlite3_stmt* st, sqlite3_int64 id, int col) {
    PageImage& img = fetched[static_cast<PageId>(id)];
    img.resize(page_size);
    read_page(*this, id, sqlite3_column_blob(st, col), sqlite3_column_bytes(st, col), img.data());
    ++pages_read;
  };
  if (foreign) {
    sqlite3_bind_int64(st_changed.get(), 1, gen);
    while (st_changed.step()) fetch_into(st_changed.get(), sqlite3_column_int64(st_changed.get(), 0), 1);
  }
  for (const auto& [id, image] : pending) {
    if (image || fetched.count(id)) continue;
    sqlite3_bind_int64(st_page.get(), 1, id);
    if (st_page.step()) fetch_into(st_page.get(), id, 0);
    st_page.reset();
  }
  PageId db_count = 0;
  if (st_max_id.step() && sqlite3_column_type(st_max_id.get(), 0) != SQLITE_NULL) {
    db_count = static_cast<PageId>(sqlite3_column_int64(st_max_id.get(), 0) + 1);
  }
  st_max_id.reset();

  const PageStore& old = tree->store();
  const PageId count = std::max(old.page_count(), db_count);
  auto s = std::make_unique<ShadowPageStore>(page_size);
  s->grow(count);
  for (PageId id = 0; id < count; ++id) {
    const std::byte* from = nullptr;
    if (auto f = fetched.find(id); f != fetched.end()) {
      from = f->second.data();
    } else if (auto p = pending.find(id); p != pending.end()) {
      from = p->second ? p->second->data() : nullptr;  // not in <name>_pages: a free page
    } else if (id < old.page_count()) {
      from = old.page(id);
    } else {
      // A committed page the gen scan missed (only possible outside a
      // transaction of ours): the counters disagree, so load everything.
      if (txn.active && !txn.touched.empty()) {
        txn.poisoned = true;
        throw CorruptionError("forein: " + name + "_pages: page " + std::to_string(id) +
                              " appeared inside our transaction");
      }
      load_all();
      return;
    }
    if (from) std::memcpy(s->page(id) + kPageLatchBytes, from + kPageLatchBytes, page_size - kPageLatchBytes);
  }
  // Only other connections' commits: the hint path keeps its manager (a
  // manager refresh scans every key); re-attaching replays every node, and
  // the manager keeps the replayed intervals that are newer than its own.
  // Pages that became free are deleted nodes; their version is not
  // visible here, so the deletion is stamped with the highest version
  // (the page is not hinted again by this manager, which costs speed only).
  const bool keep_hints = foreign && pending.empty();
  pending.clear();
  install(std::move(s), keep_hints);
  if (keep_hints) {
    std::vector<NodeEvent> events;
    for (const auto& [id, img] : fetched) {
      std::uint32_t magic;
      std::memcpy(&magic, tree->store().page(id) + kPageMagicOffset, sizeof magic);
      if (magic != 0) continue;
      NodeInterval iv;
      iv.node = id;
      iv.version = ~std::uint64_t{0};
      events.push_back({NodeEventKind::kDeleted, iv});
    }
    hints.resume(*tree, events, fetched.size());
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
}

}  // namespace forein::sqlite
