// Internals shared by the tree's source files (tree.cc: open/create and
// descent; tree_write.cc: put and splits; tree_merge.cc: erase and merges;
// tree_scan.cc: cursors; tree_admin.cc: bulk load, check, node listing).
//
// Concurrency protocol (Lehman-Yao B-link tree, as in PostgreSQL's nbtree,
// with optimistic readers as in BTreeOLC and LeanStore; latch.h):
// - readers latch nothing: they read a node's version, read the node, and
//   check the version again before trusting what they read; going from a
//   node to its child or right sibling they read the next node's version
//   and then re-check the node they came from (lock coupling without
//   locks), so the next page was still linked when they reached it. Any
//   change restarts the attempt. They move right while the key is >= the
//   node's hi, or the node is dead (merged into its right sibling);
// - writers descend the same way, then latch the node they change
//   exclusively; if it changed since they read it, they re-check it under
//   the latch and move right, or start again. A split also latches the new
//   right node and the old right neighbour (left to right), releases all,
//   then posts the separator to the parent;
// - a merge latches the parent, then the left neighbour, the dying node and
//   the absorbing node, left to right.
// Exclusive latches are therefore taken top-down across levels and
// left-to-right within a level, which rules out deadlock. A page is freed
// only under its exclusive latch (so readers holding its id see the
// version move) and only once no writer that could hold its id is still
// running (epochs, epoch.h); readers need no epoch.
#pragma once

#include <array>
#include <climits>
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "epoch.h"
#include "forein/tree.h"
#include "latch.h"
#include "leaf_windows.h"
#include "node.h"

namespace forein {

namespace detail {

inline constexpr std::size_t kMaxLevels = 32;
inline constexpr int kMaxHintMoveRights = FOREIN_MAX_HINT_MOVE_RIGHTS;  // forein/word.h

// Meta page (page 0) fields.
namespace meta {
inline constexpr std::size_t kFormat = 16;    // u32
inline constexpr std::size_t kPageSize = 20;  // u32
inline constexpr std::size_t kRoot = 24;      // u32
inline constexpr std::size_t kHeight = 28;    // u16
inline constexpr std::size_t kKeyCount = 32;  // u64
// 2: leaves may hold values in their slots (node.h); format-1 trees open
// and keep working, and are written back as format 2.
// 3: fixed-shape leaves (16-byte slots, node.h); format-1 and -2 trees open
// and keep working, and are written back as format 3.
inline constexpr std::uint32_t kFormatVersion = 3;
inline constexpr std::uint32_t kOldestFormatVersion = 1;
}  // namespace meta

// Counters one operation accumulates before publishing them once.
struct OpCounters {
  std::uint64_t hinted = 0, hint_hits = 0, secondary_hits = 0, fallbacks = 0;
  std::uint64_t move_rights = 0, nodes_visited = 0, restarts = 0;
};

// A node read optimistically: `version` is the latch version its read
// started at; Impl::valid() tells whether the node is still unchanged.
struct OptNode {
  PageId id = kNoPage;
  std::uint64_t version = 0;
  Node node{nullptr, 0};
};

// Outcome of one optimistic step: done, restart the attempt (a writer was
// in between), or the right-link chain ended before the condition held.
enum class Walk { kOk, kRestart, kEnd };

// Inner-node page ids seen on the way down, by level, for posting
// separators after a split without a second descent.
struct Path {
  std::array<PageId, kMaxLevels> at{};
};

// A page latched exclusively; unlatches on destruction, advancing the
// page's version (release_unchanged() keeps it, for pages left as they
// were, so optimistic readers need not restart). With a LeafWindows table
// the page is recorded there before it is unlatched.
class LatchedPage {
 public:
  LatchedPage() = default;
  LatchedPage(std::byte* page, std::uint32_t page_size, PageId id,
              LeafWindows* windows = nullptr)
      : page_(page), size_(page_size), id_(id), windows_(windows) {
    PageLatch(page_).lock_exclusive();
  }
  LatchedPage(LatchedPage&& o) noexcept { *this = std::move(o); }
  LatchedPage& operator=(LatchedPage&& o) noexcept {
    if (this != &o) {
      release();
      page_ = o.page_;
      size_ = o.size_;
      id_ = o.id_;
      windows_ = o.windows_;
      o.page_ = nullptr;
    }
    return *this;
  }
  ~LatchedPage() { release(); }

  void release() {
    if (page_ == nullptr) return;
    if (windows_ != nullptr) windows_->record(id_, page_);
    PageLatch(page_).unlock_exclusive();
    page_ = nullptr;
  }
  void release_unchanged() {
    if (page_ != nullptr) PageLatch(page_).unlock_unchanged();
    page_ = nullptr;
  }
  // The version the page had when this latch was taken.
  std::uint64_t locked_version() const { return PageLatch(page_).locked_version(); }
  explicit operator bool() const { return page_ != nullptr; }
  PageId id() const { return id_; }
  Node node() const { return Node(page_, size_); }

