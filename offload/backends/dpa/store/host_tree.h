// dpa store: the host replica of the tree (DPA-Store 3.2.1), which only
// patcher threads (and bulk load) touch, one at a time. Its inner nodes
// have the NIC nodes' layout and point at host children; a leaf's host
// side is the NicLeaf's host arrays. Also the planning both bulk load and
// patches use: PLA segments into leaves and inner nodes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "dpa/pla.h"
#include "dpa/store/nic_layout.h"

namespace forein::offload::dpa::detail {

struct HostInner;

struct HostChild {
  HostInner* inner = nullptr;  // exactly one of inner and leaf is set
  NicLeaf* leaf = nullptr;
  NicNode* nic() const;
};

struct HostInner {
  InnerLayout layout;
  std::vector<HostChild> children;
  NicInner* nic = nullptr;  // its NIC copy (allocated by the host, filled by COPY)
};

// The host path to the leaf covering key: each inner node and the child
// index taken in it, root first.
struct PathStep {
  HostInner* node = nullptr;
  std::size_t index = 0;
};
std::vector<PathStep> host_path(HostInner* root, std::uint64_t key, NicLeaf** leaf);
// The child index covering key in a layout (binary search: host CPU).
std::size_t host_child_index(const InnerLayout& layout, std::uint64_t key);

// Leaves for keys (3.2.1): one PLA segment of at most `capacity` keys if
// they fit one, else segments of at most retrain_bound x capacity.
std::vector<PlaSegment> plan_leaves(std::span<const std::uint64_t> keys, std::uint32_t eps,
                                    std::size_t capacity, double retrain_bound);

// Inner nodes over a level's pivots (3.2.1, 3.2.4): PLA with eps (at most
// kSegmentPivots per segment); one node if the segments fit
// kInnerSegments, else ceil(segments / per_node) nodes with a balanced
// number of segments each.
struct InnerPlan {
  std::size_t begin = 0, end = 0;  // pivots [begin, end) of the level
  InnerLayout layout;
};
std::vector<InnerPlan> plan_inner_nodes(std::span<const std::uint64_t> pivots, std::uint32_t eps,
                                        std::size_t per_node);

// Segments per node when a rebuilt inner node must split: the retrain bound
// applied to the seven segments (3.2.1, "similar to splitting leaf
// nodes"), rounded up so a node keeps at least two.
std::size_t split_segments_per_node(double retrain_bound);

}  // namespace forein::offload::dpa::detail
