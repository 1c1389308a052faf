// fattree's controller algorithms (Fat-B+Tree section III-B, III-C):
// reform the tree into 16-branch switch nodes, build the fat root greedily
// by access frequency, then cache layer by layer.
//
// Reform. The paper's tree has 16-branch nodes; ours have hundreds of
// children. Each inner tree node with more than 16 children becomes a
// balanced 16-ary subtree of switch nodes over its children's lo words: the
// subtree's top takes the tree node's address, the nodes below it get
// virtual addresses (fattree_types.h). A switch node is thus one node of a
// 16-ary "reformed" tree whose bottom edges end at real tree nodes, and
// the switch tables keep exactly the paper's shape.
//
// Fat root. A max-heap of reformed nodes by access frequency starts at the
// root (a super-root over several roots); the heaviest node's children
// replace its range, until the next node would take the fat root past its
// range limit K (the paper stops when "the size of the fat-root node
// reaches the limit K").
//
// Layers. Layer 1 is the K heaviest reformed nodes among the fat root's
// range targets, layer j+1 the K heaviest among the children of layer j
// (a node is reachable only when all its ancestors are in the network),
// one node set per layer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fattree/fattree_types.h"
#include "forein/offload/plan.h"

namespace forein::offload::fattree {

struct PlanSettings {
  std::uint32_t fat_root_ranges = kDefaultFatRootRanges;  // K of the fat root
  std::uint32_t layer_nodes = kDefaultLayerNodes;         // K of each cached layer
  std::uint32_t layers = kNodeSets;                       // cached layers (node sets)
  // In-switch nodes in all (the device's capacity): the fat root's ranges
  // first, then the layers top down, since a node needs its ancestors.
  std::uint64_t budget = ~std::uint64_t{0};
};

// What the switches hold once a plan is installed.
struct SwitchPlan {
  std::vector<RangeRecord> ranges;                       // ascending, disjoint
  std::array<std::vector<NodeRecord>, kNodeSets> sets;  // each by address
  std::size_t reformed_nodes = 0;                        // switch nodes the whole tree reforms into
  std::size_t absorbed_nodes = 0;                        // of them, merged into the fat root
};

// Throws InvalidArgument for settings beyond the hardware (ranges above
// 1,024, nodes per layer above 4,096, more than five layers).
void check_settings(const PlanSettings& settings);

SwitchPlan plan_switches(std::span<const OffloadNode> nodes, const PlanSettings& settings);

}  // namespace forein::offload::fattree
