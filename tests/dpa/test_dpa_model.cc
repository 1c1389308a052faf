// dpa store: the DPA model (forein/dpa/model.h) reproduces the paper's own
// figures (DPA-Store 4.2.6), bounds writes by host-to-DPA stitching
// (4.2.7, 4.2.8) and everything by the card's packet ceiling (4.2.9); the
// thread model (forein/dpa/thread_model.h) counts imbalance, spilling and
// queues; and no configuration the experiments run gets past 44.9 Mops on
// the B3140L.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "forein/dpa/model.h"
#include "forein/dpa/store.h"
#include "forein/dpa/thread_model.h"
#include "support/zipf.h"

namespace {

using forein::offload::dpa::ModelConfig;
using forein::offload::dpa::model_figures;
using forein::offload::dpa::modelled_latency_ns;
using forein::offload::dpa::OpCost;
using forein::offload::dpa::kDpaAccessNs;
using forein::offload::dpa::kHostDmaNs;
using forein::offload::dpa::kStitcherThreads;
namespace dpa = forein::offload::dpa;

// Two GETs down the paper's depth-3 tree: per GET two inner nodes of 4.5
// lines and a leaf's metadata line (10 DPA lines), one key DMA and one
// value DMA (the key lines collapse into one DMA).
OpCost two_depth3_gets() {
  OpCost c;
  c.dpa_lines = 2 * (2 * 9 / 2 + 1);  // 4.5 lines per inner node
  c.dmas = 2 * 2;
  return c;
}

}  // namespace

TEST_CASE("dpa model: the paper's depth-3 GET, 6.47 us and 27.2 Mops", "[dpa][model]") {
  const auto f = model_figures(two_depth3_gets(), 2);
  REQUIRE(f.latency_ns == Approx(6470.0).epsilon(1e-12));
  REQUIRE(f.traverser_bound / 1e6 == Approx(27.2).margin(0.05));
  REQUIRE(f.ops_per_second == f.traverser_bound);
  REQUIRE(std::isinf(f.stitch_bound));
  REQUIRE(f.bottleneck == "traversers (DPA memory latency)");
  REQUIRE(f.source.find("4.2.6") != std::string::npos);
  REQUIRE(f.source.find("estimate") != std::string::npos);
  REQUIRE(f.source.find("176") != std::string::npos);
}

TEST_CASE("dpa model: 100 ns memory, 2.82 us and more than 62 Mops", "[dpa][model]") {
  ModelConfig fast;
  fast.dpa_access_ns = 100;
  const auto f = model_figures(two_depth3_gets(), 2, fast);
  REQUIRE(f.latency_ns == Approx(2820.0).epsilon(1e-12));
  REQUIRE(f.traverser_bound > 62e6);
  REQUIRE(f.traverser_bound < 63e6);
  REQUIRE(f.source.find("100 ns") != std::string::npos);
  // The B3140L's packet engine would not pass it (ping: 44.9 Mops, 4.2.9);
  // the B3220's (69 % more) would.
  REQUIRE(f.ops_per_second == Approx(44.9e6));
  REQUIRE(f.bottleneck == forein::offload::dpa::kPacketEngine);
  fast.card = forein::offload::dpa::Card::kB3220;
  const auto g = model_figures(two_depth3_gets(), 2, fast);
  REQUIRE(g.ops_per_second > 62e6);
  REQUIRE(g.ops_per_second == g.traverser_bound);
}

TEST_CASE("dpa model: latency is the sum of the accesses", "[dpa][model]") {
  OpCost c;
  c.dpa_lines = 8;
  c.l3_lines = 2;  // the root's first two lines from L3 (4.2.6)
  c.dmas = 2;
  ModelConfig cfg;
  cfg.l3_access_ns = 50;
  REQUIRE(modelled_latency_ns(c, cfg) == Approx(8 * 465.0 + 2 * 50.0 + 2 * 910.0));
  cfg.l3_access_ns = 20;
  REQUIRE(modelled_latency_ns(c, cfg) == Approx(8 * 465.0 + 2 * 20.0 + 2 * 910.0));
  REQUIRE(modelled_latency_ns(OpCost{}) == 0);
  // Fewer traversers, proportionally less throughput.
  ModelConfig one;
  one.traversers = 1;
  REQUIRE(model_figures(two_depth3_gets(), 2, one).ops_per_second == Approx(1e9 / 6470.0));
  // Counters that are not accesses do not cost time.
  OpCost extra = c;
  extra.inner_nodes = 2;
  extra.leaves = 1;
  extra.hot_hits = 1;
  extra.buffer_entries = 16;
  extra.dma_bytes = 200;
  REQUIRE(modelled_latency_ns(extra) == modelled_latency_ns(c));
}

