// The accelerator's compute as the paper builds it (003, sections 4.2-4.3,
// 6.1): key search units (KSUs) search interior-node blocks, range scan
// units (RSUs: one variant each for the leaf's shortcut, sorted and log
// blocks) scan leaves, memory subsystem interface (MSI) adapters carry every
// off-chip access; all clocked at 220 MHz. A unit is busy for the cycles its
// blocks cost; the accelerator's compute rate is bounded by its busiest
// unit class (cycles / (units x clock)), computed from the blocks, bytes and
// log items the requests really processed.
//
// From the paper: the unit counts (14 KSUs, 4 shortcut-, 5 sorted- and 5
// log-RSUs, 4 MSIs), the 220 MHz clock, the 16-byte key fragment the
// comparison pipeline takes a cycle (4.2: "key fragments stored in registers
// with configurable width (currently 16 bytes)"; keys are streamed, so a
// block costs a cycle per 16 bytes), and log sorting at O(1) cycles per
// item (4.3: taken as one). Inferred (the paper gives no figure):
//   - kBlockCycles, the cycles a unit spends on a block beyond streaming
//     it (taking the request's metadata and bound key, the version check,
//     the result generator, the hop back through the ring). The paper sized
//     the units as "the minimum ... to achieve a target SCAN operation
//     throughput of approximately 10 Mops/s" (6.1), so the KSU array, the
//     largest, is taken to run out at that target: a 1-item SCAN on the
//     paper's 4-level tree has the KSUs search six blocks (three interior
//     nodes, header+shortcuts and a segment each) streaming 2.2 KB, 135
//     cycles; 14 KSUs x 220 MHz / 10 Mops = 308 cycles a request, so
//     (308 - 135) / 6 = 29 cycles a block;
//   - the MSI adapter's data path, 64 bytes a cycle (a 512-bit Avalon
//     interface, the usual width for two PCIe Gen3 x8 and DDR4 at 220 MHz).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "forein/fpga/accelerator.h"

namespace forein::offload::fpga {

enum class ComputeUnit : std::uint8_t {
  kKeySearch,     // KSU: interior-node header+shortcut blocks and segments
  kShortcutScan,  // shortcut-RSU: a leaf's first 512 bytes
  kSortedScan,    // sorted-RSU: a leaf's sorted segments
  kLogScan,       // log-RSU: a leaf's log block, sorted by order hints
  kMemoryAdapter, // MSI adapter: every access to PCIe or on-board DRAM
};
inline constexpr std::size_t kComputeUnitKinds = 5;

const char* compute_unit_name(ComputeUnit unit);

// Units of a class in the configuration.
unsigned units_of(const ComputeConfig& config, ComputeUnit unit);

inline constexpr std::uint64_t kKeyFragmentBytes = 16;  // 4.2 (paper)
inline constexpr std::uint64_t kBlockCycles = 29;       // inferred, see above
inline constexpr std::uint64_t kLogItemCycles = 1;      // 4.3: O(1) per item (paper)
inline constexpr std::uint64_t kAdapterBytesPerCycle = 64;  // inferred, see above

// Cycles a search or scan unit spends on one block of `bytes`.
std::uint64_t block_cycles(std::uint64_t bytes);
// Cycles an MSI adapter spends on one access of `bytes`.
std::uint64_t adapter_cycles(std::uint64_t bytes);

// Cycles charged per unit class (relaxed atomics: requests run on several
// model threads).
class ComputeCounters {
 public:
  void add(ComputeUnit unit, std::uint64_t cycles) {
    cycles_[static_cast<std::size_t>(unit)].fetch_add(cycles, std::memory_order_relaxed);
  }
  std::uint64_t cycles(ComputeUnit unit) const {
    return cycles_[static_cast<std::size_t>(unit)].load(std::memory_order_relaxed);
  }
  // Seconds the class's units are busy, spread evenly over them (requests
  // are dispatched to whichever unit is free).
  double busy_seconds(ComputeUnit unit, const ComputeConfig& config) const;
  // The busiest class and its busy seconds.
  std::pair<ComputeUnit, double> busiest(const ComputeConfig& config) const;
  void reset();

 private:
  std::array<std::atomic<std::uint64_t>, kComputeUnitKinds> cycles_{};
};

}  // namespace forein::offload::fpga
