#include "fattree/fattree_planner.h"

#include <string>
#include <vector>

#include "fattree/fattree_backend.h"
#include "fattree/fattree_batch.h"

namespace forein::offload::fattree {

PlanSettings settings_of(const BackendConfig& config) {
  PlanSettings s;
  s.fat_root_ranges = static_cast<std::uint32_t>(setting_value(kFattreeBackend, config, "fat_root_ranges"));
  s.layer_nodes = static_cast<std::uint32_t>(setting_value(kFattreeBackend, config, "layer_nodes"));
  s.layers = static_cast<std::uint32_t>(setting_value(kFattreeBackend, config, "cached_layers"));
  return s;
}

FattreePlanner::FattreePlanner(const BackendConfig& config)
    : config_(config), settings_(settings_of(config)) {
  check_settings(settings_);
}

void FattreePlanner::reset() {
  ranges_.clear();
  for (auto& s : sets_) s.clear();
}

PlanDiff FattreePlanner::plan(const PlanInput& input) {
  PlanSettings settings = settings_;
  settings.budget = config_.budget != 0 ? config_.budget : input.capacity;
  if (settings.budget == 0) settings.budget = kCapacity;
  const SwitchPlan plan = plan_switches(input.nodes, settings);
  std::uint64_t total = plan.ranges.size();
  for (const auto& s : plan.sets) total += s.size();

  PlanDiff diff;
  diff.remove.kind = BatchKind::kRemove;
  std::vector<RangeRecord> add_ranges, drop_ranges;
  std::vector<NodeRecord> add_nodes, drop_nodes;
  std::map<Word, RangeRecord> ranges;
  for (const RangeRecord& r : plan.ranges) {
    ranges[r.lo] = r;
    const auto it = ranges_.find(r.lo);
    if (it == ranges_.end() || !(it->second == r)) add_ranges.push_back(r);
    if (it == ranges_.end()) ++diff.new_records;
  }
  for (const auto& [lo, r] : ranges_) {
    if (ranges.count(lo) == 0) drop_ranges.push_back(r);
  }
  std::array<std::map<Address, NodeRecord>, kNodeSets> sets;
  bool set_overflow = ranges_.size() + (add_ranges.size()) > kFatRootRangeLimit;
  for (std::size_t s = 0; s < kNodeSets; ++s) {
    std::size_t fresh = 0;
    for (const NodeRecord& n : plan.sets[s]) {
      sets[s][n.address] = n;
      const auto it = sets_[s].find(n.address);
      if (it == sets_[s].end() || !(it->second == n)) add_nodes.push_back(n);
      if (it == sets_[s].end()) ++fresh;
    }
    for (const auto& [address, n] : sets_[s]) {
      if (sets[s].count(address) == 0) drop_nodes.push_back(n);
    }
    diff.new_records += fresh;
    if (sets_[s].size() + fresh > kNodeSetLimit) set_overflow = true;
  }
  // Old and new together would overflow a node set or the fat root: clear
  // room first (the paper replaces the cache on a re-plan).
  diff.remove_first = set_overflow;
  diff.install = encode_batch(BatchKind::kInstall, add_ranges, add_nodes);
  diff.remove = encode_batch(BatchKind::kRemove, drop_ranges, drop_nodes);
  diff.target_records = total;
  diff.metrics.push_back({"fat_root_ranges", static_cast<double>(plan.ranges.size())});
  diff.metrics.push_back({"fat_root_absorbed_nodes", static_cast<double>(plan.absorbed_nodes)});
  diff.metrics.push_back({"reformed_nodes", static_cast<double>(plan.reformed_nodes)});
  for (std::size_t s = 0; s < kNodeSets; ++s) {
    diff.metrics.push_back({"layer_" + std::to_string(s + 1) + "_nodes",
                            static_cast<double>(plan.sets[s].size())});
  }
  ranges_ = std::move(ranges);
  sets_ = std::move(sets);
  return diff;
}

ChangeBatch FattreePlanner::full_target() const {
  std::vector<RangeRecord> ranges;
  std::vector<NodeRecord> nodes;
  for (const auto& [lo, r] : ranges_) ranges.push_back(r);
  for (const auto& s : sets_) {
    for (const auto& [address, n] : s) nodes.push_back(n);
  }
  return encode_batch(BatchKind::kInstall, ranges, nodes);
}

}  // namespace forein::offload::fattree
