// Catch2's main() for the network tests with TAP ports (private_netns.h):
// the process enters a network namespace of its own first, then runs the
// tests. Where it cannot (not root), the tests that need TAP ports skip
// themselves and the rest (memif, loopback) run in the current namespace.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "private_netns.h"

int main(int argc, char** argv) {
  if (!forein::testing::enter_private_netns()) {
    std::fprintf(stderr, "no private network namespace (%s): tests with TAP ports will skip\n",
                 forein::testing::private_netns_problem().c_str());
  }
  return Catch::Session().run(argc, argv);
}
