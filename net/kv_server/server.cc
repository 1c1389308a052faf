#include "kv_server/server.h"

#include "common/udp_listen.h"
#include "common/udp_serve.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "forein/dpa/model.h"

#include "forein/offload/registry.h"
#include "kv_server/honeycomb_handler.h"
#include "protocol/dataset.h"

#ifdef FOREIN_KV_WITH_AGENT
#include "agent_client.h"
#endif

namespace forein::net::kv {

namespace {

constexpr std::size_t kReceiveBuffer = 65536;

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

#ifdef FOREIN_KV_WITH_AGENT
bool have_agent_client() { return true; }
#else
bool have_agent_client() { return false; }
// Complete type for unique_ptr's deleter; never constructed.
}  // namespace forein::net::kv
namespace forein::net {
class AgentMirror {};
}  // namespace forein::net
namespace forein::net::kv {
#endif

namespace {

// --shard I/K: the keys shard I owns; the whole key space otherwise.
OwnedRange owned_range(const ServerOptions& o) {
  OwnedRange r;
  if (o.shards <= 1) return r;
  if (o.shard > 0) r.lower = dataset_key(shard_first(o.shard, o.shards, o.keys));
  if (o.shard + 1 < o.shards) r.upper = dataset_key(shard_first(o.shard + 1, o.shards, o.keys));
  r.name = "shard " + std::to_string(o.shard) + "/" + std::to_string(o.shards);
  return r;
}

}  // namespace

Server::Server(const ServerOptions& options, const Rows& rows) : options_(options) {
  offload::BackendConfig config;
  // 0: the backend's default (the paper's figures)
  if (options_.fat_root_ranges != 0) config.set("fat_root_ranges", options_.fat_root_ranges);
  if (options_.layer_nodes != 0) config.set("layer_nodes", options_.layer_nodes);
  backend_ = std::make_unique<offload::Backend>(offload::backend_for_lookups(options_.backend), config);
  offload::ManagerOptions mo;
  // The index the agent mirror publishes under (forein-load --agent's
  // default --index).
  mo.index_id = kDatasetIndexId + options_.shard;
  mo.sample_rate = options_.sample_rate;
  mo.refresh_period = std::chrono::milliseconds(options_.refresh_ms);
  mo.max_refresh_share = options_.refresh_cpu_percent / 100.0;
  // The background thread wakes (a timed condition-variable wait) once per
  // period: batches carry no install delay here, so refresh() applies them.
  mo.pump_period = mo.refresh_period;
  manager_ = std::make_unique<offload::OffloadManager>(*backend_, mo);
  TreeOptions to;
  to.index_id = kDatasetIndexId + options_.shard;
  to.observer = manager_.get();
  tree_ = Tree::create(std::make_unique<MemoryPageStore>(), to);
  if (options_.engine == Engine::kHoneycomb) {
    // The rows go to Honeycomb's store; the engine tree stays empty.
    accelerator_ = std::make_unique<offload::fpga::Accelerator>();
    honeycomb_ = std::make_unique<offload::fpga::Store>(offload::fpga::StoreOptions{},
                                                        accelerator_.get());
    std::vector<offload::fpga::Item> items;
    items.reserve(rows.size());
    for (const auto& [k, v] : rows) items.push_back({k, v});
    honeycomb_->bulk_load(items);
    honeycomb_loaded_ = items.size();
    handler_ = std::make_unique<HoneycombHandler>(*honeycomb_, *accelerator_, options_.honeycomb_reads, stats_,
                                                  [this] { return stats_json(); });
  } else if (options_.engine == Engine::kDpa) {
    // The rows go to DPA-Store's store (64-bit keys and values); the
    // engine tree stays empty.
    std::vector<offload::dpa::KV> pairs;
    pairs.reserve(rows.size());
    for (const auto& [k, v] : rows) {
      offload::dpa::KV kv;
      if (!dataset_index(k, &kv.key)) throw InvalidArgument(std::string("--engine dpa: ") + kDpaKeyLimit);
      const auto stored = encode_dpa_value(v);
      if (!stored) throw InvalidArgument(std::string("--engine dpa: ") + kDpaValueLimit);
      kv.value = *stored;
      pairs.push_back(kv);
    }
    dpa_ = std::make_unique<offload::dpa::Store>();
    dpa_->bulk_load(pairs);
    dpa_loaded_ = pairs.size();
    dpa_at_load_ = dpa_->stats();
    for (unsigned i = 0; i < options_.threads; ++i) {
      port_handlers_.push_back(std::make_unique<DpaHandler>(*dpa_, dpa_counters_, stats_,
                                                            [this] { return stats_json(); }, i, options_.threads));
    }
  } else if (loads_generated(options_)) {
    // Straight from the data set: dataset_key(i) -> dataset_value(i) for
    // this shard's i, streamed into the tree's leaves.
    std::uint64_t i = shard_first(options_.shard, options_.shards, options_.keys);
    const std::uint64_t end = shard_first(options_.shard + 1, options_.shards, options_.keys);
    tree_->bulk_load_stream([&](std::string* key, std::string* value) {
      if (i >= end) return false;
      *key = dataset_key(i);
      *value = dataset_value(i);
      ++i;
      return true;
    });
    handler_ = std::make_unique<RequestHandler>(*tree_, manager_.get(), stats_,
                                                [this] { return stats_json(); }, owned_range(options_));
  } else {
    tree_->bulk_load(rows);
    handler_ = std::make_unique<RequestHandler>(*tree_, manager_.get(), stats_,
                                                [this] { return stats_json(); }, owned_range(options_));
  }
  if (options_.mode == ServerMode::kMetadata) {
    metadata_ = std::make_unique<MetadataNode>(options_, *tree_, stats_, [this] { return stats_json(); });
  }
}

bool Server::loads_generated(const ServerOptions& o) {
  return o.mode != ServerMode::kMetadata && o.engine == Engine::kForein && o.data_file.empty();
}

Server::~Server() {
  stop();
  for (int fd : sockets_) ::close(fd);
  for (int fd : stop_pipe_) {
    if (fd >= 0) ::close(fd);
  }
}

std::uint16_t Server::bind() {
  port_ = options_.engine == Engine::kDpa
              ? listen_udp_ports(options_.listen_host, options_.listen_port, options_.threads, &sockets_)
              : listen_udp(options_.listen_host, options_.listen_port, options_.threads, &sockets_);
  if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + errno_text(errno));
  if (!options_.memif_socket.empty()) {
    memif_ = std::make_unique<MemifPort>(
        MemifConfig{options_.memif_socket, options_.memif_net, options_.memif_ip, options_.memif_core,
                    options_.memif_nice},
        *handler_, stats_);
  }
  return port_;
}

void Server::start() {
  if (started_) return;
  started_ = true;
#ifdef FOREIN_KV_WITH_AGENT
  if (!options_.agent.empty()) {
    // Before attach: the mirror publishes the whole image first, then
    // forwards every batch the manager applies, healing agent restarts.
    mirror_ = std::make_unique<AgentMirror>(*manager_, manager_->options().index_id,
                                            backend_->name(),
                                            AgentClient(options_.agent, options_.agent_token));
  }
#endif
  manager_->attach(*tree_);
  if (metadata_) {
    // Metadata mode: the index is rebuilt from the data nodes' logs before
    // the node serves (requests wait in the socket), then one event loop.
    metadata_->recover();
    workers_.emplace_back([this] { metadata_->run(sockets_.front(), stop_pipe_[0]); });
    return;
  }
  for (std::size_t i = 0; i < sockets_.size(); ++i) {
    PacketHandler& handler = port_handlers_.empty() ? *handler_ : *port_handlers_[i];
    workers_.emplace_back([this, fd = sockets_[i], &handler] { worker(fd, handler); });
  }
  if (memif_) memif_->start();
}

void Server::stop() {
  if (!started_ || stopping_.exchange(true)) return;
  const char byte = 's';
  // The pipe stays readable: every worker's poll() sees it.
  while (::write(stop_pipe_[1], &byte, 1) < 0 && errno == EINTR) {
  }
  for (auto& t : workers_) t.join();
  workers_.clear();
  if (memif_) memif_->stop();
  manager_->detach();
  // The mirror stays (its counters go into the exit line) until the
  // destructor, which destroys it before the manager.
}

std::string Server::stats_json() {
  const offload::ManagerStats ms = manager_->stats();
  const offload::BackendUsage usage = backend_->usage();
  Json out = stats_.json(tree_->stats());
  out["engine"] = to_string(options_.engine);
  out["keys"] = honeycomb_ ? honeycomb_loaded_ : dpa_ ? dpa_->stats().keys : tree_->size();
  out["height"] = tree_->height();
  out["threads"] = options_.threads;
  out["port"] = port_;
  out["shard"] = options_.shard;
  out["shards"] = options_.shards;
  out["offload"] = offload_json(backend_->name(), ms, usage);
  Json& agent = out["agent"] = Json::object();
  agent["target"] = options_.agent;
#ifdef FOREIN_KV_WITH_AGENT
  if (mirror_) {
    const AgentMirrorStats as = mirror_->stats();
    agent["batches_forwarded"] = as.batches_forwarded;
    agent["publishes"] = as.publishes;
    agent["heals"] = as.heals;
    agent["retries"] = as.retries;
    agent["pending"] = as.pending;
    agent["published"] = as.published;
    agent["last_error"] = as.last_error;
  }
#endif
  if (memif_) out["memif"] = memif_->json();
  if (metadata_) out.update(metadata_->json());
  if (honeycomb_) out["honeycomb"] = honeycomb_json();
  if (dpa_) out["dpa"] = dpa_json();
  return json_line(out);
}

// Honeycomb's counters: the store's (CPU side) and the accelerator's (its
// cache, PCIe and on-board DRAM traffic, and the modelled throughput).
Json Server::honeycomb_json() {
  const offload::fpga::StoreStats st = honeycomb_->stats();
  const offload::fpga::AcceleratorStats as = accelerator_->stats();
  const offload::fpga::AcceleratorModel m = accelerator_->model();
  Json j = Json::object();
  j["reads"] = to_string(options_.honeycomb_reads);  // who runs GET and SCAN
  j["loaded_keys"] = honeycomb_loaded_;
  j["height"] = st.height;
  j["nodes"] = st.nodes_live;
  j["log_appends"] = st.log_appends;
  j["merges"] = st.merges;
  j["splits"] = st.splits;
  j["read_version"] = honeycomb_->read_version();
  j["nic_requests"] = as.requests;
  j["interior_hit_rate"] = json_fixed(as.hit_rate(), 6);
  j["pcie_reads"] = as.pcie_reads;
  j["pcie_bytes"] = as.pcie_bytes;
  j["dram_bytes"] = as.dram_bytes;
  j["cache_bytes_used"] = as.cache_bytes_used;
  j["cache_bytes_capacity"] = as.cache_bytes_capacity;
  j["modelled_requests_per_second"] = json_fixed(m.requests_per_second, 6);
  j["bottleneck"] = m.bottleneck;
  return j;
}

// DPA-Store's counters: the store's (tree, DPA memory, patches, stitches,
// hot-entry caches), the misrouted requests, the ports, and per op kind
// the paper's model (forein/dpa/model.h) over the OpCosts the operations summed.
Json Server::dpa_json() {
  const offload::dpa::StoreStats st = dpa_->stats();
  Json j = Json::object();
  j["loaded_keys"] = dpa_loaded_;
  j["leaves"] = st.leaves;
  j["inner_nodes"] = st.inner_nodes;
  j["depth"] = st.depth;
  j["dpa_bytes"] = st.dpa_bytes;
  j["dpa_capacity"] = st.dpa_capacity;
  j["host_bytes"] = st.host_bytes;
  j["patches"] = st.patches;
  j["update_only_patches"] = st.update_only_patches;
  j["failed_patches"] = st.failed_patches;
  j["leaf_splits"] = st.leaf_splits;
  j["inner_splits"] = st.inner_splits;
  j["root_splits"] = st.root_splits;
  j["copy_stitches"] = st.copy_stitches;
  j["connect_stitches"] = st.connect_stitches;
  j["reset_stitches"] = st.reset_stitches;
  j["stitched_bytes"] = st.stitched_bytes;
  j["stitcher_lines"] = st.stitcher_lines;
  j["retired_nodes"] = st.retired_nodes;
  j["reclaimed_nodes"] = st.reclaimed_nodes;
  j["write_waits"] = st.write_waits;
  j["hot_hits"] = st.hot_hits;
  j["hot_lookups"] = st.hot_lookups;
  j["misrouted"] = dpa_counters_.misrouted();
  j["range_calls"] = dpa_counters_.range_calls();
  Json& ports = j["ports"] = Json::array();
  for (unsigned i = 0; i < options_.threads; ++i) ports.push_back(port_ + i);
  Json& model = j["model"] = Json::object();
  // The store's stitchers run behind the writes: what they did since the
  // bulk load (bytes copied, commands polled, lines written) is amortized
  // over the PUTs and DELETEs by count (op_cost.h: "amortized by the
  // caller").
  constexpr DpaOpKind kKinds[] = {DpaOpKind::kGet, DpaOpKind::kScan, DpaOpKind::kPut, DpaOpKind::kDelete};
  std::uint64_t ops_of[kDpaOpKinds] = {};
  offload::dpa::OpCost totals[kDpaOpKinds];
  for (const DpaOpKind kind : kKinds) {
    const auto k = static_cast<std::size_t>(kind);
    totals[k] = dpa_counters_.total(kind, &ops_of[k]);
  }
  const std::uint64_t writes =
      ops_of[static_cast<std::size_t>(DpaOpKind::kPut)] + ops_of[static_cast<std::size_t>(DpaOpKind::kDelete)];
  const offload::dpa::OpCost stitching = offload::dpa::stitcher_work(dpa_at_load_, st);
  const auto share = [&](std::uint64_t x, std::uint64_t ops) {
    return static_cast<std::uint64_t>(static_cast<unsigned __int128>(x) * ops / writes);
  };
  for (const DpaOpKind kind : {DpaOpKind::kPut, DpaOpKind::kDelete}) {
    const auto k = static_cast<std::size_t>(kind);
    if (writes == 0) break;
    totals[k].stitched_bytes += share(stitching.stitched_bytes, ops_of[k]);
    totals[k].stitch_commands += share(stitching.stitch_commands, ops_of[k]);
    totals[k].stitcher_lines += share(stitching.stitcher_lines, ops_of[k]);
  }
  for (const DpaOpKind kind : kKinds) {
    const std::uint64_t ops = ops_of[static_cast<std::size_t>(kind)];
    const offload::dpa::OpCost& total = totals[static_cast<std::size_t>(kind)];
    Json& k = model[to_string(kind)] = Json::object();
    k["ops"] = ops;
    if (ops > 0) {
      const offload::dpa::ModelFigures m = offload::dpa::model_figures(total, ops);
      k["latency_ns"] = json_fixed(m.latency_ns, 3);
      k["mops"] = json_fixed(m.ops_per_second / 1e6, 3);
      k["bottleneck"] = m.bottleneck;
    } else {
      k["latency_ns"] = 0;
      k["mops"] = 0;
      k["bottleneck"] = "";
    }
    k["dpa_lines"] = total.dpa_lines;
    k["dmas"] = total.dmas;
    k["stitched_bytes"] = total.stitched_bytes;
    k["stitch_commands"] = total.stitch_commands;
  }
  return j;
}

void Server::worker(int fd, PacketHandler& handler) {
  Packet request;
  serve_udp(
      fd, stop_pipe_[0], stopping_, kReceiveBuffer,
      [&](std::span<const std::byte> datagram, bool oversized) -> std::optional<std::vector<std::byte>> {
        stats_.count_datagram();
        if (oversized) {
          stats_.count_drop(DropReason::kOversized);
          return std::nullopt;
        }
        if (const ParseError e = parse_packet(datagram, &request); e != ParseError::kNone) {
          stats_.count_parse_error(e);
          return std::nullopt;
        }
        if (request.op == Op::kReply || request.op == Op::kError) {
          stats_.count_drop(DropReason::kNotRequest);
          return std::nullopt;
        }
        try {
          return encode_packet(handler.handle(request));
        } catch (const std::exception&) {
          stats_.count_drop(DropReason::kSendFailed);
          return std::nullopt;
        }
      },
      [&] { stats_.count_drop(DropReason::kSendFailed); });
}

}  // namespace forein::net::kv