 private:
  std::byte* page_ = nullptr;
  std::uint32_t size_ = 0;
  PageId id_ = kNoPage;
  LeafWindows* windows_ = nullptr;
};

// Sorted entries gathered from one or two nodes (plus an insertion), the
// input of splits and merges. Views point into scratch copies.
struct EntryList {
  std::vector<std::string> keys;
  std::vector<std::string_view> values;  // leaves
  std::vector<PageId> children;          // inner nodes
};

}  // namespace detail

// Per-thread page-sized buffers (zeroed on each call): one for a copy of a
// node being split, one for building a node before copying it in place.
std::byte* scratch_copy_page(std::uint32_t page_size);
// The shortest key s with left < s <= right: right cut just past the first
// byte where it differs from left. Leaf boundaries made this way keep inner
// nodes wide and word intervals aligned, so offload covers stay small.
std::string shortest_separator(std::string_view left, std::string_view right);

// Copies a node's page except its latch word.
void copy_node(std::byte* to, const std::byte* from, std::uint32_t page_size);
std::byte* scratch_node_page(std::uint32_t page_size);

class Tree::Impl {
 public:
  Impl(std::unique_ptr<PageStore> store, TreeOptions options);

  void create_empty();
  void open_existing();

  // --- optimistic reads and descent (tree.cc) ---
  // Starts an optimistic read of page `id`; false if there is no such page.
  bool read_begin(PageId id, detail::OptNode& out) const;
  // Starts an optimistic read of the root, counting the visit.
  detail::OptNode read_root(detail::OpCounters& c) const;
  bool valid(const detail::OptNode& n) const {
    return detail::PageLatch(n.node.page()).read_valid(n.version);
  }
  // Follows the link from n to page `to` (lock coupling): on kOk n is the
  // next node, read while n still linked to it.
  detail::Walk step_to(detail::OptNode& n, PageId to) const;
  [[gnu::cold]] detail::Walk link_outside(const detail::OptNode& n, PageId to) const;
  // Steps right while go_right(node) holds, at most max_steps times.
  template <typename GoRight>
  detail::Walk step_right(detail::OptNode& n, GoRight go_right, detail::OpCounters& c,
                          int max_steps) const;
  // From n down to `level`: at each node step right while go_right(node),
  // then follow pick(node)'s child. Records inner pages in *path.
  template <typename GoRight, typename Pick>
  detail::Walk walk_down(detail::OptNode& n, std::uint16_t level, GoRight go_right, Pick pick,
                         detail::Path* path, detail::OpCounters& c) const;
  // The node at `level` covering k, reached from a validated hint or the
  // root, read optimistically: the caller reads what it needs from it and
  // then checks valid() (restarting on false). Hints are validated as
  // docs/design.md says; restarted attempts leave only `restarts` in c.
  detail::OptNode locate(const detail::SearchKey& k, const StartHints* hints, std::uint16_t level,
                         detail::Path* path, detail::OpCounters& c) const;
  // locate()'s common cases for a leaf, written out for the lookup path: a
  // leaf hint that covers k, or a root descent that never moves right.
  // False (having counted nothing) sends the caller to locate().
  bool locate_leaf_fast(const detail::SearchKey& k, const StartHints* hints, detail::OptNode& n,
                        detail::OpCounters& c) const;
  // The point lookup fast path (tree_get.cc), for a key of up to 8 bytes
  // given as its word and length. kSlow sends the lookup to the general
  // path; kRestart too, counting one restart (a node changed under it).
  enum class FastGet { kFound, kMissing, kSlow, kRestart };
  // Where find_short() ended: the leaf read optimistically (page, version),
  // the slot it stopped at (byte offset; the key's when kFound), the nodes
  // it visited and whether it started from a (primary) hint.
  struct ShortHit {
    const std::byte* page = nullptr;
    std::uint64_t version = 0;
    std::size_t slot = 0;
    std::size_t stride = 0;  // the leaf's slot size
    std::uint64_t visited = 0;
    bool hinted = false;
    std::size_t index() const { return (slot - detail::kHeaderSize) / stride; }
  };
  FastGet find_short(Word word, std::size_t len, const StartHints* hints, ShortHit& hit) const;
  bool valid_short(const ShortHit& hit) const {
    return detail::PageLatch(hit.page).read_valid(hit.version);
  }
  FastGet get_short(Word word, std::size_t len, const StartHints* hints, std::string* value,
                    bool* copied) const;
  // Tree::get's and get_view's general path (tree_get.cc).
  template <typename OnFound>
  bool get_general(std::string_view key, const StartHints* hints, std::uint64_t restarts,
                   OnFound&& on_found);
  // A hint accepted (true) or not; kRestart in *restart.
  bool try_hint(const Hint& h, const detail::SearchKey& k, detail::OptNode& n,
                detail::OpCounters& c, bool* restart) const;
  void count_restart(detail::OpCounters& c, const detail::OpCounters& saved) const;
  // The leaf an operation on k would start its leaf work at (a validated
  // read of locate()'s result): leaf_for() and start_leaf().
  Hint leaf_hint(const detail::SearchKey& k, const StartHints* hints, detail::OpCounters& c) const;

