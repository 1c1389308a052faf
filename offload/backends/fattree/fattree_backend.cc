#include "fattree/fattree_backend.h"

#include <memory>

#include "fattree/fattree_device.h"
#include "fattree/fattree_image.h"
#include "fattree/fattree_planner.h"

namespace forein::offload {

namespace {

std::unique_ptr<Planner> make_planner(const BackendConfig& config) {
  return std::make_unique<fattree::FattreePlanner>(config);
}

std::unique_ptr<Device> make_device(const BackendConfig& config) {
  return std::make_unique<fattree::FattreeDevice>(config.capacity != 0 ? config.capacity
                                                                       : fattree::kCapacity);
}

}  // namespace

const BackendInfo kFattreeBackend = {
    "fattree",
    "Fat-B+Tree: a fat root (TCAM ranges) and 16-branch node sets in the switches of a k=4 "
    "FatTree path resolve keys to tree nodes",
    kStartHints,
    "in-switch nodes",
    fattree::kCapacity,
    1,  // a fat-root range or a node-set node
    fattree::fattree_image_hint,
    make_planner,
    make_device,
    fattree::fattree_image_max_bytes,
    fattree::fattree_image_records,
    fattree::fattree_image_usage,
};

}  // namespace forein::offload
