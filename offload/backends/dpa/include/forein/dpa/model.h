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
// bound's). And no request gets past the card's packet engine: the
// paper's ping test (4.2.9) measured 44.9 Mops on the B3140L and 69 % more
// on the B3220. The model reports the lowest of the four rates and names
// the bottleneck.
//
// model_figures(total, ops) assumes the traversers share the work evenly
// (4.2.6's assumption); forein/dpa/thread_model.h routes every operation to
// its traverser and replaces the first bound by the busiest thread's.
#pragma once

#include <cstdint>
#include <string>

#include "forein/dpa/op_cost.h"
#include "forein/dpa/types.h"

namespace forein::offload::dpa {

// The BlueField-3 card: the same DPA (cores, threads, memory latency);
// the B3220's "stronger packet-matching hardware" (4.2.9).
enum class Card { kB3140L, kB3220 };

// The card's packet ceiling, from the paper's ping test (4.2.9).
double packet_ceiling_ops_per_second(Card card);
const char* card_name(Card card);

struct ModelConfig {
  Card card = Card::kB3140L;  // the paper's main setup (4.1)
  double dpa_access_ns = kDpaAccessNs;
  double l3_access_ns = kDpaL3AccessNs;
  double host_dma_ns = kHostDmaNs;
  double host_to_dpa_bytes_per_second = kHostToDpaBytesPerSecond;
  std::size_t traversers = kTraverserThreads;
  std::size_t stitchers = kStitcherThreads;
  // Clients move GETs off an overwhelmed traverser to others by an
  // alternative hash, without the hot-cache metadata (3.1.3); used by the
  // thread model (thread_model.h) only.
  bool spill_overloaded = true;
};

// One operation's modelled latency (ns).
double modelled_latency_ns(const OpCost& cost, const ModelConfig& config = {});

struct ModelFigures {
  double latency_ns = 0;         // mean per operation
  double ops_per_second = 0;     // the lowest of the three bounds
  double traverser_bound = 0;    // traversers / latency
  double stitch_bound = 0;       // host-to-DPA bytes/s / stitched bytes per op (inf: none)
  double stitcher_bound = 0;     // stitchers / their time per op (inf: no stitches)
  double packet_bound = 0;       // the card's ping ceiling (4.2.9)
  // The thread model's figures (thread_model.h); with balanced threads the
  // owner bound is the traverser bound, imbalance 1, nothing spilled.
  double owner_bound = 0;        // every request on its key's thread, no spilling
  double imbalance = 1;          // busiest thread's busy time / the mean, owners only
  double spilled_fraction = 0;   // of the operations, moved off overwhelmed threads (3.1.3)
  // kTraversers, kImbalance, kStitching, kStitchers or kPacketEngine
  std::string bottleneck;
  std::string source;            // the formula and its sources
};

// The bottlenecks' names.
inline constexpr const char* kTraversers = "traversers (DPA memory latency)";
inline constexpr const char* kImbalance = "thread imbalance (hot keys' traversers)";
inline constexpr const char* kStitching = "host-to-DPA stitching";
inline constexpr const char* kStitchers = "stitcher threads (a DMA poll per stitch)";
inline constexpr const char* kPacketEngine = "packet engine (ping ceiling)";

// The figures for `ops` operations whose costs add up to `total`, the
// traversers sharing them evenly.
ModelFigures model_figures(const OpCost& total, std::uint64_t ops, const ModelConfig& config = {});

// The common part: `f` has latency_ns and the traverser bound set; this
// adds the stitch, stitcher and packet bounds and picks the lowest.
void apply_shared_bounds(const OpCost& total, std::uint64_t ops, const ModelConfig& config, ModelFigures& f);

}  // namespace forein::offload::dpa
