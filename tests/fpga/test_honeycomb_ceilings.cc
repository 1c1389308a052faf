// Honeycomb's accelerator model against the paper's ceilings (paper 003,
// 6.1 and 6.4): the throughput is the lowest of compute, PCIe, PCIe read
// tags, on-board DRAM and network, each computed from the work counted,
// and no configuration on the paper's tree (four levels) exceeds the
// paper's measured 9.1 Mreqs/s by more than the design target allows
// (about 10 Mops/s).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "fpga/honeycomb/compute_model.h"
#include "fpga/honeycomb_items.h"
#include "forein/fpga/accelerator.h"
#include "forein/fpga/store.h"

using namespace forein::offload::fpga;

namespace {

// `bytes`-byte keys that sort as k: key16's digits padded with 'p'.
std::string key_of(std::uint64_t k, std::size_t bytes) {
  std::string key = forein::testing::key16(k);
  key.resize(std::max<std::size_t>(bytes, 16), 'p');
  return key;
}

struct Loaded {
  std::unique_ptr<Accelerator> accelerator;
  std::unique_ptr<Store> store;
};

Loaded load(std::uint64_t keys, std::size_t key_bytes, double fill, AcceleratorOptions options) {
  Loaded l;
  l.accelerator = std::make_unique<Accelerator>(options);
  l.store = std::make_unique<Store>(StoreOptions{}, l.accelerator.get());
  std::vector<Item> items;
  items.reserve(keys);
  for (std::uint64_t k = 0; k < keys; ++k) items.push_back({key_of(k, key_bytes), forein::testing::value16(k, 0)});
  l.store->bulk_load(items, fill);
  return l;
}

// `requests` random GETs or SCANs of `items` items, after as many unmeasured
// ones to warm the cache; the model of the measured ones.
AcceleratorModel run(Loaded& l, std::uint64_t keys, std::size_t key_bytes, std::size_t items,
                     int requests, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto once = [&] {
    const std::uint64_t k = rng() % keys;
    if (items == 0) {
      REQUIRE(l.accelerator->get(key_of(k, key_bytes)).has_value());
    } else {
      const std::uint64_t last = std::min(keys - 1, k + items - 1);
      const ScanResult r = l.accelerator->scan(key_of(k, key_bytes), key_of(last, key_bytes));
      REQUIRE(r.items.size() == last - k + 1);
    }
  };
  for (int i = 0; i < requests; ++i) once();
  l.accelerator->reset_stats();
  for (int i = 0; i < requests; ++i) once();
  return l.accelerator->model();
}

double lowest(const AcceleratorModel& m) {
  return std::min({m.compute_bound, m.pcie_bound, m.pcie_tag_bound, m.dram_bound, m.network_bound});
}

}  // namespace

TEST_CASE("Honeycomb model: the throughput is the lowest bound, named", "[fpga][model]") {
  const std::uint64_t keys = 20000;
  Loaded l = load(keys, 16, 0.7, AcceleratorOptions{});
  const AcceleratorModel m = run(l, keys, 16, 3, 500, 7);
  CHECK(m.requests_per_second > 0);
  CHECK(m.requests_per_second == lowest(m));
  const std::pair<const char*, double> named[] = {{"compute", m.compute_bound},
                                                  {"pcie", m.pcie_bound},
                                                  {"pcie tags", m.pcie_tag_bound},
                                                  {"dram", m.dram_bound},
                                                  {"network", m.network_bound}};
  bool found = false;
  for (const auto& [name, bound] : named) found = found || (m.bottleneck == name && bound == m.requests_per_second);
  CHECK(found);
  CHECK_FALSE(m.busiest_unit.empty());
  CHECK(m.source.find("220 MHz") != std::string::npos);
}

