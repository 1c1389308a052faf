// switch_lpm: FOREIN's switch LPM hints (FOREIN, section V) as a registered
// backend: planner (switch_lpm_planner.h), device (switch_lpm_device.h),
// image and pure lookup (lpm_image.h).
#pragma once

#include "forein/offload/backend.h"

namespace forein::offload {

extern const BackendInfo kSwitchLpmBackend;

}  // namespace forein::offload
