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

// Fat-B+Tree sections IV-A and V-B (fattree_types.h): "a maximum of 600 ranges" in
// the fat root (1,024 supported), "a maximum of 3600 nodes" per cached
// layer (4,096 per node set), and the five node sets of a k=4 FatTree path.
constexpr SettingSpec kFattreeSettings[] = {
    {"fat_root_ranges", "ranges of the fat root (the core switch's TCAM)", fattree::kDefaultFatRootRanges, 1,
     fattree::kFatRootRangeLimit},
    {"layer_nodes", "nodes of each cached layer (one node set)", fattree::kDefaultLayerNodes, 0,
     fattree::kNodeSetLimit},
    {"cached_layers", "cached layers below the fat root (node sets)", fattree::kNodeSets, 0, fattree::kNodeSets},
};

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
    kFattreeSettings,
};

}  // namespace forein::offload
