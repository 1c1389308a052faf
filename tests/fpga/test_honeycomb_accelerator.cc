// Honeycomb's accelerator model (offload/backends/fpga/honeycomb): the
// PCIe and DRAM links, the interior-node cache, the load balancer, the
// per-request port (page table copy, NAT, cache, links) on hand-made 8 KB
// node buffers (bytes only: the port does not parse nodes), the request
// engine's workers and epoch numbers, and, end to end, the Accelerator
// running the store's read algorithm on a Store written by CPU threads.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fpga/honeycomb_items.h"
#include "forein/fpga/accelerator.h"
#include "fpga/honeycomb/accelerator_port.h"
#include "fpga/honeycomb/interior_cache.h"
#include "fpga/honeycomb/load_balancer.h"
#include "fpga/honeycomb/pcie_model.h"
#include "fpga/honeycomb/request_engine.h"
#include "forein/fpga/store.h"

using namespace forein::offload::fpga;

namespace {

// An 8 KB node buffer whose every byte says which buffer it is in and
// where: pattern(tag, i).
std::byte pattern(std::uint32_t tag, std::size_t i) {
  return static_cast<std::byte>((tag * 131 + i * 7 + (i >> 8)) & 0xff);
}

struct Buffer {
  explicit Buffer(std::uint32_t t) : tag(t), bytes(new std::byte[kNodeBytes]) {
    for (std::size_t i = 0; i < kNodeBytes; ++i) bytes[i] = pattern(tag, i);
  }
  NodeAddress address() const { return bytes.get(); }
  std::uint32_t tag;
  std::unique_ptr<std::byte[]> bytes;
};

bool holds(const std::vector<std::byte>& out, std::uint32_t tag, std::size_t offset) {
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] != pattern(tag, offset + i)) return false;
  return true;
}

NodeRead first_block(Lid lid, NodeAddress a, bool interior = true) {
  return NodeRead{lid, a, interior, Block::kFirst, 0, static_cast<std::uint32_t>(kFirstBlockBytes)};
}

NodeRead segment(Lid lid, NodeAddress a, std::uint32_t offset, std::uint32_t length,
                 bool interior = true) {
  return NodeRead{lid, a, interior, Block::kSegment, offset, length};
}

std::vector<std::byte> read(MemoryPort& port, const NodeRead& r) {
  std::vector<std::byte> out(r.length);
  port.read(r, out.data());
  return out;
}

AcceleratorOptions options(CacheMode mode, std::uint64_t cache_bytes, bool balancer = false) {
  AcceleratorOptions o;
  o.cache = mode;
  o.cache_bytes = cache_bytes;
  o.load_balancer = balancer;
  return o;
}

// LIDs (from `from` up) that fall into one set of a cache with `sets` sets.
std::vector<Lid> lids_in_one_set(std::uint64_t sets, std::size_t n, Lid from = 1) {
  const std::uint64_t target = cache_set_of(from, sets);
  std::vector<Lid> out;
  for (Lid lid = from; out.size() < n; ++lid)
    if (cache_set_of(lid, sets) == target) out.push_back(lid);
  return out;
}

constexpr std::uint64_t kSmallCache = 8 * kCacheWays * kNodeBytes;  // 8 sets

}  // namespace

