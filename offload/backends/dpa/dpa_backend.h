// dpa: DPA-Store's learned index in a BlueField-3's DPA memory as a
// registered start-hint backend: planner (dpa_planner.h), device
// (dpa_device.h), image and pure walk (dpa_image.h), stitch batches
// (dpa_batch.h), node layout (dpa_layout.h). The store, the DPA model and
// the hot-entry cache are in store/.
#pragma once

#include "forein/offload/backend.h"

namespace forein::offload {

extern const BackendInfo kDpaBackend;

}  // namespace forein::offload
