// forein-kv-server's server: the engine tree, the offload manager attached
// to it, and the UDP workers. Each worker owns a kernel UDP socket bound to
// the same address with SO_REUSEPORT and blocks in poll() on it and on a
// stop pipe (no busy polling); it drains its socket, answers every valid
// request to its sender and drops (and counts) everything else.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "forein/offload/backend.h"
#include "forein/offload/manager.h"
#include "forein/tree.h"
#include "kv_server/data.h"
#include "kv_server/dpa_handler.h"
#include "kv_server/handler.h"
#include "kv_server/memif_port.h"
#include "kv_server/metadata_node.h"
#include "kv_server/options.h"
#include "forein/dpa/store.h"
#include "forein/fpga/accelerator.h"
#include "forein/fpga/store.h"
#include "kv_server/stats.h"

namespace forein::net {
class AgentMirror;
}

namespace forein::net::kv {

// Whether this build has the gRPC agent client (net/agent): --agent works.
bool have_agent_client();

class Server {
 public:
  // Builds the tree from rows (sorted, unique) with the backend named in
  // options (which must be registered). Throws forein::InvalidArgument
  // for rows the tree cannot hold.
  // With loads_generated(options), rows is ignored (pass none): the tree
  // is bulk-loaded straight from the generated data set (shard), without
  // the rows in memory beside it (1e8 keys: about 4 GB of tree instead of
  // 14 GB more of rows).
  Server(const ServerOptions& options, const Rows& rows);
  // Whether the server builds its tree from the generated data set itself:
  // --keys N, engine forein, not metadata mode.
  static bool loads_generated(const ServerOptions& options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds options.threads sockets to the listen address; returns the port
  // (the kernel's pick for port 0). --engine dpa: one socket per worker on
  // ports PORT..PORT+threads-1 (PORT 0: a free block); returns the first. With --memif also starts the EAL and
  // joins the memif socket (MemifPort). Throws std::runtime_error with the
  // reason (address in use, bad host, no memif socket ...).
  std::uint16_t bind();
  // Starts the agent mirror (--agent), the manager's refresh thread, the
  // workers and the memif poll thread. In metadata mode: replays the data
  // nodes' logs into the tree (throws RecoveryError when a data node does
  // not answer), then starts the metadata node's event loop.
  void start();
  // Stops the workers and the refresh thread; idempotent.
  void stop();

  std::string stats_json();
  Tree& tree() { return *tree_; }

 private:
  void worker(int fd, PacketHandler& handler);
  Json honeycomb_json();  // the "honeycomb" object
  Json dpa_json();        // the "dpa" object

  ServerOptions options_;
  std::unique_ptr<offload::Backend> backend_;
  std::unique_ptr<offload::OffloadManager> manager_;
  std::unique_ptr<Tree> tree_;
  ServerStats stats_;
  // --engine honeycomb: the accelerator model, then the store that sends it
  // page-table updates (destroyed first).
  std::unique_ptr<offload::fpga::Accelerator> accelerator_;
  std::unique_ptr<offload::fpga::Store> honeycomb_;
  std::uint64_t honeycomb_loaded_ = 0;
  // --engine dpa: DPA-Store's store and one handler per port (worker i
  // serves port_ + i and counts requests for another port as misrouted).
  std::unique_ptr<offload::dpa::Store> dpa_;
  std::uint64_t dpa_loaded_ = 0;
  offload::dpa::StoreStats dpa_at_load_;  // after the bulk load: its stitches are not the writes'
  DpaCounters dpa_counters_;
  std::vector<std::unique_ptr<PacketHandler>> port_handlers_;
  std::unique_ptr<PacketHandler> handler_;
  std::unique_ptr<AgentMirror> mirror_;  // --agent: the manager's device, mirrored
  std::unique_ptr<MemifPort> memif_;     // --memif: destroyed first (rte_eal_cleanup)
  std::unique_ptr<MetadataNode> metadata_;  // --mode metadata: serves instead of the workers
  std::vector<int> sockets_;
  int stop_pipe_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> workers_;
  std::uint16_t port_ = 0;
  bool started_ = false;
};

}  // namespace forein::net::kv
