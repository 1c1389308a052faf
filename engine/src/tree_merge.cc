// Deletes, and merging of underfull nodes into their right sibling (as in
// nbtree, a node's key range always passes to the right, so a reader that
// lands on the dead node just moves right).
#include "tree_impl.h"

namespace forein {

using detail::LatchedPage;
using detail::Node;
using detail::OpCounters;
using detail::SearchKey;

namespace {

bool underfull(const Node& n) { return n.used_bytes() < n.capacity() / 4; }

// Builds into `out` the node that holds a's entries followed by b's.
void build_merged(Node& out, const Node& a, const Node& b, PageId left) {
  std::optional<std::string_view> hi;
  if (!b.hi_inf()) hi = b.hi();
  out.init(b.level(), b.version() + 1, a.lo(), hi, left, b.right());
  for (const Node* src : {&a, &b}) {
    for (std::size_t i = 0; i < src->count(); ++i) {
      const std::string key = src->key_at(i).to_string();
      if (src->is_leaf()) {
        out.append_leaf(key, src->value_at(i));
      } else {
        out.append_inner(key, src->child_at(i));
      }
    }
  }
}

}  // namespace

bool Tree::Impl::erase(std::string_view key, const StartHints* hints) {
  if (old_format_.load(std::memory_order_relaxed)) upgrade_format();
  const SearchKey k(key);
  detail::EpochManager::Guard guard;
  OpCounters c;
  detail::Path path;
  LatchedPage leaf = lock_covering(k, hints, 0, &path, c);
  publish(c);
  Node n = leaf.node();
  const std::size_t i = n.lower_bound(k);
  if (!n.key_equals(i, k)) {
    leaf.release_unchanged();
    return false;
  }
  n.remove_at(i);
  store_->mark_dirty(leaf.id());
  size_.fetch_sub(1, std::memory_order_relaxed);
  const bool merge = underfull(n) && height_.load() > 1;
  const PageId id = leaf.id();
  leaf.release();
  if (merge) try_merge(id, 0, std::string(key));
  return true;
}

// Merges `node` (which holds `key`) with a sibling under the same parent:
// the left one of the pair dies and its entries move into the right one.
// Opportunistic: if anything changed since the caller let go of the node,
// or the pair would not fit comfortably, nothing happens.
void Tree::Impl::try_merge(PageId node, std::uint16_t level, const std::string& key) {
  if (level + 1 >= height_.load()) return;
  const SearchKey k(key);
  LatchedPage parent = find_at_level(k, level + 1, kNoPage);
  Node p = parent.node();
  const std::size_t idx = p.child_index(k);
  if (p.child_at(idx) != node) {
    parent.release_unchanged();
    return;
  }
  std::size_t a_idx;
  if (idx + 1 < p.count()) {
    a_idx = idx;
  } else if (idx > 0) {
    a_idx = idx - 1;
  } else {
    parent.release_unchanged();  // an only child has no sibling under this parent
    return;
  }
  const PageId a_id = p.child_at(a_idx), b_id = p.child_at(a_idx + 1);

  PageId n_id;
  {
    LatchedPage a = latch(a_id);
    n_id = a.node().left();
    a.release_unchanged();
  }
  // Latch order: left neighbour, dying node, absorbing node.
  LatchedPage left;
  if (n_id != kNoPage) left = latch(n_id);
  LatchedPage a = latch(a_id), b = latch(b_id);
  const Node av = a.node(), bv = b.node();
  bool linked = av.is_node() && bv.is_node() && !av.dead() && !bv.dead() &&
                av.level() == level && bv.level() == level && av.right() == b_id &&
                bv.left() == a_id && av.left() == n_id;
  if (left) {
    const Node lv = left.node();
    linked = linked && lv.is_node() && !lv.dead() && lv.right() == a_id;
  }
  // A pair merges when it fills at most 3/4 of a page (no merge-split
  // thrash), or, when one of the two is empty, whenever it fits at all:
  // an empty node beside a full one (ascending loads leave full pages)
  // would otherwise never go.
  const std::size_t pair_bytes = Node::merged_bytes(av, bv);
  const bool one_empty = av.count() == 0 || bv.count() == 0;
  if (!linked || pair_bytes > (one_empty ? av.capacity() : av.capacity() * 3 / 4)) {
    left.release_unchanged();
    a.release_unchanged();
    b.release_unchanged();
    return;
  }

  std::byte* fresh = scratch_node_page(page_size_);
  Node merged(fresh, page_size_);
  build_merged(merged, av, bv, n_id);
  detail::write_bytes(store_->page(b_id) + detail::off::kMagic, fresh + detail::off::kMagic,
                      page_size_ - detail::off::kMagic);
  Node dying = a.node();
  dying.mark_dead();  // its right link still leads to b
  dying.bump_version();
  if (left) {
    left.node().set_right(b_id);
    store_->mark_dirty(n_id);
  }
  p.remove_at(a_idx + 1);
  p.set_child_at(a_idx, b_id);
  for (PageId id : {a_id, b_id, parent.id()}) store_->mark_dirty(id);

  const NodeInterval dead_iv = interval_of(dying, a_id);
  const NodeInterval grown_iv = interval_of(b.node(), b_id);
  left.release();
  a.release();
  b.release();
  const bool parent_underfull = underfull(p) && parent.id() != root_.load();
  const PageId parent_id = parent.id();
  parent.release();
  retire(a_id);
  emit(NodeEventKind::kDeleted, dead_iv);
  emit(NodeEventKind::kRangeChanged, grown_iv);
  if (parent_underfull) try_merge(parent_id, level + 1, key);
}

}  // namespace forein
