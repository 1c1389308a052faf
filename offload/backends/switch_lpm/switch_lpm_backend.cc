#include "switch_lpm/switch_lpm_backend.h"

#include <memory>

#include "switch_lpm/lpm_image.h"
#include "switch_lpm/switch_lpm_device.h"
#include "switch_lpm/switch_lpm_planner.h"

namespace forein::offload {

namespace {

std::unique_ptr<Planner> make_planner(const BackendConfig& config) {
  return std::make_unique<SwitchLpmPlanner>(config);
}

std::unique_ptr<Device> make_device(const BackendConfig& config) {
  SwitchLpmOptions options;
  if (config.capacity != 0) options.capacity = config.capacity;
  return std::make_unique<SwitchLpmDevice>(options);
}

std::vector<ImageRecord> records(std::span<const std::byte> image) {
  std::vector<ImageRecord> out;
  for (const LpmEntry& e : lpm_image_entries(image)) {
    out.push_back(ImageRecord{e.prefix.value, e.prefix.len, static_cast<std::uint8_t>(e.layer),
                              e.level, e.node});
  }
  return out;
}

// FOREIN's layered policy (section V-C, layers.h): the bottom line covers
// every node of one level (default 1, the lowest inner level) so every word
// matches an entry; the most accessed leaves are pinned before the greedy
// selection. 64 hot leaves is forein's default, not a figure of the paper.
constexpr SettingSpec kSwitchLpmSettings[] = {
    {"bottom_line_level", "the tree level FOREIN's bottom-line layer covers (0: leaves)", 1, 0, 64},
    {"hot_leaves", "the heaviest leaves pinned before the main layer is selected", 64, 0, 1'000'000},
};

}  // namespace

const BackendInfo kSwitchLpmBackend = {
    "switch_lpm",
    "FOREIN: a programmable switch's LPM table (73,000 entries) maps key words to tree nodes",
    kStartHints,
    "LPM entries",
    kSwitchLpmCapacity,
    1,  // an entry
    lpm_image_hint,
    make_planner,
    make_device,
    lpm_image_max_bytes,
    records,
    nullptr,
    kSwitchLpmSettings,
    "lpm_entries",
};

}  // namespace forein::offload
