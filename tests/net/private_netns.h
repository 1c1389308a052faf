// The network namespace of the network tests that use TAP ports (issue 39).
//
// Their programs send to private-range addresses (the kernel side of a
// TAP port is A.B.C.1). In the machine's own namespace that would add
// addresses and routes beside the host's real networks. So netns_main.cc
// puts the whole test process in a namespace of its own before Catch2
// starts, while it is still single-threaded: every child it forks
// (forein-switch, the servers, forein-load) and every thread it starts
// (gRPC's too) inherits it, DPDK's TAP PMD creates its devices there, and
// "127.0.0.1" is the namespace's own loopback. The namespace is unnamed
// (unshare), so the kernel removes it, and every device in it, when the
// last process in it exits, however the test ends, SIGKILL included:
// nothing can be left behind in /run/netns. (The scripts, whose programs
// are separate processes, use named ones: scripts/netns.sh.)
#pragma once

#include <string>

namespace forein::testing {

// Moves this process into a new network namespace with its loopback up.
// Needs CAP_SYS_ADMIN (root); call before any thread starts. Returns
// false, with the reason in private_netns_problem(), when it cannot.
bool enter_private_netns();

// Whether enter_private_netns() succeeded.
bool in_private_netns();

// Why this process is not in a private namespace ("" when it is).
const std::string& private_netns_problem();

}  // namespace forein::testing
