#include "fattree_stage.h"

#include "forein/fattree/data_plane.h"
#include "forein/key.h"
#include "protocol/packet.h"

namespace forein::net::sw {

std::optional<std::vector<std::byte>> walk_stage(std::span<const std::byte> image, int stage,
                                                 std::span<const std::byte> datagram, std::string_view key,
                                                 bool* deeper) {
  namespace ft = forein::offload::fattree;
  ft::Walk walk;
  if (stage > 0) {
    forein::net::Packet p;
    if (forein::net::parse_packet(datagram, &p) != forein::net::ParseError::kNone || !p.fattree) {
      return std::nullopt;
    }
    walk.matched = true;
    walk.server = p.fattree->server;
    walk.address = p.fattree->address;
    if (p.hints) walk.hints = *p.hints;
  }
  const std::size_t visited = walk.nodes_visited;
  const forein::PageId before = walk.hints.primary.node;
  ft::fattree_walk_switch(image, forein::word_of(key), static_cast<std::size_t>(stage), &walk);
  // The core switch starts from the fat root's node (the secondary hint).
  *deeper = walk.nodes_visited > visited &&
            walk.hints.primary.node != (stage == 0 ? walk.hints.secondary.node : before);
  if (!walk.matched) return std::nullopt;
  std::vector<std::byte> out(datagram.begin(), datagram.end());
  const forein::net::FattreeHeader header{walk.address, walk.server, static_cast<std::uint16_t>(stage + 1)};
  if (!forein::net::set_fattree_header(out, header) || !forein::net::set_hint_trailer(out, walk.hints)) {
    return std::nullopt;
  }
  return out;
}

}  // namespace forein::net::sw
