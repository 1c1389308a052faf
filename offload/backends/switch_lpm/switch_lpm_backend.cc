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

}  // namespace

const BackendInfo kSwitchLpmBackend = {
    "switch_lpm",
    "FOREIN: a programmable switch's LPM table (73,000 entries) maps key words to tree nodes",
    kStartHints,
    "LPM entries",
    kSwitchLpmCapacity,
    lpm_image_hint,
    make_planner,
    make_device,
    lpm_image_max_bytes,
};

}  // namespace forein::offload
