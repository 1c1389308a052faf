// forein-switch's per-frame decision: ARP answers, requests hinted from the
// image and forwarded to the server, replies mapped back to the client.
#pragma once

#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "forein/offload/published.h"
#include "image_feed.h"
#include "ports.h"

namespace forein::net::sw {

class Forwarder {
 public:
  Forwarder(Side* sides, forein::offload::Published<Image>* image) : sides_(sides), image_(image) {}

  // Image lookups made for requests (the agent reports them as hint_lookups).
  std::atomic<std::uint64_t> lookups{0};

  // Frame m arrived on sides[in]: the port to send it out on (in itself for
  // an ARP reply), or -1 when it was dropped (counted and freed).
  int handle(int in, rte_mbuf* m);

 private:
  // A client's request: checks the datagram and, when the image has a hint
  // for its key, adds the hint trailer. False when m was dropped (freed).
  bool hint_request(PortCounters& c, rte_mbuf* m, rte_ipv4_hdr* ip, std::size_t ihl, std::size_t total,
                    rte_udp_hdr* udp);

  Side* sides_;
  forein::offload::Published<Image>* image_;
};

}  // namespace forein::net::sw
