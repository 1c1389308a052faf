// forein-mem-server's memory node (docs/network.md, "forein-mem-server";
// docs/remote-read.md): a region holding a remote tree, served the way an
// RDMA NIC serves RDMA READ (bytes at an address, no key or tree logic),
// and the tree owner's write RPC (PUT: Writer::put on the owner's CPU, as
// in Fat-B+Tree's RDMA mode).
//
// handle() is the whole request path for one datagram, independent of the
// transport (kernel UDP workers, tests, the fuzzer): parse, serve, encode.
// READs run on any number of threads at once, lock-free; PUTs are
// serialized by a mutex (one writer).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/stats_json.h"
#include "protocol/packet.h"
#include "remote/region.h"
#include "remote/writer.h"

namespace forein::net::mem {

// Why a READ got BAD_ADDRESS or BAD_REQUEST.
enum class BadRead : std::uint8_t {
  kBadHeader,   // the value is not exactly one READ header (length, flags, reserved)
  kOutOfRange,  // address at or past the region's end
  kPastEnd,     // address + length past the region's end
  kTooLong,     // length above kMaxReadBytes
};
inline constexpr std::size_t kBadReads = 4;
const char* to_string(BadRead r);

class MemoryStats : public DropCounters {
 public:
  void count_datagram() { bump(datagrams_); }
  void count_read(std::size_t bytes, bool start, bool rewritten);
  void count_bad_read(BadRead r) { bump(bad_reads_[static_cast<std::size_t>(r)]); }
  void count_put(bool ok) { bump(ok ? puts_ : failed_puts_); }
  void count_bad_request() { bump(bad_requests_); }

  std::uint64_t reads() const { return load(reads_); }
  std::uint64_t bad_reads(BadRead r) const { return load(bad_reads_[static_cast<std::size_t>(r)]); }
  std::uint64_t bad_reads_total() const;
  std::uint64_t bad_requests() const { return load(bad_requests_); }

  // "datagrams", "reads", "read_bytes", "start_reads", "rewritten_reads",
  // "bad_reads", "bad_reads_by_reason", "puts", "failed_puts",
  // "bad_requests", "drops", "drops_by_reason".
  void add_json(Json& out) const;

 private:
  std::atomic<std::uint64_t> datagrams_{0}, reads_{0}, read_bytes_{0}, start_reads_{0}, rewritten_reads_{0},
      puts_{0}, failed_puts_{0}, bad_requests_{0};
  std::array<std::atomic<std::uint64_t>, kBadReads> bad_reads_{};
};

class MemoryNode {
 public:
  // `region` holds a built tree (build()); the node takes the owner's part
  // of it (Writer). on_start_read: called with the key word of every start
  // READ (the owner samples them for the offload planner); on_nodes_changed:
  // after a PUT that split nodes, under the writer's lock. Either may be empty.
  struct Hooks {
    std::function<void(std::uint64_t word)> on_start_read;
    std::function<void()> on_nodes_changed;
    std::function<std::string()> stats_json;  // STATS' reply value
  };
  MemoryNode(remote::Region& region, Hooks hooks);

  // One datagram in, its reply out (nullopt: dropped and counted).
  std::optional<std::vector<std::byte>> handle(std::span<const std::byte> datagram);
  // The decoded request's reply.
  Packet serve(const Packet& request);

  MemoryStats& stats() { return stats_; }
  const remote::Region& region() const { return region_; }
  // Writer's counters and the current header, read under the writer's lock.
  remote::WriterStats writer_stats() const;
  remote::RegionHeader header() const;
  // Inserts so far (the key set's changes), bumped after each is written.
  std::uint64_t key_generation() const { return key_generation_.load(std::memory_order_acquire); }

 private:
  Packet read(const Packet& request);
  Packet put(const Packet& request);

  remote::Region& region_;
  Hooks hooks_;
  MemoryStats stats_;
  std::atomic<std::uint64_t> key_generation_{0};
  mutable std::mutex write_mu_;
  remote::Writer writer_;  // guarded by write_mu_
};

}  // namespace forein::net::mem
