// What the tree tells the offload layer, and what the offload layer hands
// back (docs/design.md contracts 2 and 3).
#pragma once

#include <cstdint>

#include "forein/key.h"
#include "forein/page_store.h"

namespace forein {

// A node's key range seen in word space. The node holds keys [lo_key,
// hi_key); it owns the words w whose smallest key min_key_of_word(w) falls in
// that range, which is the word interval [lo, hi) (hi_inf: up to and
// including 2^64 - 1). The word intervals of one level's live nodes
// partition word space; an interval may be empty when a node only holds
// keys that share one word with its left neighbour (reached by move-right).
struct NodeInterval {
  std::uint64_t index = 0;  // TreeOptions::index_id of the emitting tree
  PageId node = kNoPage;
  std::uint16_t level = 0;  // 0 = leaf
  Word lo = 0;
  Word hi = 0;
  bool hi_inf = false;
  std::uint64_t version = 0;  // bumped on every split, merge, range change

  bool empty() const { return !hi_inf && hi <= lo; }
  bool contains(Word w) const { return w >= lo && (hi_inf || w < hi); }
};

enum class NodeEventKind : std::uint8_t {
  kCreated,       // a new node (split's right half, new root, bulk load)
  kSplit,         // the node kept its lo and got a smaller hi
  kDeleted,       // the node was merged into its right sibling and is gone
  kRangeChanged,  // the node absorbed a merged left sibling: lo moved down
};

const char* to_string(NodeEventKind kind);

struct NodeEvent {
  NodeEventKind kind;
  NodeInterval interval;
};

// Receives node-interval events. Called from writer threads after their
// latches are released, possibly from several threads at once.
class NodeObserver {
 public:
  virtual ~NodeObserver() = default;
  virtual void on_node_event(const NodeEvent& event) = 0;
};

// A start node proposed by offload hardware. Advice only: the tree checks
// that the page is a live node of the claimed level whose range holds the
// key, moves right while key >= hi, and otherwise ignores it.
struct Hint {
  PageId node = kNoPage;
  std::uint16_t level = 0;
  std::uint64_t version = 0;

  bool present() const { return node != kNoPage; }
};

// The primary hint (e.g. the LPM match) and the secondary one (e.g. the
// bottom-line layer) tried when the primary fails; then the root.
struct StartHints {
  Hint primary;
  Hint secondary;
};

// Operation counters. nodes_visited is FOREIN's AMA numerator: every node
// page latched on the way to the answer, move-rights included.
struct TreeStats {
  std::uint64_t operations = 0;       // get/put/erase/scan starts
  std::uint64_t hinted = 0;           // operations that came with a primary hint
  std::uint64_t hint_hits = 0;        // primary hint accepted
  std::uint64_t secondary_hits = 0;   // primary rejected, secondary accepted
  std::uint64_t fallbacks = 0;        // hinted operations that fell back to the root
  std::uint64_t move_rights = 0;      // sibling steps taken because key >= hi
  std::uint64_t nodes_visited = 0;
  std::uint64_t restarts = 0;         // optimistic reads retried after a concurrent write
};

}  // namespace forein
