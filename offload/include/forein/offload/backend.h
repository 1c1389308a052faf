// The offload backend interface (shared/DESIGN.md contract 4): what the
// offload manager pushes entries into and what hosts ask for start hints.
//
// A backend models one piece of hardware (a switch LPM table, an FPGA node
// cache, ...). The manager is its only writer; hosts read it from any
// number of threads, and a read never blocks on a write: backends publish
// immutable table versions. A hint is advice the tree validates, so a stale
// or torn table costs speed, never a wrong result.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "forein/key.h"
#include "forein/node_interval.h"
#include "forein/offload/lpm_entry.h"

namespace forein::offload {

enum class BackendStatus : std::uint8_t {
  kOk,
  kCapacityExceeded,  // the batch would not fit; nothing was changed
  kInvalidEntry,      // a malformed entry; nothing was changed
};

const char* to_string(BackendStatus status);

// Resources in use, in the hardware's own units (LPM entries for a switch,
// bytes of SRAM or DPA memory for others), as the papers' tables report them.
struct BackendUsage {
  std::string unit;              // e.g. "LPM entries"
  std::uint64_t used = 0;        // in `unit`
  std::uint64_t capacity = 0;    // in `unit`
  std::uint64_t hardware_bytes = 0;  // what the used entries occupy on the device
  std::uint64_t host_bytes = 0;      // memory of this software model

  double fraction() const {
    return capacity == 0 ? 0 : static_cast<double>(used) / static_cast<double>(capacity);
  }
};

// Modelled cost figures of the hardware path, for experiments that cannot
// run on the device. Each backend documents where its numbers come from.
struct BackendModel {
  double hint_latency_ns = 0;       // added to a query by the hint lookup
  double hints_per_second = 0;      // lookup throughput of the device
  double install_latency_us = 0;    // control-plane latency of one batch
  double entries_per_second = 0;    // control-plane install rate
  std::string source;               // where the figures come from
};

class OffloadBackend {
 public:
  virtual ~OffloadBackend() = default;

  virtual const char* name() const = 0;

  // Adds the entries (an entry whose prefix and layer class are installed
  // replaces that entry's target). All or nothing.
  virtual BackendStatus install(std::span<const LpmEntry> entries) = 0;
  // Removes the entries' prefixes (matched by prefix and layer class; the
  // target is ignored). Absent ones are skipped. Returns how many were removed.
  virtual std::size_t remove(std::span<const LpmEntry> entries) = 0;

  // Start hints for a key word: primary = the most specific match,
  // secondary = the bottom-line layer's match (absent when it is the
  // primary). Never blocks.
  virtual StartHints hint_for_word(Word w) const = 0;
  StartHints hint(std::string_view key) const { return hint_for_word(word_of(key)); }

  virtual BackendUsage usage() const = 0;
  virtual BackendModel model() const = 0;
};

}  // namespace forein::offload