TEST_CASE("PCIe link: a token bucket in modelled time counting bytes and DMAs", "[fpga][pcie]") {
  LinkModel pcie(pcie_link(13e9, 1000));
  // Whole 256 B TLPs cost exactly bytes / 13 GB/s (section 2's measured rate).
  const double t2560 = 2560 / 13e9 * 1e9;
  CHECK(pcie.wire_ns(2560) == Approx(t2560));

  const Transfer a = pcie.transfer(2560, 0);
  CHECK(a.start_ns == 0);
  CHECK(a.done_ns == Approx(t2560 + 1000));
  CHECK(a.unloaded_ns == Approx(t2560 + 1000));
  // Ready at once: it waits for the link (the bucket is empty).
  const Transfer b = pcie.transfer(256, 0);
  CHECK(b.start_ns == Approx(t2560));
  CHECK(b.done_ns == Approx(t2560 + 256 / 13e9 * 1e9 + 1000));
  // Ready after the link went idle: starts when ready.
  const Transfer c = pcie.transfer(512, 10'000);
  CHECK(c.start_ns == 10'000);
  CHECK(pcie.free_at_ns() == Approx(10'000 + 512 / 13e9 * 1e9));
  CHECK(pcie.transfers() == 3);
  CHECK(pcie.bytes() == 2560 + 256 + 512);
  CHECK(pcie.busy_ns() == Approx((2560 + 256 + 512) / 13e9 * 1e9));

  // IOPS: a 64 B DMA still carries a whole TLP's 20 B of framing, so many
  // small DMAs take longer than their bytes alone.
  CHECK(pcie.wire_ns(64) > 64 / 13e9 * 1e9);
  CHECK(16 * pcie.wire_ns(64) > pcie.wire_ns(1024));
  CHECK(16 * pcie.wire_ns(256) == Approx(pcie.wire_ns(4096)));
  // 257 B: two TLPs, 297 B on a wire that runs 276/256 faster than 13 GB/s.
  CHECK(pcie.wire_ns(257) == Approx(297 / (13e9 * 276 / 256) * 1e9));

  pcie.reset();
  CHECK(pcie.transfers() == 0);
  CHECK(pcie.busy_ns() == 0);
}

TEST_CASE("DRAM link: whole 64 B bursts", "[fpga][pcie]") {
  LinkModel dram(dram_link(34e9, 200, 0));
  CHECK(dram.wire_ns(8) == Approx(64 / 34e9 * 1e9));
  CHECK(dram.wire_ns(64) == Approx(dram.wire_ns(8)));
  CHECK(dram.wire_ns(65) == Approx(128 / 34e9 * 1e9));
  CHECK(dram.transfer(8).unloaded_ns == Approx(64 / 34e9 * 1e9 + 200));
  CHECK(dram.bytes() == 8);
}

TEST_CASE("Links count exactly under concurrent DMAs", "[fpga][pcie][concurrent]") {
  LinkModel pcie(pcie_link(13e9, 1000));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 5000; ++i) pcie.transfer(256);
    });
  for (auto& t : threads) t.join();
  CHECK(pcie.transfers() == 20'000);
  CHECK(pcie.bytes() == 20'000 * 256);
  CHECK(pcie.busy_ns() == Approx(20'000 * 256 / 13e9 * 1e9));
  CHECK(pcie.free_at_ns() == Approx(pcie.busy_ns()));
}

TEST_CASE("Load balancer: a hit goes over PCIe when DRAM would finish it later",
          "[fpga][balancer]") {
  LinkModel dram(dram_link(34e9, 200, 0));
  LinkModel pcie(pcie_link(13e9, 1000));
  LoadBalancer on(dram, pcie, true), off(dram, pcie, false);
  CHECK_FALSE(on.divert(512));  // both idle: DRAM is faster
  dram.transfer(64 * 1000);     // DRAM busy ~1.9 us, PCIe idle
  CHECK(on.divert(512));
  CHECK_FALSE(off.divert(512));
  pcie.transfer(256 * 1000);  // PCIe busy ~19.7 us
  CHECK_FALSE(on.divert(512));
}

TEST_CASE("Interior cache: four ways per set, random eviction", "[fpga][cache]") {
  DevicePageTable pt;
  InteriorCache cache(CacheMode::kInterior, kSmallCache, 7);
  REQUIRE(cache.sets() == 8);
  CHECK(cache.capacity_bytes() == kSmallCache);
  const std::vector<Lid> lids = lids_in_one_set(cache.sets(), 5, 100);
  std::vector<Buffer> buffers;
  for (std::size_t i = 0; i < lids.size(); ++i) buffers.emplace_back(static_cast<std::uint32_t>(i));
  for (std::size_t i = 0; i < lids.size(); ++i) {
    pt.map(lids[i], buffers[i].address());
    const CacheFill f = cache.fill(CacheLevel::kDram, lids[i], buffers[i].address(),
                                   chunks_of(0, 512), buffers[i].address(), true, pt);
    CHECK(f.allocated);
    CHECK(f.bytes_written == 512);
    CHECK(f.evicted == (i == 4));
  }
  CHECK(cache.evictions() == 1);
  CHECK(cache.used_bytes() == 4 * kNodeBytes);
  int hits = 0;
  std::vector<std::byte> out(512);
  for (std::size_t i = 0; i < lids.size(); ++i) {
    const CacheLookup l =
        cache.lookup(lids[i], true, buffers[i].address(), 0, 512, out.data());
    CHECK(l.level == CacheLevel::kDram);
    if (l.hit) {
      ++hits;
      CHECK(holds(out, buffers[i].tag, 0));
    }
  }
  CHECK(hits == 4);
  // The newest one was just written: it is the one that stayed.
  CHECK(cache.lookup(lids[4], true, buffers[4].address(), 0, 512, out.data()).hit);
}

TEST_CASE("Interior cache: chunk occupancy, first-block-only allocation, stale fills",
          "[fpga][cache]") {
  DevicePageTable pt;
  InteriorCache cache(CacheMode::kInterior, kSmallCache, 1);
  Buffer a(1), b(2);
  const Lid lid = 42;
  pt.map(lid, a.address());
  std::vector<std::byte> out(kNodeBytes);

  // A segment miss before the first block: no space is allocated.
  CHECK(cache.fill(CacheLevel::kDram, lid, a.address(), chunks_of(1024, 256), a.address() + 1024,
                   false, pt)
            .bytes_written == 0);
  CHECK(cache.used_bytes() == 0);

  CHECK(cache.fill(CacheLevel::kDram, lid, a.address(), chunks_of(0, 512), a.address(), true, pt)
            .allocated);
  CHECK(cache.lookup(lid, true, a.address(), 0, 512, out.data()).hit);
  CHECK_FALSE(cache.lookup(lid, true, a.address(), 1024, 256, out.data()).hit);
  // Now the segment fills its chunks into the allocated way.
  CHECK(cache.fill(CacheLevel::kDram, lid, a.address(), chunks_of(1024, 600), a.address() + 1024,
                   false, pt)
            .bytes_written == 3 * kChunkBytes);
  CHECK(cache.lookup(lid, true, a.address(), 1100, 500, out.data()).hit);
  // A read spanning a missing chunk (chunk 2) is a miss.
  CHECK_FALSE(cache.lookup(lid, true, a.address(), 700, 400, out.data()).hit);
  // Refilling present chunks writes only the absent ones.
  CHECK(cache.fill(CacheLevel::kDram, lid, a.address(), chunks_of(512, 1024), a.address() + 512,
                   false, pt)
            .bytes_written == 2 * kChunkBytes);

  // Another address for the LID: a mismatch, not a hit.
  const CacheLookup m = cache.lookup(lid, true, b.address(), 0, 512, out.data());
  CHECK_FALSE(m.hit);
  CHECK(m.address_mismatch);

  // The page table moved on: a fill of the old version is dropped
  // (the write-back's check against invalidation races).
  pt.map(lid, b.address());
  CHECK(cache.invalidate(lid));
  CHECK(cache.invalidations() == 1);
  CHECK(cache.fill(CacheLevel::kDram, lid, a.address(), chunks_of(0, 512), a.address(), true, pt)
            .bytes_written == 0);
  CHECK_FALSE(cache.lookup(lid, true, a.address(), 0, 512, out.data()).hit);
  CHECK(cache.used_bytes() == 0);
  CHECK_FALSE(cache.invalidate(lid));
}

TEST_CASE("Interior cache: modes, the root in SRAM, leaves never cached", "[fpga][cache]") {
  DevicePageTable pt;
  Buffer root(1), inner(2);
  pt.map(1, root.address());
  pt.map(2, inner.address());
  std::vector<std::byte> out(512);

  InteriorCache none(CacheMode::kNone, kSmallCache, 1);
  none.set_root(1);
  CHECK(none.level_of(1, true) == CacheLevel::kUncached);
  CHECK(none.level_of(2, true) == CacheLevel::kUncached);
  CHECK(none.capacity_bytes() == 0);

  InteriorCache root_only(CacheMode::kRootOnly, kSmallCache, 1);
  root_only.set_root(1);
  CHECK(root_only.level_of(1, true) == CacheLevel::kSram);
  CHECK(root_only.level_of(2, true) == CacheLevel::kUncached);
  CHECK(root_only.level_of(1, false) == CacheLevel::kUncached);  // a root leaf
  root_only.fill(CacheLevel::kSram, 1, root.address(), chunks_of(0, 512), root.address(), true, pt);
  CHECK(root_only.lookup(1, true, root.address(), 0, 512, out.data()).hit);
  // A new root empties the SRAM slot.
  root_only.set_root(2);
  CHECK(root_only.level_of(1, true) == CacheLevel::kUncached);
  CHECK_FALSE(root_only.lookup(2, true, inner.address(), 0, 512, out.data()).hit);

  InteriorCache interior(CacheMode::kInterior, kSmallCache, 1);
  interior.set_root(1);
  CHECK(interior.level_of(1, true) == CacheLevel::kSram);
  CHECK(interior.level_of(2, true) == CacheLevel::kDram);
  CHECK(interior.level_of(2, false) == CacheLevel::kUncached);
  const CacheLookup leaf = interior.lookup(2, false, inner.address(), 0, 512, out.data());
  CHECK(leaf.level == CacheLevel::kUncached);
  CHECK_FALSE(leaf.hit);
}

TEST_CASE("Accelerator port: hits return the cached bytes; misses fetch whole chunks",
          "[fpga][port]") {
  AcceleratorCore core(options(CacheMode::kInterior, kSmallCache));
  Buffer root(1), inner(2), leaf(3);
  core.map(1, root.address());
  core.map(2, inner.address());
  core.map(3, leaf.address());
  core.set_root(1, 3);
  core.set_read_version(5);

  {
    AcceleratorPort port(core);
    CHECK(port.root() == 1);
    CHECK(port.read_version() == 5);
    CHECK(port.translate(2) == inner.address());
    CHECK(port.translate(99) == nullptr);
    // Interior miss: the first block, 2 chunks in one DMA.
    CHECK(holds(read(port, first_block(2, inner.address())), 2, 0));
    // A 300 B segment at 700 spans chunks 2 and 3: 512 B over PCIe.
    CHECK(holds(read(port, segment(2, inner.address(), 700, 300)), 2, 700));
    // A leaf: exactly the bytes asked for.
    CHECK(holds(read(port, segment(3, leaf.address(), 512, 100, false)), 3, 512));
    CHECK(port.latency_ns() > 3 * 1000);
  }
  AcceleratorStats s = core.stats();
  CHECK(s.pcie_reads == 3);
  CHECK(s.pcie_bytes == 512 + 512 + 100);
  CHECK(s.interior_reads == 2);
  CHECK(s.cache_hits == 0);
  CHECK(s.dram_write_bytes == 1024);
  CHECK(s.page_table_reads == 2);  // LID 2 and the unmapped 99

  // The host buffer changes behind the cache's back (never done by the
  // store: interior nodes are copied on write and remapped). A hit still
  // returns the cached copy, proving hits never read host memory.
  const std::byte saved = inner.bytes[100];
  inner.bytes[100] = ~saved;
  {
    AcceleratorPort port(core);
    const std::vector<std::byte> hit = read(port, first_block(2, inner.address()));
    CHECK(hit[100] == saved);
    CHECK(holds(hit, 2, 0));
    CHECK(holds(read(port, segment(2, inner.address(), 512, 512)), 2, 512));
  }
  s = core.stats();
  CHECK(s.pcie_reads == 3);
  CHECK(s.cache_hits == 2);
  CHECK(s.dram_reads == 2);
  CHECK(s.dram_bytes == 1024);
  inner.bytes[100] = saved;

  // Remapping invalidates: the next read goes over PCIe.
  Buffer inner2(4);
  core.map(2, inner2.address());
  CHECK(core.stats().invalidations == 1);
  {
    AcceleratorPort port(core);
    CHECK(holds(read(port, first_block(2, port.translate(2))), 4, 0));
  }
  CHECK(core.stats().pcie_reads == 4);
  CHECK(core.stats().cache_hits == 2);
}

TEST_CASE("Accelerator port: the NAT keeps one node version per request; mismatches go over PCIe",
          "[fpga][port]") {
  AcceleratorCore core(options(CacheMode::kInterior, kSmallCache));
  Buffer v1(1), v2(2);
  core.map(7, v1.address());
  core.set_root(1, 3);
  AcceleratorPort old_request(core);
  CHECK(old_request.translate(7) == v1.address());
  const std::uint64_t pt_reads = core.stats().page_table_reads;
  core.map(7, v2.address());
  // The old request keeps its version; the NAT answers without a
  // page-table read.
  CHECK(old_request.translate(7) == v1.address());
  CHECK(core.stats().page_table_reads == pt_reads);

  // A new request caches version 2.
  AcceleratorPort new_request(core);
  CHECK(new_request.translate(7) == v2.address());
  CHECK(holds(read(new_request, first_block(7, v2.address())), 2, 0));
  CHECK(holds(read(new_request, first_block(7, v2.address())), 2, 0));
  CHECK(core.stats().cache_hits == 1);

  // The old request's read of LID 7 meets a way with another address: it
  // is served from its NAT address over PCIe, and the way is untouched.
  const std::uint64_t pcie = core.stats().pcie_reads;
  CHECK(holds(read(old_request, first_block(7, v1.address())), 1, 0));
  CHECK(core.stats().pcie_reads == pcie + 1);
  CHECK(core.stats().cache_hits == 1);
  CHECK(holds(read(new_request, first_block(7, v2.address())), 2, 0));
  CHECK(core.stats().cache_hits == 2);
}

TEST_CASE("Accelerator port: cache modes", "[fpga][port]") {
  Buffer root(1), inner(2);
  auto run = [&](CacheMode mode) {
    AcceleratorCore core(options(mode, kSmallCache));
    core.map(1, root.address());
    core.map(2, inner.address());
    core.set_root(1, 3);
    for (int i = 0; i < 10; ++i) {
      AcceleratorPort port(core);
      read(port, first_block(1, root.address()));
      read(port, segment(1, root.address(), 512, 256));
      read(port, first_block(2, inner.address()));
      read(port, segment(2, inner.address(), 768, 256));
    }
    return core.stats();
  };
  const AcceleratorStats none = run(CacheMode::kNone);
  CHECK(none.interior_reads == 40);
  CHECK(none.cache_hits == 0);
  CHECK(none.pcie_reads == 40);
  const AcceleratorStats root_only = run(CacheMode::kRootOnly);
  CHECK(root_only.cache_hits == 18);  // the root after its first visit
  CHECK(root_only.sram_hits == 18);
  CHECK(root_only.pcie_reads == 22);
  CHECK(root_only.dram_reads == 0);
  const AcceleratorStats interior = run(CacheMode::kInterior);
  CHECK(interior.cache_hits == 36);
  CHECK(interior.sram_hits == 18);
  CHECK(interior.dram_reads == 18);
  CHECK(interior.pcie_reads == 4);
  CHECK(interior.hit_rate() == Approx(0.9));
  CHECK(interior.cache_bytes_used == kNodeBytes);  // the root is in SRAM
}

TEST_CASE("Accelerator port: a root that is a leaf (height 1) is never cached", "[fpga][port]") {
  // The reader opens the root as interior before reading its header; the
  // port knows from the height that it is a leaf, changed in place.
  AcceleratorCore core(options(CacheMode::kInterior, kSmallCache));
  Buffer leaf(1);
  core.map(1, leaf.address());
  core.set_root(1, 1);
  for (int i = 0; i < 3; ++i) {
    AcceleratorPort port(core);
    read(port, first_block(1, leaf.address()));
  }
  CHECK(core.stats().pcie_reads == 3);
  CHECK(core.stats().interior_reads == 0);
  CHECK(core.stats().cache_hits == 0);
  // Grown to height 2: the new root is cached in SRAM.
  Buffer root(2);
  core.map(2, root.address());
  core.set_root(2, 2);
  for (int i = 0; i < 3; ++i) {
    AcceleratorPort port(core);
    read(port, first_block(2, root.address()));
  }
  CHECK(core.stats().sram_hits == 2);
}

TEST_CASE("Accelerator port: the on-chip metadata cache covers 1K entries", "[fpga][port]") {
  // 8 sets: all metadata stays on chip after the first lookup of each set.
  {
    AcceleratorCore core(options(CacheMode::kInterior, kSmallCache));
    std::vector<Buffer> buffers;
    for (std::uint32_t i = 0; i < 64; ++i) buffers.emplace_back(i);
    for (int round = 0; round < 3; ++round)
      for (std::uint32_t i = 0; i < 64; ++i) {
        core.map(100 + i, buffers[i].address());
        AcceleratorPort port(core);
        read(port, first_block(100 + i, buffers[i].address()));
      }
    CHECK(core.stats().metadata_reads <= 8);
  }
  // 4 GB: 128K sets share 256 lines, so LIDs whose sets collide in a line
  // read their metadata from DRAM each time.
  {
    AcceleratorCore core(options(CacheMode::kInterior, kBoardDramBytes));
    const std::uint64_t sets = core.cache.sets();
    std::vector<Lid> colliding;
    const std::uint64_t line = cache_set_of(1, sets) % InteriorCache::kMetadataLines;
    for (Lid lid = 1; colliding.size() < 2; ++lid)
      if (cache_set_of(lid, sets) % InteriorCache::kMetadataLines == line &&
          (colliding.empty() || cache_set_of(lid, sets) != cache_set_of(colliding[0], sets)))
        colliding.push_back(lid);
    Buffer b(1);
    for (int round = 0; round < 5; ++round)
      for (Lid lid : colliding) {
        AcceleratorPort port(core);
        read(port, first_block(lid, b.address()));
      }
    CHECK(core.stats().metadata_reads == 10);
  }
}

TEST_CASE("Load balancer through the port: some hits go over PCIe when DRAM is busier",
          "[fpga][balancer]") {
  // Every node cached (a 100% hit rate, section 6.4's 256 MB case) and no
  // leaf traffic: without balancing DRAM carries everything.
  Buffer root(1);
  std::vector<Buffer> nodes;
  for (std::uint32_t i = 0; i < 16; ++i) nodes.emplace_back(10 + i);
  auto run = [&](bool balance) {
    AcceleratorCore core(options(CacheMode::kInterior, std::uint64_t{64} << 20, balance));
    core.map(1, root.address());
    core.set_root(1, 3);
    for (std::uint32_t i = 0; i < nodes.size(); ++i) core.map(100 + i, nodes[i].address());
    for (int round = 0; round < 200; ++round)
      for (std::uint32_t i = 0; i < nodes.size(); ++i) {
        AcceleratorPort port(core);
        CHECK(holds(read(port, first_block(100 + i, nodes[i].address())), 10 + i, 0));
        CHECK(holds(read(port, segment(100 + i, nodes[i].address(), 1024, 512)), 10 + i, 1024));
        core.record(false, 0, ReadTrace{}, port.latency_ns());
      }
    return std::pair{core.stats(), core.model()};
  };
  const auto [off, off_model] = run(false);
  const auto [on, on_model] = run(true);
  CHECK(off.balanced_to_pcie == 0);
  CHECK(off_model.bottleneck == "dram");
  CHECK(on.hit_rate() == off.hit_rate());
  CHECK(on.hit_rate() > 0.99);
  CHECK(on.balanced_to_pcie > 0);
  // Balanced: the two interfaces are about equally busy, DRAM still
  // serving most hits (it is ~2.6x faster than PCIe).
  CHECK(on_model.pcie_seconds == Approx(on_model.dram_seconds).epsilon(0.05));
  CHECK(on.dram_reads > on.balanced_to_pcie);
  // The off-chip rate (compute, which balancing does not change, may bind
  // these 2-block requests before the links do).
  const auto links = [](const AcceleratorModel& m) { return std::min(m.pcie_bound, m.dram_bound); };
  CHECK(links(on_model) > 1.2 * links(off_model));
  CHECK(on_model.requests_per_second >= off_model.requests_per_second);
  CHECK_FALSE(on_model.source.empty());
}

TEST_CASE("Accelerator port: concurrent readers and remapping writers never see stale bytes",
          "[fpga][port][concurrent]") {
  // Each LID flips between two buffers; every read must return the bytes
  // of the address the request's NAT holds, never an older cached copy.
  AcceleratorCore core(options(CacheMode::kInterior, kSmallCache, true));
  constexpr Lid kLids = 24;
  std::vector<Buffer> a, b;
  for (std::uint32_t i = 0; i < kLids; ++i) {
    a.emplace_back(2 * i);
    b.emplace_back(2 * i + 1);
    core.map(i + 1, a.back().address());
  }
  core.set_root(1, 4);
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<int> progress{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t)
    readers.emplace_back([&, t] {
      std::vector<std::byte> out(kNodeBytes);
      for (int i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        progress.fetch_add(1, std::memory_order_relaxed);
        AcceleratorPort port(core);
        for (Lid lid = 1 + (i + t) % 3; lid <= kLids; lid += 3) {
          const NodeAddress addr = port.translate(lid);
          const std::size_t k = lid - 1;
          const std::uint32_t tag = addr == a[k].address() ? a[k].tag : b[k].tag;
          std::vector<std::byte> first = read(port, first_block(lid, addr));
          std::vector<std::byte> seg = read(port, segment(lid, port.translate(lid), 2048, 700));
          if (!holds(first, tag, 0) || !holds(seg, tag, 2048)) bad.fetch_add(1);
        }
      }
    });
  std::thread writer([&] {
    // Remap while the readers make 3000 passes between them.
    for (int i = 0; progress.load(std::memory_order_relaxed) < 3000; ++i) {
      const std::size_t k = static_cast<std::size_t>(i) % kLids;
      core.map(k + 1, (i / kLids) % 2 == 0 ? b[k].address() : a[k].address());
      std::this_thread::yield();
    }
    stop = true;
  });
  writer.join();
  for (auto& t : readers) t.join();
  CHECK(bad.load() == 0);
  const AcceleratorStats s = core.stats();
  CHECK(s.cache_hits > 0);
  CHECK(s.invalidations > 0);
}

TEST_CASE("Request engine: out-of-order completion, epochs, drain", "[fpga][engine][concurrent]") {
  RequestEngine engine(2);
  CHECK(engine.workers() == 2);
  CHECK(engine.newest_sequence() == 0);
  CHECK(engine.oldest_sequence() == 1);

  // Request 1 waits until request 2 has completed: with two workers 2
  // finishes first, and S_old stays at 1 until 1 completes.
  std::mutex mu;
  std::condition_variable cv;
  bool second_done = false, release_first = false;
  std::vector<std::uint64_t> order;
  const std::uint64_t s1 = engine.begin();
  engine.enqueue(s1, [&] {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return release_first; });
    order.push_back(s1);
  });
  const std::uint64_t s2 = engine.begin();
  engine.enqueue(s2, [&] {
    std::lock_guard lock(mu);
    order.push_back(s2);
    second_done = true;
    cv.notify_all();
  });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return second_done; });
  }
  CHECK(engine.newest_sequence() == 2);
  CHECK(engine.oldest_sequence() == 1);
  {
    std::lock_guard lock(mu);
    release_first = true;
  }
  cv.notify_all();
  engine.drain();
  CHECK(order == std::vector<std::uint64_t>{2, 1});
  CHECK(engine.oldest_sequence() == 3);

  // Many submitters; a throwing job still completes.
  std::atomic<int> ran{0};
  std::vector<std::thread> submitters;
  for (int t = 0; t < 3; ++t)
    submitters.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        const std::uint64_t seq = engine.begin();
        engine.enqueue(seq, [&ran, i] {
          ran.fetch_add(1);
          if (i == 7) throw std::runtime_error("a failed request");
        });
      }
    });
  for (auto& t : submitters) t.join();
  engine.drain();
  CHECK(ran.load() == 1500);
  CHECK(engine.newest_sequence() == 1502);
  CHECK(engine.oldest_sequence() == 1503);
}

