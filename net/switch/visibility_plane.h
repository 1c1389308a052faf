// forein-switch --backend switch_visibility: Switch-delta's data plane
// (paper 002, sections III-A/B and IV-A; docs/network.md, "Switch-delta").
//
// Clients send every ordered-write op to the service port; the switch
// routes LOG_* to the data node owning the key's slot and META_* to the
// metadata node owning the key, and applies the visibility table's rules
// to what passes:
//
//   data-write reply   stored: state kStored to the client (committed in
//                      one round trip) and a META_ASYNC copy to the
//                      metadata node; else state kFallback (phase 2);
//   META_GET           slot valid, fingerprint equal: answered here
//                      (kSwitchRead); else forwarded; its reply from the
//                      metadata node is checked against the slot again
//                      (not in the paper: see visibility_plane.cc);
//   META_PUT reply     slot valid and ts > CurTs: turned back to the
//                      metadata node as kHeld (aux CurTs, value the slot's
//                      metadata), which resends it; else to the client;
//   CLEAR              applied to the table and consumed.
//
// With --visibility off the routing is the same and the table is bypassed:
// every write takes phase 2 (the paper's baseline on the same switch).
#pragma once

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/json.h"
#include "ports.h"
#include "forein/switch_visibility/visibility_table.h"

namespace forein::net::sw {

struct VisibilityRouting {
  std::vector<std::uint16_t> data_nodes;      // data node i on the server side's .1:data_nodes[i]
  std::vector<std::uint16_t> metadata_nodes;  // likewise; several split the data set by key
  std::uint64_t keys = 0;                     // the data set the metadata nodes split
  std::uint16_t service_port = 9000;
  bool visibility = true;  // false: the table bypassed
  std::uint32_t slots = 0;  // 0: 65,536
};

// What the plane did beside the table's own counters (written by the
// data-plane thread only, read by anyone).
struct VisibilityPlaneCounters {
  std::atomic<std::uint64_t> to_data_nodes{0}, to_metadata_nodes{0}, switch_reads{0}, async_copies{0},
      copy_failed{0}, held{0}, clears{0}, write_replies{0}, reply_rechecks{0};
};

class VisibilityPlane {
 public:
  VisibilityPlane(Side* sides, VisibilityRouting routing);

  // A whole UDP datagram that arrived on sides[in] (frame checked up to
  // the UDP header, addressed to the switch). Returns the port to send m
  // out on, or -1 when m was dropped or consumed (freed). *copy is set to a
  // second frame for the server side (the META_ASYNC copy) or null.
  int handle(int in, rte_mbuf* m, rte_ether_hdr* eth, rte_ipv4_hdr* ip, std::size_t ihl, rte_udp_hdr* udp,
             rte_mbuf** copy);

  const VisibilityRouting& routing() const { return routing_; }
  const offload::switch_visibility::VisibilityTable& table() const { return table_; }
  const VisibilityPlaneCounters& counters() const { return counters_; }

  // The table's and the plane's counters and usage ("backend" first), as
  // an object whose members the exit line appends.
  Json json() const;

 private:
  int from_client(rte_mbuf* m, rte_ether_hdr* eth, rte_ipv4_hdr* ip, std::size_t ihl, rte_udp_hdr* udp,
                  std::span<std::byte> datagram);
  int from_node(rte_mbuf* m, rte_ether_hdr* eth, rte_ipv4_hdr* ip, std::size_t ihl, rte_udp_hdr* udp,
                std::span<std::byte> datagram, rte_mbuf** copy);
  // The META_ASYNC copy of a stored data-write reply, addressed to the
  // key's metadata node (null if no mbuf was free).
  rte_mbuf* async_copy(rte_mbuf* m, std::size_t udp_offset, std::size_t datagram_bytes, std::uint16_t to_port);
  std::uint16_t metadata_port(std::string_view key) const;
  bool is_port_of(const std::vector<std::uint16_t>& ports, std::uint16_t port) const;

  Side* sides_;
  VisibilityRouting routing_;
  offload::switch_visibility::VisibilityTable table_;
  VisibilityPlaneCounters counters_;
};

}  // namespace forein::net::sw
