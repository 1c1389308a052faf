#include "fpga/honeycomb/compute_model.h"

#include <utility>

namespace forein::offload::fpga {

const char* compute_unit_name(ComputeUnit unit) {
  switch (unit) {
    case ComputeUnit::kKeySearch: return "key search units";
    case ComputeUnit::kShortcutScan: return "shortcut range scan units";
    case ComputeUnit::kSortedScan: return "sorted range scan units";
    case ComputeUnit::kLogScan: return "log range scan units";
    case ComputeUnit::kMemoryAdapter: return "memory interface adapters";
  }
  return "?";
}

unsigned units_of(const ComputeConfig& config, ComputeUnit unit) {
  switch (unit) {
    case ComputeUnit::kKeySearch: return config.key_search_units;
    case ComputeUnit::kShortcutScan: return config.shortcut_scan_units;
    case ComputeUnit::kSortedScan: return config.sorted_scan_units;
    case ComputeUnit::kLogScan: return config.log_scan_units;
    case ComputeUnit::kMemoryAdapter: return config.memory_adapters;
  }
  return 0;
}

std::uint64_t block_cycles(std::uint64_t bytes) {
  return kBlockCycles + (bytes + kKeyFragmentBytes - 1) / kKeyFragmentBytes;
}

std::uint64_t adapter_cycles(std::uint64_t bytes) {
  return 1 + (bytes + kAdapterBytesPerCycle - 1) / kAdapterBytesPerCycle;
}

double ComputeCounters::busy_seconds(ComputeUnit unit, const ComputeConfig& config) const {
  const unsigned n = units_of(config, unit);
  if (n == 0 || config.clock_hz <= 0) return 0;
  return static_cast<double>(cycles(unit)) / (n * config.clock_hz);
}

std::pair<ComputeUnit, double> ComputeCounters::busiest(const ComputeConfig& config) const {
  std::pair<ComputeUnit, double> best{ComputeUnit::kKeySearch, 0};
  for (std::size_t i = 0; i < kComputeUnitKinds; ++i) {
    const auto unit = static_cast<ComputeUnit>(i);
    const double s = busy_seconds(unit, config);
    if (s > best.second) best = {unit, s};
  }
  return best;
}

void ComputeCounters::reset() {
  for (auto& c : cycles_) c.store(0, std::memory_order_relaxed);
}

}  // namespace forein::offload::fpga
