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

// A separator whose word ceiling lies past the end of word space (word
// 2^64-1, not owned: forein/word.h) would leave the left node's word
// interval running to the end and the right node's empty, as if nothing
// had split. The append rule skips such split points.
bool past_word_end(std::string_view sep) {
  return word_of(sep) == FOREIN_WORD_MAX && !forein_word_bytes_own_word(sep.data(), sep.size());
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
  LatchedPage leaf;
  if (options_.append_fast_path &&
      (hints == nullptr || (!hints->primary.present() && !hints->secondary.present()))) {
    leaf = latch_append_leaf(k, c);
  }
  if (!leaf) leaf = lock_covering(k, hints, 0, &path, c);
  publish(c);
  Node n = leaf.node();
  std::size_t i;
  if (n.hi_inf()) {
    remember_append_leaf(leaf.id());
    // Past the rightmost leaf's last key (an append): no search needed.
    const std::size_t count = n.count();
    i = count > 0 && detail::compare(k, n.key_at(count - 1)) > 0 ? count : n.lower_bound(k);
  } else {
    i = n.lower_bound(k);
  }
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
  if (split_append(leaf, k, pos, value, path)) return;
  std::byte* copy = scratch_copy_page(page_size_);
  copy_node(copy, store_->page(leaf.id()), page_size_);
  const Node old(copy, page_size_);
  const EntryList e = entries_with(old, pos, k.bytes, value, kNoPage);
  const PageId left = leaf.id();
  auto [sep, right] = split_node(std::move(leaf), old, e, pos);
  if (old.hi_inf()) remember_append_leaf(right);  // the new rightmost leaf
  post_separator(1, left, std::move(sep), right, path);
}

// split_node's choice for an append to the rightmost leaf when every old
// entry stays left (the usual case), done in place: the leaf only gets a
// finite hi, a right link and a new version, and a new right leaf holds the
// new entry; nothing is copied or rebuilt. False (nothing changed) when the
// general split must run: not an append, a leaf in the older layout (a
// split rewrites it), or no room for the separator as the leaf's hi.
bool Tree::Impl::split_append(LatchedPage& leaf, const SearchKey& k, std::size_t pos,
                              std::string_view value, detail::Path& path) {
  Node n = leaf.node();
  const std::size_t count = n.count();
  if (!n.hi_inf() || n.right() != kNoPage || pos != count || count == 0 ||
      n.format1_leaf()) {
    return false;
  }
  std::string last;
  n.key_at(count - 1).append_to(last);
  std::string sep = shortest_separator(last, k.bytes);
  if (n.used_bytes() + sep.size() > n.capacity() || past_word_end(sep)) return false;

  LatchedPage right;
  const PageId right_id = allocate_node(&right);
  Node r = right.node();
  r.init(0, r.version() + 1, sep, std::nullopt, leaf.id(), kNoPage);
  r.append_leaf(k.bytes, value);
  // The rightmost leaf: no right neighbour to relink.
  n.set_hi(sep);
  n.set_right(right_id);
  n.bump_version();
  const NodeInterval left_iv = interval_of(n, leaf.id());
  const NodeInterval right_iv = interval_of(r, right_id);
  const PageId left_id = leaf.id();
  right.release();
  leaf.release();
  emit(NodeEventKind::kSplit, left_iv);
  emit(NodeEventKind::kCreated, right_iv);
  remember_append_leaf(right_id);
  post_separator(1, left_id, std::move(sep), right_id, path);
  return true;
}

