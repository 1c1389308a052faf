// Internals shared by the tree's source files (tree.cc: open/create and
// descent; tree_write.cc: put and splits; tree_merge.cc: erase and merges;
// tree_scan.cc: cursors; tree_admin.cc: bulk load, check, node listing).
//
// Locking protocol (Lehman-Yao B-link tree, as in PostgreSQL's nbtree):
// - a reader holds one page latch at a time and moves right while its key
//   is >= the node's hi, or the node is dead (merged into its right sibling);
// - a writer latches the leaf exclusively; a split also latches the new
//   right node and the old right neighbour (left to right), releases all,
//   then posts the separator to the parent;
// - a merge latches the parent, then the left neighbour, the dying node and
//   the absorbing node, left to right.
// Latches are therefore taken top-down across levels and left-to-right
// within a level, which rules out deadlock.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "epoch.h"
#include "forein/tree.h"
#include "latch.h"
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
inline constexpr std::uint32_t kFormatVersion = 1;
}  // namespace meta

// Counters one operation accumulates before publishing them once.
struct OpCounters {
  std::uint64_t hinted = 0, hint_hits = 0, secondary_hits = 0, fallbacks = 0;
  std::uint64_t move_rights = 0, nodes_visited = 0;
};

// Inner-node page ids seen on the way down, by level, for posting
// separators after a split without a second descent.
struct Path {
  std::array<PageId, kMaxLevels> at{};
};

// A page latched in a given mode; unlatches on destruction.
class LatchedPage {
 public:
  LatchedPage() = default;
  LatchedPage(std::byte* page, std::uint32_t page_size, PageId id, bool exclusive)
      : page_(page), size_(page_size), id_(id), exclusive_(exclusive) {
    PageLatch(page_).lock(exclusive_);
  }
  LatchedPage(LatchedPage&& o) noexcept { *this = std::move(o); }
  LatchedPage& operator=(LatchedPage&& o) noexcept {
    if (this != &o) {
      release();
      page_ = o.page_;
      size_ = o.size_;
      id_ = o.id_;
      exclusive_ = o.exclusive_;
      o.page_ = nullptr;
    }
    return *this;
  }
  ~LatchedPage() { release(); }

  void release() {
    if (page_ != nullptr) PageLatch(page_).unlock(exclusive_);
    page_ = nullptr;
  }
  explicit operator bool() const { return page_ != nullptr; }
  PageId id() const { return id_; }
  bool exclusive() const { return exclusive_; }
  Node node() const { return Node(page_, size_); }

 private:
  std::byte* page_ = nullptr;
  std::uint32_t size_ = 0;
  PageId id_ = kNoPage;
  bool exclusive_ = false;
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

  // --- descent (tree.cc) ---
  // Latches the start node for `k` at the level the hints name (or the
  // root), after validation; falls back as docs/design.md says.
  detail::LatchedPage start(const detail::SearchKey& k, const StartHints* hints, bool leaf_exclusive,
                            detail::OpCounters& c);
  // Descends from a latched node to the leaf covering k, moving right as
  // needed; records inner pages in *path.
  detail::LatchedPage descend(detail::LatchedPage node, const detail::SearchKey& k,
                              bool leaf_exclusive, detail::Path* path, detail::OpCounters& c);
  detail::LatchedPage find_leaf(const detail::SearchKey& k, const StartHints* hints,
                                bool leaf_exclusive, detail::Path* path, detail::OpCounters& c);
  // Latches the node at `level` covering k, exclusively (for posting
  // separators and merges), descending from `hint` or the root.
  detail::LatchedPage find_at_level(const detail::SearchKey& k, std::uint16_t level, PageId hint);
  // While k >= hi or the node is dead: step right. False if the chain ends.
  bool move_right(detail::LatchedPage& node, const detail::SearchKey& k, detail::OpCounters& c,
                  int max_steps);
  detail::LatchedPage find_rightmost_leaf(detail::OpCounters& c);
  detail::LatchedPage find_leaf_before(const std::string& boundary, PageId left_hint,
                                       detail::OpCounters& c);
  detail::LatchedPage latch(PageId id, bool exclusive);
  detail::LatchedPage latch_root(bool exclusive);

  // --- writes (tree_write.cc, tree_merge.cc) ---
  bool put(std::string_view key, std::string_view value, const StartHints* hints);
  bool erase(std::string_view key, const StartHints* hints);
  void split_and_insert(detail::LatchedPage leaf, const detail::SearchKey& k, std::size_t pos,
                        std::string_view value, detail::Path& path);
  std::pair<std::string, PageId> split_node(detail::LatchedPage node, const detail::Node& old,
                                            const detail::EntryList& e);
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
  void publish(const detail::OpCounters& c);
  void write_meta();

  std::unique_ptr<PageStore> store_;
  TreeOptions options_;
  std::uint32_t page_size_;
  std::atomic<PageId> root_{kNoPage};
  std::atomic<std::uint16_t> height_{1};
  std::atomic<std::uint64_t> size_{0};
  std::mutex root_mu_;  // serialises root growth
  detail::RetiredPages retired_;
  std::atomic<std::uint32_t> retired_since_reclaim_{0};

  // One counter block per epoch thread slot: each has a single writer at a
  // time, so updates are plain loads and stores, no locked instructions.
  struct alignas(64) CounterShard {
    std::atomic<std::uint64_t> operations{0}, hinted{0}, hint_hits{0}, secondary_hits{0},
        fallbacks{0}, move_rights{0}, nodes_visited{0};
  };
  std::unique_ptr<CounterShard[]> counters_{
      new CounterShard[detail::EpochManager::kSlots]};
};

}  // namespace forein
