// forein-mem-server's process (docs/network.md, "forein-mem-server"): the
// region built from the data set, the memory node serving it over kernel
// UDP (one socket per worker thread, SO_REUSEPORT), and the owner's
// offload manager over the region's nodes, mirrored to a switch's agent.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "forein/offload/backend.h"
#include "kv_server/handler.h"
#include "kv_server/memif_port.h"
#include "kv_server/stats.h"
#include "forein/offload/manager.h"
#include "mem_server/memory_node.h"
#include "mem_server/options.h"
#include "mem_server/region_source.h"
#include "remote/build.h"
#include "remote/region.h"

namespace forein::net {
class AgentMirror;
}

namespace forein::net::mem {

bool have_agent_client();

class Server {
 public:
  // Builds the region (this shard's keys, dataset_long_value values).
  // Throws InvalidArgument when the region would pass what node ids can
  // name with a hint backend, or what the machine can map.
  explicit Server(const MemOptions& options);
  ~Server();

  std::uint16_t bind();
  void start();
  void stop();
  std::string stats_json();
  MemoryNode& node() { return *node_; }

 private:
  void worker(int fd);

  MemOptions options_;
  std::unique_ptr<remote::Region> region_;
  remote::BuildStats build_;
  double build_s_ = 0;
  std::unique_ptr<offload::Backend> backend_;
  std::unique_ptr<offload::OffloadManager> manager_;
  std::unique_ptr<RegionIndexSource> source_;
  std::unique_ptr<MemoryNode> node_;
  std::unique_ptr<AgentMirror> mirror_;
  // --memif: the kv server's memif port (run to completion, fragments)
  // answering through the memory node; its datagram and drop counters.
  std::unique_ptr<kv::PacketHandler> memif_handler_;
  kv::ServerStats memif_stats_;
  std::unique_ptr<kv::MemifPort> memif_;
  std::vector<int> sockets_;
  int stop_pipe_[2] = {-1, -1};
  std::uint16_t port_ = 0;
  std::vector<std::thread> workers_;
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  std::atomic<std::uint64_t> node_syncs_{0};
};

}  // namespace forein::net::mem
