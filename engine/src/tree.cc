// Tree construction, descent with hint validation, and point lookups.
#include <climits>
#include <functional>
#include <thread>

#include "tree_impl.h"

namespace forein {

using detail::LatchedPage;
using detail::Node;
using detail::OpCounters;
using detail::SearchKey;

Tree::Impl::Impl(std::unique_ptr<PageStore> store, TreeOptions options)
    : store_(std::move(store)), options_(options), page_size_(store_->page_size()) {
  if (options_.bulk_fill_percent < 10 || options_.bulk_fill_percent > 100) {
    throw InvalidArgument("forein: bulk_fill_percent must be between 10 and 100");
  }
}

void Tree::Impl::create_empty() {
  if (store_->page_count() != 0) {
    throw InvalidArgument("forein: Tree::create needs an empty page store; use Tree::open");
  }
  const PageId meta = store_->allocate();
  LatchedPage m(store_->page(meta), page_size_, meta, true);
  detail::store(store_->page(meta), detail::off::kMagic, detail::kMetaMagic);
  m.release();

  LatchedPage leaf;
  const PageId root = allocate_node(&leaf);
  leaf.node().init(0, leaf.node().version() + 1, "", std::nullopt, kNoPage, kNoPage);
  const NodeInterval interval = interval_of(leaf.node(), root);
  leaf.release();
  root_ = root;
  height_ = 1;
  write_meta();
  emit(NodeEventKind::kCreated, interval);
}

void Tree::Impl::open_existing() {
  std::byte* m = store_->page(0);
  if (m == nullptr || detail::load<std::uint32_t>(m, detail::off::kMagic) != detail::kMetaMagic) {
    throw CorruptionError("forein: page 0 is not a forein tree meta page (bad magic)");
  }
  namespace mf = detail::meta;
  if (detail::load<std::uint32_t>(m, mf::kFormat) != mf::kFormatVersion) {
    throw CorruptionError("forein: page 0: unsupported tree format version");
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
  size_ = detail::load<std::uint64_t>(m, mf::kKeyCount);
  // Nodes merged away before the last sync are unreachable: free them.
  for (PageId id = 1; id < store_->page_count(); ++id) {
    Node n(store_->page(id), page_size_);
    if (n.is_node() && n.dead()) {
      detail::store<std::uint32_t>(store_->page(id), detail::off::kMagic, 0);
      store_->mark_dirty(id);
      store_->free(id);
    }
  }
}

void Tree::Impl::write_meta() {
  namespace mf = detail::meta;
  std::byte* m = store_->page(0);
  LatchedPage latched(m, page_size_, 0, true);
  detail::store(m, mf::kFormat, mf::kFormatVersion);
  detail::store(m, mf::kPageSize, page_size_);
  detail::store(m, mf::kRoot, root_.load());
  detail::store(m, mf::kHeight, height_.load());
  detail::store(m, mf::kKeyCount, size_.load());
  store_->mark_dirty(0);
}

LatchedPage Tree::Impl::latch(PageId id, bool exclusive) {
  std::byte* page = store_->page(id);
  if (page == nullptr || id == 0) {
    throw CorruptionError("forein: link to page " + std::to_string(id) +
                          " outside the tree's pages");
  }
  return LatchedPage(page, page_size_, id, exclusive);
}

LatchedPage Tree::Impl::latch_root(bool leaf_exclusive) {
  for (;;) {
    const PageId root = root_.load(std::memory_order_acquire);
    const bool exclusive = leaf_exclusive && height_.load(std::memory_order_acquire) == 1;
    LatchedPage r = latch(root, exclusive);
    // The tree grew between reading height and latching: relatch shared.
    if (exclusive == (leaf_exclusive && r.node().level() == 0)) return r;
  }
}

bool Tree::Impl::move_right(LatchedPage& node, const SearchKey& k, OpCounters& c, int max_steps) {
  for (int steps = 0;; ++steps) {
    const Node n = node.node();
    if (!n.is_node()) {
      throw CorruptionError("forein: page " + std::to_string(node.id()) + " is not a node");
    }
    if (!n.dead() && n.below_hi(k)) return true;
    const PageId right = n.right();
    if (right == kNoPage || steps >= max_steps) {
      node.release();
      return false;
    }
    const bool exclusive = node.exclusive();
    node.release();
    node = latch(right, exclusive);
    ++c.move_rights;
    ++c.nodes_visited;
  }
}

LatchedPage Tree::Impl::start(const SearchKey& k, const StartHints* hints, bool leaf_exclusive,
                              OpCounters& c) {
  if (hints != nullptr) {
    if (hints->primary.present()) ++c.hinted;
    for (const Hint* h : {&hints->primary, &hints->secondary}) {
      if (!h->present() || h->level >= detail::kMaxLevels) continue;
      std::byte* page = store_->page(h->node);
      if (page == nullptr) continue;
      LatchedPage n(page, page_size_, h->node, leaf_exclusive && h->level == 0);
      ++c.nodes_visited;
      const Node v = n.node();
      // The page may be free, reused, of another level or another range:
      // any mismatch means the hint is stale, never that the tree is bad.
      if (!v.is_node() || v.dead() || v.level() != h->level || !v.above_lo(k)) continue;
      if (!move_right(n, k, c, detail::kMaxHintMoveRights)) continue;
      ++(h == &hints->primary ? c.hint_hits : c.secondary_hits);
      return n;
    }
    if (hints->primary.present()) ++c.fallbacks;
  }
  ++c.nodes_visited;
  return latch_root(leaf_exclusive);
}

LatchedPage Tree::Impl::descend(LatchedPage node, const SearchKey& k, bool leaf_exclusive,
                                detail::Path* path, OpCounters& c) {
  for (;;) {
    if (!move_right(node, k, c, INT_MAX)) {
      throw CorruptionError("forein: page " + std::to_string(node.id()) +
                            ": right-link chain ends below the key");
    }
    const Node n = node.node();
    if (n.level() == 0) return node;
    if (path != nullptr) path->at[n.level()] = node.id();
    const PageId child = n.child_at(n.child_index(k));
    const bool exclusive = leaf_exclusive && n.level() == 1;
    node.release();
    node = latch(child, exclusive);
    ++c.nodes_visited;
  }
}

LatchedPage Tree::Impl::find_leaf(const SearchKey& k, const StartHints* hints, bool leaf_exclusive,
                                  detail::Path* path, OpCounters& c) {
  return descend(start(k, hints, leaf_exclusive, c), k, leaf_exclusive, path, c);
}

LatchedPage Tree::Impl::find_at_level(const SearchKey& k, std::uint16_t level, PageId hint) {
  OpCounters ignored;
  LatchedPage n;
  if (hint != kNoPage) {
    n = latch(hint, true);
    const Node v = n.node();
    if (v.is_node() && !v.dead() && v.level() == level && v.above_lo(k) &&
        move_right(n, k, ignored, INT_MAX)) {
      return n;
    }
    n.release();
  }
  n = latch_root(false);
  for (;;) {
    if (n.node().level() == level && !n.exclusive()) {
      const PageId id = n.id();
      n.release();
      n = latch(id, true);
    }
    if (!move_right(n, k, ignored, INT_MAX)) {
      throw CorruptionError("forein: page " + std::to_string(n.id()) +
                            ": right-link chain ends below the key");
    }
    const Node v = n.node();
    if (v.level() == level) return n;
    if (v.level() < level) throw Error("forein: internal error: tree lower than level");
    const PageId child = v.child_at(v.child_index(k));
    const bool exclusive = v.level() - 1 == level;
    n.release();
    n = latch(child, exclusive);
  }
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

// Called inside the operation's epoch guard, which owns the thread slot.
void Tree::Impl::publish(const OpCounters& c) {
  CounterShard& s = counters_[detail::EpochManager::current_slot()];
  auto add = [](std::atomic<std::uint64_t>& a, std::uint64_t n) {
    if (n != 0) a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  };
  add(s.operations, 1);
  add(s.nodes_visited, c.nodes_visited);
  add(s.hinted, c.hinted);
  add(s.hint_hits, c.hint_hits);
  add(s.secondary_hits, c.secondary_hits);
  add(s.fallbacks, c.fallbacks);
  add(s.move_rights, c.move_rights);
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

bool Tree::get(std::string_view key, std::string* value, const StartHints* hints) {
  const SearchKey k(key);
  detail::EpochManager::Guard guard;
  OpCounters c;
  LatchedPage leaf = impl_->find_leaf(k, hints, false, nullptr, c);
  const Node n = leaf.node();
  const std::size_t i = n.lower_bound(k);
  const bool found = n.key_equals(i, k);
  if (found && value != nullptr) value->assign(n.value_at(i));
  leaf.release();
  impl_->publish(c);
  return found;
}

bool Tree::put(std::string_view key, std::string_view value, const StartHints* hints) {
  return impl_->put(key, value, hints);
}

bool Tree::erase(std::string_view key, const StartHints* hints) {
  return impl_->erase(key, hints);
}

Hint Tree::leaf_for(std::string_view key) {
  const SearchKey k(key);
  detail::EpochManager::Guard guard;
  OpCounters c;
  LatchedPage leaf = impl_->find_leaf(k, nullptr, false, nullptr, c);
  return {leaf.id(), 0, leaf.node().version()};
}

Hint Tree::start_leaf(std::string_view key, const StartHints* hints) {
  const SearchKey k(key);
  detail::EpochManager::Guard guard;
  OpCounters c;
  LatchedPage leaf = impl_->find_leaf(k, hints, false, nullptr, c);
  const Hint h{leaf.id(), 0, leaf.node().version()};
  leaf.release();
  impl_->publish(c);
  return h;
}

std::uint64_t Tree::size() const { return impl_->size_.load(std::memory_order_relaxed); }
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
  }
  return t;
}

// Counts made while the reset runs may survive it.
void Tree::reset_stats() {
  const std::size_t used = detail::EpochManager::instance().slots_used();
  for (std::size_t i = 0; i < used; ++i) {
    auto& s = impl_->counters_[i];
    for (auto* a : {&s.operations, &s.hinted, &s.hint_hits, &s.secondary_hits, &s.fallbacks,
                    &s.move_rights, &s.nodes_visited}) {
      a->store(0, std::memory_order_relaxed);
    }
  }
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
