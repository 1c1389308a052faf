#include "dpa/store/host_tree.h"

#include <algorithm>
#include <cmath>

#include "forein/error.h"

namespace forein::offload::dpa::detail {

NicNode* HostChild::nic() const {
  if (leaf != nullptr) return leaf;
  return inner->nic;
}

std::size_t host_child_index(const InnerLayout& layout, std::uint64_t key) {
  const auto& p = layout.pivots;
  const auto it = std::upper_bound(p.begin(), p.end(), key);
  return it == p.begin() ? 0 : static_cast<std::size_t>(it - p.begin()) - 1;
}

std::vector<PathStep> host_path(HostInner* root, std::uint64_t key, NicLeaf** leaf) {
  std::vector<PathStep> path;
  HostInner* node = root;
  for (;;) {
    const std::size_t i = host_child_index(node->layout, key);
    path.push_back({node, i});
    const HostChild& c = node->children[i];
    if (c.leaf != nullptr) {
      *leaf = c.leaf;
      return path;
    }
    node = c.inner;
  }
}

std::vector<PlaSegment> plan_leaves(std::span<const std::uint64_t> keys, std::uint32_t eps,
                                    std::size_t capacity, double retrain_bound) {
  std::vector<PlaSegment> one = pla_segments(keys, eps, capacity);
  if (one.size() <= 1) return one;
  const auto bound = static_cast<std::size_t>(std::floor(retrain_bound * static_cast<double>(capacity)));
  return pla_segments(keys, eps, std::max<std::size_t>(1, bound));
}

std::size_t split_segments_per_node(double retrain_bound) {
  const auto n = static_cast<std::size_t>(std::ceil(retrain_bound * static_cast<double>(kInnerSegments)));
  return std::clamp<std::size_t>(n, 2, kInnerSegments);
}

std::vector<InnerPlan> plan_inner_nodes(std::span<const std::uint64_t> pivots, std::uint32_t eps,
                                        std::size_t per_node) {
  const std::vector<PlaSegment> segs = pla_segments(pivots, eps, kSegmentPivots);
  const std::size_t total = segs.size();
  const std::size_t nodes = total <= kInnerSegments ? 1 : (total + per_node - 1) / per_node;
  std::vector<InnerPlan> out;
  out.reserve(nodes);
  for (std::size_t j = 0; j < nodes; ++j) {
    const std::size_t s0 = j * total / nodes, s1 = (j + 1) * total / nodes;
    InnerPlan plan;
    plan.begin = segs[s0].begin;
    plan.end = segs[s1 - 1].begin + segs[s1 - 1].count;
    plan.layout.segments = static_cast<std::uint32_t>(s1 - s0);
    plan.layout.pivots.assign(pivots.begin() + static_cast<std::ptrdiff_t>(plan.begin),
                              pivots.begin() + static_cast<std::ptrdiff_t>(plan.end));
    for (std::size_t s = s0; s < s1; ++s) {
      const std::size_t k = s - s0;
      plan.layout.seg_begin[k] = static_cast<std::uint32_t>(segs[s].begin - plan.begin);
      plan.layout.seg_count[k] = static_cast<std::uint32_t>(segs[s].count);
      plan.layout.first_keys[k] = pivots[segs[s].begin];
      plan.layout.models[k] = segs[s].model;
    }
    out.push_back(std::move(plan));
  }
  return out;
}

}  // namespace forein::offload::dpa::detail
