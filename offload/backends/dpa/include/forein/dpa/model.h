// dpa store: the paper's analytic model (DPA-Store section 4.2.6), applied
// to what the code really did. One request's time is the sum of its
// memory accesses, none overlapped within a thread:
//
//   t = dpa_lines x 465 ns + l3_lines x t_L3 + dmas x 910 ns
//
// and "assuming DPA scheduling overlaps one thread's computation with
// another thread's memory accesses, the maximal throughput is"
// traversers / t. For the paper's depth-3 tree (two inner nodes of 4.5
// lines, a leaf's metadata line, one key DMA, one value DMA) that is
// 6.47 us and 27.2 Mops; with 100 ns memory, 2.82 us and 62 Mops -- the
// paper's own figures, which the tests check this code reproduces.
//
// Writes add a second bound: stitched nodes reach DPA memory at ~120 MB/s
// (4.2.7), so a workload that stitches B bytes per operation cannot exceed
// 120e6 / B operations per second (4.2.8). And the stitcher threads poll
// for every stitch command with a DMA before they write DPA memory ("the
// stitcher threads have to poll for incoming stitches per DMA and then to
// first load the data into the DPA thread and then into DPA memory", 4.2.7;
// patchers are "limited in throughput by the NIC-side stitcher threads",
// 4.2.2): four stitchers each spending
//
//   s = stitch commands x 910 ns + lines CONNECT/RESET write x 465 ns
//
// per operation bound it at stitchers / s (COPY payloads are the byte
// bound's). The model reports the lowest of the three rates and names the
// bottleneck.
#pragma once

#include <cstdint>
#include <string>

#include "forein/dpa/op_cost.h"
#include "forein/dpa/types.h"

namespace forein::offload::dpa {

struct ModelConfig {
  double dpa_access_ns = kDpaAccessNs;
  double l3_access_ns = kDpaL3AccessNs;
  double host_dma_ns = kHostDmaNs;
  double host_to_dpa_bytes_per_second = kHostToDpaBytesPerSecond;
  std::size_t traversers = kTraverserThreads;
  std::size_t stitchers = kStitcherThreads;
};

// One operation's modelled latency (ns).
double modelled_latency_ns(const OpCost& cost, const ModelConfig& config = {});

struct ModelFigures {
  double latency_ns = 0;         // mean per operation
  double ops_per_second = 0;     // the lowest of the three bounds
  double traverser_bound = 0;    // traversers / latency
  double stitch_bound = 0;       // host-to-DPA bytes/s / stitched bytes per op (inf: none)
  double stitcher_bound = 0;     // stitchers / their time per op (inf: no stitches)
  // "traversers (DPA memory latency)", "host-to-DPA stitching" or
  // "stitcher threads (a DMA poll per stitch)"
  std::string bottleneck;
  std::string source;            // the formula and its sources
};

// The figures for `ops` operations whose costs add up to `total`.
ModelFigures model_figures(const OpCost& total, std::uint64_t ops, const ModelConfig& config = {});

}  // namespace forein::offload::dpa
