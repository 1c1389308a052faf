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
//   partial writes     (section III-C, the secondary-index case study
//                      VI-B; protocol/secondary_index.h) a data-write reply
//                      in state kPartial is stored as a partial entry under
//                      the same rule; a SIDX_READ whose slot holds one is
//                      forwarded with it attached (kPartial, ts = CurTs),
//                      never answered here;
//   META_PUT reply     slot valid and ts > CurTs: turned back to the
//                      metadata node as kHeld (aux CurTs, value the slot's
//                      metadata), which resends it; else to the client;
//   CLEAR              applied to the table and consumed.
//
// Switch-crash recovery (section III-E; docs/network.md, "Switch-crash
// recovery"): a switch starts empty, with a random non-zero epoch, in the
// recovering state: data-write replies are not stored (phase 2 on the
// client) and clients' META_GETs are dropped (they time out and retry),
// until every --metadata-nodes port has sent SYNC with this epoch, i.e.
// has applied every data node's log to its end after learning the epoch,
// so every write an earlier switch committed is in the metadata nodes.
// SYNC (op 17; ts 0 from a node, aux = the epoch it last synced for) is
// answered in place (ts 1, aux = this epoch, fingerprint = metadata
// nodes not yet synced); a client's SYNC is answered the same way (a
// readiness probe) and marks nothing. LOG_APPEND requests carry the epoch
// in aux and the data node echoes it: a reply to a request an earlier
// switch forwarded is never stored (its MaxTs is not known here).
//
// With --visibility off the routing is the same and the table is bypassed:
// every write takes phase 2 (the paper's baseline on the same switch).
#pragma once

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include <atomic>
#include <chrono>
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
  // When the process started (the recovery time's start); default: when
  // the plane is made.
  std::chrono::steady_clock::time_point started{};
  std::uint32_t epoch = 0;  // 0: a random non-zero one
};

// What the plane did beside the table's own counters (written by the
// data-plane thread only, read by anyone).
struct VisibilityPlaneCounters {
  std::atomic<std::uint64_t> to_data_nodes{0}, to_metadata_nodes{0}, switch_reads{0}, async_copies{0},
      copy_failed{0}, held{0}, clears{0}, write_replies{0}, reply_rechecks{0},
      partial_reads{0};  // SIDX_READs forwarded with the slot's partial entry attached
  // Recovery: SYNCs answered (from nodes / from clients), data-write
  // replies not stored while recovering or of another epoch, META_GETs
  // dropped while recovering.
  std::atomic<std::uint64_t> syncs{0}, client_syncs{0}, recovering_fallbacks{0}, other_epoch{0},
      recovering_reads_dropped{0};
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
  std::uint32_t epoch() const { return routing_.epoch; }
  bool recovering() const { return recovering_.load(std::memory_order_acquire); }

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
  // A SYNC (visibility header at `at`): a metadata node's marks it synced
  // when it names this epoch; answered in place either way.
  int sync(int in, rte_mbuf* m, rte_ether_hdr* eth, rte_ipv4_hdr* ip, rte_udp_hdr* udp,
           std::span<std::byte> datagram, std::size_t at);
  bool is_port_of(const std::vector<std::uint16_t>& ports, std::uint16_t port) const;

  Side* sides_;
  VisibilityRouting routing_;
  offload::switch_visibility::VisibilityTable table_;
  VisibilityPlaneCounters counters_;
  std::atomic<bool> recovering_{true};
  std::vector<std::uint8_t> synced_;                   // per metadata node
  std::chrono::steady_clock::time_point plane_start_;  // forwarding began
  std::atomic<std::int64_t> ready_us_{-1};             // process start -> recovered (us); -1: not yet
  std::atomic<std::int64_t> sync_us_{-1};              // forwarding began -> recovered (us)
};

}  // namespace forein::net::sw
