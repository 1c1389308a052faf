// Fat-B+Tree's chain of switches (docs/network.md, "Fat-B+Tree chain"):
// one switch's part of a request's walk. The core switch matches the fat
// root and walks node set 0; the aggregation and edge switches continue
// from the node address in the temporary header the switch before wrote
// (fattree_walk_switch). Each writes the header (address, server, switches
// resolved) and the hint trailer (the deepest tree node so far, the fat
// root's node as secondary) for the next hop; the server reads the trailer.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace forein::net::sw {

// The request's datagram rewritten by switch `stage` (0 core, 1
// aggregation, 2 edge) from the fattree image, or nullopt when it passes
// unchanged: the fat root missed the key (core), or the packet carries no
// temporary header (a miss upstream). `datagram` must be a valid request.
// *deeper: whether this switch's node sets resolved a deeper tree node.
std::optional<std::vector<std::byte>> walk_stage(std::span<const std::byte> image, int stage,
                                                 std::span<const std::byte> datagram, std::string_view key,
                                                 bool* deeper);

}  // namespace forein::net::sw
