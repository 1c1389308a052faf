// Tree construction and descent with hint validation (point lookups:
// tree_get.cc).
#include <climits>
#include <functional>
#include <thread>

#include "tree_impl.h"

namespace forein {

using detail::LatchedPage;
using detail::Node;
using detail::OpCounters;
using detail::OptNode;
using detail::SearchKey;
using detail::Walk;

Tree::Impl::Impl(std::unique_ptr<PageStore> store, TreeOptions options)
    : store_(std::move(store)), options_(options), page_size_(store_->page_size()) {
  if (options_.bulk_fill_percent < 10 || options_.bulk_fill_percent > 100) {
    throw InvalidArgument("forein: bulk_fill_percent must be between 10 and 100");
  }
  // Pages an on-demand store reads from its source, or overwrites, reach
  // the search-window table as the tree's own writes do.
  store_->set_frame_observer(
      [this](PageId id, const std::byte* frame) { leaf_windows_.record(id, frame); });
}

void Tree::Impl::create_empty() {
  if (store_->page_count() != 0) {
    throw InvalidArgument("forein: Tree::create needs an empty page store; use Tree::open");
  }
  const PageId meta = store_->allocate();
  LatchedPage m(store_->page(meta), page_size_, meta);
  detail::store(store_->page(meta), detail::off::kMagic, detail::kMetaMagic);
  m.release();

  LatchedPage leaf;
  const PageId root = allocate_node(&leaf);
  leaf.node().init(0, leaf.node().version() + 1, "", std::nullopt, kNoPage, kNoPage);
  const NodeInterval interval = interval_of(leaf.node(), root);
  leaf.release();
  root_ = root;
  height_ = 1;
  append_leaf_ = kNoPage;
  write_meta();
  emit(NodeEventKind::kCreated, interval);
}

void Tree::Impl::open_existing() {
  std::byte* m = store_->page(0);
  if (m == nullptr || detail::load<std::uint32_t>(m, detail::off::kMagic) != detail::kMetaMagic) {
    throw CorruptionError("forein: page 0 is not a forein tree meta page (bad magic)");
  }
  namespace mf = detail::meta;
  if (const auto format = detail::load<std::uint32_t>(m, mf::kFormat);
      format < mf::kOldestFormatVersion || format > mf::kFormatVersion) {
    throw CorruptionError("forein: page 0: unsupported tree format version " +
                          std::to_string(format) + " (this build reads " +
                          std::to_string(mf::kOldestFormatVersion) + " to " +
                          std::to_string(mf::kFormatVersion) + ")");
  }
  if (detail::load<std::uint32_t>(m, mf::kPageSize) != page_size_) {
    throw CorruptionError("forein: page 0: tree page size differs from the store's");
  }
  const auto root = detail::load<PageId>(m, mf::kRoot);
  const auto height = detail::load<std::uint16_t>(m, mf::kHeight);
  if (root == kNoPage || root >= store_->page_count() || height == 0 ||
      height > detail::kMaxLevels) {
    throw CorruptionError("forein: page 0: root page or height out of range");
  }
  Node r(store_->page(root), page_size_);
  if (!r.is_node() || r.level() != height - 1) {
    throw CorruptionError("forein: page " + std::to_string(root) +
                          ": root is not a node of the recorded height");
  }
  root_ = root;
  height_ = height;
  append_leaf_ = kNoPage;  // pages may have changed under a reload
  size_ = detail::load<std::uint64_t>(m, mf::kKeyCount);
  // Writes create nodes in the current layout, which older builds cannot
  // read: the first write marks the tree with the current format.
  old_format_ = detail::load<std::uint32_t>(m, mf::kFormat) < mf::kFormatVersion;
  // Nodes merged away before the last sync are unreachable: free them; the
  // others' search windows are recorded. An on-demand store is not scanned
  // (that would read every page): its host syncs before writing pages
  // back, and sync frees merged nodes; its frames reach the window table
  // as they are read or overwritten.
  if (store_->on_demand()) return;
  leaf_windows_.clear();
  for (PageId id = 1; id < store_->page_count(); ++id) {
    std::byte* page = store_->page(id);
    Node n(page, page_size_);
    if (n.is_node() && n.dead()) {
      detail::store<std::uint32_t>(page, detail::off::kMagic, 0);
      store_->mark_dirty(id);
      store_->free(id);
    }
    leaf_windows_.record(id, page);
  }
}

void Tree::Impl::upgrade_format() {
  std::lock_guard<std::mutex> lock(root_mu_);
  if (!old_format_.load()) return;
  write_meta();
  old_format_.store(false);
}

void Tree::Impl::write_meta() {
  namespace mf = detail::meta;
  std::byte* m = store_->page(0);
  LatchedPage latched(m, page_size_, 0);
  detail::store(m, mf::kFormat, mf::kFormatVersion);
  detail::store(m, mf::kPageSize, page_size_);
  detail::store(m, mf::kRoot, root_.load());
  detail::store(m, mf::kHeight, height_.load());
  detail::store(m, mf::kKeyCount, size_.load());
  store_->mark_dirty(0);
}

LatchedPage Tree::Impl::latch(PageId id) {
  std::byte* page = store_->page(id);
  if (page == nullptr || id == 0) {
    throw CorruptionError("forein: link to page " + std::to_string(id) +
                          " outside the tree's pages");
  }
  return LatchedPage(page, page_size_, id, &leaf_windows_);
}

OptNode Tree::Impl::read_root(OpCounters& c) const {
  OptNode n;
  for (;;) {
    const PageId root = root_.load(std::memory_order_acquire);
    if (!read_begin(root, n)) throw CorruptionError("forein: root page outside the tree's pages");
    // The version must be taken while the page is still the root. A root
    // replaced, retired and reclaimed between the load and read_begin is
    // a free page with a stable version: nothing later would tell the
    // reader (a child's version is checked against its parent's, the
    // root's against nothing but this).
    if (root_.load(std::memory_order_acquire) == root) break;
  }
  ++c.nodes_visited;
  return n;
}

Walk Tree::Impl::link_outside(const OptNode& n, PageId to) const {
  if (!valid(n)) return Walk::kRestart;
  throw CorruptionError("forein: page " + std::to_string(n.id) + " links page " +
                        std::to_string(to) + ", outside the tree's pages");
}

namespace {

// An operation that restarts this often is not racing writers: the links
// it follows must form a loop.
constexpr std::uint64_t kMaxRestarts = std::uint64_t{1} << 22;

auto right_of(const SearchKey& k) {
  return [&k](const Node& v) { return v.dead() || !v.below_hi(k); };
}
auto child_for(const SearchKey& k) {
  return [&k](const Node& v) { return v.child_at(v.child_index(k)); };
}

}  // namespace

void Tree::Impl::count_restart(OpCounters& c, const OpCounters& saved) const {
  const std::uint64_t restarts = c.restarts + 1;
  c = saved;
  c.restarts = restarts;
  if (restarts - saved.restarts >= kMaxRestarts) {
    throw CorruptionError("forein: an operation restarted " + std::to_string(restarts) +
                          " times; the tree's links form a loop");
  }
}

bool Tree::Impl::try_hint(const Hint& h, const SearchKey& k, OptNode& n, OpCounters& c,
                          bool* restart) const {
  if (!read_begin(h.node, n)) return false;
  ++c.nodes_visited;
  const Node v = n.node;
  // The page may be free, reused, of another level or another range: any
  // mismatch means the hint is stale, never that the tree is bad.
  const bool fits = v.is_node() && !v.dead() && v.level() == h.level && v.above_lo(k);
  if (!valid(n)) {
    *restart = true;
    return false;
  }
  if (!fits) return false;
  const Walk w = step_right(n, right_of(k), c, detail::kMaxHintMoveRights);
  *restart = w == Walk::kRestart;
  return w == Walk::kOk;
}

OptNode Tree::Impl::locate(const SearchKey& k, const StartHints* hints, std::uint16_t level,
                           detail::Path* path, OpCounters& c) const {
  for (;;) {
    const OpCounters saved = c;
    OptNode n;
    bool started = false, restart = false;
    if (hints != nullptr) {
      if (hints->primary.present()) ++c.hinted;
      for (const Hint* h : {&hints->primary, &hints->secondary}) {
        if (!h->present() || h->level >= detail::kMaxLevels || h->level < level) continue;
        started = try_hint(*h, k, n, c, &restart);
        if (restart) break;
        if (started) {
          ++(h == &hints->primary ? c.hint_hits : c.secondary_hits);
          break;
        }
      }
      if (!started && !restart && hints->primary.present()) ++c.fallbacks;
    }
    if (!restart) {
      if (!started) {
        n = read_root(c);
      }
      if (walk_down(n, level, right_of(k), child_for(k), path, c) == Walk::kOk) return n;
    }
    count_restart(c, saved);
  }
}

bool Tree::Impl::locate_leaf_fast(const SearchKey& k, const StartHints* hints, OptNode& n,
                                  OpCounters& c) const {
  if (hints != nullptr) {
    const Hint& h = hints->primary;
    if (!h.present() || h.level != 0) return false;
    if (!read_begin(h.node, n)) return false;
    const Node v = n.node;
    if (!v.is_node() || v.dead() || v.level() != 0 || !v.above_lo(k) || !v.below_hi(k) ||
        !valid(n)) {
      return false;
    }
    ++c.hinted;
    ++c.hint_hits;
    ++c.nodes_visited;
    return true;
  }
  if (!read_begin(root_.load(std::memory_order_acquire), n)) return false;
  std::uint64_t visited = 1;
  for (;;) {
    const Node v = n.node;
    if (!v.is_node() || v.dead() || !v.below_hi(k)) return false;
    const std::uint16_t level = v.level();
    if (level == 0) break;
    OptNode child;
    if (!read_begin(v.child_at(v.child_index(k)), child) || !valid(n) ||
        child.node.level() >= level) {
      return false;
    }
    n = child;
    ++visited;
  }
  c.nodes_visited += visited;
  return true;
}

LatchedPage Tree::Impl::lock_covering(const SearchKey& k, const StartHints* hints,
                                      std::uint16_t level, detail::Path* path, OpCounters& c) {
  for (;;) {
    const OpCounters saved = c;
    const OptNode n = locate(k, hints, level, path, c);
    LatchedPage p = latch(n.id);
    // Unchanged since the optimistic read: what it saw (this node covers
    // k) still holds.
    if (p.locked_version() == n.version) return p;
    // Changed in between: check again under the latch, moving right as a
    // B-link tree allows, or start over.
    for (int steps = 0;; ++steps) {
      const Node v = p.node();
      if (!v.is_node() || v.level() != level || (steps == 0 && !v.above_lo(k))) break;
      if (!v.dead() && v.below_hi(k)) return p;
      const PageId right = v.right();
      if (right == kNoPage) break;
      p.release_unchanged();
      p = latch(right);
      ++c.move_rights;
      ++c.nodes_visited;
    }
    p.release_unchanged();
    count_restart(c, saved);
  }
}

LatchedPage Tree::Impl::find_at_level(const SearchKey& k, std::uint16_t level, PageId hint) {
  OpCounters ignored;
  const StartHints hints{Hint{hint, level, 0}, Hint{}};
  return lock_covering(k, hint != kNoPage ? &hints : nullptr, level, nullptr, ignored);
}

void Tree::Impl::check_sizes(std::string_view key, std::string_view value) const {
  const std::size_t max_key = page_size_ / 16, max_value = page_size_ / 8;
  if (key.size() > max_key) {
    throw InvalidArgument("forein: key of " + std::to_string(key.size()) +
                          " bytes exceeds the maximum of " + std::to_string(max_key) +
                          " bytes for " + std::to_string(page_size_) + "-byte pages");
  }
  if (value.size() > max_value) {
    throw InvalidArgument("forein: value of " + std::to_string(value.size()) +
                          " bytes exceeds the maximum of " + std::to_string(max_value) +
                          " bytes for " + std::to_string(page_size_) + "-byte pages");
  }
}

NodeInterval Tree::Impl::interval_of(const Node& n, PageId id) const {
  NodeInterval iv;
  iv.index = options_.index_id;
  iv.node = id;
  iv.level = n.level();
  iv.version = n.version();
  // forein/word.h's interval rule; the leftmost node's lo is the empty key,
  // which owns word 0. A lo past the end gives the empty interval.
  const std::string_view lo = n.lo();
  const bool has_hi = !n.hi_inf();
  const std::string_view hi = has_hi ? n.hi() : std::string_view();
  const ForeinWordInterval w =
      forein_word_interval(true, word_of(lo), forein_word_bytes_own_word(lo.data(), lo.size()), has_hi,
                           word_of(hi), forein_word_bytes_own_word(hi.data(), hi.size()));
  iv.lo = w.lo;
  iv.hi = w.hi;
  iv.hi_inf = w.hi_inf;
  return iv;
}

void Tree::Impl::emit(NodeEventKind kind, const NodeInterval& interval) {
  if (options_.observer != nullptr) options_.observer->on_node_event({kind, interval});
}

// ---- public API ----

Tree::Tree(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tree::~Tree() = default;

std::unique_ptr<Tree> Tree::create(std::unique_ptr<PageStore> store, TreeOptions options) {
  auto impl = std::make_unique<Impl>(std::move(store), options);
  impl->create_empty();
  return std::unique_ptr<Tree>(new Tree(std::move(impl)));
}

std::unique_ptr<Tree> Tree::open(std::unique_ptr<PageStore> store, TreeOptions options) {
  auto impl = std::make_unique<Impl>(std::move(store), options);
  impl->open_existing();
  return std::unique_ptr<Tree>(new Tree(std::move(impl)));
}

bool Tree::put(std::string_view key, std::string_view value, const StartHints* hints) {
  const bool added = impl_->put(key, value, hints);
  if (added) impl_->keys_changed();
  return added;
}

bool Tree::insert(std::string_view key, std::string_view value, const StartHints* hints) {
  const bool added = impl_->put(key, value, hints, false);
  if (added) impl_->keys_changed();
  return added;
}

bool Tree::erase(std::string_view key, const StartHints* hints) {
  const bool erased = impl_->erase(key, hints);
  if (erased) impl_->keys_changed();
  return erased;
}

// locate_leaf_fast()'s root descent, stopping one level above the leaves:
// the leaf's page is prefetched, not read. Every node is read under its
// optimistic version and the walk stops at the first one that changed;
// the pages themselves never go away (page_store.h), and Node's readers
// clamp what a torn read yields, so nothing here can fault.
void Tree::prefetch(std::string_view key) const {
  const SearchKey k(key);
  OptNode n;
  if (!impl_->read_begin(impl_->root_.load(std::memory_order_acquire), n)) return;
  for (std::size_t depth = 0; depth < detail::kMaxLevels; ++depth) {
    const Node v = n.node;
    if (!v.is_node() || v.dead() || !v.below_hi(k) || v.level() == 0) return;
    const std::uint16_t level = v.level();
    const PageId child = v.child_at(v.child_index(k));
    if (!impl_->valid(n)) return;
    if (level == 1) {
      if (const std::byte* leaf = impl_->store_->page(child)) __builtin_prefetch(leaf);
      return;
    }
    OptNode next;
    if (!impl_->read_begin(child, next) || !impl_->valid(n)) return;
    n = next;
  }
}

Hint Tree::Impl::leaf_hint(const SearchKey& k, const StartHints* hints, OpCounters& c) const {
  for (;;) {
    const OpCounters saved = c;
    const OptNode leaf = locate(k, hints, 0, nullptr, c);
    const Hint h{leaf.id, 0, leaf.node.version()};
    if (valid(leaf)) return h;
    count_restart(c, saved);
  }
}

Hint Tree::leaf_for(std::string_view key) {
  OpCounters c;
  return impl_->leaf_hint(SearchKey(key), nullptr, c);
}

Hint Tree::start_leaf(std::string_view key, const StartHints* hints) {
  OpCounters c;
  const Hint h = impl_->leaf_hint(SearchKey(key), hints, c);
  impl_->publish(c);
  return h;
}

std::uint64_t Tree::size() const { return impl_->size_.load(std::memory_order_relaxed); }
std::uint64_t Tree::key_generation() const {
  return impl_->key_generation_.load(std::memory_order_acquire);
}
std::uint16_t Tree::height() const { return impl_->height_.load(std::memory_order_relaxed); }
std::size_t Tree::max_key_size() const { return impl_->page_size_ / 16; }
std::size_t Tree::max_value_size() const { return impl_->page_size_ / 8; }
PageStore& Tree::store() { return *impl_->store_; }

TreeStats Tree::stats() const {
  TreeStats t;
  const std::size_t used = detail::EpochManager::instance().slots_used();
  for (std::size_t i = 0; i < used; ++i) {
    const auto& s = impl_->counters_[i];
    t.operations += s.operations.load(std::memory_order_relaxed);
    t.hinted += s.hinted.load(std::memory_order_relaxed);
    t.hint_hits += s.hint_hits.load(std::memory_order_relaxed);
    t.secondary_hits += s.secondary_hits.load(std::memory_order_relaxed);
    t.fallbacks += s.fallbacks.load(std::memory_order_relaxed);
    t.move_rights += s.move_rights.load(std::memory_order_relaxed);
    t.nodes_visited += s.nodes_visited.load(std::memory_order_relaxed);
    t.restarts += s.restarts.load(std::memory_order_relaxed);
  }
  return t;
}

// Counts made while the reset runs may survive it.
void Tree::reset_stats() {
  const std::size_t used = detail::EpochManager::instance().slots_used();
  for (std::size_t i = 0; i < used; ++i) {
    auto& s = impl_->counters_[i];
    for (auto* a : {&s.operations, &s.hinted, &s.hint_hits, &s.secondary_hits, &s.fallbacks,
                    &s.move_rights, &s.nodes_visited, &s.restarts}) {
      a->store(0, std::memory_order_relaxed);
    }
  }
}

void Tree::reload() {
  impl_->retired_.take_all();
  impl_->open_existing();
  impl_->keys_changed();
}

void Tree::sync() {
  impl_->reclaim();
  impl_->write_meta();
  impl_->store_->sync();
}

const char* to_string(NodeEventKind kind) {
  switch (kind) {
    case NodeEventKind::kCreated: return "created";
    case NodeEventKind::kSplit: return "split";
    case NodeEventKind::kDeleted: return "deleted";
    case NodeEventKind::kRangeChanged: return "range_changed";
  }
  return "unknown";
}

}  // namespace forein
