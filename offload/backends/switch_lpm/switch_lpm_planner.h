// switch_lpm's planner: FOREIN's layered entry set (layers.h: bottom line,
// greedy-selected main layer, hot leaves) from the node table and the
// index's key words, diffed against the previous plan (entry_diff.h) and
// encoded as LPM batches (lpm_batch.h).
//
// The key words (for hollow-prefix elimination) are kept from one plan to
// the next and read again only when the manager cannot promise they are
// unchanged (PlanInput::keys_unchanged: the source's key_generation moved,
// or the source cannot tell), so a plan driven by samples alone reads no
// key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "forein/offload/backend.h"
#include "switch_lpm/layers.h"
#include "switch_lpm/lpm_entry.h"

namespace forein::offload {

class SwitchLpmPlanner final : public Planner {
 public:
  // Throws InvalidArgument for a bad setting (kSwitchLpmSettings).
  explicit SwitchLpmPlanner(const BackendConfig& config);

  PlanDiff plan(const PlanInput& input) override;
  ChangeBatch full_target() const override;
  void reset() override {
    target_.clear();
    costs_.clear();
  }

  // The entry set the device holds once every planned batch is applied, in
  // diff order (bottom line first, then by prefix).
  const std::vector<LpmEntry>& target() const { return target_; }
  // How many times plan() read the key words from its KeySource.
  std::uint64_t word_reads() const { return word_reads_; }
  // Nodes whose hollow-free cover plan() computed (not kept from an
  // earlier plan over the same words).
  std::uint64_t covers_computed() const { return costs_.misses(); }

 private:
  // The input's key words, ascending: kept from the last read when the
  // manager says they are unchanged, read again otherwise.
  std::span<const Word> key_words(const PlanInput& input);

  const std::uint64_t budget_;  // 0: half the capacity
  const std::uint16_t bottom_line_level_;
  const std::size_t hot_leaves_;
  std::vector<LpmEntry> target_;
  std::vector<Word> words_;   // the last words read
  bool words_valid_ = false;  // words_ is the whole set of the last plan's source
  std::uint64_t word_reads_ = 0;
  // The covers' sizes for words_ (cleared whenever words_ is).
  CoverCostCache costs_;
};

}  // namespace forein::offload
