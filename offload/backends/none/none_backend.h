// none: no offload hardware. Plans nothing, holds nothing, hints nothing;
// every lookup starts at the root. The baseline every backend is compared
// with, and what a host uses when offload is switched off.
#pragma once

#include "forein/offload/backend.h"

namespace forein::offload {

extern const BackendInfo kNoneBackend;

}  // namespace forein::offload
