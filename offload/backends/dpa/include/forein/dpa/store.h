// dpa store: DPA-Store (shared/papers/004_af7888c35286a936.txt, sections
// 3-4; docs/dpa.md), an ordered key-value store of 64-bit keys and values
// whose learned index lives in the modelled DPA memory of a BlueField-3
// and whose keys and values live in host memory.
//
//   NIC side (DPA memory, byte-accounted against 1 GiB): inner nodes of up
//   to seven PLA segments (first keys + metadata in one cache line, the
//   segments' models, up to 128 pivots and child pointers each) and leaves
//   (model, host addresses of the key and value arrays, an insert buffer
//   with two atomic counters). Traversal is lock-free.
//   Host side: each leaf's sorted key and value arrays, read by the
//   traversers with DMAs (a key window around the prediction, then the
//   value), and the host replica of the tree that patchers rebuild.
//   Writes: INSERT/UPDATE/DELETE append to the leaf's insert buffer
//   (visible to GETs at once); the writer that fills the last slot sends a
//   patch request to the host; patcher threads merge, re-segment with the
//   retrain bound and propagate splits upward; stitcher threads install
//   the new nodes in DPA memory with RCU (COPY stitches, then one CONNECT
//   pointer swap); obsolete nodes are freed by epochs from the traversers'
//   packet counters. A write to a full buffer waits (the paper's re-enqueue)
//   until the stitcher resets it.
//   Reads: GET checks the traverser's hot-entry cache, descends, scans the
//   insert buffer (newest first), then the host key window by DMA and the
//   value by DMA. RANGE descends, merges the leaf's insert buffer (also
//   newest first) with its host arrays and re-descends with the next key
//   at each leaf's end, at most 64 pairs a response. RANGE is not a
//   snapshot (as in the paper): a write that lands during a RANGE may or
//   may not be seen, but every pair returned was the key's value at some
//   point during the call and keys come out strictly ascending.
//
// Every operation fills an OpCost with the DPA lines, L3 lines and DMAs it
// really made; forein/dpa/model.h turns them into the paper's latency and
// throughput.
//
// Thread safety: every public member may be called from any thread at
// once. Requests are routed to traverser contexts by key hash (each owns a
// hot-entry cache, locked while used).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "forein/dpa/op_cost.h"
#include "forein/dpa/types.h"

