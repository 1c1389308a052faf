#include "private_netns.h"

#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace forein::testing {
namespace {

bool g_private = false;
std::string g_problem = "enter_private_netns() was not called";

bool fail(const std::string& what) {
  g_problem = what + ": " + std::strerror(errno);
  return false;
}

// A new namespace's loopback is down: bring it up.
bool loopback_up() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail("socket");
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  bool ok = ::ioctl(fd, SIOCGIFFLAGS, &ifr) == 0;
  if (ok) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
    ok = ::ioctl(fd, SIOCSIFFLAGS, &ifr) == 0;
  }
  if (!ok) fail("bringing up lo in the new network namespace");
  ::close(fd);
  return ok;
}

}  // namespace

bool enter_private_netns() {
  if (g_private) return true;
  if (::geteuid() != 0) {
    g_problem = "a network namespace of its own needs root";
    return false;
  }
  if (::unshare(CLONE_NEWNET) != 0) return fail("unshare(CLONE_NEWNET)");
  if (!loopback_up()) return false;
  g_private = true;
  g_problem.clear();
  return true;
}

bool in_private_netns() { return g_private; }

const std::string& private_netns_problem() { return g_problem; }

}  // namespace forein::testing
