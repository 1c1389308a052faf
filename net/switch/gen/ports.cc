#include "ports.h"

#include <time.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "dpdk/eal.h"

namespace forein::net::swgen {
namespace {

constexpr std::uint16_t kDescriptors = 1024;
constexpr unsigned kPoolSize = 8191;

bool start_port(std::uint16_t port, rte_mempool* pool) {
  return dpdk::configure_port(port, pool, kDescriptors) && rte_eth_dev_start(port) == 0;
}

bool link_up(std::uint16_t port) {
  rte_eth_link link{};
  return rte_eth_link_get_nowait(port, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
}

}  // namespace

bool init_eal(const GenOptions& o) {
  if (!dpdk::start_eal(eal_args(o))) {
    std::fprintf(stderr, "forein-switch-gen: EAL init failed: %s\n", rte_strerror(rte_errno));
    return false;
  }
  return true;
}

bool start_ports(const GenOptions& o, Ports* p) {
  p->pool = rte_pktmbuf_pool_create("fswgen_pool", kPoolSize, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                    static_cast<int>(rte_socket_id()));
  if (p->pool == nullptr) {
    std::fprintf(stderr, "forein-switch-gen: mbuf pool: %s\n", rte_strerror(rte_errno));
    return false;
  }
  p->count = sides(o);
  for (int i = 0; i < p->count; ++i) {
    const std::string name = "net_memif" + std::to_string(i);
    if (rte_eth_dev_get_port_by_name(name.c_str(), &p->port[i]) != 0 || !start_port(p->port[i], p->pool)) {
      std::fprintf(stderr, "forein-switch-gen: port %s (%s) failed to start\n", name.c_str(), o.socket[i].c_str());
      return false;
    }
  }
  // The memif client connects from the EAL's interrupt thread; poll for
  // both links with a deadline.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(o.connect_timeout_ms);
  const bool both = sides(o) == 2;
  while (!(link_up(p->port[0]) && (!both || link_up(p->port[1])))) {
    if (std::chrono::steady_clock::now() >= deadline) {
      std::fprintf(stderr, "forein-switch-gen: memif links not up after %u ms (client %s, server %s)\n",
                   o.connect_timeout_ms, link_up(p->port[0]) ? "up" : "down",
                   !both ? "not used" : link_up(p->port[1]) ? "up" : "down");
      return false;
    }
    const timespec ts{0, 1000000};  // poll interval
    ::nanosleep(&ts, nullptr);
  }
  // A memif client posts its receive buffers on the switch-to-client ring
  // in rx_burst; until it has called it once, the switch has no room to
  // send to us (it would count the frames as tx_full). Post them now.
  std::array<rte_mbuf*, 32> rx{};
  for (int i = 0; i < p->count; ++i) {
    const std::uint16_t port = p->port[i];
    const std::uint16_t n = rte_eth_rx_burst(port, 0, rx.data(), static_cast<std::uint16_t>(rx.size()));
    for (std::uint16_t i = 0; i < n; ++i) rte_pktmbuf_free(rx[i]);
  }
  return true;
}

void stop_ports(const Ports& p) {
  for (int i = 0; i < p.count; ++i) {
    rte_eth_dev_stop(p.port[i]);
    rte_eth_dev_close(p.port[i]);
  }
}

}  // namespace forein::net::swgen