TEST_CASE("Request engine: idle workers sleep", "[fpga][engine]") {
  RequestEngine engine(2);
  const std::clock_t before = std::clock();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double cpu_ms = 1000.0 * static_cast<double>(std::clock() - before) / CLOCKS_PER_SEC;
  CHECK(cpu_ms < 50);  // two spinning workers would burn ~400 ms
}

namespace {

using forein::testing::key16;
using forein::testing::value16;

// Even keys 0, 2, ..., 2(n-1): 16 B keys and values as in section 6.
std::vector<Item> even_items(std::uint64_t n) {
  std::vector<Item> items;
  for (std::uint64_t i = 0; i < n; ++i) items.push_back({key16(2 * i), value16(2 * i, 0)});
  return items;
}

constexpr std::uint64_t kItems = 60'000;  // ~430 leaves: a height-3 tree

AcceleratorOptions e2e_options(CacheMode mode) {
  AcceleratorOptions o;
  o.workers = 2;
  o.cache = mode;
  o.cache_bytes = kBoardDramBytes;
  return o;
}

// GETs spread over the whole key range: every interior node and segment.
void sweep(Accelerator& acc, Store& store, std::uint64_t stride) {
  for (std::uint64_t i = 0; i < kItems; i += stride) {
    const std::string k = key16(2 * i);
    REQUIRE(acc.get(k) == store.get(k));
  }
}

}  // namespace

