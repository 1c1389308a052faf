#include "forein/offload/registry.h"

#include "forein/error.h"

namespace forein::offload {

// Each registered backend's BackendInfo, defined in its own folder
// (backends/<name>/); the list is backends/backends.def.
#define FOREIN_BACKEND(info) extern const BackendInfo info;
#include "backends/backends.def"
#undef FOREIN_BACKEND

namespace {

// One line per backend in backends/backends.def, as DPDK's l3fwd lists its
// lookup methods. A backend joins the list only once it passes
// tests/offload/conformance.
const BackendInfo* const kBackends[] = {
#define FOREIN_BACKEND(info) &info,
#include "backends/backends.def"
#undef FOREIN_BACKEND
};

// What a backend that gives no start hints does instead, for the refusal.
std::string what_it_does(const BackendInfo& b) {
  const std::string name = b.name;
  if ((b.capabilities & kWriteVisibility) != 0) {
    return "it makes in-flight writes visible on the network path: forein-switch --backend " + name;
  }
  if ((b.capabilities & kValueCache) != 0) return "it answers hot keys' values on the device";
  if ((b.capabilities & kScanExecution) != 0) return "it executes GET and SCAN on the device";
  return "it declares no capability a lookup host can use";
}

}  // namespace

std::span<const BackendInfo* const> registered_backends() { return kBackends; }

const BackendInfo& default_backend() {
  // FOREIN's switch LPM table: the paper forein is named after.
  static const BackendInfo& info = backend_by_name("switch_lpm");
  return info;
}

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

bool serves_lookups(const BackendInfo& info) {
  return (info.capabilities & kStartHints) != 0 || info.capabilities == 0;
}

const BackendInfo& backend_for_lookups(std::string_view name) {
  const BackendInfo& b = backend_by_name(name);
  if (!serves_lookups(b)) {
    throw InvalidArgument("backend \"" + std::string(b.name) + "\" gives no start hints (" + what_it_does(b) +
                          "); use one of: " + lookup_backend_names());
  }
  return b;
}

std::string lookup_backend_names() {
  std::string names;
  for (const BackendInfo* b : kBackends) {
    if (!serves_lookups(*b)) continue;
    if (!names.empty()) names += ", ";
    names += b->name;
  }
  return names;
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