  // The remembered rightmost leaf latched, if it is still the rightmost
  // leaf and k >= its lo (TreeOptions::append_fast_path); else empty.
  detail::LatchedPage latch_append_leaf(const detail::SearchKey& k, detail::OpCounters& c);
  void remember_append_leaf(PageId leaf) {
    if (options_.append_fast_path && append_leaf_.load(std::memory_order_relaxed) != leaf) {
      append_leaf_.store(leaf, std::memory_order_relaxed);
    }
  }

  // Writers: the node at `level` covering k, latched exclusively.
  detail::LatchedPage lock_covering(const detail::SearchKey& k, const StartHints* hints,
                                    std::uint16_t level, detail::Path* path,
                                    detail::OpCounters& c);
  // Latches the node at `level` covering k (for posting separators and
  // merges), from the page `hint` at that level if it still qualifies.
  detail::LatchedPage find_at_level(const detail::SearchKey& k, std::uint16_t level, PageId hint);
  detail::OptNode find_rightmost_leaf(detail::OpCounters& c) const;
  detail::OptNode find_leaf_before(const std::string& boundary, PageId left_hint,
                                   detail::OpCounters& c) const;
  // A consistent private copy of page `id` in `buf` (page_size_ bytes).
  void snapshot(PageId id, std::byte* buf) const;
  detail::LatchedPage latch(PageId id);

  // --- writes (tree_write.cc, tree_merge.cc) ---
  // With `replace` false an existing key is left as it is (Tree::insert).
  bool put(std::string_view key, std::string_view value, const StartHints* hints,
           bool replace = true);
  bool erase(std::string_view key, const StartHints* hints);
  void split_and_insert(detail::LatchedPage leaf, const detail::SearchKey& k, std::size_t pos,
                        std::string_view value, detail::Path& path);
  bool split_append(detail::LatchedPage& leaf, const detail::SearchKey& k, std::size_t pos,
                    std::string_view value, detail::Path& path);
  std::pair<std::string, PageId> split_node(detail::LatchedPage node, const detail::Node& old,
                                            const detail::EntryList& e, std::size_t inserted);
  void post_separator(std::uint16_t level, PageId left, std::string sep, PageId right,
                      detail::Path& path);
  void grow_root(std::uint16_t level, PageId left, const std::string& sep, PageId right);
  void try_merge(PageId node, std::uint16_t level, const std::string& key);
  PageId allocate_node(detail::LatchedPage* latched);
  void retire(PageId id);
  void reclaim();

  // --- whole-tree work (tree_admin.cc) ---
  struct BuildItem {
    std::string_view key;
    std::string_view value;
    PageId child = kNoPage;
  };
  std::vector<std::pair<std::string, PageId>> build_level(std::uint16_t level,
                                                          const std::vector<BuildItem>& items,
                                                          std::vector<NodeInterval>& created);
  void walk_level(PageId leftmost,
                  const std::function<void(PageId, const detail::Node&)>& fn);

  // --- helpers ---
  void check_sizes(std::string_view key, std::string_view value) const;
  NodeInterval interval_of(const detail::Node& n, PageId id) const;
  void emit(NodeEventKind kind, const NodeInterval& interval);
  // After a change to the set of keys, once it is visible (Tree::key_generation).
  void keys_changed() { key_generation_.fetch_add(1, std::memory_order_release); }
  void publish(const detail::OpCounters& c);
  // publish() for a lookup that visited `nodes` nodes and, if `hinted`,
  // started from an accepted primary hint.
  void publish_get(std::uint64_t nodes, bool hinted) const;
  void write_meta();
  // Before the first write to a tree opened in an older format.
  void upgrade_format();

