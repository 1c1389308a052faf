// fattree: Fat-B+Tree's in-switch tree (fat root + 16-branch node sets on a
// k=4 FatTree path) as a registered backend: planner (fattree_planner.h),
// device (fattree_device.h), image and pure lookup (fattree_image.h).
#pragma once

#include "forein/offload/backend.h"

namespace forein::offload {

extern const BackendInfo kFattreeBackend;

}  // namespace forein::offload