TEST_CASE("Accelerator end to end: GET and SCAN on a Store equal the CPU's",
          "[fpga][e2e]") {
  Accelerator acc(e2e_options(CacheMode::kInterior));
  Store store({}, &acc);
  store.bulk_load(even_items(kItems));
  REQUIRE(store.stats().height >= 3);

  for (std::uint64_t i = 0; i < 300; ++i) {
    const std::uint64_t k = (i * 7919) % (2 * kItems);  // present (even) and absent (odd)
    CHECK(acc.get(key16(k)) == store.get(key16(k)));
  }
  for (std::uint64_t i = 0; i < 100; ++i) {
    const std::uint64_t lo = (i * 104729) % (2 * kItems), hi = lo + 1 + i % 300;
    const ScanResult a = acc.scan(key16(lo), key16(hi));
    const ScanResult c = store.scan(key16(lo), key16(hi));
    CHECK(a.items == c.items);
    const ScanResult a5 = acc.scan(key16(lo), key16(hi + 200), 5);
    const ScanResult c5 = store.scan(key16(lo), key16(hi + 200), 5);
    CHECK(a5.items == c5.items);
    CHECK(a5.truncated == c5.truncated);
  }
  CHECK(acc.scan("", "~").items == store.dump());

  // Warm: with a 4 GB cache every interior read now hits (section 6.4's
  // 100% hit rate once all interior nodes fit).
  sweep(acc, store, 23);
  acc.reset_stats();
  sweep(acc, store, 23);
  AcceleratorStats s = acc.stats();
  CHECK(s.interior_reads > 0);
  CHECK(s.hit_rate() == 1.0);
  CHECK(s.sram_hits > 0);
  CHECK(s.dram_reads + s.balanced_to_pcie == s.cache_hits - s.sram_hits);
  CHECK(s.pcie_reads > 0);  // the leaves
  CHECK(s.requests == s.gets);
  const AcceleratorModel m = acc.model();
  CHECK(m.requests_per_second > 0);
  CHECK(m.mean_latency_ns >= 1000);  // at least the leaf's DMA
  CHECK(m.bottleneck != "none");

  // Without a cache nothing hits.
  Accelerator bare(e2e_options(CacheMode::kNone));
  Store store2({}, &bare);
  store2.bulk_load(even_items(kItems));
  sweep(bare, store2, 23);
  bare.reset_stats();
  sweep(bare, store2, 23);
  CHECK(bare.stats().hit_rate() == 0.0);
  CHECK(bare.stats().interior_reads > 0);
  // Fewer PCIe DMAs per request with the cache than without.
  CHECK(bare.stats().pcie_reads > 2 * s.pcie_reads);
  CHECK(bare.model().requests_per_second < m.requests_per_second);
}