TEST_CASE("dpa model: stitched bytes bound writes at 120 MB/s", "[dpa][model]") {
  // 1000 inserts, each a GET-like descent, that stitched 100 bytes each.
  OpCost total;
  total.dpa_lines = 1000 * 11;
  total.dmas = 1000 * 1;
  total.stitched_bytes = 1000 * 100;
  const auto f = model_figures(total, 1000);
  REQUIRE(f.stitch_bound == Approx(120e6 / 100));
  REQUIRE(f.ops_per_second == f.stitch_bound);
  REQUIRE(f.ops_per_second < f.traverser_bound);
  REQUIRE(f.bottleneck == "host-to-DPA stitching");
  REQUIRE(f.source.find("4.2.7") != std::string::npos);
  // A little stitching leaves the traversers the bottleneck.
  total.stitched_bytes = 1;
  const auto g = model_figures(total, 1000);
  REQUIRE(g.bottleneck == "traversers (DPA memory latency)");
  REQUIRE(g.stitch_bound == Approx(120e6 * 1000));
}

TEST_CASE("dpa model: stitcher threads bound UPDATE-only patches by their DMA polls", "[dpa][model]") {
  // 1600 UPDATEs: descents with no DMA; every 16 fill a buffer whose
  // patch ends in one RESET stitch writing the leaf's 6 lines (4.2.7: a
  // DMA poll per stitch, then DPA memory).
  OpCost total;
  total.dpa_lines = 1600 * 8;
  total.l3_lines = 1600 * 2;
  total.stitch_commands = 100;
  total.stitcher_lines = 100 * 6;
  const auto f = model_figures(total, 1600);
  const double stitcher_ns_per_op = (100 * kHostDmaNs + 600 * kDpaAccessNs) / 1600;
  REQUIRE(f.stitcher_bound == Approx(kStitcherThreads / (stitcher_ns_per_op * 1e-9)));
  REQUIRE(std::isinf(f.stitch_bound));
  REQUIRE(f.stitcher_bound < f.traverser_bound);
  REQUIRE(f.ops_per_second == f.stitcher_bound);
  REQUIRE(f.bottleneck == "stitcher threads (a DMA poll per stitch)");
  // More stitchers lift the bound in proportion.
  ModelConfig eight;
  eight.stitchers = 8;
  REQUIRE(model_figures(total, 1600, eight).stitcher_bound == Approx(2 * f.stitcher_bound));
  // No stitches: no stitcher bound.
  REQUIRE(std::isinf(model_figures(OpCost{}, 10).stitcher_bound));
}

TEST_CASE("dpa model: no operations", "[dpa][model]") {
  const auto f = model_figures(OpCost{}, 0);
  REQUIRE(f.ops_per_second == 0);
  REQUIRE(f.latency_ns == 0);
  REQUIRE_FALSE(f.bottleneck.empty());
}

// ---- The packet engine's ceiling (4.2.9) ----

TEST_CASE("dpa model: the packet engine caps every request at the ping ceiling", "[dpa][model]") {
  // A request costing one DPA line: 176 / 465 ns = 378 Mops for the
  // traversers, far past the card's ping rate.
  OpCost one_line;
  one_line.dpa_lines = 1000;
  const auto f = model_figures(one_line, 1000);
  REQUIRE(f.traverser_bound > 300e6);
  REQUIRE(f.packet_bound == Approx(44.9e6));
  REQUIRE(f.ops_per_second == f.packet_bound);
  REQUIRE(f.bottleneck == dpa::kPacketEngine);
  REQUIRE(f.source.find("B3140L ping, 44.9 Mops (4.2.9)") != std::string::npos);
  // The B3220: 69 % more (4.2.9).
  ModelConfig b3220;
  b3220.card = dpa::Card::kB3220;
  const auto g = model_figures(one_line, 1000, b3220);
  REQUIRE(g.ops_per_second == Approx(44.9e6 * 1.69));
  REQUIRE(g.bottleneck == dpa::kPacketEngine);
  // The paper's GET (27.2 Mops) is below both ceilings: the engine does not bind.
  REQUIRE(model_figures(two_depth3_gets(), 2).bottleneck == dpa::kTraversers);
}

