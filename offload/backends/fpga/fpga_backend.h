// fpga: Honeycomb's interior-node cache (root in on-chip SRAM, interior
// nodes in the card's on-board DRAM) as a registered start-hint backend:
// planner (fpga_planner.h), device (fpga_device.h), image and pure walk
// (fpga_image.h). The store and accelerator model are in honeycomb/.
#pragma once

#include "forein/offload/backend.h"

namespace forein::offload {

extern const BackendInfo kFpgaBackend;

}  // namespace forein::offload
