#include "poll.h"

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include <array>
#include <cstdint>

#include "dpdk/back_off.h"

namespace forein::net::sw {
namespace {

constexpr std::uint16_t kBurst = 32;

}  // namespace

void poll_ports(Side sides[2], Forwarder& forward, const std::atomic<bool>& stop) {
  std::array<rte_mbuf*, kBurst> rx{};
  // Per destination port; room for one extra frame per frame received
  // (Switch-delta's META_ASYNC copies go to the server side).
  std::array<rte_mbuf*, 2 * kBurst> out[2]{};
  unsigned idle = 0;
  while (!stop.load(std::memory_order_relaxed)) {
    unsigned got = 0;
    for (int in = 0; in < 2; ++in) {
      Side& side = sides[in];
      const std::uint16_t n = rte_eth_rx_burst(side.port, 0, rx.data(), kBurst);
      got += n;
      if (n == 0) continue;
      bump(side.counters.rx, n);
      if (side.kind == PortKind::kMemif) {
        for (std::uint16_t i = 0; i < n; ++i) learn_peer_mac(side, rx[i]);
      }
      std::uint16_t count[2] = {0, 0};
      if (in == 0) forward.begin_burst();  // requests: the image pinned for the burst
      for (std::uint16_t i = 0; i < n; ++i) {
        if (i + 1 < n) rte_prefetch0(rte_pktmbuf_mtod(rx[i + 1], void*));
        const int dest = forward.handle(in, rx[i]);
        if (rte_mbuf* copy = forward.take_copy()) out[1][count[1]++] = copy;
        if (dest < 0) continue;  // freed
        out[dest][count[dest]++] = rx[i];
      }
      if (in == 0) forward.end_burst();
      for (int d = 0; d < 2; ++d) {
        if (count[d] == 0) continue;
        const std::uint16_t sent = rte_eth_tx_burst(sides[d].port, 0, out[d].data(), count[d]);
        // Forwarded frames count on the port they came in on; ARP
        // replies (dest == in) are counted when made.
        if (d != in) bump(side.counters.forwarded, sent);
        for (std::uint16_t k = sent; k < count[d]; ++k) rte_pktmbuf_free(out[d][k]);
        if (sent < count[d]) {
          bump(side.counters.dropped, count[d] - sent);
          bump(side.counters.tx_full, count[d] - sent);
        }
      }
    }
    if (got > 0) {
      idle = 0;
    } else {
      dpdk::back_off(++idle);
    }
  }
}

}  // namespace forein::net::sw