// ---- The thread model ----

namespace {

OpCost lines(std::uint64_t n, std::uint64_t hot_hits = 0) {
  OpCost c;
  c.dpa_lines = n;
  c.hot_hits = hot_hits;
  return c;
}

}  // namespace

TEST_CASE("dpa thread model: imbalance raises the busiest thread's time and lowers the bound", "[dpa][model]") {
  ModelConfig owners;
  owners.spill_overloaded = false;
  // Four threads, 8 operations of 10 lines each: evenly, then all but one
  // on thread 0.
  dpa::ThreadLoad even(4), skewed(4);
  for (std::size_t i = 0; i < 8; ++i) even.add(i % 4, lines(10));
  for (std::size_t i = 0; i < 8; ++i) skewed.add(i < 7 ? 0 : 1, lines(10));
  const auto e = dpa::thread_figures(even, owners);
  const auto s = dpa::thread_figures(skewed, owners);
  const double op_ns = 10 * kDpaAccessNs;
  REQUIRE(e.owner_busy_ns[0] == Approx(2 * op_ns));
  REQUIRE(s.owner_busy_ns[0] == Approx(7 * op_ns));
  REQUIRE(s.imbalance == Approx(7.0 / 2.0));
  REQUIRE(e.imbalance == Approx(1.0));
  // The bound is ops / the busiest thread's time, not threads / latency:
  // ignoring the imbalance would give the even load's bound here.
  REQUIRE(e.bound == Approx(8 / (2 * op_ns * 1e-9)));
  REQUIRE(s.bound == Approx(8 / (7 * op_ns * 1e-9)));
  REQUIRE(s.bound < e.bound / 3);
  REQUIRE(s.balanced_bound == Approx(e.bound));
  const auto f = dpa::model_figures(skewed, owners);
  REQUIRE(f.traverser_bound == Approx(s.bound));
  REQUIRE(f.ops_per_second == Approx(s.bound));
  REQUIRE(f.bottleneck == dpa::kImbalance);
  REQUIRE(dpa::model_figures(even, owners).bottleneck == dpa::kTraversers);
  // The aggregate formula (even sharing) is the balanced bound.
  REQUIRE(model_figures(skewed.total(), skewed.ops(), [] { ModelConfig c; c.traversers = 4; return c; }())
              .traverser_bound == Approx(s.balanced_bound));
}

TEST_CASE("dpa thread model: clients move GETs off an overwhelmed thread, losing its cache (3.1.3)",
          "[dpa][model]") {
  // Thread 0 answers 60 hot GETs from its cache (1 line each) and 2
  // uncached ones (10 lines); threads 1-3 get 2 uncached GETs each.
  dpa::ThreadLoad load(4);
  for (int i = 0; i < 60; ++i) load.add(0, lines(1, 1), true);
  for (std::size_t t = 0; t < 4; ++t) {
    for (int i = 0; i < 2; ++i) load.add(t, lines(10), true);
  }
  ModelConfig owners;
  owners.spill_overloaded = false;
  const auto o = dpa::thread_figures(load, owners);
  const auto s = dpa::thread_figures(load);
  REQUIRE(o.owner_busy_ns[0] == Approx(80 * kDpaAccessNs));
  REQUIRE(s.spilled_fraction > 0);
  REQUIRE(s.bound > o.bound);
  // Moved GETs cost an uncached GET (10 lines) elsewhere: the total busy
  // time grows, and no thread ends above the level the others absorb.
  double before = 0, after = 0;
  for (double b : o.busy_ns) before += b;
  for (double b : s.busy_ns) after += b;
  // Each moved GET leaves thread 0 at its mean GET cost (80 lines / 62).
  const double moved = s.spilled_fraction * 68;
  REQUIRE(after == Approx(before + moved * (10 - 80.0 / 62) * kDpaAccessNs).epsilon(1e-6));
  const double level = *std::max_element(s.busy_ns.begin(), s.busy_ns.end());
  for (double b : s.busy_ns) REQUIRE(b <= level * (1 + 1e-9));
  REQUIRE(s.bound == Approx(68 / (level * 1e-9)));
  // Writes do not spill (only GETs move, 3.1.3): the owner bound stays.
  dpa::ThreadLoad writes(4);
  for (int i = 0; i < 60; ++i) writes.add(0, lines(1));
  for (std::size_t t = 0; t < 4; ++t) writes.add(t, lines(10));
  const auto w = dpa::thread_figures(writes);
  REQUIRE(w.spilled_fraction == 0);
  REQUIRE(w.bound == Approx(w.owner_bound));
}

