// Whole-tree operations: bulk load, the invariant checker, node listing.
#include <algorithm>

#include "tree_impl.h"

namespace forein {

using detail::LatchedPage;
using detail::Node;
using detail::OpCounters;
using detail::SearchKey;

namespace {

[[noreturn]] void corrupt(PageId id, const std::string& what) {
  throw CorruptionError("forein: page " + std::to_string(id) + ": " + what);
}

}  // namespace

// Builds one level from sorted items, left to right, and returns each new
// node's (lo, id) as the items of the level above.
std::vector<std::pair<std::string, PageId>> Tree::Impl::build_level(
    std::uint16_t level, const std::vector<BuildItem>& items, std::vector<NodeInterval>& created) {
  const bool leaf = level == 0;
  const std::size_t cap = page_size_ - detail::kHeaderSize;
  const std::size_t fill_limit = cap * options_.bulk_fill_percent / 100;
  // The node's entry bytes with item i added (LeafBytes: a leaf's layout
  // depends on its entries' shapes).
  std::size_t used = 0;
  detail::LeafBytes leaf_bytes;
  auto with = [&](std::size_t i) {
    if (leaf) return leaf_bytes.bytes_with(items[i].key.size(), items[i].value.size());
    return used + detail::entry_bytes(false, items[i].key.size(), 0);
  };

  // Plan node boundaries: [starts[j], starts[j+1]).
  std::vector<std::size_t> starts{0};
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::size_t start = starts.back();
    const std::size_t lo_len = start == 0 ? 0 : items[start].key.size();
    const std::size_t hi_len = i + 1 < items.size() ? items[i + 1].key.size() : 0;
    const bool room = with(i) + lo_len + hi_len <= cap && with(i) <= fill_limit;
    if (i > start && !room) {
      starts.push_back(i);
      used = 0;
      leaf_bytes = {};
    }
    used = with(i);
    if (leaf) leaf_bytes.add(items[i].key.size(), items[i].value.size());
  }
  starts.push_back(items.size());

  const std::size_t nodes = starts.size() - 1;
  std::vector<LatchedPage> pages(nodes);
  std::vector<PageId> ids(nodes);
  for (std::size_t j = 0; j < nodes; ++j) ids[j] = allocate_node(&pages[j]);

  // Node boundaries: leaves split between keys at the shortest separator,
  // as splits do; an inner node starts at its first child's lo.
  std::vector<std::string> bounds(nodes);
  for (std::size_t j = 1; j < nodes; ++j) {
    const std::size_t from = starts[j];
    bounds[j] = leaf ? shortest_separator(items[from - 1].key, items[from].key)
                     : std::string(items[from].key);
  }
  std::vector<std::pair<std::string, PageId>> up;
  for (std::size_t j = 0; j < nodes; ++j) {
    const std::size_t from = starts[j], to = starts[j + 1];
    const std::string_view lo = bounds[j];
    std::optional<std::string_view> hi;
    if (j + 1 < nodes) hi = bounds[j + 1];
    Node n = pages[j].node();
    n.init(level, n.version() + 1, lo, hi, j > 0 ? ids[j - 1] : kNoPage,
           j + 1 < nodes ? ids[j + 1] : kNoPage);
    for (std::size_t i = from; i < to; ++i) {
      // An inner node's first key is its lo (the empty key for the first).
      const std::string_view key = (!leaf && i == from) ? lo : items[i].key;
      if (leaf) {
        n.append_leaf(key, items[i].value);
      } else {
        n.append_inner(key, items[i].child);
      }
    }
    created.push_back(interval_of(n, ids[j]));
    up.emplace_back(std::string(lo), ids[j]);
    pages[j].release();
  }
  return up;
}