TEST_CASE("Accelerator end to end: out-of-order completion, epochs, drain", "[fpga][e2e]") {
  Accelerator acc(e2e_options(CacheMode::kInterior));
  Store store({}, &acc);
  store.bulk_load(even_items(2000));
  std::mutex mu;
  std::condition_variable cv;
  bool second_done = false, release_first = false;
  std::vector<int> order;
  std::optional<std::string> first, second;
  acc.submit_get(key16(10), [&](std::optional<std::string> v) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return release_first; });
    first = std::move(v);
    order.push_back(1);
  });
  const std::uint64_t s_first = acc.newest_sequence();
  acc.submit_scan(key16(20), key16(24), 0, [&](ScanResult r) {
    std::lock_guard lock(mu);
    second = r.items.size() == 3 ? std::optional(r.items[1].value) : std::nullopt;
    order.push_back(2);
    second_done = true;
    cv.notify_all();
  });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return second_done; });
  }
  CHECK(acc.oldest_sequence() == s_first);  // the first is still in flight
  {
    std::lock_guard lock(mu);
    release_first = true;
  }
  cv.notify_all();
  acc.drain();
  CHECK(order == std::vector<int>{2, 1});
  CHECK(first == value16(10, 0));
  CHECK(second == value16(22, 0));
  CHECK(acc.oldest_sequence() == acc.newest_sequence() + 1);
  CHECK(acc.stats().requests == 2);
  CHECK(acc.stats().scans == 1);
  CHECK(acc.stats().items_returned == 4);
}

