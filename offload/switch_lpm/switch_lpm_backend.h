// switch_lpm: FOREIN's INDEXLPM as an OffloadBackend.
//
// Two LPM tables share the switch's 73,000 entries: the upper table (main
// layer and hot leaves) and the bottom-line table. The paper's single table
// answers only the longest match; a second table (another pipeline stage on
// Tofino) also gives the bottom-line match as the secondary hint, so a stale
// main entry costs one extra node visit instead of a root descent. Each
// entry is an 8-byte key match plus an 8-byte action (node pointer), as in
// the paper's P4 program. usage() reports entries used / capacity as in
// the paper's Table II.
//
// The backend keeps its own index of installed keys so that capacity is
// checked exactly and a batch is all or nothing across both tables.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "forein/offload/backend.h"
#include "forein/offload/published.h"
#include "switch_lpm/lpm_table.h"

namespace forein::offload {

struct SwitchLpmOptions {
  std::size_t capacity = kSwitchLpmCapacity;  // LPM entries, both tables together
  // Model figures. The FOREIN paper gives none for the switch itself; these
  // are typical Tofino values, to be replaced by measured ones:
  // one pipeline pass, line-rate lookups, and a P4Runtime-style agent.
  double hint_latency_ns = 400;
  double hints_per_second = 4.8e9;
  double install_latency_us = 1000;
  double entries_per_second = 20000;
};

class SwitchLpmBackend final : public OffloadBackend {
 public:
  // Throws InvalidArgument for a capacity outside 1..2^30.
  explicit SwitchLpmBackend(SwitchLpmOptions options = {});

  const char* name() const override { return "switch_lpm"; }
  BackendStatus install(std::span<const LpmEntry> entries) override;
  std::size_t remove(std::span<const LpmEntry> entries) override;
  StartHints hint_for_word(Word w) const override;
  BackendUsage usage() const override;
  BackendModel model() const override;

  // The installed entries (bottom line first, then by prefix), for tests
  // and diagnostics.
  std::vector<LpmEntry> entries() const;

  static constexpr std::size_t kBytesPerEntry = 16;  // 8-byte key match + 8-byte action

 private:
  using Key = std::pair<bool, std::pair<Word, std::uint8_t>>;  // bottom line?, prefix
  static Key key_of(const LpmEntry& e);

  // Both tables' current versions, published together so a hint costs one
  // read section, not one per table.
  struct Snapshots {
    std::shared_ptr<const LpmSnapshot> upper, bottom;
  };
  void publish_snapshots_locked();  // caller holds mu_

  const SwitchLpmOptions options_;
  LpmTable upper_;   // main layer and hot leaves
  LpmTable bottom_;  // bottom-line layer
  mutable std::mutex mu_;  // serializes writers; readers use snapshots_ only
  std::map<Key, LpmEntry> installed_;  // guarded by mu_
  Published<Snapshots> snapshots_;
};

}  // namespace forein::offload
