// Honeycomb's B-tree store, CPU side (sections 3.1-3.5): 8 KB nodes in host
// memory named by LIDs through a page table, leaves with a sorted block and
// a log block, MVCC with a global write version (GWV) and a global read
// version (GRV) released in version order, writes by CPU threads
// (lock-free traversal, CAS-locked leaf, log append; merge = copy-on-write
// + page-table remap; splits swap the split root's mapping), and
// epoch-based reclamation across CPU threads and the accelerator.
//
// Thread safety: every public member may be called from any thread at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "forein/fpga/memory_port.h"
#include "forein/fpga/reader.h"

namespace forein::offload::fpga {

struct StoreOptions {
  // Off: every version is 0 and no old-version pointers are set (section
  // 3.2's "MVCC off"): GET/PUT/DELETE stay linearizable, SCAN does not.
  bool mvcc = true;
  std::size_t log_block_bytes = kLogBlockMaxBytes;  // merge threshold
  // The broken variant the linearizability checker must catch: a writer
  // publishes GRV = its own version without waiting for smaller versions
  // to be released first. Tests only.
  bool release_out_of_order_for_testing = false;
};

struct StoreStats {
  std::uint64_t puts = 0, updates = 0, deletes = 0;
  std::uint64_t log_appends = 0;   // fast-path writes
  std::uint64_t merges = 0;        // sorted + log block merges (copy-on-write)
  std::uint64_t splits = 0;        // nodes split
  std::uint64_t restarts = 0;      // writer CAS / validation failures
  std::uint64_t page_table_updates = 0;
  std::uint64_t nodes_live = 0;    // mapped LIDs
  std::uint64_t buffers_retired = 0, buffers_freed = 0;
  std::uint64_t height = 0;
  std::uint64_t bytes_allocated = 0;  // node buffers held (8 KB each)
};

class Store {
 public:
  // link: the accelerator (may be null: CPU only). The store sends it every
  // page-table change, GRV release and root change, and reads its epoch
  // sequence numbers before freeing a node version.
  explicit Store(StoreOptions options = {}, AcceleratorLink* link = nullptr);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Loads sorted, unique items into an empty store (fill: the fraction of
  // each node's bytes used). Throws InvalidArgument on unsorted input, a
  // non-empty store or an oversized key/value.
  void bulk_load(std::span<const Item> items, double fill = 0.7);

  // Writes (CPU). PUT inserts only if the key is absent (section 3.4);
  // UPDATE only if present; DELETE only if present. Each returns whether
  // it changed the store, and returns after its change is released to
  // readers (GRV >= its version, accelerator updated). Throws
  // InvalidArgument for an empty or oversized key or an oversized value.
  bool put(std::string_view key, std::string_view value);
  bool update(std::string_view key, std::string_view value);
  bool erase(std::string_view key);
  // PUT or UPDATE, whichever applies (the KV server's PUT).
  void upsert(std::string_view key, std::string_view value);

  // Reads on the CPU, through the CPU's port with rv = GRV now.
  std::optional<std::string> get(std::string_view key);
  ScanResult scan(std::string_view lo, std::string_view hi, std::size_t max_items = 0);

  // The CPU's view of memory (its own page table, direct loads).
  MemoryPort& cpu_port();
  Version read_version() const;   // GRV
  Version write_version() const;  // GWV

  // Frees retired node versions no CPU thread or accelerator request can
  // still reach. Also run by writers from time to time.
  void collect_garbage();

  StoreStats stats() const;

  // Host-side iteration for tests and tools: every live item, ascending,
  // at the current read version.
  std::vector<Item> dump();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace forein::offload::fpga
