// A backend the registry does not know, run by the whole conformance suite:
// switch_lpm's BackendInfo copied under a name no host accepts. Linked into
// every conformance program, it proves the route a new backend takes
// (docs/offload-conformance.md): the suite runs over conformance_backends(),
// the registered backends and the ones a test file adds, so a backend can
// pass it before it is registered.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

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

TEST_CASE("conformance: the suite runs over a backend that is not registered", "[conformance]") {
  const auto all = forein::offload::conformance::conformance_backends();
  const BackendInfo* added = &unregistered_switch_lpm();
  CHECK(std::find(all.begin(), all.end(), added) != all.end());
  CHECK(forein::offload::find_backend(added->name) == nullptr);
  CHECK(std::string(forein::offload::registered_backend_names()).find(added->name) == std::string::npos);
  // Every registered backend too, first and in order.
  const auto registered = forein::offload::registered_backends();
  REQUIRE(all.size() >= registered.size() + 1);
  CHECK(std::equal(registered.begin(), registered.end(), all.begin()));
}
