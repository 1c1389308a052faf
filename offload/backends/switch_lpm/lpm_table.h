// switch_lpm: a software model of FOREIN's INDEXLPM, the switch's LPM table
// that maps a 64-bit key word to an 8-byte node pointer (capacity 73,000
// entries on the paper's Tofino).
//
// Writers (the control plane) serialize on a mutex, apply a batch to the
// master entry set, build a new immutable LpmSnapshot and publish it
// (Published<>: an atomic swap, then a grace period before the old version
// is released). Readers (the data plane) never block and only ever see a
// complete version. A batch is all or nothing: an invalid entry, or more
// entries than the capacity, leaves the table as it was.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "switch_lpm/lpm_entry.h"
#include "switch_lpm/prefix_cover.h"
#include "forein/offload/published.h"
#include "switch_lpm/lpm_snapshot.h"

namespace forein::offload {

inline constexpr std::size_t kSwitchLpmCapacity = 73000;

enum class LpmStatus : std::uint8_t {
  kOk,
  kCapacityExceeded,  // the batch would take the table past its capacity
  kInvalidEntry,      // a malformed prefix or a node id of 0
};

const char* to_string(LpmStatus status);

struct LpmUsage {
  std::size_t entries = 0;   // installed prefixes
  std::size_t capacity = 0;  // the hardware's LPM entries
  std::size_t segments = 0;  // flattened intervals (software structure)
  std::size_t bytes = 0;     // memory of the published snapshot
  double fraction() const {
    return capacity == 0 ? 0 : static_cast<double>(entries) / static_cast<double>(capacity);
  }
};

// The action an entry installs: node, level, and its version's low 16 bits.
LpmAction action_of(const LpmEntry& entry);

class LpmTable {
 public:
  // capacity in 1..2^30 entries (InvalidArgument otherwise).
  explicit LpmTable(std::size_t capacity = kSwitchLpmCapacity);
  LpmTable(const LpmTable&) = delete;
  LpmTable& operator=(const LpmTable&) = delete;

  // Adds the entries (an existing prefix gets the new action; within a
  // batch the last one wins) and publishes one new version.
  LpmStatus install(std::span<const LpmEntry> entries);
  LpmStatus install(std::span<const std::pair<Prefix, LpmAction>> entries);

  // Removes the prefixes that are installed, publishes one new version, and
  // returns how many were removed. Absent prefixes are ignored.
  std::size_t remove(std::span<const Prefix> prefixes);

  void clear();

  // The action of the longest installed prefix that matches w, in the
  // current version.
  std::optional<LpmAction> lookup(Word w) const {
    return current_.read([w](const LpmSnapshot& s) { return s.lookup(w); });
  }

  // The current version, for a batch of lookups against one version (and
  // without a read section per lookup).
  std::shared_ptr<const LpmSnapshot> snapshot() const { return current_.load(); }

  LpmUsage usage() const;
  std::size_t capacity() const { return capacity_; }

 private:
  using Entry = std::pair<Prefix, LpmAction>;

  // Caller holds write_mu_.
  void publish_locked();

  const std::size_t capacity_;
  std::mutex write_mu_;
  // Installed entries in prefix_less order, distinct prefixes: a sorted
  // vector, so a batch is a merge and a publish reads it as is.
  std::vector<Entry> entries_;  // guarded by write_mu_
  std::uint64_t next_version_ = 1;  // guarded by write_mu_
  Published<LpmSnapshot> current_;
};

}  // namespace forein::offload
