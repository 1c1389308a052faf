// The shadow-table page store: each table's pages live in <name>_pages and
// its format data and change counter in <name>_meta, so SQLite's pager
// makes every page write atomic and durable. The tree is loaded whole from
// <name>_pages, dirty pages are written back inside each change, and
// <name>_meta.gen tells a connection when to reload.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
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

void ShadowPageStore::sync() {
  std::vector<PageId> ids;
  drain_dirty([&ids](PageId id) { ids.push_back(id); });
  std::sort(ids.begin(), ids.end());
  std::vector<std::byte> img(page_size());
  for (PageId id : ids) {
    const std::byte* p = page(id);
    std::memset(img.data(), 0, kPageMagicOffset);
    std::memcpy(img.data() + kPageMagicOffset, p + kPageMagicOffset,
                page_size() - kPageMagicOffset);
    put_le32(img.data() + kPageChecksumOffset, page_crc(p, page_size()));
    writer_(id, img.data(), img.size());
  }
}

void Table::prepare() {
  st_gen = Stmt(db, "SELECT gen FROM " + meta_table() + " WHERE id = 0");
  st_bump = Stmt(db, "UPDATE " + meta_table() + " SET gen = gen + 1 WHERE id = 0");
  st_write = Stmt(db, "INSERT OR REPLACE INTO " + pages_table() + "(id, page) VALUES (?, ?)");
}

ShadowPageStore::Writer Table::writer() {
  return [this](PageId id, const std::byte* p, std::size_t n) {
    sqlite3_bind_int64(st_write.get(), 1, id);
    sqlite3_bind_blob(st_write.get(), 2, p, static_cast<int>(n), SQLITE_STATIC);
    st_write.step();
    sqlite3_clear_bindings(st_write.get());
  };
}

void Table::fold_stats() {
  if (!tree) return;
  const TreeStats s = tree->stats();
  base_hint_hits += s.hint_hits;
  base_fallbacks += s.fallbacks;
  base_hinted += s.hinted;
}

void Table::mark_stale() {
  fold_stats();
  tree.reset();
  gen = -1;
  bumped = false;
}

std::int64_t Table::read_gen() {
  if (!st_gen.step()) throw SqlError{SQLITE_CORRUPT, "forein: " + name + "_meta has no row"};
  const std::int64_t g = sqlite3_column_int64(st_gen.get(), 0);
  st_gen.reset();
  return g;
}

// Loads every page from the shadow table and opens the tree on them.
void Table::load(std::int64_t g) {
  fold_stats();
  tree.reset();
  auto store = std::make_unique<ShadowPageStore>(page_size, writer());
  Stmt q(db, "SELECT id, page FROM " + pages_table() + " ORDER BY id");
  while (q.step()) {
    const sqlite3_int64 id = sqlite3_column_int64(q.get(), 0);
    const void* blob = sqlite3_column_blob(q.get(), 1);
    const int n = sqlite3_column_bytes(q.get(), 1);
    if (id < 0 || id >= (std::int64_t{1} << 24)) {
      throw CorruptionError("forein: " + name + "_pages: page id " + std::to_string(id) + " out of range");
    }
    if (n != static_cast<int>(page_size)) {
      throw CorruptionError("forein: " + name + "_pages: page " + std::to_string(id) + " has " +
                            std::to_string(n) + " bytes, expected " + std::to_string(page_size));
    }
    const auto pid = static_cast<PageId>(id);
    if (pid >= store->page_count()) store->grow(pid + 1);
    std::byte* frame = store->page(pid);
    std::memcpy(frame, blob, page_size);
    const std::uint32_t stored = get_le32(frame + kPageChecksumOffset);
    if (stored != page_crc(frame, page_size) && !(stored == 0 && all_zero(frame, page_size))) {
      throw CorruptionError("forein: " + name + "_pages: page " + std::to_string(id) +
                            ": checksum mismatch");
    }
    std::memset(frame, 0, kPageLatchBytes);
  }
  if (store->page_count() == 0) throw CorruptionError("forein: " + name + "_pages is empty");
  store->finish_load();
  hints.clear();
  TreeOptions opts;
  opts.observer = &hints;
  tree = std::shared_ptr<Tree>(Tree::open(std::move(store), opts));
  tree->for_each_node([this](const NodeInterval& iv) {
    if (iv.level == 0) hints.install(iv);
  });
  gen = g;
  ++reloads;
}

// Makes `tree` reflect the database's current contents.
void Table::ensure_fresh() {
  const std::int64_t g = read_gen();
  if (tree && g == gen) return;
  load(g);
}

// Before a change: fresh tree, gen bumped on every change. Bumping per
// change (not per transaction) means any rollback SQLite performs on the
// shadow tables (statement, savepoint or transaction) leaves a gen that
// differs from the cached one, so the tree is reloaded even if no
// xRollback/xRollbackTo reached us.
void Table::begin_write() {
  ensure_fresh();
  st_bump.step();
  gen += 1;
}

}  // namespace forein::sqlite
