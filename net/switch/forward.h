// forein-switch's per-frame decision: ARP answers, requests hinted from the
// image and forwarded to the server, replies mapped back to the client.
#pragma once

#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "forein/offload/published.h"
#include "image.h"
#include "ports.h"
#include "visibility_plane.h"

namespace forein::net::sw {

// Where requests go (options.h: --servers, --keys, --service-port, --hints).
struct Routing {
  std::vector<std::uint16_t> servers;  // empty: one server, ports unchanged
  std::uint64_t keys = 0;              // the data set the servers split
  std::uint16_t service_port = 9000;   // with servers: the port clients send to
  bool hints = true;                   // false: no lookups, requests pass unchanged
  int stage = -1;                      // fattree chain: 0 core, 1 aggregation, 2 edge; -1 whole walk
};

class Forwarder {
 public:
  static constexpr std::size_t kMaxServers = 64;

  Forwarder(Side* sides, forein::offload::Published<Image>* image, Routing routing)
      : sides_(sides), image_(image), routing_(std::move(routing)) {}
  // --backend switch_visibility: UDP datagrams go through Switch-delta's
  // plane (visibility_plane.h) instead of the hint path.
  Forwarder(Side* sides, VisibilityRouting visibility)
      : sides_(sides), image_(nullptr), plane_(std::make_unique<VisibilityPlane>(sides, std::move(visibility))) {}

  // Image lookups made for requests (the agent reports them as hint_lookups).
  std::atomic<std::uint64_t> lookups{0};
  // Per server (agent index first + i): requests routed there (with
  // --servers) and image lookups made for them.
  std::array<std::atomic<std::uint64_t>, kMaxServers> routed{};
  std::array<std::atomic<std::uint64_t>, kMaxServers> server_lookups{};
  // Chain stages: requests whose hint this switch's node sets made deeper.
  std::atomic<std::uint64_t> deeper{0};
  // Remote reads (docs/remote-read.md): READ requests forwarded, and start
  // READs whose address this switch replaced with its image's node.
  std::atomic<std::uint64_t> reads{0};
  std::atomic<std::uint64_t> reads_rewritten{0};

  const Routing& routing() const { return routing_; }

  // The image is pinned once per burst of client-side frames (poll_ports
  // calls begin_burst before them and end_burst after): one read of the
  // published snapshot per burst instead of a read section per request.
  void begin_burst() {
    if (image_ != nullptr && routing_.hints) pinned_ = image_->load();
  }
  void end_burst() { pinned_.reset(); }

  // Frame m arrived on sides[in]: the port to send it out on (in itself for
  // an ARP reply), or -1 when it was dropped (counted and freed).
  int handle(int in, rte_mbuf* m);
  // A second frame the last handle() made for the server side (Switch-
  // delta's META_ASYNC copy), or null; the caller sends or frees it.
  rte_mbuf* take_copy() { return std::exchange(copy_, nullptr); }
  const VisibilityPlane* plane() const { return plane_.get(); }

 private:
  // A client's request: checks the datagram, picks the server owning its
  // key, and when the image has a hint for the key adds the hint trailer.
  // Returns the server's number, or -1 when m was dropped (freed).
  int route_request(PortCounters& c, rte_mbuf* m, rte_ipv4_hdr* ip, std::size_t ihl, std::size_t total,
                    rte_udp_hdr* udp);
  // Adds the hint trailer for key from server `shard`'s image, if it has
  // one (with --stage: this switch's part of the fattree walk, the
  // temporary header too). False when m was dropped (freed).
  bool add_hint(PortCounters& c, rte_mbuf* m, rte_ipv4_hdr* ip, std::size_t ihl, rte_udp_hdr* udp,
                std::span<const std::byte> payload, std::string_view key, std::size_t shard);
  // A start READ (kReadStart): its target address replaced in the frame by
  // the node server `shard`'s image names for key (Fat-B+Tree's RoCE `va`
  // rewrite; switch_lpm's hinted node), kReadRewritten set. Other READs,
  // and a miss, pass unchanged.
  void rewrite_read(PortCounters& c, rte_udp_hdr* udp, std::span<const std::byte> payload, std::string_view key,
                    std::size_t shard);
  // The hints server `shard`'s image has for key (none: a miss).
  forein::StartHints hint_of(std::string_view key, std::size_t shard);
  // A chain stage's rewritten request, or nullopt (a miss).
  std::optional<std::vector<std::byte>> stage_rewrite(std::span<const std::byte> payload, std::string_view key,
                                                      std::size_t shard);
  // Sets the datagram's length in the UDP and IPv4 headers.
  static void set_lengths(rte_ipv4_hdr* ip, std::size_t ihl, rte_udp_hdr* udp, std::size_t datagram);

  Side* sides_;
  forein::offload::Published<Image>* image_;
  Routing routing_;
  std::unique_ptr<VisibilityPlane> plane_;
  rte_mbuf* copy_ = nullptr;
  std::shared_ptr<const Image> pinned_;  // this burst's image (null: read per request)
};

}  // namespace forein::net::sw
