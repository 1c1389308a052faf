#include "ports.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common/parse.h"
#include "dpdk/eal.h"

namespace forein::net::sw {
namespace {

constexpr std::uint16_t kDescriptors = 512;
constexpr unsigned kPoolSize = 4095;

// The kernel side of a TAP device: address, netmask, up; its MAC.
bool configure_iface(Side& side) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, side.iface.c_str(), IFNAMSIZ - 1);
  auto set_addr = [&](unsigned long req, std::uint32_t v) {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(v);
    std::memcpy(&ifr.ifr_addr, &sin, sizeof sin);
    return ::ioctl(fd, req, &ifr) == 0;
  };
  bool ok = set_addr(SIOCSIFADDR, side.kernel_ip) && set_addr(SIOCSIFNETMASK, 0xFFFFFF00u);
  if (ok) ok = ::ioctl(fd, SIOCGIFFLAGS, &ifr) == 0;
  if (ok) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
    ok = ::ioctl(fd, SIOCSIFFLAGS, &ifr) == 0;
  }
  if (ok) ok = ::ioctl(fd, SIOCGIFHWADDR, &ifr) == 0;
  if (ok) std::memcpy(side.kernel_mac.addr_bytes, ifr.ifr_hwaddr.sa_data, RTE_ETHER_ADDR_LEN);
  if (!ok) std::fprintf(stderr, "forein-switch: configuring %s: %s\n", side.iface.c_str(), std::strerror(errno));
  ::close(fd);
  // Best effort: no IPv6 chatter on the device.
  if (std::FILE* f = std::fopen(("/proc/sys/net/ipv6/conf/" + side.iface + "/disable_ipv6").c_str(), "w")) {
    std::fputs("1", f);
    std::fclose(f);
  }
  return ok;
}

// The memif PMD binds PATH itself and fails when the file exists. A socket
// file nobody listens on was left by a switch that died (SIGKILL): remove
// it. A live one, or any other file, is an error.
bool prepare_memif_socket(const std::string& path) {
  struct stat st {};
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    std::fprintf(stderr, "forein-switch: memif socket %s: no directory %s\n", path.c_str(), dir.c_str());
    return false;
  }
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;
    std::fprintf(stderr, "forein-switch: memif socket %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  if (!S_ISSOCK(st.st_mode)) {
    std::fprintf(stderr, "forein-switch: memif socket %s exists and is not a socket\n", path.c_str());
    return false;
  }
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  const bool live = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  if (live) {
    std::fprintf(stderr, "forein-switch: memif socket %s is in use by another process\n", path.c_str());
    return false;
  }
  if (::unlink(path.c_str()) != 0) {
    std::fprintf(stderr, "forein-switch: removing stale memif socket %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  return true;
}

bool start_port(std::uint16_t port, rte_mempool* pool) {
  if (!dpdk::configure_port(port, pool, kDescriptors) || rte_eth_dev_start(port) != 0) return false;
  rte_eth_promiscuous_enable(port);  // best effort
  return true;
}

}  // namespace

std::string ip_string(std::uint32_t host_order) {
  in_addr a{htonl(host_order)};
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

bool init_sides(const Options& o, Side sides[2]) {
  for (int i = 0; i < 2; ++i) {
    std::uint32_t base = 0;
    const bool tap = o.port_kind[i] == PortKind::kTap;
    if (!parse_net(o.net[i], &base) || (tap && (o.iface[i].empty() || o.iface[i].size() >= IFNAMSIZ))) {
      std::fprintf(stderr, "forein-switch: bad network '%s' or interface '%s'\n", o.net[i].c_str(),
                   o.iface[i].c_str());
      return false;
    }
    sides[i].kind = o.port_kind[i];
    sides[i].device = port_device(o, i);
    sides[i].memif_socket = tap ? std::string() : o.memif_socket[i];
    sides[i].memif_client = !tap && o.memif_client[i];
    sides[i].iface = tap ? o.iface[i] : (sides[i].memif_client ? "memif-client:" : "memif:") + o.memif_socket[i];
    // A switch that joins another's memif is the peer on that link.
    sides[i].kernel_ip = base + (sides[i].memif_client ? 2 : 1);
    sides[i].switch_ip = base + (sides[i].memif_client ? 1 : 2);
    sides[i].switch_mac = rte_ether_addr{{0x02, 0xF0, 0xE1, 0x5C, 0x00, static_cast<std::uint8_t>(i + 1)}};
    // A memif peer's MAC is unknown until it sends: flood (broadcast) until then.
    if (!tap) sides[i].kernel_mac = rte_ether_addr{{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}};
  }
  if (sides[0].kernel_ip == sides[1].kernel_ip) {
    std::fprintf(stderr, "forein-switch: the client and server networks must differ\n");
    return false;
  }
  if (sides[0].kind == PortKind::kMemif && sides[1].kind == PortKind::kMemif &&
      sides[0].memif_socket == sides[1].memif_socket) {
    std::fprintf(stderr, "forein-switch: the client and server memif sockets must differ\n");
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    if (sides[i].kind == PortKind::kMemif && !sides[i].memif_client && !prepare_memif_socket(sides[i].memif_socket)) {
      return false;
    }
  }
  return true;
}

bool init_eal(const Options& o) {
  if (!dpdk::start_eal(eal_args(o))) {
    std::fprintf(stderr, "forein-switch: EAL init failed: %s\n", rte_strerror(rte_errno));
    return false;
  }
  return true;
}

bool start_ports(Side sides[2]) {
  rte_mempool* pool = rte_pktmbuf_pool_create("fsw_pool", kPoolSize, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                              static_cast<int>(rte_socket_id()));
  bool ok = pool != nullptr;
  if (!ok) std::fprintf(stderr, "forein-switch: mbuf pool: %s\n", rte_strerror(rte_errno));
  for (int i = 0; ok && i < 2; ++i) {
    Side& side = sides[i];
    ok = rte_eth_dev_get_port_by_name(side.device.c_str(), &side.port) == 0 && start_port(side.port, pool);
    // A TAP's kernel side is configured here; a memif side waits for its
    // peer to connect (until then its bursts are empty).
    if (ok && side.kind == PortKind::kTap) ok = configure_iface(side);
    if (ok && side.kind == PortKind::kMemif) rte_eth_macaddr_get(side.port, &side.switch_mac);
    if (!ok) {
      std::fprintf(stderr, "forein-switch: port %s (%s) failed to start\n", side.device.c_str(), side.iface.c_str());
    }
  }
  return ok;
}

void stop_ports(Side sides[2]) {
  for (int i = 0; i < 2; ++i) {
    rte_eth_dev_stop(sides[i].port);
    rte_eth_dev_close(sides[i].port);
  }
}

}  // namespace forein::net::sw
