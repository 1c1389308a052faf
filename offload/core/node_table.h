// The offload manager's per-index node table: the live nodes as replayed
// from the tree's node-interval events, with sampled access weights.
//
// Events reach the observer from several writer threads after their
// latches are released, so two events of one page can arrive out of order
// (a merge's kDeleted after the kCreated of the page's reuse). Page
// versions only grow, across reuse too, so the table keeps the highest
// version seen per page (a tombstone for dead pages) and ignores any event
// that is not newer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "forein/node_interval.h"
#include "forein/offload/plan.h"

namespace forein::offload {

class NodeTable {
 public:
  // Applies one event (or a for_each_node report, as kCreated).
  void apply(const NodeEvent& event);

  // Replaces the live set with `nodes` (a host's whole node table read at
  // once, as PostgreSQL's refresh reads its pages): nodes missing from it
  // die, the others take the given intervals; weights of nodes that stay
  // are kept. Returns false if the live set was exactly `nodes` already
  // (same nodes, intervals and versions; nothing changed).
  bool replace_all(std::span<const NodeInterval> nodes);
  // Pages that died since the last call and are still dead.
  std::vector<PageId> take_newly_dead();

  // Multiplies every weight by `factor` (old samples fade); a weight that
  // falls below `negligible` becomes 0, so that the heat of a workload that
  // stopped fades out completely in a bounded number of decays.
  void decay(double factor, double negligible = 0);
  // Adds one unit of weight per word to the live leaf that owns it.
  void add_accesses(std::span<const Word> words);
  // False when every weight is 0, so decay() would change nothing (true
  // may be conservative).
  bool has_weight() const { return has_weight_; }

  // The live nodes as a plan table: each node's parent is the node one
  // level up whose interval holds its lo. While a root split is still in
  // flight the top level can hold several nodes; they then get a synthetic
  // root with node id kNoPage (never installed: callers drop its entries).
  // `prior_weight` is added to every leaf's weight so that an unsampled
  // tree still gets a selection (every leaf equally hot).
  std::vector<OffloadNode> build(double prior_weight) const;

  std::size_t live_count() const { return live_; }
  bool is_live(PageId id) const;

 private:
  struct Slot {
    NodeInterval interval;
    bool live = false;
    double weight = 0;
  };

  std::unordered_map<PageId, Slot> slots_;
  std::vector<PageId> newly_dead_;
  std::size_t live_ = 0;
  bool has_weight_ = false;
};

}  // namespace forein::offload