TEST_CASE("dpa thread model: shares replace a sample's noise by the distribution's own imbalance", "[dpa][model]") {
  ModelConfig owners;
  owners.spill_overloaded = false;
  // A sample that happened to put 3 of 4 operations on thread 0 of two,
  // for a distribution that sends each thread half the requests.
  dpa::ThreadLoad load(2);
  for (int i = 0; i < 3; ++i) load.add(0, lines(10));
  load.add(1, lines(10));
  REQUIRE(dpa::thread_figures(load, owners).imbalance == Approx(1.5));
  load.set_shares({0.5, 0.5});
  const auto even = dpa::thread_figures(load, owners);
  REQUIRE(even.imbalance == Approx(1.0));
  REQUIRE(even.owner_busy_ns[0] == Approx(2 * 10 * kDpaAccessNs));
  load.set_shares({0.9, 0.1});
  REQUIRE(dpa::thread_figures(load, owners).imbalance == Approx(1.8));
  REQUIRE_THROWS(load.set_shares({1.0}));
}

TEST_CASE("dpa queue model: mean value analysis obeys Little's law and saturates at the busiest station",
          "[dpa][model]") {
  // Two threads, thread 0 twice as busy: 10 lines vs 5 lines a request.
  dpa::ThreadLoad load(2);
  for (int i = 0; i < 10; ++i) load.add(i % 2, lines(i % 2 == 0 ? 10 : 5));
  ModelConfig owners;
  owners.spill_overloaded = false;
  const double think = 1000;
  const auto pts = dpa::queue_sweep(load, {1, 2, 8, 64, 4096}, think, owners);
  REQUIRE(pts.size() == 5);
  const double engine_ns = 1e9 / 44.9e6;
  // One request alone: no queueing, the sum of its demands.
  const double d0 = 0.5 * 10 * kDpaAccessNs, d1 = 0.5 * 5 * kDpaAccessNs;
  REQUIRE(pts[0].response_ns == Approx(think + d0 + d1 + engine_ns));
  for (const auto& p : pts) {
    REQUIRE(p.response_ns * p.ops_per_second * 1e-9 == Approx(static_cast<double>(p.in_flight)));  // Little
  }
  for (std::size_t i = 1; i < pts.size(); ++i) REQUIRE(pts[i].ops_per_second >= pts[i - 1].ops_per_second);
  // Saturation: the busiest thread (demand d0 per request) bounds it.
  REQUIRE(pts.back().ops_per_second == Approx(1e9 / d0).epsilon(0.01));
  REQUIRE(pts.back().ops_per_second == Approx(dpa::thread_figures(load, owners).bound).epsilon(0.01));
  REQUIRE(pts.back().rx_overflow);  // ~4,000 requests queued at thread 0, past 256
  REQUIRE_FALSE(pts[2].rx_overflow);
  // Low-load latency: the modelled DPA time plus the packet path.
  const auto l = dpa::low_load_latency(load, 1);
  REQUIRE(l.dpa_ns == Approx(7.5 * kDpaAccessNs));
  REQUIRE(l.packet_ns == Approx(engine_ns));
  REQUIRE(l.wire_ns > 0);
  REQUIRE(l.wire_ns < 50);  // two small frames at 100 Gb/s
  REQUIRE(dpa::wire_ns(64) > dpa::wire_ns(10));
}

// ---- Every configuration the experiments run stays under the ceiling ----

