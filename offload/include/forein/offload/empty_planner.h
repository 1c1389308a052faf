// A planner that plans nothing: every plan() is an empty difference (an
// empty install batch and an empty remove batch) and the full target is
// empty. For backends whose device is not filled from the tree: "none"
// (no hardware) and switch_visibility (slots filled by packets on the
// network path).
#pragma once

#include <memory>

#include "forein/offload/backend.h"

namespace forein::offload {

std::unique_ptr<Planner> make_empty_planner();

}  // namespace forein::offload
