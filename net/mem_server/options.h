// forein-mem-server's command line (docs/network.md, "forein-mem-server").
#pragma once

#include <cstdint>
#include <string>

namespace forein::net::mem {

struct MemOptions {
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 0;       // 0: the kernel picks a free port
  std::uint64_t keys = 0;              // dataset keys 0 .. keys-1 (this shard's part)
  std::uint32_t value_bytes = 1000;    // Fat-B+Tree's data set (dataset_long_value)
  std::uint32_t fanout = 16;           // the paper's 16-branch nodes
  std::uint32_t node_bytes = 0;        // --node-bytes: pages of this size instead (8192: fanout 509)
  std::uint32_t fill_percent = 100;    // entries per node at build: fanout * fill
  std::uint64_t spare_bytes = 64ull << 20;  // room for PUTs past the build
  std::uint32_t shard = 0;             // --shard I/K
  std::uint32_t shards = 1;
  unsigned threads = 1;                // UDP worker threads
  std::string backend = "none";        // the owner's offload backend (hints for the switch)
  std::string agent;                   // HOST:PORT of forein-agent (or forein-switch's agent)
  std::string agent_token;
  // The planner's inputs: every start READ's key (the memory node sees it
  // at no cost beside a queue append), weights halved at every refresh,
  // so a refresh a second plans from the last few seconds of lookups.
  std::uint32_t refresh_ms = 1000;
  std::uint32_t refresh_cpu_percent = 5;  // ManagerOptions::max_refresh_share, in %
  std::uint32_t sample_rate = 1;       // 1 in N start READs sampled for the planner
  std::uint32_t fat_root_ranges = 0;   // fattree settings (0: the paper's)
  std::uint32_t layer_nodes = 0;
  // --memif PATH [--memif-net A.B.C]: a DPDK memif port beside the kernel
  // sockets, joining forein-switch's socket PATH; on that link the memory
  // node is A.B.C.1 (memif_ip). Empty: none.
  std::string memif_socket;
  std::string memif_net = "10.77.1";
  std::uint32_t memif_ip = 0;  // host order
};

bool parse_options(int argc, char** argv, MemOptions* out, std::string* error, bool* help);
std::string usage_text(const char* argv0);

}  // namespace forein::net::mem
