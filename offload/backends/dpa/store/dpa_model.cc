#include "forein/dpa/model.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace forein::offload::dpa {

namespace {

std::string format_source(const ModelConfig& c) {
  char buf[900];
  std::snprintf(buf, sizeof buf,
                "DPA-Store 4.2.6: t = dpa_lines x %.0f ns (DPA memory, Chen et al. via 4.2.6) + l3_lines x "
                "%.0f ns (L3, an estimate: the paper's figure is lost from our copy) + dmas x %.0f ns (host "
                "DMA, 4.2.6); traverser bound = %zu traversers / t (4.2.6, 4.2.2); stitch bound = %.0f "
                "bytes/s host-to-DPA (4.2.7) / stitched bytes per op (4.2.8); stitcher bound = %zu stitchers (4.2.2) / "
                "(stitch commands x %.0f ns, a DMA poll each (4.2.7) + CONNECT/RESET lines x %.0f ns) per op; "
                "throughput = the lowest",
                c.dpa_access_ns, c.l3_access_ns, c.host_dma_ns, c.traversers, c.host_to_dpa_bytes_per_second,
                c.stitchers, c.host_dma_ns, c.dpa_access_ns);
  return buf;
}

}  // namespace

double modelled_latency_ns(const OpCost& cost, const ModelConfig& config) {
  return static_cast<double>(cost.dpa_lines) * config.dpa_access_ns +
         static_cast<double>(cost.l3_lines) * config.l3_access_ns +
         static_cast<double>(cost.dmas) * config.host_dma_ns;
}

ModelFigures model_figures(const OpCost& total, std::uint64_t ops, const ModelConfig& config) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  ModelFigures f;
  f.source = format_source(config);
  if (ops == 0) {
    f.traverser_bound = kInf;
    f.stitch_bound = kInf;
    f.stitcher_bound = kInf;
    f.bottleneck = "none (no operations)";
    return f;
  }
  const double n = static_cast<double>(ops);
  f.latency_ns = modelled_latency_ns(total, config) / n;
  f.traverser_bound =
      f.latency_ns > 0 ? static_cast<double>(config.traversers) / (f.latency_ns * 1e-9) : kInf;
  const double stitched_per_op = static_cast<double>(total.stitched_bytes) / n;
  f.stitch_bound = stitched_per_op > 0 ? config.host_to_dpa_bytes_per_second / stitched_per_op : kInf;
  const double stitcher_ns_per_op = (static_cast<double>(total.stitch_commands) * config.host_dma_ns +
                                     static_cast<double>(total.stitcher_lines) * config.dpa_access_ns) /
                                    n;
  f.stitcher_bound =
      stitcher_ns_per_op > 0 ? static_cast<double>(config.stitchers) / (stitcher_ns_per_op * 1e-9) : kInf;
  f.ops_per_second = f.traverser_bound;
  f.bottleneck = "traversers (DPA memory latency)";
  if (f.stitch_bound < f.ops_per_second) {
    f.ops_per_second = f.stitch_bound;
    f.bottleneck = "host-to-DPA stitching";
  }
  if (f.stitcher_bound < f.ops_per_second) {
    f.ops_per_second = f.stitcher_bound;
    f.bottleneck = "stitcher threads (a DMA poll per stitch)";
  }
  return f;
}

}  // namespace forein::offload::dpa
