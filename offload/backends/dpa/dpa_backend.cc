#include "dpa/dpa_backend.h"

#include <memory>

#include "dpa/dpa_device.h"
#include "dpa/dpa_image.h"
#include "dpa/dpa_planner.h"

namespace forein::offload {

namespace {

std::unique_ptr<Planner> make_planner(const BackendConfig& config) {
  return std::make_unique<dpa::DpaPlanner>(config);
}

std::unique_ptr<Device> make_device(const BackendConfig& config) {
  return std::make_unique<dpa::DpaDevice>(config.capacity != 0 ? config.capacity : dpa::kDpaMemoryBytes);
}

}  // namespace

const BackendInfo kDpaBackend = {
    "dpa",
    "DPA-Store: a BlueField-3 DPA's learned index (PLA models in 1 GiB of DPA memory, stitched by the host) "
    "over the tree's leaf boundaries walks keys to their leaf",
    kStartHints | kValueCache,
    "DPA bytes",
    dpa::kDpaMemoryBytes,
    1024,  // about: an index node takes 80 bytes to about 2 KiB, a full index leaf 2,112
    dpa::dpa_image_hint,
    make_planner,
    make_device,
    dpa::dpa_image_max_bytes,
    dpa::dpa_image_records,
    dpa::dpa_image_usage,
};

}  // namespace forein::offload
