// A backend the registry does not know, run by the whole conformance suite
// and the registry-wide fuzzers: switch_lpm's BackendInfo copied under a
// name no host accepts. Linked into every conformance program and into
// fuzz_backend_image and fuzz_backend_batch, it proves the route a new
// backend takes (docs/offload-conformance.md): both run over
// conformance_backends(), the registered backends and the ones a linked-in
// file adds, so a backend can pass them before it is registered
// (test_unregistered_backend.cc checks it is run).
#include "forein/offload/registry.h"
#include "offload/conformance/conformance_backends.h"

namespace {

using forein::offload::BackendInfo;

const BackendInfo& unregistered_switch_lpm() {
  static const BackendInfo info = [] {
    BackendInfo copy = forein::offload::backend_by_name("switch_lpm");
    copy.name = "unregistered_switch_lpm";
    copy.summary = "switch_lpm's BackendInfo under a name the registry does not know (conformance test)";
    return copy;
  }();
  return info;
}

}  // namespace

FOREIN_CONFORMANCE_BACKEND(unregistered_switch_lpm());