  std::unique_ptr<PageStore> store_;
  TreeOptions options_;
  std::uint32_t page_size_;
  // Slots a page holds, by node kind (count clamps on the fast path).
  std::size_t max_inner_slots_ = (page_size_ - detail::kHeaderSize) / detail::kSlotSize;
  std::size_t max_leaf_slots_ = (page_size_ - detail::kHeaderSize) / detail::kLeafSlotSize;
  std::size_t max_fixed_slots_ = (page_size_ - detail::kHeaderSize) / detail::kFixedSlotSize;
  std::atomic<PageId> root_{kNoPage};
  std::atomic<std::uint16_t> height_{1};
  std::atomic<std::uint64_t> size_{0};
  // Tree::key_generation(); beside size_, whose line a key change writes anyway.
  std::atomic<std::uint64_t> key_generation_{0};
  std::mutex root_mu_;  // serialises root growth and meta rewrites
  std::atomic<bool> old_format_{false};
  detail::RetiredPages retired_;
  std::atomic<std::uint32_t> retired_since_reclaim_{0};
  // The rightmost leaf as last seen by a write (append_fast_path); a hint
  // only: latch_append_leaf checks it under the latch.
  std::atomic<PageId> append_leaf_{kNoPage};
  // Each leaf's search window, for lookups that fetch it with the header.
  detail::LeafWindows leaf_windows_;

  // One counter block per epoch thread slot: each has a single writer at a
  // time, so updates are plain loads and stores, no locked instructions.
  struct alignas(64) CounterShard {
    std::atomic<std::uint64_t> operations{0}, hinted{0}, hint_hits{0}, secondary_hits{0},
        fallbacks{0}, move_rights{0}, nodes_visited{0}, restarts{0};
  };
  std::unique_ptr<CounterShard[]> counters_{
      new CounterShard[detail::EpochManager::kSlots]};
};

// The counters go to the calling thread's shard: plain stores, no locked
// instruction, no cache line shared with another thread's operations.
inline void Tree::Impl::publish(const detail::OpCounters& c) {
  CounterShard& s = counters_[detail::EpochManager::thread_slot()];
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
  add(s.restarts, c.restarts);
}

inline void Tree::Impl::publish_get(std::uint64_t nodes, bool hinted) const {
  CounterShard& s = counters_[detail::EpochManager::thread_slot()];
  auto add = [](std::atomic<std::uint64_t>& a, std::uint64_t n) {
    a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  };
  add(s.operations, 1);
  add(s.nodes_visited, nodes);
  if (hinted) {
    add(s.hinted, 1);
    add(s.hint_hits, 1);
  }
}

// ---- optimistic steps (inline: the lookup path) ----

inline bool Tree::Impl::read_begin(PageId id, detail::OptNode& out) const {
  std::byte* page = store_->page(id);
  if (page == nullptr) return false;
  out.id = id;
  out.version = detail::PageLatch(page).read_begin();
  out.node = detail::Node(page, page_size_);
  return true;
}

inline detail::Walk Tree::Impl::step_to(detail::OptNode& n, PageId to) const {
  detail::OptNode next;
  if (!read_begin(to, next)) return link_outside(n, to);
  if (!valid(n)) return detail::Walk::kRestart;
  n = next;
  return detail::Walk::kOk;
}

template <typename GoRight>
detail::Walk Tree::Impl::step_right(detail::OptNode& n, GoRight go_right, detail::OpCounters& c,
                                    int max_steps) const {
  for (int steps = 0;; ++steps) {
    const detail::Node v = n.node;
    if (!v.is_node()) {
      if (!valid(n)) return detail::Walk::kRestart;
      throw CorruptionError("forein: page " + std::to_string(n.id) + " is not a node");
    }
    if (!go_right(v)) return detail::Walk::kOk;
    const PageId right = v.right();
    if (right == kNoPage || steps >= max_steps) {
      return valid(n) ? detail::Walk::kEnd : detail::Walk::kRestart;
    }
    if (const detail::Walk w = step_to(n, right); w != detail::Walk::kOk) return w;
    ++c.move_rights;
    ++c.nodes_visited;
  }
}

template <typename GoRight, typename Pick>
detail::Walk Tree::Impl::walk_down(detail::OptNode& n, std::uint16_t level, GoRight go_right,
                                   Pick pick, detail::Path* path, detail::OpCounters& c) const {
  for (;;) {
    const detail::Walk w = step_right(n, go_right, c, INT_MAX);
    if (w == detail::Walk::kEnd) {
      // Only a root replaced by bulk_load dies without a right sibling.
      if (n.node.dead()) return detail::Walk::kRestart;
      throw CorruptionError("forein: page " + std::to_string(n.id) +
                            ": right-link chain ends below the key");
    }
    if (w != detail::Walk::kOk) return w;
    const std::uint16_t at = n.node.level();
    if (at == level) return detail::Walk::kOk;
    if (at < level || at >= detail::kMaxLevels) {
      if (!valid(n)) return detail::Walk::kRestart;
      throw CorruptionError("forein: page " + std::to_string(n.id) + ": level " +
                            std::to_string(at) + " where level " + std::to_string(level) +
                            " or above was expected");
    }
    if (path != nullptr) path->at[at] = n.id;
    if (const detail::Walk s = step_to(n, pick(n.node)); s != detail::Walk::kOk) return s;
    ++c.nodes_visited;
  }
}

}  // namespace forein
