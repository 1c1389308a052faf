// The backends the offload conformance suite runs over
// (docs/offload-conformance.md): every registered one, then any BackendInfo
// a test file linked into the suite adds, registered or not. So a new
// backend can pass the suite before it joins offload/backends/backends.def:
// its sources compiled into forein_offload (capi/sources.mk), and a file
//
//   #include "offload/conformance/conformance_backends.h"
//   namespace forein::offload { extern const BackendInfo kToyBackend; }
//   FOREIN_CONFORMANCE_BACKEND(forein::offload::kToyBackend);
//
// linked into every conformance program: configure with
// -DFOREIN_CONFORMANCE_EXTRA=path/to/that.cc (tests/offload/conformance/
// CMakeLists.txt). unregistered_backend.cc adds one this way in every build
// (a copy of switch_lpm's BackendInfo under a name no host knows).
#pragma once

#include <vector>

#include "forein/offload/backend.h"
#include "forein/offload/registry.h"

namespace forein::offload::conformance {

using BackendGetter = const BackendInfo& (*)();

// The added backends' getters, in link order (called when the suite runs,
// not during static initialization, so a getter may copy a registered
// backend's BackendInfo).
inline std::vector<BackendGetter>& added_backends() {
  static std::vector<BackendGetter> getters;
  return getters;
}

struct AddBackend {
  explicit AddBackend(BackendGetter getter) { added_backends().push_back(getter); }
};

// registered_backends(), then the added ones.
inline std::vector<const BackendInfo*> conformance_backends() {
  const auto registered = registered_backends();
  std::vector<const BackendInfo*> all(registered.begin(), registered.end());
  for (const BackendGetter get : added_backends()) all.push_back(&get());
  return all;
}

}  // namespace forein::offload::conformance

#define FOREIN_CONFORMANCE_CONCAT2(a, b) a##b
#define FOREIN_CONFORMANCE_CONCAT(a, b) FOREIN_CONFORMANCE_CONCAT2(a, b)
// FOREIN_CONFORMANCE_BACKEND(expr): the suite also runs over the BackendInfo
// `expr` names (evaluated when the suite runs). At namespace scope, once per
// backend.
#define FOREIN_CONFORMANCE_BACKEND(expr)                                                              \
  static const ::forein::offload::conformance::AddBackend FOREIN_CONFORMANCE_CONCAT(                \
      forein_conformance_backend_, __LINE__)([]() -> const ::forein::offload::BackendInfo& { return (expr); })
