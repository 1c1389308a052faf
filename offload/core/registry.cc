#include "forein/offload/registry.h"

#include <array>

#include "forein/error.h"
#include "fattree/fattree_backend.h"
#include "none/none_backend.h"
#include "switch_lpm/switch_lpm_backend.h"

namespace forein::offload {

namespace {

// One line per backend, as DPDK's l3fwd lists its lookup methods. A backend
// joins this list only once it passes tests/offload/conformance.
const std::array<const BackendInfo*, 3> kBackends = {
    &kNoneBackend,
    &kSwitchLpmBackend,
    &kFattreeBackend,
};

}  // namespace

std::span<const BackendInfo* const> registered_backends() { return kBackends; }

const BackendInfo* find_backend(std::string_view name) {
  for (const BackendInfo* b : kBackends) {
    if (name == b->name) return b;
  }
  return nullptr;
}

const BackendInfo& backend_by_name(std::string_view name) {
  const BackendInfo* b = find_backend(name);
  if (b == nullptr) {
    throw InvalidArgument("unknown offload backend '" + std::string(name) +
                          "'; registered backends: " + registered_backend_names());
  }
  return *b;
}

std::string registered_backend_names() {
  std::string names;
  for (const BackendInfo* b : kBackends) {
    if (!names.empty()) names += ", ";
    names += b->name;
  }
  return names;
}

}  // namespace forein::offload