TEST_CASE("Honeycomb model: compute is cycles per block over units x clock", "[fpga][model]") {
  CHECK(block_cycles(512) == kBlockCycles + 32);
  CHECK(block_cycles(1) == kBlockCycles + 1);
  CHECK(adapter_cycles(256) == 1 + 4);
  ComputeCounters c;
  ComputeConfig config;
  c.add(ComputeUnit::kKeySearch, 14 * 220);
  c.add(ComputeUnit::kSortedScan, 5 * 110);
  CHECK(c.busy_seconds(ComputeUnit::kKeySearch, config) == Approx(1e-6));
  CHECK(c.busy_seconds(ComputeUnit::kSortedScan, config) == Approx(0.5e-6));
  CHECK(c.busiest(config).first == ComputeUnit::kKeySearch);

  // End to end: with one KSU (everything else as the paper's) the KSUs bind
  // and the compute bound is the requests over their cycles; twice the
  // KSUs, twice the bound.
  const std::uint64_t keys = 20000;
  AcceleratorOptions one;
  one.compute.key_search_units = 1;
  AcceleratorOptions two = one;
  two.compute.key_search_units = 2;
  Loaded a = load(keys, 16, 0.7, one);
  Loaded b = load(keys, 16, 0.7, two);
  const AcceleratorModel ma = run(a, keys, 16, 0, 400, 11);
  const AcceleratorModel mb = run(b, keys, 16, 0, 400, 11);
  CHECK(ma.bottleneck == "compute");
  CHECK(ma.busiest_unit == compute_unit_name(ComputeUnit::kKeySearch));
  CHECK(mb.compute_bound == Approx(2 * ma.compute_bound).epsilon(0.01));
  // A request searches at least the root's two blocks.
  CHECK(ma.compute_bound <= 220e6 / (2.0 * kBlockCycles));
}

TEST_CASE("Honeycomb model: outstanding DMAs are bounded by the PCIe read tags", "[fpga][model]") {
  const std::uint64_t keys = 20000;
  AcceleratorOptions few;
  few.pcie_read_tags = 1;
  few.cache = CacheMode::kNone;
  Loaded l = load(keys, 16, 0.7, few);
  const AcceleratorModel m = run(l, keys, 16, 0, 300, 13);
  CHECK(m.bottleneck == "pcie tags");
  // One tag: DMAs one after another, each at least the 1 us latency.
  const AcceleratorStats s = l.accelerator->stats();
  const double dmas_per_request = static_cast<double>(s.pcie_reads) / static_cast<double>(s.requests);
  CHECK(m.requests_per_second <= 1e9 / (few.pcie_latency_ns * dmas_per_request));
  CHECK(m.requests_per_second > 0.5e9 / (few.pcie_latency_ns * dmas_per_request));
}

TEST_CASE("Honeycomb model: no configuration on the paper's tree exceeds the paper's ceilings",
          "[fpga][model][ceiling]") {
  // The paper's tree has four levels (6.2); small stores get there with
  // sparse or long-keyed nodes. Its measured peak is 9.1 Mreqs/s (6.4, with
  // the load balancer) and the units were sized for about 10 Mops/s of
  // SCANs (6.1): no request mix, cache setup or key size may model above
  // 10 Mreqs/s.
  constexpr double kCeiling = 10.0e6;
  struct Tree {
    std::uint64_t keys;
    std::size_t key_bytes;
    double fill;
  };
  const Tree trees[] = {{60000, 16, 0.12}, {120000, 64, 0.5}};
  double highest = 0;
  std::string where;
  for (const Tree& t : trees) {
    for (const CacheMode mode : {CacheMode::kNone, CacheMode::kRootOnly, CacheMode::kInterior}) {
      for (const bool balance : {true, false}) {
        if (mode != CacheMode::kInterior && !balance) continue;
        AcceleratorOptions o;
        o.cache = mode;
        o.load_balancer = balance;
        Loaded l = load(t.keys, t.key_bytes, t.fill, o);
        REQUIRE(l.store->stats().height == 4);
        for (const std::size_t items : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{24}}) {
          const AcceleratorModel m = run(l, t.keys, t.key_bytes, items, 300, 17 + items);
          char what[160];
          std::snprintf(what, sizeof what, "%zu-byte keys, cache %d, balancer %d, %s %zu: %.2f Mreqs/s (%s)",
                        t.key_bytes, static_cast<int>(mode), balance ? 1 : 0, items == 0 ? "GET" : "SCAN", items,
                        m.requests_per_second / 1e6, m.bottleneck.c_str());
          INFO(what);
          CHECK(m.requests_per_second <= kCeiling);
          if (m.requests_per_second > highest) {
            highest = m.requests_per_second;
            where = what;
          }
        }
      }
    }
  }
  std::printf("highest modelled rate on 4-level trees: %s\n", where.c_str());
  // The paper's tree, every interior node cached and balanced, GET or
  // 1-item SCAN: about the paper's 9.1 (within 10 % of it).
  CHECK(highest >= 0.9 * 9.1e6);
}
