// Honeycomb's B-tree accelerator and memory subsystem, modelled in software
// (sections 4 and 5): worker threads stand in for the FPGA's engines and
// execute GET and SCAN with the store's read algorithm (reader.h) over an
// accelerator MemoryPort that has
//   - the accelerator's copy of the page table, GRV, root and height;
//   - the interior-node cache: the root in on-chip SRAM, other interior
//     nodes in on-board DRAM, four-way set associative by LID, 256-byte
//     chunk occupancy, random eviction, invalidated on page-table updates;
//     leaves never cached;
//   - the node address table: one node version per LID per request;
//   - the PCIe model: every miss is a DMA of >= 1 us latency on a shared
//     13 GB/s token bucket, bytes and IOPS counted;
//   - the load balancer: some cache hits go over PCIe when on-board DRAM
//     is the busier interface;
//   - the epoch manager's S_new and S_old.
// Requests complete out of order. Time in the model is modelled time
// (nanoseconds computed from bytes and the bandwidths), not slept.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "forein/fpga/memory_port.h"
#include "forein/fpga/reader.h"

namespace forein::offload::fpga {

enum class CacheMode : std::uint8_t {
  kNone,      // every node over PCIe
  kRootOnly,  // the root in on-chip SRAM
  kInterior,  // root in SRAM + interior nodes in on-board DRAM
};

struct AcceleratorOptions {
  unsigned workers = 2;                      // model threads (the machine has 2 cores)
  CacheMode cache = CacheMode::kInterior;
  std::uint64_t cache_bytes = std::uint64_t{4} << 30;  // on-board DRAM for the cache
  bool load_balancer = true;
  // PCIe: two Gen3 x8 links, 13 GB/s measured, > 1 us latency (section 2).
  double pcie_bytes_per_second = 13e9;
  double pcie_latency_ns = 1000;
  // On-board DRAM: two DDR4-2133 channels (section 6.1).
  double dram_bytes_per_second = 2 * 17.0e9;
  double dram_latency_ns = 200;
  std::uint64_t seed = 1;  // random eviction
};

struct AcceleratorStats {
  std::uint64_t requests = 0, gets = 0, scans = 0;
  std::uint64_t items_returned = 0;
  std::uint64_t interior_reads = 0;  // reads of interior-node blocks
  std::uint64_t cache_hits = 0;      // of those, found in SRAM or DRAM (balanced ones too)
  std::uint64_t sram_hits = 0;
  std::uint64_t balanced_to_pcie = 0;  // hits the load balancer sent over PCIe
  std::uint64_t pcie_reads = 0, pcie_bytes = 0;  // DMAs over PCIe and their bytes
  std::uint64_t dram_reads = 0, dram_bytes = 0;  // reads of on-board DRAM (cache data)
  std::uint64_t dram_write_bytes = 0;            // cache fills
  // Metadata reads of on-board DRAM (whole 64 B bursts): page-table
  // entries (every LID a request first translates) and cache metadata sets
  // missing from the 1K-entry on-chip metadata cache (section 5).
  std::uint64_t page_table_reads = 0, metadata_reads = 0;
  std::uint64_t invalidations = 0, evictions = 0;
  std::uint64_t cache_bytes_used = 0, cache_bytes_capacity = 0;  // 8 KB slots allocated
  std::uint64_t old_versions = 0;                // old-version pointers followed
  double hit_rate() const {
    return interior_reads == 0 ? 0 : static_cast<double>(cache_hits) / interior_reads;
  }
};

// The accelerator's modelled throughput for the requests it ran: each
// interface's busy time from the bytes and IOPS it carried, the bottleneck,
// and requests per second at that bottleneck. Sources in pcie_model.h and
// AcceleratorCore::model (accelerator_port.cc); compute is not modelled.
struct AcceleratorModel {
  double requests_per_second = 0;
  double pcie_seconds = 0, dram_seconds = 0;
  std::string bottleneck;  // "pcie", "dram" or "none"
  double mean_latency_ns = 0;  // of dependent DMAs per request, unloaded
  std::string source;
};

class Accelerator final : public AcceleratorLink {
 public:
  explicit Accelerator(AcceleratorOptions options = {});
  ~Accelerator() override;
  Accelerator(const Accelerator&) = delete;
  Accelerator& operator=(const Accelerator&) = delete;

  // AcceleratorLink (called by the Store).
  void map(Lid lid, NodeAddress address) override;
  void unmap(Lid lid) override;
  void set_read_version(Version grv) override;
  Version current_read_version() override;
  void set_root(Lid root, std::uint32_t height) override;
  std::uint64_t newest_sequence() override;
  std::uint64_t oldest_sequence() override;

  // Requests, completed out of order on the worker threads; `done` runs on
  // a worker thread. GET is SCAN(k, k) post-processed.
  using GetDone = std::function<void(std::optional<std::string>)>;
  using ScanDone = std::function<void(ScanResult)>;
  void submit_get(std::string key, GetDone done);
  void submit_scan(std::string lo, std::string hi, std::size_t max_items, ScanDone done);

  // Synchronous forms (submit and wait).
  std::optional<std::string> get(std::string_view key);
  ScanResult scan(std::string_view lo, std::string_view hi, std::size_t max_items = 0);

  // Waits until every submitted request has completed.
  void drain();

  AcceleratorStats stats() const;
  AcceleratorModel model() const;
  void reset_stats();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace forein::offload::fpga
