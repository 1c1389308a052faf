// The conformance suite runs over a backend that is not registered
// (unregistered_backend.cc adds one, as a developer's file would).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "forein/offload/registry.h"
#include "offload/conformance/conformance_backends.h"

using forein::offload::BackendInfo;

TEST_CASE("conformance: the suite runs over a backend that is not registered", "[conformance]") {
  const auto all = forein::offload::conformance::conformance_backends();
  const auto it = std::find_if(all.begin(), all.end(), [](const BackendInfo* b) {
    return std::string(b->name) == "unregistered_switch_lpm";
  });
  REQUIRE(it != all.end());
  const BackendInfo* added = *it;
  CHECK(std::find(all.begin(), all.end(), added) != all.end());
  CHECK(forein::offload::find_backend(added->name) == nullptr);
  CHECK(std::string(forein::offload::registered_backend_names()).find(added->name) == std::string::npos);
  // Every registered backend too, first and in order.
  const auto registered = forein::offload::registered_backends();
  REQUIRE(all.size() >= registered.size() + 1);
  CHECK(std::equal(registered.begin(), registered.end(), all.begin()));
}