void Tree::bulk_load(const std::vector<std::pair<std::string, std::string>>& sorted) {
  Impl& t = *impl_;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    t.check_sizes(sorted[i].first, sorted[i].second);
    if (i > 0 && compare_keys(sorted[i - 1].first, sorted[i].first) >= 0) {
      throw InvalidArgument("forein: bulk_load input is not strictly ascending at entry " +
                            std::to_string(i));
    }
  }
  std::lock_guard<std::mutex> lock(t.root_mu_);
  if (t.size_.load() != 0 || t.height_.load() != 1) {
    throw InvalidArgument("forein: bulk_load needs an empty tree");
  }
  if (sorted.empty()) return;
  detail::EpochManager::Guard guard;

  std::vector<NodeInterval> created;
  std::vector<Impl::BuildItem> items;
  items.reserve(sorted.size());
  for (const auto& [k, v] : sorted) items.push_back({k, v, kNoPage});
  std::uint16_t level = 0;
  auto up = t.build_level(level, items, created);
  while (up.size() > 1) {
    items.clear();
    for (const auto& [lo, id] : up) items.push_back({lo, {}, id});
    auto next = t.build_level(++level, items, created);
    up = std::move(next);
  }

  const PageId old_root = t.root_.load();
  NodeInterval old_iv;
  {
    LatchedPage old = t.latch(old_root);
    old.node().mark_dead();
    old.node().bump_version();
    old_iv = t.interval_of(old.node(), old_root);
  }
  t.root_.store(up.front().second, std::memory_order_release);
  t.height_.store(level + 1, std::memory_order_release);
  t.size_.store(sorted.size());
  t.write_meta();
  t.keys_changed();
  t.retire(old_root);
  t.emit(NodeEventKind::kDeleted, old_iv);
  for (const NodeInterval& iv : created) t.emit(NodeEventKind::kCreated, iv);
}

void Tree::Impl::snapshot(PageId id, std::byte* buf) const {
  const std::byte* page = store_->page(id);
  if (page == nullptr || id == 0) {
    corrupt(id, "linked, but outside the tree's pages");
  }
  for (;;) {
    const std::uint64_t v = detail::PageLatch(page).read_begin();
    detail::read_bytes(page + kPageLatchBytes, page_size_ - kPageLatchBytes,
                       buf + kPageLatchBytes);
    if (detail::PageLatch(page).read_valid(v)) return;
  }
}

// Walks one level through right links, from its leftmost node, handing fn
// a consistent private copy of each node.
void Tree::Impl::walk_level(PageId leftmost, const std::function<void(PageId, const Node&)>& fn) {
  std::size_t guard = store_->page_count();
  std::vector<std::byte> copy(page_size_);
  for (PageId id = leftmost; id != kNoPage; ) {
    if (guard-- == 0) corrupt(id, "right links form a cycle");
    snapshot(id, copy.data());
    const Node n(copy.data(), page_size_);
    if (std::string err = n.layout_error(); !err.empty()) corrupt(id, err);
    fn(id, n);
    id = n.right();
  }
}

void Tree::check() {
  Impl& t = *impl_;
  detail::EpochManager::Guard guard;
  const std::uint16_t height = t.height_.load();
  PageId leftmost = t.root_.load();
  // Children expected at the next level down, in order, with their ranges.
  struct Expect {
    PageId id;
    std::string lo;
    std::optional<std::string> hi;
    PageId parent;
  };
  std::vector<Expect> expected{{leftmost, "", std::nullopt, kNoPage}};
  std::uint64_t keys = 0;
  PageId stale_window = kNoPage;  // reported after the checks of the pages' contents

  for (int level = height - 1; level >= 0; --level) {
    std::vector<Expect> children;
    std::size_t position = 0;
    PageId prev = kNoPage;
    t.walk_level(leftmost, [&](PageId id, const Node& n) {
      if (n.dead()) corrupt(id, "dead node still linked");
      if (n.level() != level) {
        corrupt(id, "level " + std::to_string(n.level()) + ", expected " + std::to_string(level) +
                        (position < expected.size() && expected[position].parent != kNoPage
                             ? " (linked from parent page " +
                                   std::to_string(expected[position].parent) + ")"
                             : std::string()));
      }
      if (n.left() != prev) {
        corrupt(id, "left link points to page " + std::to_string(n.left()) +
                        ", but the right-link chain reaches it from page " + std::to_string(prev));
      }
      if (position >= expected.size()) {
        corrupt(id, "right-link chain continues past the parent level's last downlink (from page " +
                        std::to_string(prev) + ")");
      }
      if (expected[position].id != id) {
        corrupt(id, "right-link chain from page " + std::to_string(prev) +
                        " reaches it where parent page " + std::to_string(expected[position].parent) +
                        " links page " + std::to_string(expected[position].id));
      }
      const Expect& e = expected[position++];
      const std::optional<std::string> hi =
          n.hi_inf() ? std::nullopt : std::optional<std::string>(std::string(n.hi()));
      if (n.lo() != e.lo || hi != e.hi) {
        corrupt(id, "lo/hi differ from the separators in parent page " + std::to_string(e.parent));
      }
      std::string prev_key;
      for (std::size_t i = 0; i < n.count(); ++i) {
        std::string key = n.key_at(i).to_string();
        if (i > 0 && compare_keys(prev_key, key) >= 0) corrupt(id, "keys out of order at slot " +
                                                                       std::to_string(i));
        if (compare_keys(key, n.lo()) < 0 || (hi && compare_keys(key, *hi) >= 0)) {
          corrupt(id, "key at slot " + std::to_string(i) + " outside [lo, hi)");
        }
        if (level > 0) {
          if (i == 0 && key != n.lo()) corrupt(id, "first separator differs from lo");
          std::optional<std::string> child_hi = hi;
          if (i + 1 < n.count()) child_hi = n.key_at(i + 1).to_string();
          children.push_back({n.child_at(i), key, child_hi, id});
        }
        prev_key = std::move(key);
      }
      if (level > 0 && n.count() == 0) corrupt(id, "inner node without children");
      if (level == 0) keys += n.count();
      if (level == 0 && stale_window == kNoPage && !t.leaf_windows_.matches(id, n.page())) {
        stale_window = id;
      }
      prev = id;
    });
    if (position != expected.size()) {
      corrupt(leftmost, "level " + std::to_string(level) + " has fewer nodes than downlinks");
    }
    if (level > 0) {
      leftmost = children.front().id;
      expected = std::move(children);
    }
  }
  if (keys != t.size_.load()) {
    throw CorruptionError("forein: leaves hold " + std::to_string(keys) +
                          " keys, the tree records " + std::to_string(t.size_.load()));
  }
  if (stale_window != kNoPage) {
    corrupt(stale_window, "search window entry differs from the leaf's header (a write that "
                          "bypassed the tree without reload()?)");
  }
}

