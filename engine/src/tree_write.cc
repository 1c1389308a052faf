// Inserts, node splits, separator posting and root growth; page
// allocation and epoch-based retirement.
#include <algorithm>
#include <thread>

#include "tree_impl.h"

namespace forein {

using detail::EntryList;
using detail::LatchedPage;
using detail::Node;
using detail::OpCounters;
using detail::SearchKey;

namespace {

std::size_t entry_size(const EntryList& e, std::size_t i, bool leaf) {
  return detail::entry_bytes(leaf, e.keys[i].size(), leaf ? e.values[i].size() : 0);
}

// The node's entries with one more at position `pos`: (key, value) in a
// leaf, (key, child) in an inner node. Views point into `old`.
EntryList entries_with(const Node& old, std::size_t pos, std::string_view key,
                       std::string_view value, PageId child) {
  EntryList e;
  const bool leaf = old.is_leaf();
  for (std::size_t i = 0; i <= old.count(); ++i) {
    if (i == pos) {
      e.keys.emplace_back(key);
      leaf ? e.values.push_back(value) : e.children.push_back(child);
    }
    if (i == old.count()) break;
    e.keys.push_back(old.key_at(i).to_string());
    leaf ? e.values.push_back(old.value_at(i)) : e.children.push_back(old.child_at(i));
  }
  return e;
}

void append_entries(Node& n, const EntryList& e, std::size_t from, std::size_t to, bool leaf) {
  for (std::size_t i = from; i < to; ++i) {
    if (leaf) {
      n.append_leaf(e.keys[i], e.values[i]);
    } else {
      n.append_inner(e.keys[i], e.children[i]);
    }
  }
}

}  // namespace

std::string shortest_separator(std::string_view left, std::string_view right) {
  std::size_t i = 0;
  while (i < left.size() && i < right.size() && left[i] == right[i]) ++i;
  return std::string(right.substr(0, std::min(right.size(), i + 1)));
}

void copy_node(std::byte* to, const std::byte* from, std::uint32_t page_size) {
  // The latch word is skipped: other threads update it atomically.
  detail::read_bytes(from + kPageLatchBytes, page_size - kPageLatchBytes, to + kPageLatchBytes);
}

std::byte* scratch_copy_page(std::uint32_t page_size) {
  thread_local std::vector<std::byte> buffer;
  buffer.assign(page_size, std::byte{0});
  return buffer.data();
}

std::byte* scratch_node_page(std::uint32_t page_size) {
  thread_local std::vector<std::byte> buffer;
  buffer.assign(page_size, std::byte{0});
  return buffer.data();
}

PageId Tree::Impl::allocate_node(LatchedPage* latched) {
  const PageId id = store_->allocate();
  // Latch before touching the bytes: a stale hint may be reading the page.
  *latched = latch(id);
  store_->mark_dirty(id);
  return id;
}

void Tree::Impl::retire(PageId id) {
  retired_.retire(id, detail::EpochManager::instance().retire_epoch());
  if (retired_since_reclaim_.fetch_add(1, std::memory_order_relaxed) % 32 == 31) reclaim();
}

void Tree::Impl::reclaim() {
  for (PageId id : retired_.take_reclaimable()) {
    LatchedPage p = latch(id);
    detail::store<std::uint32_t>(store_->page(id), detail::off::kMagic, 0);
    p.release();
    store_->mark_dirty(id);
    store_->free(id);
  }
}

bool Tree::Impl::put(std::string_view key, std::string_view value, const StartHints* hints,
                     bool replace) {
  check_sizes(key, value);
  if (old_format_.load(std::memory_order_relaxed)) upgrade_format();
  const SearchKey k(key);
  detail::EpochManager::Guard guard;
  OpCounters c;
  detail::Path path;
  LatchedPage leaf = lock_covering(k, hints, 0, &path, c);
  publish(c);
  Node n = leaf.node();
  const std::size_t i = n.lower_bound(k);
  const bool exists = n.key_equals(i, k);
  if (exists && !replace) {
    leaf.release_unchanged();  // readers need not restart
    return false;
  }
  store_->mark_dirty(leaf.id());
  if (exists) {
    if (n.replace_value(i, value)) return false;
    n.remove_at(i);  // the new value goes in through the split below
  } else {
    size_.fetch_add(1, std::memory_order_relaxed);
    if (n.fits(key.size(), value.size())) {
      n.insert_leaf(i, key, value);
      return true;
    }
  }
  split_and_insert(std::move(leaf), k, i, value, path);
  return !exists;
}

void Tree::Impl::split_and_insert(LatchedPage leaf, const SearchKey& k, std::size_t pos,
                                  std::string_view value, detail::Path& path) {
  std::byte* copy = scratch_copy_page(page_size_);
  copy_node(copy, store_->page(leaf.id()), page_size_);
  const Node old(copy, page_size_);
  const EntryList e = entries_with(old, pos, k.bytes, value, kNoPage);
  const PageId left = leaf.id();
  auto [sep, right] = split_node(std::move(leaf), old, e);
  post_separator(1, left, std::move(sep), right, path);
}

// Splits the latched node into itself and a new right sibling holding the
// upper part of `e`. Returns the separator (the right node's lo) and id.
std::pair<std::string, PageId> Tree::Impl::split_node(LatchedPage node, const Node& old,
                                                      const EntryList& e) {
  const bool leaf = old.is_leaf();
  const std::size_t n = e.keys.size();
  const std::size_t cap = old.capacity();

  // Pick the split minimising the larger half, both halves fitting.
  std::size_t total = 0;
  for (std::size_t i = 0; i < n; ++i) total += entry_size(e, i, leaf);
  std::size_t best = 0, best_cost = SIZE_MAX, left_bytes = 0;
  std::string best_sep;
  for (std::size_t s = 1; s < n; ++s) {
    left_bytes += entry_size(e, s - 1, leaf);
    std::string sep = leaf ? shortest_separator(e.keys[s - 1], e.keys[s]) : e.keys[s];
    const std::size_t hi_len = old.hi_inf() ? 0 : old.hi().size();
    const std::size_t l = left_bytes + old.lo().size() + sep.size();
    const std::size_t r = total - left_bytes + sep.size() + hi_len;
    if (l > cap || r > cap) continue;
    const std::size_t cost = std::max(l, r);
    if (cost < best_cost) {
      best_cost = cost;
      best = s;
      best_sep = std::move(sep);
    }
  }
  if (best == 0) throw Error("forein: internal error: no valid split point");

  LatchedPage right;
  const PageId right_id = allocate_node(&right);
  Node r = right.node();
  std::optional<std::string_view> hi;
  if (!old.hi_inf()) hi = old.hi();
  const PageId old_right = old.right();
  r.init(old.level(), r.version() + 1, best_sep, hi, node.id(), old_right);
  append_entries(r, e, best, n, leaf);

  std::byte* fresh = scratch_node_page(page_size_);
  Node l(fresh, page_size_);
  l.init(old.level(), old.version() + 1, old.lo(), std::string_view(best_sep), old.left(),
         right_id);
  append_entries(l, e, 0, best, leaf);
  std::byte* target = store_->page(node.id());
  detail::write_bytes(target + detail::off::kMagic, fresh + detail::off::kMagic,
                      page_size_ - detail::off::kMagic);

  // Left-to-right latch order: node, right, then the old right neighbour.
  if (old_right != kNoPage) {
    LatchedPage neighbour = latch(old_right);
    neighbour.node().set_left(right_id);
    store_->mark_dirty(old_right);
  }
  const NodeInterval left_iv = interval_of(node.node(), node.id());
  const NodeInterval right_iv = interval_of(r, right_id);
  right.release();
  node.release();
  emit(NodeEventKind::kSplit, left_iv);
  emit(NodeEventKind::kCreated, right_iv);
  return {std::move(best_sep), right_id};
}

void Tree::Impl::post_separator(std::uint16_t level, PageId left, std::string sep, PageId right,
                                detail::Path& path) {
  for (;;) {
    std::unique_lock<std::mutex> lock(root_mu_);
    if (height_.load() > level) break;
    if (root_.load() == left) {
      grow_root(level, left, sep, right);
      return;
    }
    // Another thread split the root and is adding the level we need.
    lock.unlock();
    std::this_thread::yield();
  }
  const SearchKey k(sep);
  LatchedPage parent = find_at_level(k, level, path.at[level]);
  Node p = parent.node();
  store_->mark_dirty(parent.id());
  const std::size_t i = p.upper_bound(k);
  if (p.fits(sep.size(), 0)) {
    p.insert_inner(i, sep, right);
    return;
  }
  std::byte* copy = scratch_copy_page(page_size_);
  copy_node(copy, store_->page(parent.id()), page_size_);
  const Node old(copy, page_size_);
  const EntryList e = entries_with(old, i, sep, {}, right);
  const PageId parent_id = parent.id();
  auto [up_sep, up_right] = split_node(std::move(parent), old, e);
  post_separator(level + 1, parent_id, std::move(up_sep), up_right, path);
}

// Called with root_mu_ held, after `left` (the root) split into left+right.
void Tree::Impl::grow_root(std::uint16_t level, PageId left, const std::string& sep,
                           PageId right) {
  if (level >= detail::kMaxLevels) throw Error("forein: tree height limit reached");
  LatchedPage root;
  const PageId id = allocate_node(&root);
  Node n = root.node();
  n.init(level, n.version() + 1, "", std::nullopt, kNoPage, kNoPage);
  n.append_inner("", left);
  n.append_inner(sep, right);
  const NodeInterval iv = interval_of(n, id);
  root.release();
  root_.store(id, std::memory_order_release);
  height_.store(level + 1, std::memory_order_release);
  write_meta();
  emit(NodeEventKind::kCreated, iv);
}

}  // namespace forein