TEST_CASE("Accelerator end to end: reads during CPU writes; the cache never serves stale nodes",
          "[fpga][e2e][concurrent]") {
  Accelerator acc(e2e_options(CacheMode::kInterior));
  Store store({}, &acc);
  store.bulk_load(even_items(kItems));
  sweep(acc, store, 37);  // warm the cache so writes must invalidate it

  // Writers: insert odd keys (splits remap interior nodes) and update keys
  // = 0 mod 4. Readers check keys = 2 mod 4, never written: exact values,
  // and scans must hold every one of them in range, ascending.
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w)
    writers.emplace_back([&, w] {
      for (std::uint64_t i = 0; i < 3000; ++i) {
        const std::uint64_t r = (i * 2654435761u + static_cast<std::uint64_t>(w) * 7) % kItems;
        if (i % 3 == 0) {
          store.update(key16(4 * (r / 2)), value16(4 * (r / 2), i + 1));
        } else {
          // Crowded into the first 3000 keys: leaves there split, so
          // their (cached) parents are copied and remapped.
          store.upsert(key16(2 * (r % 3000) + 1), value16(2 * (r % 3000) + 1, i));
        }
      }
    });
  std::atomic<int> bad{0}, done{0};
  int submitted = 0;
  for (std::uint64_t i = 0; i < 3000; ++i) {
    const std::uint64_t k = 4 * ((i * 7919) % (kItems / 2)) + 2;
    if (k >= 2 * kItems) continue;
    ++submitted;
    if (i % 4 != 0) {
      acc.submit_get(key16(k), [&, k](std::optional<std::string> v) {
        if (v != value16(k, 0)) bad.fetch_add(1);
        done.fetch_add(1);
      });
    } else {
      acc.submit_scan(key16(k), key16(k + 40), 0, [&, k](ScanResult r) {
        std::size_t stable = 0;
        for (std::size_t j = 0; j < r.items.size(); ++j) {
          if (j > 0 && !(r.items[j - 1].key < r.items[j].key)) bad.fetch_add(1);
          const std::uint64_t n = std::stoull(r.items[j].key.substr(1));
          if (n % 4 == 2) {
            ++stable;
            if (r.items[j].value != value16(n, 0)) bad.fetch_add(1);
          }
        }
        if (stable != 11 && k + 40 < 2 * kItems) bad.fetch_add(1);
        done.fetch_add(1);
      });
    }
  }
  for (auto& t : writers) t.join();
  acc.drain();
  CHECK(done.load() == submitted);
  CHECK(bad.load() == 0);
  CHECK(store.stats().splits > 0);
  CHECK(acc.stats().invalidations > 0);
  // Quiescent again: the accelerator and the CPU agree on everything.
  CHECK(acc.scan("", "~").items == store.dump());
  for (std::uint64_t i = 0; i < 200; ++i) {
    const std::string k = key16((i * 104729) % (2 * kItems));
    CHECK(acc.get(k) == store.get(k));
  }
}