namespace {

struct Run {
  const char* what;
  dpa::ModelFigures figures;
};

// A small store on the experiments' configurations (dpa_experiments.cc):
// GET, RANGE (10), UPDATE, INSERT with the cache off, GETs with it on
// under uniform and Zipf 0.99 keys; every operation routed to its key's
// thread as the store routes it.
std::vector<Run> experiment_configs(std::uint64_t seed) {
  constexpr std::size_t kKeys = 20'000, kOps = 20'000;
  std::mt19937_64 rng(seed);
  std::vector<dpa::KV> pairs;
  std::vector<std::uint64_t> held_out;
  std::uint64_t k = 0;
  for (std::size_t i = 0; i < kKeys + kKeys / 10; ++i) {
    k += 1 + rng() % 1000;
    if (i % 11 == 10) {
      held_out.push_back(k);
    } else {
      pairs.push_back({k, k * 3});
    }
  }
  const std::size_t n = dpa::kTraverserThreads;
  std::vector<Run> runs;
  auto pick = [&](forein::testing::ZipfGenerator* zipf) {
    return pairs[zipf ? (*zipf)(rng) * 7919 % pairs.size() : rng() % pairs.size()].key;
  };
  for (const bool cache : {false, true}) {
    for (const bool skew : {false, true}) {
      dpa::StoreOptions so;
      so.seed = seed;
      so.hot_cache = cache;
      dpa::Store s(so);
      s.bulk_load(pairs);
      forein::testing::ZipfGenerator zipf(pairs.size(), 0.99);
      forein::testing::ZipfGenerator* z = skew ? &zipf : nullptr;
      for (std::size_t i = 0; i < kOps; ++i) (void)s.get(pick(z));  // warm the caches
      dpa::ThreadLoad gets(n), ranges(n), updates(n), inserts(n);
      for (std::size_t i = 0; i < kOps; ++i) {
        const std::uint64_t key = pick(z);
        OpCost c;
        (void)s.get(key, &c);
        gets.add(dpa::traverser_of(key, n), c, true);
      }
      runs.push_back({cache ? (skew ? "GET, Zipf, cache" : "GET, uniform, cache")
                            : (skew ? "GET, Zipf" : "GET, uniform"),
                      dpa::model_figures(gets)});
      if (cache) continue;
      for (std::size_t i = 0; i < kOps; ++i) {
        const std::uint64_t key = pick(z);
        OpCost c;
        (void)s.range(key, 10, &c);
        ranges.add(dpa::traverser_of(key, n), c);
      }
      runs.push_back({skew ? "RANGE, Zipf" : "RANGE, uniform", dpa::model_figures(ranges)});
      auto before = s.stats();
      for (std::size_t i = 0; i < kOps; ++i) {
        const std::uint64_t key = pick(z);
        OpCost c;
        s.update(key, i, &c);
        updates.add(dpa::traverser_of(key, n), c);
      }
      s.flush();
      updates.add_unrouted(dpa::stitcher_work(before, s.stats()));
      runs.push_back({skew ? "UPDATE, Zipf" : "UPDATE, uniform", dpa::model_figures(updates)});
      if (skew) continue;
      before = s.stats();
      for (const std::uint64_t key : held_out) {
        OpCost c;
        s.insert(key, key, &c);
        inserts.add(dpa::traverser_of(key, n), c);
      }
      s.flush();
      inserts.add_unrouted(dpa::stitcher_work(before, s.stats()));
      runs.push_back({"INSERT", dpa::model_figures(inserts)});
      REQUIRE(s.check().empty());
    }
  }
  return runs;
}

}  // namespace

TEST_CASE("dpa model: no experiment configuration exceeds the B3140L's 44.9 Mops packet ceiling",
          "[dpa][model][ceiling]") {
  const std::uint64_t seed = std::random_device{}();
  std::printf("dpa ceiling test: seed %llu\n", static_cast<unsigned long long>(seed));
  const auto runs = experiment_configs(seed);
  REQUIRE(runs.size() == 9);
  bool engine_bound = false;
  for (const auto& r : runs) {
    INFO(r.what << ": " << r.figures.ops_per_second / 1e6 << " Mops, " << r.figures.bottleneck << ", seed " << seed);
    REQUIRE(r.figures.ops_per_second > 0);
    REQUIRE(r.figures.ops_per_second <= dpa::kPingOpsPerSecondB3140L);
    REQUIRE(r.figures.ops_per_second <= r.figures.traverser_bound);
    if (r.figures.bottleneck == dpa::kPacketEngine) engine_bound = true;
  }
  // The hot cache under Zipf, with most of 20,000 keys cached, would pass
  // the ceiling without it: the engine binds there.
  REQUIRE(engine_bound);
}
