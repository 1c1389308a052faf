// fattree's public data-plane API: what a switch's data plane needs to
// walk a packet through Fat-B+Tree's tables (the fat root and the node
// sets of a k=4 FatTree path) on the image the control plane installed,
// one switch at a time (forein-switch --stage, net/switch/fattree_stage.cc)
// or the whole path at once. The image's layout and everything the
// planner and device use stay private to offload/backends/fattree/
// (fattree_image.h); this header needs only std and the generic
// forein/ headers.
//
// Safety contract, as for every backend's image (docs/offload.md): a walk
// accepts any bytes, reads only inside the span and bounds every loop, so
// a torn or garbage image gives some hint or none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "forein/key.h"
#include "forein/node_interval.h"

namespace forein::offload::fattree {

// A node address as the switch tables carry it: a real tree node's page
// id, or a virtual address (bit 63 set) of a switch node a wide tree node
// was reformed into (fattree_types.h).
using Address = std::uint64_t;

// The switches of the k=4 path in walk order: 0 the core switch (the fat
// root and node set 0), 1 the aggregation switch (sets 1-2), 2 the edge
// switch (sets 3-4).
inline constexpr std::size_t kPathSwitches = 3;

// What a packet's walk resolved so far: what its temporary header carries
// from switch to switch (matched, server, address) and the hints.
struct Walk {
  bool matched = false;          // the fat root matched a range
  std::uint16_t server = 0;      // the fat root's server
  Address address = 0;           // the node the packet has reached
  std::size_t nodes_visited = 0;  // regular nodes the packet was processed by
  StartHints hints;
};

// One switch's part of the walk (sw < kPathSwitches): sw 0, the core
// switch, matches the fat root and walks node set 0; sw 1 and 2, the
// aggregation and edge switches, walk sets 1-2 and 3-4 from walk->address.
// A chain of switch processes calls it in order on a packet's header.
void fattree_walk_switch(std::span<const std::byte> image, Word w, std::size_t sw, Walk* walk) noexcept;

// The whole path: the three switches in order.
Walk fattree_walk(std::span<const std::byte> image, Word w) noexcept;

}  // namespace forein::offload::fattree
