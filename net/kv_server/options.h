// forein-kv-server's command line (docs/network.md, "forein-kv-server").
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "forein/offload/registry.h"

namespace forein::net::kv {

// kv: the papers' KV server (the tree bulk-loaded from --keys/--data).
// metadata: Switch-delta's metadata node (metadata_node.h): key -> log
// location, rebuilt from the data nodes' logs.
enum class ServerMode : std::uint8_t { kKv, kMetadata };

// forein: the engine tree (with --backend's hints). honeycomb: Honeycomb's
// store (offload/backends/fpga/honeycomb/): GET/SCAN run by the
// accelerator model, PUT/DELETE by the CPU (docs/fpga.md). dpa:
// DPA-Store's store (offload/backends/dpa/store/), one UDP port per worker
// as the paper's traverser threads (docs/network.md, "--engine dpa").
enum class Engine : std::uint8_t { kForein, kHoneycomb, kDpa };

const char* to_string(Engine e);

// --honeycomb-reads (--engine honeycomb): who runs GET and SCAN.
// accelerator: the accelerator model (the "SmartNIC"), as the paper's
// server; cpu: the store's own CPU read path (Store::get/scan, the CPU's
// page table and loads), a CPU server on Honeycomb's store: the baseline
// the paper measures against (docs/network.md, "--engine honeycomb").
enum class HoneycombReads : std::uint8_t { kAccelerator, kCpu };

const char* to_string(HoneycombReads r);

struct HostPort {
  std::string host;
  std::uint16_t port = 0;
  std::string text() const { return host + ":" + std::to_string(port); }
};

struct ServerOptions {
  ServerMode mode = ServerMode::kKv;
  Engine engine = Engine::kForein;  // --engine
  HoneycombReads honeycomb_reads = HoneycombReads::kAccelerator;  // --honeycomb-reads
  bool honeycomb_reads_given = false;
  bool backend_given = false;
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 0;       // 0: the kernel picks a free port
                                       // (--engine dpa: a free block of --threads ports)
  bool keys_given = false;
  std::uint64_t keys = 0;              // dataset_key(0 .. keys-1)
  std::string data_file;               // instead of --keys: lines hexkey<TAB>value
  std::string backend = offload::default_backend().name;  // offload backend ("none" allowed)
  std::string agent;                   // HOST:PORT of forein-agent; empty: none
  std::string agent_token;
  unsigned threads = 2;                // UDP worker threads, 1..64 (metadata mode: 1)
  bool threads_given = false;
  std::uint32_t refresh_ms = 100;      // offload refresh period
  std::uint32_t refresh_cpu_percent = 5;  // ManagerOptions::max_refresh_share, in %
  std::uint32_t sample_rate = 16;      // 1 in N accesses sampled for the offload planner
  // --shard I/K (with --keys): this server owns dataset shard I of K
  // (protocol/dataset.h) and publishes its image under agent index I.
  std::uint32_t shard = 0;
  std::uint32_t shards = 1;
  // --fat-root-ranges / --layer-nodes (fattree): the fat root's ranges and
  // the nodes per cached layer (0: the paper's 600 and 3,600).
  std::uint32_t fat_root_ranges = 0;
  std::uint32_t layer_nodes = 0;
  // --memif PATH [--memif-net A.B.C]: a DPDK memif port beside the kernel
  // sockets, joining forein-switch's socket PATH; on that link the server
  // is A.B.C.1 (memif_ip) and the switch A.B.C.2. Empty: none.
  std::string memif_socket;
  std::string memif_net = "10.77.1";
  std::uint32_t memif_ip = 0;  // host order, from memif_net
  // --memif-core N: the memif poll thread (the serving thread) alone on
  // CPU N; every other thread of the server off it. -1: not pinned.
  int memif_core = -1;
  // With --memif-core: the nice the poll thread takes back (main() puts the
  // server's other threads at +10); numeric_limits<int>::min(): unchanged.
  int memif_nice = std::numeric_limits<int>::min();

  // Metadata mode (--mode metadata; docs/network.md, "Metadata mode").
  // --data-nodes: data node i at position i (LOG_FETCH for recovery and
  // catch-up; LogLocation::node indexes this list).
  std::vector<HostPort> data_nodes;
  // --switch: where CLEARs go until a switch packet names an address.
  bool switch_given = false;
  HostPort switch_address;
  bool deferred = true;                      // --deferred on|off (off: "w/o DMP")
  std::uint32_t batch = 16;                  // --batch: deferred updates per batch
  std::uint32_t visibility_timeout_us = 2000;  // --visibility-timeout-us
  // --secondary-index: the secondary-index case study (paper VI-B with the
  // partial writes of III-C; secondary_index.h): the tree holds composite
  // keys and SIDX_READ serves them. One data node, one metadata node.
  bool secondary_index = false;
};

// Parses argv. On a bad command line returns false with a message in
// *error (the caller prints it with the usage and exits 2). --help sets
// *help and returns true.
bool parse_options(int argc, char** argv, ServerOptions* out, std::string* error, bool* help);

// A memif socket PATH usable in the memif vdev argument (no ',' or '='),
// in the JSON stats (no '"', '\\' or control bytes) and as a Unix socket
// address (under 108 bytes): forein-switch's rule for memif:PATH.
bool valid_memif_path(std::string_view path);

std::string usage_text(const char* argv0);

}  // namespace forein::net::kv
