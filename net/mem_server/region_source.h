// The owner's view of a remote tree for its offload manager: every node of
// the region as a NodeInterval (PageId = node_id(address), the node's
// level and [lo, hi) in word space: keys are the words) and the key words
// from the leaves. Read on the manager's thread while the writer may
// rewrite nodes: every node is checked like a client's READ, re-read when
// torn, and skipped when it stays torn (a hint is advice; the next sync
// sees it).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "forein/offload/plan.h"
#include "remote/node_layout.h"
#include "remote/region.h"

namespace forein::net::mem {

class RegionIndexSource final : public offload::IndexSource {
 public:
  // key_generation: a count of the key set's changes (the owner's
  // inserts; updates change no key), bumped after each change is written.
  RegionIndexSource(const remote::Region& region, std::uint64_t index_id,
                    std::function<std::uint64_t()> key_generation)
      : region_(region), index_id_(index_id), key_generation_(std::move(key_generation)) {}

  void for_each_node(const std::function<void(const NodeInterval&)>& fn) const override;
  void for_each_word(const std::function<bool(Word)>& fn) const override;
  // So an idle memory node's planner does not re-read every key word.
  std::uint64_t key_generation() const override { return key_generation_(); }

  // Every node, for OffloadManager::sync_nodes after splits.
  std::vector<NodeInterval> nodes() const;

 private:
  // Level by level from the root: the leftmost node of each level, then
  // its right siblings. fn(address, view); false stops.
  bool walk_levels(const std::function<bool(remote::Address, const remote::NodeView&)>& fn) const;

  const remote::Region& region_;
  std::uint64_t index_id_;
  std::function<std::uint64_t()> key_generation_;
};

}  // namespace forein::net::mem
