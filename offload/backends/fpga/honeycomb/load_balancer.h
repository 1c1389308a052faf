// The memory subsystem's load balancer (paper 003, section 5; +13% over
// NoLB in section 6.4): with a large cache the on-board DRAM becomes the
// bottleneck while PCIe has bandwidth left, so some cache hits are read
// from host memory over PCIe instead.
//
// The paper's balancer watches in-flight operations and bytes on both
// interfaces. Here time is modelled, so it compares the links' modelled
// busy time instead: a hit goes over PCIe when DRAM would finish it later
// than PCIe would (earliest finish). Deterministic given the counters; at a
// 100% hit rate it splits interior traffic so both links stay equally busy.
#pragma once

#include <cstdint>

#include "fpga/honeycomb/pcie_model.h"

namespace forein::offload::fpga {

class LoadBalancer {
 public:
  LoadBalancer(const LinkModel& dram, const LinkModel& pcie, bool enabled)
      : dram_(dram), pcie_(pcie), enabled_(enabled) {}

  // A read of `bytes` hit in the DRAM cache: true to serve it over PCIe.
  bool divert(std::uint64_t bytes) const;
  bool enabled() const { return enabled_; }

 private:
  const LinkModel& dram_;
  const LinkModel& pcie_;
  const bool enabled_;
};

}  // namespace forein::offload::fpga
