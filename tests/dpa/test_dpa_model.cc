// dpa store: the DPA model (forein/dpa/model.h) reproduces the paper's own
// figures (DPA-Store 4.2.6) and bounds writes by host-to-DPA stitching
// (4.2.7, 4.2.8).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "forein/dpa/model.h"

namespace {

using forein::offload::dpa::ModelConfig;
using forein::offload::dpa::model_figures;
using forein::offload::dpa::modelled_latency_ns;
using forein::offload::dpa::OpCost;
using forein::offload::dpa::kDpaAccessNs;
using forein::offload::dpa::kHostDmaNs;
using forein::offload::dpa::kStitcherThreads;

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
  REQUIRE(f.ops_per_second > 62e6);
  REQUIRE(f.ops_per_second < 63e6);
  REQUIRE(f.source.find("100 ns") != std::string::npos);
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
