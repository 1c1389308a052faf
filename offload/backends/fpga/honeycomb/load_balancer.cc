#include "fpga/honeycomb/load_balancer.h"

namespace forein::offload::fpga {

bool LoadBalancer::divert(std::uint64_t bytes) const {
  if (!enabled_) return false;
  const double dram_finish = dram_.busy_ns() + dram_.wire_ns(bytes);
  const double pcie_finish = pcie_.busy_ns() + pcie_.wire_ns(bytes);
  return dram_finish > pcie_finish;
}

}  // namespace forein::offload::fpga
