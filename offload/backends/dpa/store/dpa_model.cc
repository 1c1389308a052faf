#include "forein/dpa/model.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>

namespace forein::offload::dpa {

namespace {

std::string format_source(const ModelConfig& c) {
  char buf[1100];
  std::snprintf(buf, sizeof buf,
                "DPA-Store 4.2.6: t = dpa_lines x %.0f ns (DPA memory, Chen et al. via 4.2.6) + l3_lines x "
                "%.0f ns (L3, an estimate: the paper's figure is lost from our copy) + dmas x %.0f ns (host "
                "DMA, 4.2.6); traverser bound = %zu traversers / t (4.2.6, 4.2.2; thread_model.h: ops / the "
                "busiest thread's busy time); stitch bound = %.0f bytes/s host-to-DPA (4.2.7) / stitched bytes "
                "per op (4.2.8); stitcher bound = %zu stitchers (4.2.2) / (stitch commands x %.0f ns, a DMA poll "
                "each (4.2.7) + CONNECT/RESET lines x %.0f ns) per op; packet bound = %s ping, %.1f Mops (4.2.9); "
                "throughput = the lowest",
                c.dpa_access_ns, c.l3_access_ns, c.host_dma_ns, c.traversers, c.host_to_dpa_bytes_per_second,
                c.stitchers, c.host_dma_ns, c.dpa_access_ns, card_name(c.card),
                packet_ceiling_ops_per_second(c.card) / 1e6);
  return buf;
}

}  // namespace

double modelled_latency_ns(const OpCost& cost, const ModelConfig& config) {
  return static_cast<double>(cost.dpa_lines) * config.dpa_access_ns +
         static_cast<double>(cost.l3_lines) * config.l3_access_ns +
         static_cast<double>(cost.dmas) * config.host_dma_ns;
}

double packet_ceiling_ops_per_second(Card card) {
  return card == Card::kB3220 ? kPingOpsPerSecondB3140L * kPingGainB3220 : kPingOpsPerSecondB3140L;
}

const char* card_name(Card card) { return card == Card::kB3220 ? "B3220" : "B3140L"; }

void apply_shared_bounds(const OpCost& total, std::uint64_t ops, const ModelConfig& config, ModelFigures& f) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double n = static_cast<double>(ops);
  const double stitched_per_op = static_cast<double>(total.stitched_bytes) / n;
  f.stitch_bound = stitched_per_op > 0 ? config.host_to_dpa_bytes_per_second / stitched_per_op : kInf;
  const double stitcher_ns_per_op = (static_cast<double>(total.stitch_commands) * config.host_dma_ns +
                                     static_cast<double>(total.stitcher_lines) * config.dpa_access_ns) /
                                    n;
  f.stitcher_bound =
      stitcher_ns_per_op > 0 ? static_cast<double>(config.stitchers) / (stitcher_ns_per_op * 1e-9) : kInf;
  f.packet_bound = packet_ceiling_ops_per_second(config.card);
  f.ops_per_second = f.traverser_bound;
  if (f.bottleneck.empty()) f.bottleneck = kTraversers;
  const std::pair<double, const char*> others[] = {
      {f.stitch_bound, kStitching}, {f.stitcher_bound, kStitchers}, {f.packet_bound, kPacketEngine}};
  for (const auto& [bound, name] : others) {
    if (bound < f.ops_per_second) {
      f.ops_per_second = bound;
      f.bottleneck = name;
    }
  }
}

ModelFigures model_figures(const OpCost& total, std::uint64_t ops, const ModelConfig& config) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  ModelFigures f;
  f.source = format_source(config);
  if (ops == 0) {
    f.traverser_bound = kInf;
    f.owner_bound = kInf;
    f.stitch_bound = kInf;
    f.stitcher_bound = kInf;
    f.packet_bound = packet_ceiling_ops_per_second(config.card);
    f.bottleneck = "none (no operations)";
    return f;
  }
  f.latency_ns = modelled_latency_ns(total, config) / static_cast<double>(ops);
  f.traverser_bound =
      f.latency_ns > 0 ? static_cast<double>(config.traversers) / (f.latency_ns * 1e-9) : kInf;
  f.owner_bound = f.traverser_bound;
  apply_shared_bounds(total, ops, config, f);
  return f;
}

}  // namespace forein::offload::dpa
