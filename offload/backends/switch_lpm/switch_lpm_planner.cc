#include "switch_lpm/switch_lpm_planner.h"

#include <utility>

#include "switch_lpm/entry_diff.h"
#include "switch_lpm/switch_lpm_backend.h"
#include "switch_lpm/lpm_batch.h"

namespace forein::offload {

SwitchLpmPlanner::SwitchLpmPlanner(const BackendConfig& config)
    : budget_(config.budget),
      bottom_line_level_(static_cast<std::uint16_t>(setting_value(kSwitchLpmBackend, config, "bottom_line_level"))),
      hot_leaves_(static_cast<std::size_t>(setting_value(kSwitchLpmBackend, config, "hot_leaves"))) {}

std::span<const Word> SwitchLpmPlanner::key_words(const PlanInput& input) {
  if (input.keys == nullptr) {
    words_valid_ = false;
    words_.clear();
    costs_.clear();
    return {};
  }
  if (input.keys_unchanged && words_valid_) return words_;
  words_valid_ = false;  // until the read below completes
  words_.clear();
  costs_.clear();  // the covers' hollowness was the old words'
  input.keys->for_each_word([&](Word w) {
    words_.push_back(w);
    return true;
  });
  ++word_reads_;
  words_valid_ = true;
  return words_;
}

PlanDiff SwitchLpmPlanner::plan(const PlanInput& input) {
  std::vector<LpmEntry> next;
  LayeredEntries layers;
  if (input.nodes.empty()) {
    // No words read for this input: what is kept may be older than it.
    words_valid_ = false;
    costs_.clear();
  } else {
    LayerOptions options;
    options.budget = budget_ != 0 ? budget_ : input.capacity / 2;
    options.bottom_line_level = bottom_line_level_;
    options.hot_leaves = hot_leaves_;
    const std::span<const Word> words = key_words(input);
    layers = build_layered_entries(input.nodes, words, options, &costs_);
    next.reserve(layers.entries.size());
    for (const LpmEntry& e : layers.entries) {
      if (e.node != kNoPage) next.push_back(e);  // not the synthetic root's
    }
  }
  sort_entries(next);

  EntryDiff diff = diff_entries(target_, next);
  PlanDiff out;
  out.install = encode_lpm_batch(BatchKind::kInstall, diff.install);
  out.remove = encode_lpm_batch(BatchKind::kRemove, diff.remove);
  out.new_records = diff.new_keys;
  out.target_records = next.size();
  out.metrics = {
      {"bottom_line_entries", static_cast<double>(layers.bottom_line_entries)},
      {"main_entries", static_cast<double>(layers.main_entries)},
      {"hot_leaf_entries", static_cast<double>(layers.hot_leaf_entries)},
      {"bottom_line_level", static_cast<double>(layers.bottom_line_level)},
      {"modelled_ama", layers.selection.ama},
  };
  target_ = std::move(next);
  return out;
}

ChangeBatch SwitchLpmPlanner::full_target() const {
  return encode_lpm_batch(BatchKind::kInstall, target_);
}

}  // namespace forein::offload
