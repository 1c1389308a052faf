// forein-switch's command line (docs/network.md, "forein-switch").
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "protocol/dataset.h"

namespace forein::net::sw {

// What a switch port is (--client-port / --server-port).
enum class PortKind : std::uint8_t {
  kTap,    // a TAP device (--client-iface / --server-iface) with a kernel side
  kMemif,  // a memif socket the switch serves; the peer is a DPDK program
};

struct Options {
  std::string agent_listen = "127.0.0.1:50052";
  std::string token;
  std::uint64_t index = kDatasetIndexId;  // with --servers: server i's image is index + i
  // --servers P0,P1,...: server i listens on the server side's .1:Pi and
  // owns dataset shard i of K (protocol/dataset.h, split over --keys N);
  // clients send to the client side's .2:service_port. Empty: one server,
  // ports passed through unchanged.
  std::vector<std::uint16_t> servers;
  std::uint64_t keys = 0;
  std::uint16_t service_port = 9000;
  bool hints = true;  // --hints off: forward every request unchanged (offload off)
  // --stage: which switch of Fat-B+Tree's k=4 path this process is
  // (fattree only): kAll walks the whole path here (and writes the hint
  // trailer for any backend); core, aggregation and edge each do their
  // part and hand the walk on in the temporary header.
  int stage = -1;  // -1: all; 0 core, 1 aggregation, 2 edge
  // --image-from HOST:PORT: take the images from that agent (the core
  // switch's) instead of the in-process one.
  std::string image_from;
  std::string iface[2] = {"fswc0", "fsws0"};  // [0] client side, [1] server side
  std::string net[2] = {"10.77.0", "10.77.1"};
  PortKind port_kind[2] = {PortKind::kTap, PortKind::kTap};
  std::string memif_socket[2];  // kMemif: the socket file the switch creates
  // memif-client:PATH: the switch joins another switch's memif socket as
  // its client and, on that link, plays the peer's part (the .1 address):
  // a chain's aggregation and edge switches face the switch before them so.
  bool memif_client[2] = {false, false};
  // --backend switch_visibility (Switch-delta, docs/network.md): the
  // switch keeps the visibility table and routes the ordered-write ops:
  // LOG_* to data node slot % D on --data-nodes' ports, META_* to the
  // metadata node owning the key (--metadata-nodes; shard_of over --keys
  // when there are several). Empty: hint backends from the agent's images.
  std::string backend;
  std::vector<std::uint16_t> data_nodes;
  std::vector<std::uint16_t> metadata_nodes;
  bool visibility = true;       // --visibility off: the same routing, the table bypassed (baseline)
  std::uint32_t slots = 0;      // --slots: table size (0: the paper's 65,536)
  std::vector<std::string> eal;  // after `--`: replaces the default EAL options
  bool eal_given = false;
};

// What --help prints.
std::string usage_text();

// Fills *o from argv (and $FOREIN_AGENT_TOKEN). Returns the exit code when
// the process should end now (0 after --help, 2 on a bad argument).
std::optional<int> parse_options(int argc, char** argv, Options* o);

// The EAL's argv: the defaults (or the user's after `--`) plus one vdev
// per side: net_tap0 on the client interface or net_memif0 serving the
// client socket; net_tap1 / net_memif1 likewise for the server side.
std::vector<std::string> eal_args(const Options& o);

// The DPDK device name of side i's port (net_tapI or net_memifI).
std::string port_device(const Options& o, int side);

}  // namespace forein::net::sw
