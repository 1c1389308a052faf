// none: no offload hardware. Plans nothing, holds nothing, hints nothing;
// every lookup starts at the root. The baseline every backend is compared
// with, and what a host uses when offload is switched off.
#pragma once

#include <memory>

#include "forein/offload/backend.h"

namespace forein::offload {

extern const BackendInfo kNoneBackend;

// A planner that plans nothing (empty diffs, an empty target): none's, and
// that of any backend whose device is not filled from the tree.
std::unique_ptr<Planner> make_empty_planner();

}  // namespace forein::offload
