// The registry's backend lists as hosts print them ("none, switch_lpm, ..."),
// built from registered_backends() and serves_lookups(), so that a test
// comparing a message with the list needs no edit when a backend is added.
#pragma once

#include <string>

#include "forein/offload/registry.h"

namespace forein::testing {

// Every registered backend's name, in registration order, ", " between.
inline std::string registered_names_from_registry() {
  std::string out;
  for (const offload::BackendInfo* b : offload::registered_backends()) {
    if (!out.empty()) out += ", ";
    out += b->name;
  }
  return out;
}

// The names of the registered backends a host that looks keys up can use
// (serves_lookups), in registration order, ", " between.
inline std::string lookup_names_from_registry() {
  std::string out;
  for (const offload::BackendInfo* b : offload::registered_backends()) {
    if (!offload::serves_lookups(*b)) continue;
    if (!out.empty()) out += ", ";
    out += b->name;
  }
  return out;
}

}  // namespace forein::testing
