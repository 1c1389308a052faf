#include "fpga/honeycomb/accelerator_port.h"

#include <algorithm>
#include <cstring>

namespace forein::offload::fpga {

AcceleratorCore::AcceleratorCore(const AcceleratorOptions& opts)
    : options(opts),
      cache(opts.cache, opts.cache_bytes, opts.seed),
      pcie(pcie_link(opts.pcie_bytes_per_second, opts.pcie_latency_ns)),
      dram(dram_link(opts.dram_bytes_per_second, opts.dram_latency_ns)),
      balancer(dram, pcie, opts.load_balancer && opts.cache == CacheMode::kInterior) {}

void AcceleratorCore::map(Lid lid, NodeAddress address) {
  page_table.map(lid, address);
  cache.invalidate(lid);
}

void AcceleratorCore::unmap(Lid lid) {
  page_table.unmap(lid);
  cache.invalidate(lid);
}

void AcceleratorCore::set_root(Lid new_root, std::uint32_t new_height) {
  cache.set_root(new_root);
  root_word.store((std::uint64_t{new_height} << 48) | (new_root & kMaxLid),
                  std::memory_order_release);
}

void AcceleratorCore::record(bool scan, std::size_t items, const ReadTrace& trace,
                             double latency_ns) {
  requests.fetch_add(1, std::memory_order_relaxed);
  (scan ? scans : gets).fetch_add(1, std::memory_order_relaxed);
  items_returned.fetch_add(items, std::memory_order_relaxed);
  old_versions.fetch_add(trace.old_versions, std::memory_order_relaxed);
  latency_ns_total.fetch_add(latency_ns, std::memory_order_relaxed);
}

AcceleratorStats AcceleratorCore::stats() const {
  constexpr auto r = std::memory_order_relaxed;
  AcceleratorStats s;
  s.requests = requests.load(r);
  s.gets = gets.load(r);
  s.scans = scans.load(r);
  s.items_returned = items_returned.load(r);
  s.interior_reads = interior_reads.load(r);
  s.cache_hits = cache_hits.load(r);
  s.sram_hits = sram_hits.load(r);
  s.balanced_to_pcie = balanced_to_pcie.load(r);
  s.pcie_reads = pcie.transfers();
  s.pcie_bytes = pcie.bytes();
  s.dram_reads = dram_reads.load(r);
  s.dram_bytes = dram_bytes.load(r);
  s.dram_write_bytes = dram_write_bytes.load(r);
  s.page_table_reads = page_table_reads.load(r);
  s.metadata_reads = metadata_reads.load(r);
  s.invalidations = cache.invalidations();
  s.evictions = cache.evictions();
  s.cache_bytes_used = cache.used_bytes();
  s.cache_bytes_capacity = cache.capacity_bytes();
  s.old_versions = old_versions.load(r);
  return s;
}

AcceleratorModel AcceleratorCore::model() const {
  AcceleratorModel m;
  const auto n = requests.load(std::memory_order_relaxed);
  m.pcie_seconds = pcie.busy_ns() / 1e9;
  m.dram_seconds = dram.busy_ns() / 1e9;
  const double bound = std::max(m.pcie_seconds, m.dram_seconds);
  if (bound <= 0) {
    m.bottleneck = "none";
  } else {
    m.bottleneck = m.pcie_seconds >= m.dram_seconds ? "pcie" : "dram";
    m.requests_per_second = static_cast<double>(n) / bound;
  }
  m.mean_latency_ns = n == 0 ? 0 : latency_ns_total.load(std::memory_order_relaxed) / n;
  m.source =
      "Honeycomb (papers/003): PCIe 2x Gen3 x8, 13 GB/s measured, >= 1 us per DMA (sec. 2); "
      "PCIe IOPS: <= 256 B completion TLPs with 20 B framing+header+LCRC each (PCIe 3.0 base "
      "spec); board DRAM 2x DDR4-2133 = 34 GB/s peak (sec. 6.1, JEDEC), whole 64 B bursts; "
      "cache: root in SRAM, 4-way interior cache in DRAM, 256 B chunks, NAT, load balancer "
      "(sec. 5, 6.4); throughput = requests / busiest interface's busy time, compute not "
      "modelled";
  return m;
}

void AcceleratorCore::reset_stats() {
  constexpr auto r = std::memory_order_relaxed;
  for (auto* c : {&requests, &gets, &scans, &items_returned, &interior_reads, &cache_hits,
                  &sram_hits, &balanced_to_pcie, &dram_reads, &dram_bytes, &dram_write_bytes,
                  &page_table_reads, &metadata_reads, &old_versions})
    c->store(0, r);
  latency_ns_total.store(0, r);
  pcie.reset();
  dram.reset();
  cache.reset_counters();
}

NodeAddress AcceleratorPort::translate(Lid lid) {
  for (const auto& [l, a] : nat_)
    if (l == lid) return a;
  core_.page_table_reads.fetch_add(1, std::memory_order_relaxed);
  latency_ns_ += core_.dram.transfer(kPageTableEntryBytes).unloaded_ns;
  const NodeAddress address = core_.page_table.lookup(lid);
  if (address != nullptr) nat_.emplace_back(lid, address);
  return address;
}

void AcceleratorPort::over_pcie(std::uint64_t bytes) {
  latency_ns_ += core_.pcie.transfer(bytes).unloaded_ns;
}

void AcceleratorPort::read(const NodeRead& r, std::byte* out) {
  constexpr auto rel = std::memory_order_relaxed;
  if (r.length == 0) return;
  // The reader opens the root as an interior node before it has seen its
  // header; with a height of 1 the root is a leaf (changed in place by
  // writers), so it must not be cached. The accelerator knows the height
  // (section 3.4: the CPU updates root and height together).
  const bool interior = r.interior && !(r.lid == root_.lid && root_.height <= 1);
  if (interior) core_.interior_reads.fetch_add(1, rel);
  const CacheLookup look = core_.cache.lookup(r.lid, interior, r.address, r.offset, r.length, out);
  if (look.metadata_read) {
    core_.metadata_reads.fetch_add(1, rel);
    latency_ns_ += core_.dram.transfer(kMetadataSetBytes).unloaded_ns;
  }
  if (look.hit) {
    core_.cache_hits.fetch_add(1, rel);
    if (look.level == CacheLevel::kSram) {
      core_.sram_hits.fetch_add(1, rel);  // on chip: no off-chip time
      return;
    }
    if (core_.balancer.divert(r.length)) {
      // The load balancer sends this hit to host memory, at the NAT
      // address (the cached way has the same one).
      core_.balanced_to_pcie.fetch_add(1, rel);
      copy_node_bytes(r.address, r.offset, r.length, out);
      over_pcie(r.length);
      return;
    }
    core_.dram_reads.fetch_add(1, rel);
    core_.dram_bytes.fetch_add(r.length, rel);
    latency_ns_ += core_.dram.transfer(r.length).unloaded_ns;
    return;
  }
  if (look.level == CacheLevel::kUncached) {
    // Leaves (and interior nodes this cache mode keeps off chip): the
    // bytes asked for, one DMA.
    copy_node_bytes(r.address, r.offset, r.length, out);
    over_pcie(r.length);
    return;
  }
  // A miss or an address mismatch: whole 256 B chunks over PCIe from the
  // NAT address, then written back (off the request's critical path).
  const ChunkRange range = chunks_of(r.offset, r.length);
  alignas(8) std::byte buffer[kNodeBytes];
  const std::size_t start = std::size_t{range.first} * kChunkBytes;
  const std::size_t bytes = std::size_t{range.count} * kChunkBytes;
  copy_node_bytes(r.address, start, bytes, buffer);
  over_pcie(bytes);
  std::memcpy(out, buffer + (r.offset - start), r.length);
  const CacheFill fill = core_.cache.fill(look.level, r.lid, r.address, range, buffer,
                                          r.block == Block::kFirst, core_.page_table);
  if (fill.bytes_written != 0 && look.level == CacheLevel::kDram) {
    core_.dram_write_bytes.fetch_add(fill.bytes_written, rel);
    core_.dram.transfer(fill.bytes_written);
  }
}

}  // namespace forein::offload::fpga