namespace forein::offload::dpa {

struct StoreOptions {
  std::uint32_t epsilon_inner = kDefaultEpsilonInner;
  std::uint32_t epsilon_leaf = kDefaultEpsilonLeaf;
  std::size_t leaf_capacity = kLeafCapacity;      // keys per leaf, <= 128
  std::size_t insert_buffer = kInsertBufferEntries;
  double retrain_bound = kDefaultRetrainBound;    // split leaves hold <= this x capacity
  std::size_t traversers = kTraverserThreads;     // traverser contexts (hot caches)
  std::size_t patchers = kPatcherThreads;         // host patcher threads
  std::size_t stitchers = kStitcherThreads;       // NIC stitcher threads
  bool hot_cache = true;
  double admit_probability = 0.25;
  bool root_lines_in_l3 = true;                   // 4.2.6: the root's first two lines hit L3
  std::uint64_t dpa_memory_bytes = kDpaMemoryBytes;
  std::uint64_t seed = 1;
};

struct KV {
  std::uint64_t key = 0;
  std::uint64_t value = 0;
  bool operator==(const KV&) const = default;
};

struct RangeResult {
  std::vector<KV> pairs;       // ascending keys >= from, at most max_pairs
  bool more = false;           // pairs may follow: continue from next_key
  std::uint64_t next_key = 0;  // the smallest key strictly above the last returned
};

enum class WriteKind : std::uint8_t { kInsert, kUpdate, kDelete };

struct StoreStats {
  std::uint64_t keys = 0;            // live keys in the host arrays (buffers not merged yet excluded)
  std::uint64_t leaves = 0, inner_nodes = 0, depth = 0;  // depth: levels, leaves included
  std::uint64_t dpa_bytes = 0;       // DPA memory in use (nodes + buffers), the paper's Table 1 unit
  std::uint64_t dpa_capacity = 0;
  std::uint64_t host_bytes = 0;      // host key/value arrays
  std::uint64_t patches = 0, update_only_patches = 0;
  std::uint64_t failed_patches = 0;  // patches that found DPA memory full (nothing changed; see write)
  std::uint64_t leaf_splits = 0, inner_splits = 0, root_splits = 0;
  std::uint64_t copy_stitches = 0, connect_stitches = 0, reset_stitches = 0;
  std::uint64_t stitched_bytes = 0;  // host-to-DPA bytes copied by COPY stitches
  std::uint64_t stitcher_lines = 0;  // DPA lines CONNECT and RESET stitches wrote
  std::uint64_t retired_nodes = 0, reclaimed_nodes = 0;
  std::uint64_t write_waits = 0;     // writes that found their buffer full and waited
  std::uint64_t hot_lookups = 0, hot_hits = 0;
};

// The stitchers' work between two stats() snapshots, as the OpCost fields
// a caller amortizes over the writes that caused it (stitched_bytes,
// stitch_commands, stitcher_lines): stitching runs on its own threads
// after the writes, so no single write's OpCost carries it.
OpCost stitcher_work(const StoreStats& before, const StoreStats& after);

// The traverser a request goes to: clients hash the key to pick the UDP
// port, and so the thread (3.1, 3.1.2); each traverser owns a hot-entry
// cache. forein-kv-server and forein-load route by it.
std::size_t traverser_of(std::uint64_t key, std::size_t traversers);

class Store {
 public:
  // Throws InvalidArgument for options outside the hardware's limits
  // (leaf_capacity 1..128, epsilons 1..64, insert_buffer 1..256, threads >= 1).
  explicit Store(StoreOptions options = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Section 3.2.4: sorted unique pairs into an empty store (PLA segments
  // become leaves, scaffolding built upward, stitched, root pointer last).
  // Throws InvalidArgument for unsorted or duplicate keys or a non-empty
  // store, OutOfSpace-like InvalidArgument if DPA memory cannot hold it.
  // Expects no concurrent requests ("traverser threads are disabled during
  // bulk loading", 4.2.7); returns once the tree is stitched and visible.
  void bulk_load(std::span<const KV> pairs);

  std::optional<std::uint64_t> get(std::uint64_t key, OpCost* cost = nullptr);
  // max_pairs: 1..64 (kMaxRangePairs); larger is clamped.
  RangeResult range(std::uint64_t from, std::size_t max_pairs = kMaxRangePairs, OpCost* cost = nullptr);
  // Append to the leaf's insert buffer; waits while the buffer is full and
  // its patch is in flight. Throws InvalidArgument (nothing written) when
  // the buffer is full and its patch failed for want of DPA memory (the
  // old nodes stay; reads keep working; stats().failed_patches counts it). INSERT and UPDATE both leave key -> value
  // (an UPDATE of an absent key inserts it); DELETE removes key.
  void write(WriteKind kind, std::uint64_t key, std::uint64_t value = 0, OpCost* cost = nullptr);
  void insert(std::uint64_t key, std::uint64_t value, OpCost* cost = nullptr) {
    write(WriteKind::kInsert, key, value, cost);
  }
  void update(std::uint64_t key, std::uint64_t value, OpCost* cost = nullptr) {
    write(WriteKind::kUpdate, key, value, cost);
  }
  void remove(std::uint64_t key, OpCost* cost = nullptr) { write(WriteKind::kDelete, key, 0, cost); }

  // Waits until every patch request sent so far is patched and stitched.
  void flush();

  StoreStats stats() const;
  const StoreOptions& options() const;

  // Tests and tools: every live pair, ascending (buffers merged in), read on
  // the host side; and a full check of the invariants (NIC tree matches
  // the host tree, every model within its epsilon, keys ordered, bytes
  // accounted); an empty string when all hold, else what is wrong. Both
  // expect no concurrent writers.
  std::vector<KV> dump() const;
  std::string check() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace forein::offload::dpa
