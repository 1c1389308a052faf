// switch_lpm's device model: FOREIN's INDEXLPM on a Tofino switch.
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
// The device keeps its own index of installed keys so that capacity is
// checked exactly and a batch is all or nothing across both tables. After
// every change it publishes both tables as one image (lpm_image.h); hosts
// look hints up in the image, never in the tables.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "forein/offload/backend.h"
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

class SwitchLpmDevice final : public Device {
 public:
  // Throws InvalidArgument for a capacity outside 1..2^30.
  explicit SwitchLpmDevice(SwitchLpmOptions options = {});

  // An encoded batch (lpm_batch.h); a malformed one changes nothing.
  BackendStatus apply(const ChangeBatch& batch) override;
  BackendUsage usage() const override;
  BackendModel model() const override;

  // Adds the entries (an entry whose prefix and layer class are installed
  // replaces that entry's target). All or nothing.
  BackendStatus install(std::span<const LpmEntry> entries);
  // Removes the entries' prefixes (matched by prefix and layer class; the
  // target is ignored). Absent ones are skipped. Returns how many were removed.
  std::size_t remove(std::span<const LpmEntry> entries);

  // Start hints from the current image (as every host gets them).
  StartHints hint_for_word(Word w) const;
  StartHints hint(std::string_view key) const { return hint_for_word(word_of(key)); }

  // The installed entries (bottom line first, then by prefix), for tests
  // and diagnostics.
  std::vector<LpmEntry> entries() const;

  static constexpr std::size_t kBytesPerEntry = 16;  // 8-byte key match + 8-byte action

 private:
  using Key = std::pair<bool, std::pair<Word, std::uint8_t>>;  // bottom line?, prefix
  static Key key_of(const LpmEntry& e);

  void publish_image_locked();  // caller holds mu_

  const SwitchLpmOptions options_;
  LpmTable upper_;   // main layer and hot leaves
  LpmTable bottom_;  // bottom-line layer
  mutable std::mutex mu_;  // serializes writers; readers use the image only
  std::map<Key, LpmEntry> installed_;  // guarded by mu_
  std::uint64_t version_ = 0;          // guarded by mu_
};

}  // namespace forein::offload
