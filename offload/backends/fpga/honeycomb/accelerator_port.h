// The accelerator model's memory subsystem (paper 003, section 5) and the
// MemoryPort one request reads through. AcceleratorCore holds what the
// AcceleratorLink updates (page table copy, GRV copy, root and height) and
// the shared resources (interior cache, PCIe and DRAM links, load
// balancer, counters); AcceleratorPort is one request's view: its read
// version and root taken at arrival, its node address table, and the
// modelled latency of its chain of dependent reads.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

#include "forein/fpga/accelerator.h"
#include "fpga/honeycomb/compute_model.h"
#include "fpga/honeycomb/device_page_table.h"
#include "fpga/honeycomb/interior_cache.h"
#include "fpga/honeycomb/load_balancer.h"
#include "forein/fpga/memory_port.h"
#include "fpga/honeycomb/pcie_model.h"
#include "forein/fpga/reader.h"

namespace forein::offload::fpga {

// Metadata sizes in on-board DRAM (section 5): a page-table entry is an
// 8-byte physical address; a set's metadata is four ways of 6 B LID, 8 B
// address and 4 B occupancy map. The DRAM link rounds both up to bursts.
constexpr std::uint64_t kPageTableEntryBytes = 8;
constexpr std::uint64_t kMetadataSetBytes = kCacheWays * (6 + 8 + 4);

struct AcceleratorCore {
  explicit AcceleratorCore(const AcceleratorOptions& options);

  // AcceleratorLink's updates. map/unmap update the page table first and
  // then invalidate, so a racing fill (which rechecks the page table under
  // the set's lock) cannot re-insert the old version.
  void map(Lid lid, NodeAddress address);
  void unmap(Lid lid);
  void set_read_version(Version v) { grv.store(v, std::memory_order_release); }
  void set_root(Lid root, std::uint32_t height);

  // One completed request, for stats and the model: its reply carries
  // reply_bytes on the wire (reply_wire_bytes).
  void record(bool scan, std::size_t items, const ReadTrace& trace, double latency_ns,
              std::uint64_t reply_bytes = 0);

  AcceleratorStats stats() const;
  AcceleratorModel model() const;
  void reset_stats();

  const AcceleratorOptions options;
  DevicePageTable page_table;
  InteriorCache cache;
  LinkModel pcie;
  LinkModel dram;
  LoadBalancer balancer;
  ComputeCounters compute;

  // The root's LID and the tree's height in one word (height << 48 | LID)
  // so a request never pairs one root with another root's height.
  struct Root {
    Lid lid = kNoLid;
    std::uint32_t height = 0;
  };
  Root root() const {
    const std::uint64_t w = root_word.load(std::memory_order_acquire);
    return Root{w & kMaxLid, static_cast<std::uint32_t>(w >> 48)};
  }

  std::atomic<Version> grv{0};
  std::atomic<std::uint64_t> root_word{0};

  // Counters (relaxed; read as a snapshot by stats()).
  std::atomic<std::uint64_t> requests{0}, gets{0}, scans{0}, items_returned{0};
  std::atomic<std::uint64_t> interior_reads{0}, cache_hits{0}, sram_hits{0};
  std::atomic<std::uint64_t> balanced_to_pcie{0};
  std::atomic<std::uint64_t> dram_reads{0}, dram_bytes{0}, dram_write_bytes{0};
  std::atomic<std::uint64_t> page_table_reads{0}, metadata_reads{0};
  std::atomic<std::uint64_t> old_versions{0}, reply_bytes{0};
  std::atomic<double> latency_ns_total{0};
};

class AcceleratorPort final : public MemoryPort {
 public:
  // A request arriving now: the root (then) the GRV as they are.
  explicit AcceleratorPort(AcceleratorCore& core) : AcceleratorPort(core, core.root(), 0) {
    rv_ = core.grv.load(std::memory_order_acquire);
  }
  AcceleratorPort(AcceleratorCore& core, AcceleratorCore::Root root, Version rv)
      : core_(core), root_(root), rv_(rv) {}

  NodeAddress translate(Lid lid) override;
  void read(const NodeRead& read, std::byte* out) override;
  Lid root() override { return root_.lid; }
  Version read_version() override { return rv_; }

  // Modelled latency of this request's dependent reads, unloaded.
  double latency_ns() const { return latency_ns_; }

 private:
  void over_pcie(std::uint64_t bytes);
  void over_dram(std::uint64_t bytes);

  AcceleratorCore& core_;
  const AcceleratorCore::Root root_;
  Version rv_;
  // Node address table (section 5): the buffer this request first saw for
  // each LID; later translations of the LID return it, so every block of a
  // node comes from one version.
  std::vector<std::pair<Lid, NodeAddress>> nat_;
  double latency_ns_ = 0;
};

}  // namespace forein::offload::fpga