void Tree::for_each_leaf_words(
    const std::function<bool(PageId leaf, std::uint64_t change)>& want,
    const std::function<void(PageId leaf, std::uint64_t change, std::span<const Word> words,
                             bool read)>& visit) {
  Impl& t = *impl_;
  detail::EpochManager::Guard guard;  // no page of the walk is reused under it
  // The leftmost leaf: the first child of the first live node of each level.
  // A node merged away meanwhile keeps its right link, so a stale child
  // still leads right to the live nodes.
  PageId id = t.root_.load();
  {
    std::vector<std::byte> copy(t.page_size_);
    std::size_t steps = 0;
    for (;;) {
      // Writers may add pages meanwhile: more steps than pages now is a cycle.
      if (++steps > t.store_->page_count()) corrupt(id, "right links form a cycle");
      t.snapshot(id, copy.data());
      const Node n(copy.data(), t.page_size_);
      if (!n.is_node()) corrupt(id, "linked, but not a node");
      if (n.dead()) {
        if (n.right() == kNoPage) corrupt(id, "a dead node ends its level");
        id = n.right();
        continue;
      }
      if (n.level() == 0) break;
      if (n.count() == 0) corrupt(id, "an inner node without children");
      id = n.child_at(0);
    }
  }
  // The leaf level through right links, each leaf read optimistically: its
  // latch version is its change count (every unlock that changed the page
  // advances it; a page fetched again gets a fresh one).
  std::vector<Word> words;
  std::size_t steps = 0;
  while (id != kNoPage) {
    detail::OptNode n;
    if (!t.read_begin(id, n)) corrupt(id, "linked, but outside the tree's pages");
    const Node& v = n.node;
    const bool leaf = v.is_node() && v.level() == 0;
    const bool dead = v.dead();
    const PageId right = v.right();
    const bool read = leaf && !dead && want(id, n.version);
    words.clear();
    if (read) {
      const std::size_t count = v.count();
      for (std::size_t i = 0; i < count; ++i) words.push_back(v.key_at(i).word);
    }
    if (!t.valid(n)) continue;  // a writer came in between: read it again
    if (!leaf) corrupt(id, "a leaf's right link leads to a page that is not a leaf");
    // Leaves split meanwhile add pages to the walk: more leaves than pages
    // now is a cycle.
    if (++steps > t.store_->page_count()) corrupt(id, "right links form a cycle");
    if (!dead) visit(id, n.version, words, read);
    id = right;
  }
}

void Tree::for_each_node(const std::function<void(const NodeInterval&)>& fn) {
  Impl& t = *impl_;
  detail::EpochManager::Guard guard;
  PageId leftmost = t.root_.load();
  for (;;) {
    PageId down = kNoPage;
    t.walk_level(leftmost, [&](PageId id, const Node& n) {
      if (n.dead()) return;
      if (down == kNoPage && n.level() > 0) down = n.child_at(0);
      fn(t.interval_of(n, id));
    });
    if (down == kNoPage) return;
    leftmost = down;
  }
}

}  // namespace forein
