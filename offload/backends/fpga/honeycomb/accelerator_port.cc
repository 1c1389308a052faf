#include "fpga/honeycomb/accelerator_port.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace forein::offload::fpga {

AcceleratorCore::AcceleratorCore(const AcceleratorOptions& opts)
    : options(opts),
      cache(opts.cache, opts.cache_bytes, opts.seed),
      pcie(pcie_link(opts.pcie_bytes_per_second, opts.pcie_latency_ns)),
      dram(dram_link(opts.dram_bytes_per_second, opts.dram_latency_ns, opts.dram_access_ns)),
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
                             double latency_ns, std::uint64_t reply) {
  compute.add(ComputeUnit::kLogScan, std::uint64_t{trace.log_items} * kLogItemCycles);
  reply_bytes.fetch_add(reply, std::memory_order_relaxed);
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
  constexpr double kInf = std::numeric_limits<double>::infinity();
  AcceleratorModel m;
  const double n = static_cast<double>(requests.load(std::memory_order_relaxed));
  const auto [unit, compute_seconds] = compute.busiest(options.compute);
  m.busiest_unit = compute_unit_name(unit);
  m.compute_seconds = compute_seconds;
  m.pcie_seconds = pcie.busy_ns() / 1e9;
  m.pcie_tag_seconds = options.pcie_read_tags == 0 ? 0 : pcie.outstanding_ns() / 1e9 / options.pcie_read_tags;
  m.dram_seconds = dram.busy_ns() / 1e9;
  m.network_seconds = options.network_bits_per_second <= 0
                          ? 0
                          : static_cast<double>(reply_bytes.load(std::memory_order_relaxed)) * 8 /
                                options.network_bits_per_second;
  const auto bound = [n](double seconds) { return seconds > 0 ? n / seconds : kInf; };
  m.compute_bound = bound(m.compute_seconds);
  m.pcie_bound = bound(m.pcie_seconds);
  m.pcie_tag_bound = bound(m.pcie_tag_seconds);
  m.dram_bound = bound(m.dram_seconds);
  m.network_bound = bound(m.network_seconds);
  m.bottleneck = "none";
  m.requests_per_second = 0;
  if (n > 0) {
    // The lowest bound; ties go to the first named (the paper's order of
    // concern: PCIe, then DRAM).
    const std::pair<const char*, double> bounds[] = {{"pcie", m.pcie_bound},
                                                     {"dram", m.dram_bound},
                                                     {"pcie tags", m.pcie_tag_bound},
                                                     {"compute", m.compute_bound},
                                                     {"network", m.network_bound}};
    double lowest = kInf;
    for (const auto& [name, b] : bounds) {
      if (b < lowest) {
        lowest = b;
        m.bottleneck = name;
      }
    }
    if (lowest < kInf) m.requests_per_second = lowest;
  }
  m.mean_latency_ns = n == 0 ? 0 : latency_ns_total.load(std::memory_order_relaxed) / n;
  m.source =
      "Honeycomb (papers/003): throughput = the lowest of compute, PCIe, PCIe read tags, board DRAM "
      "and network for the work counted. Compute: 14 KSUs, 4+5+5 RSUs, 4 MSIs at 220 MHz (sec. 6.1), "
      "a cycle per 16 B key fragment (sec. 4.2), a cycle per log item sorted (sec. 4.3), 29 cycles a "
      "block beyond streaming and 64 B/cycle MSIs (inferred: compute_model.h). PCIe 2x Gen3 x8, 13 GB/s "
      "measured, >= 1 us per DMA (sec. 2); <= 256 B completion TLPs with 20 B framing+header+LCRC each "
      "(PCIe 3.0 base spec); 2x64 read tags (Arria 10 PCIe hard IP). Board DRAM 2x DDR4-2133 = 34 GB/s "
      "peak (sec. 6.1, JEDEC), whole 64 B bursts, plus a per-access cost (derived from sec. 6.4's "
      "DRAM-bound point: pcie_model.h). Network 50 Gbps (sec. 2) over reply bytes with Ethernet/IP/UDP "
      "framing. Cache: root in SRAM, 4-way interior cache in DRAM, 256 B chunks, NAT, load balancer "
      "(sec. 5, 6.4)";
  return m;
}

void AcceleratorCore::reset_stats() {
  constexpr auto r = std::memory_order_relaxed;
  for (auto* c : {&requests, &gets, &scans, &items_returned, &interior_reads, &cache_hits,
                  &sram_hits, &balanced_to_pcie, &dram_reads, &dram_bytes, &dram_write_bytes,
                  &page_table_reads, &metadata_reads, &old_versions})
    c->store(0, r);
  latency_ns_total.store(0, r);
  reply_bytes.store(0, r);
  compute.reset();
  pcie.reset();
  dram.reset();
  cache.reset_counters();
}

NodeAddress AcceleratorPort::translate(Lid lid) {
  for (const auto& [l, a] : nat_)
    if (l == lid) return a;
  core_.page_table_reads.fetch_add(1, std::memory_order_relaxed);
  over_dram(kPageTableEntryBytes);
  const NodeAddress address = core_.page_table.lookup(lid);
  if (address != nullptr) nat_.emplace_back(lid, address);
  return address;
}

// Every off-chip access passes an MSI adapter (section 4.2).
void AcceleratorPort::over_pcie(std::uint64_t bytes) {
  core_.compute.add(ComputeUnit::kMemoryAdapter, adapter_cycles(bytes));
  latency_ns_ += core_.pcie.transfer(bytes).unloaded_ns;
}

void AcceleratorPort::over_dram(std::uint64_t bytes) {
  core_.compute.add(ComputeUnit::kMemoryAdapter, adapter_cycles(bytes));
  latency_ns_ += core_.dram.transfer(bytes).unloaded_ns;
}

namespace {

// The unit that searches or scans a block (sections 4.2, 4.3).
ComputeUnit unit_for(bool interior, Block block) {
  if (interior) return ComputeUnit::kKeySearch;
  switch (block) {
    case Block::kFirst: return ComputeUnit::kShortcutScan;
    case Block::kSegment: return ComputeUnit::kSortedScan;
    case Block::kLog: return ComputeUnit::kLogScan;
  }
  return ComputeUnit::kSortedScan;
}

}  // namespace

void AcceleratorPort::read(const NodeRead& r, std::byte* out) {
  constexpr auto rel = std::memory_order_relaxed;
  if (r.length == 0) return;
  // The reader opens the root as an interior node before it has seen its
  // header; with a height of 1 the root is a leaf (changed in place by
  // writers), so it must not be cached. The accelerator knows the height
  // (section 3.4: the CPU updates root and height together).
  const bool interior = r.interior && !(r.lid == root_.lid && root_.height <= 1);
  if (interior) core_.interior_reads.fetch_add(1, rel);
  // The block is searched (KSU) or scanned (RSU) wherever it came from.
  core_.compute.add(unit_for(interior, r.block), block_cycles(r.length));
  const CacheLookup look = core_.cache.lookup(r.lid, interior, r.address, r.offset, r.length, out);
  if (look.metadata_read) {
    core_.metadata_reads.fetch_add(1, rel);
    over_dram(kMetadataSetBytes);
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
    over_dram(r.length);
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
    core_.compute.add(ComputeUnit::kMemoryAdapter, adapter_cycles(fill.bytes_written));
    core_.dram.transfer(fill.bytes_written);
  }
}

}  // namespace forein::offload::fpga
