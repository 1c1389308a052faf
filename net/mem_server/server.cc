#include "mem_server/server.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/udp_listen.h"
#include "common/udp_serve.h"
#include "forein/error.h"
#include "forein/offload/registry.h"
#include "protocol/dataset.h"

#ifdef FOREIN_MEM_WITH_AGENT
#include "agent_client.h"
#endif

namespace forein::net::mem {

#ifdef FOREIN_MEM_WITH_AGENT
bool have_agent_client() { return true; }
#else
bool have_agent_client() { return false; }
}  // namespace forein::net::mem
namespace forein::net {
class AgentMirror {};  // complete type for unique_ptr's deleter; never constructed
}  // namespace forein::net
namespace forein::net::mem {
#endif

namespace {

// The memif port's view of the memory node: a decoded request in, its
// reply out (READ, PUT, STATS; the rest refused), counted by the node.
class MemoryPacketHandler final : public kv::PacketHandler {
 public:
  explicit MemoryPacketHandler(MemoryNode& node) : node_(node) {}
  Packet handle(const Packet& request) override { return node_.serve(request); }

 private:
  MemoryNode& node_;
};

// A READ reply of the longest READ, with headers, fits this.
constexpr std::size_t kReceiveBuffer = 65536;

remote::BuildOptions build_options(const MemOptions& o) {
  remote::BuildOptions b;
  b.geometry = o.node_bytes != 0 ? remote::geometry_for_node_bytes(o.node_bytes)
                                 : remote::geometry_for_fanout(o.fanout);
  b.fill = o.fill_percent / 100.0;
  return b;
}

}  // namespace

Server::Server(const MemOptions& options) : options_(options) {
  const std::uint64_t first = shard_first(options_.shard, options_.shards, options_.keys);
  const std::uint64_t end = shard_first(options_.shard + 1, options_.shards, options_.keys);
  const remote::BuildOptions bo = build_options(options_);
  const std::uint64_t bytes =
      remote::build_bytes(end - first, (end - first) * options_.value_bytes, bo) + options_.spare_bytes;
  if (options_.backend != "none" && bytes > remote::kMaxNodeIdRegionBytes) {
    throw InvalidArgument("the region (" + std::to_string(bytes) + " bytes) passes the " +
                          std::to_string(remote::kMaxNodeIdRegionBytes) +
                          " bytes whose nodes a hint can name (32-bit node ids); use fewer keys, --shard or "
                          "--backend none");
  }
  region_ = std::make_unique<remote::Region>(bytes);
  const auto t0 = std::chrono::steady_clock::now();
  build_ = remote::build(
      *region_, end - first,
      [&](std::uint64_t i, std::string& value) {
        value = dataset_long_value(first + i, 0, options_.value_bytes);
        return first + i;
      },
      bo);
  build_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  offload::BackendConfig config;
  if (options_.fat_root_ranges != 0) config.set("fat_root_ranges", options_.fat_root_ranges);
  if (options_.layer_nodes != 0) config.set("layer_nodes", options_.layer_nodes);
  backend_ = std::make_unique<offload::Backend>(offload::backend_for_lookups(options_.backend), config);
  offload::ManagerOptions mo;
  mo.index_id = kDatasetIndexId + options_.shard;  // the agent index the switch reads for this shard
  mo.sample_rate = options_.sample_rate;
  mo.refresh_period = std::chrono::milliseconds(options_.refresh_ms);
  mo.max_refresh_share = options_.refresh_cpu_percent / 100.0;
  mo.pump_period = mo.refresh_period;
  manager_ = std::make_unique<offload::OffloadManager>(*backend_, mo);
  source_ = std::make_unique<RegionIndexSource>(*region_, mo.index_id,
                                                [this] { return node_ ? node_->key_generation() : 0; });
  MemoryNode::Hooks hooks;
  hooks.on_start_read = [this](std::uint64_t word) { manager_->sample_access(word); };
  // Splits are rare (inserts past the build's fill): the whole node table
  // is read again, off the READ path (the writer's thread, under its lock).
  hooks.on_nodes_changed = [this] {
    node_syncs_.fetch_add(1, std::memory_order_relaxed);
    manager_->sync_nodes(source_->nodes());
  };
  hooks.stats_json = [this] { return stats_json(); };
  node_ = std::make_unique<MemoryNode>(*region_, std::move(hooks));
}

Server::~Server() {
  stop();
  memif_.reset();
  mirror_.reset();
  for (int fd : sockets_) ::close(fd);
  for (int fd : stop_pipe_) {
    if (fd >= 0) ::close(fd);
  }
}

std::uint16_t Server::bind() {
  port_ = listen_udp(options_.listen_host, options_.listen_port, options_.threads, &sockets_);
  if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (!options_.memif_socket.empty()) {
    memif_handler_ = std::make_unique<MemoryPacketHandler>(*node_);
    memif_ = std::make_unique<kv::MemifPort>(
        kv::MemifConfig{options_.memif_socket, options_.memif_net, options_.memif_ip}, *memif_handler_, memif_stats_);
  }
  return port_;
}

void Server::start() {
  if (started_) return;
  started_ = true;
#ifdef FOREIN_MEM_WITH_AGENT
  if (!options_.agent.empty()) {
    // Before attach: the mirror publishes the whole image first, then
    // forwards every batch the manager applies.
    mirror_ = std::make_unique<AgentMirror>(*manager_, manager_->options().index_id, backend_->name(),
                                            AgentClient(options_.agent, options_.agent_token));
  }
#endif
  manager_->attach(*source_);
  for (const int fd : sockets_) workers_.emplace_back([this, fd] { worker(fd); });
  if (memif_) memif_->start();
}

void Server::stop() {
  if (!started_ || stopping_.exchange(true)) return;
  const char byte = 's';
  while (::write(stop_pipe_[1], &byte, 1) < 0 && errno == EINTR) {
  }
  for (auto& t : workers_) t.join();
  workers_.clear();
  if (memif_) memif_->stop();
  manager_->detach();
}

std::string Server::stats_json() {
  const remote::RegionHeader h = node_->header();
  const remote::WriterStats ws = node_->writer_stats();
  const offload::ManagerStats ms = manager_->stats();
  const offload::BackendUsage usage = backend_->usage();
  Json out = Json::object();
  out["program"] = "forein-mem-server";
  out["port"] = port_;
  out["threads"] = options_.threads;
  out["shard"] = options_.shard;
  out["shards"] = options_.shards;
  out["keys"] = h.key_count;
  out["height"] = h.height;
  out["fanout"] = h.geometry.fanout;
  out["node_bytes"] = h.geometry.node_bytes;
  out["value_bytes"] = options_.value_bytes;
  out["region_bytes"] = region_->size();
  out["used_bytes"] = region_->used();
  out["build_nodes_bytes"] = build_.node_bytes;
  out["build_s"] = json_fixed(build_s_, 3);
  node_->stats().add_json(out);
  Json& writer = out["writer"] = Json::object();
  writer["updates"] = ws.updates;
  writer["inserts"] = ws.inserts;
  writer["splits"] = ws.splits;
  writer["root_splits"] = ws.root_splits;
  writer["node_syncs"] = node_syncs_.load(std::memory_order_relaxed);
  out["offload"] = kv::offload_json(backend_->name(), ms, usage);
  Json& agent = out["agent"] = Json::object();
  agent["target"] = options_.agent;
#ifdef FOREIN_MEM_WITH_AGENT
  if (mirror_) {
    const AgentMirrorStats as = mirror_->stats();
    agent["batches_forwarded"] = as.batches_forwarded;
    agent["publishes"] = as.publishes;
    agent["retries"] = as.retries;
    agent["published"] = as.published;
    agent["last_error"] = as.last_error;
  }
#endif
  if (memif_) {
    Json memif = memif_->json();
    // The memif port's datagrams and drops (its READs are in "reads" above).
    Json counted = memif_stats_.json(TreeStats{});
    memif["datagrams"] = counted["datagrams"];
    memif["parse_drops"] = counted["drops"];
    out["memif"] = std::move(memif);
  }
  return json_line(out);
}

void Server::worker(int fd) {
  serve_udp(
      fd, stop_pipe_[0], stopping_, kReceiveBuffer,
      [&](std::span<const std::byte> datagram, bool oversized) -> std::optional<std::vector<std::byte>> {
        if (oversized) {
          node_->stats().count_datagram();
          node_->stats().count_drop(DropReason::kOversized);
          return std::nullopt;
        }
        return node_->handle(datagram);
      },
      [&] { node_->stats().count_drop(DropReason::kSendFailed); });
}

}  // namespace forein::net::mem