LatchedPage Tree::Impl::latch_append_leaf(const SearchKey& k, OpCounters& c) {
  const PageId id = append_leaf_.load(std::memory_order_relaxed);
  if (id == kNoPage) return {};
  auto covers = [&k](const Node& v) {
    return v.is_node() && v.is_leaf() && !v.dead() && v.hi_inf() && v.above_lo(k);
  };
  // An optimistic look first: a key below the rightmost leaf (most keys of
  // a random workload) latches nothing.
  detail::OptNode n;
  if (!read_begin(id, n)) return {};
  const bool looks_right = covers(n.node);
  if (!valid(n)) return {};  // a writer in between: take the usual way
  if (!looks_right) {
    // No longer (or not for this key) the place: later writes descend
    // until one reaches the rightmost leaf again.
    PageId expected = id;
    append_leaf_.compare_exchange_strong(expected, kNoPage, std::memory_order_relaxed);
    return {};
  }
  LatchedPage p = latch(id);
  if (p.locked_version() != n.version && !covers(p.node())) {
    p.release_unchanged();
    return {};
  }
  ++c.nodes_visited;
  return p;
}

// Splits the latched node into itself and a new right sibling holding the
// upper part of `e` (whose entry `inserted` is the new one). Returns the
// separator (the right node's lo) and id.
//
// Usually the split point minimises the larger half. When the new entry
// goes past the last key of the level's rightmost node (hi = +inf), as
// every insert of an ascending load does, the left node keeps as much as
// fits and the new right node starts with little more than the new entry
// (like SQLite's balance_quick and nbtree's rightmost split): an ascending
// load then leaves full nodes behind instead of half-full ones, so half
// the pages. Only the choice of the point differs; the split itself (and
// what concurrent readers and writers see) is the same. (Points whose
// separator lies past the end of word space keep the usual choice.)
std::pair<std::string, PageId> Tree::Impl::split_node(LatchedPage node, const Node& old,
                                                      const EntryList& e, std::size_t inserted) {
  const bool leaf = old.is_leaf();
  const std::size_t n = e.keys.size();
  const std::size_t cap = old.capacity();
  const bool append = old.hi_inf() && inserted + 1 == n;

  std::size_t total = 0;
  for (std::size_t i = 0; i < n; ++i) total += entry_size(e, i, leaf);
  // Leaves: a half whose entries share one short shape is a fixed-shape
  // leaf of 16 bytes an entry (node.h): e[0, fixed_prefix) and
  // e[fixed_suffix, n) are the longest such runs.
  std::size_t fixed_prefix = 0, fixed_suffix = n;
  if (leaf) {
    auto same_short_shape = [&](std::size_t a, std::size_t b) {
      return e.keys[a].size() == e.keys[b].size() && e.values[a].size() == e.values[b].size() &&
             e.keys[a].size() <= kWordBytes && e.values[a].size() <= detail::kInlineValueMax;
    };
    while (fixed_prefix < n && same_short_shape(0, fixed_prefix)) ++fixed_prefix;
    while (fixed_suffix > 0 && same_short_shape(n - 1, fixed_suffix - 1)) --fixed_suffix;
  }
  std::size_t best = 0, best_cost = SIZE_MAX, left_bytes = 0;
  std::string best_sep;
  std::size_t fullest = 0;  // appending: the last fitting point
  std::string fullest_sep;
  for (std::size_t s = 1; s < n; ++s) {
    left_bytes += entry_size(e, s - 1, leaf);
    std::string sep = leaf ? shortest_separator(e.keys[s - 1], e.keys[s]) : e.keys[s];
    const std::size_t hi_len = old.hi_inf() ? 0 : old.hi().size();
    const std::size_t left_entries = leaf && s <= fixed_prefix ? s * detail::kFixedSlotSize : left_bytes;
    const std::size_t right_entries =
        leaf && s >= fixed_suffix ? (n - s) * detail::kFixedSlotSize : total - left_bytes;
    const std::size_t l = left_entries + old.lo().size() + sep.size();
    const std::size_t r = right_entries + sep.size() + hi_len;
    if (l > cap || r > cap) continue;
    if (append && !past_word_end(sep)) {
      fullest = s;
      fullest_sep = sep;
    }
    const std::size_t cost = std::max(l, r);
    if (cost < best_cost) {
      best_cost = cost;
      best = s;
      best_sep = std::move(sep);
    }
  }
  if (fullest != 0) {
    best = fullest;
    best_sep = std::move(fullest_sep);
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
  auto [up_sep, up_right] = split_node(std::move(parent), old, e, i);
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
