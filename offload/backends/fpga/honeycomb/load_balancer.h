// The memory subsystem's load balancer (paper 003, section 5; +13% over
// NoLB in section 6.4): with a large cache the on-board DRAM becomes the
// bottleneck while PCIe has bandwidth left, so some cache hits are read
// from host memory over PCIe instead.
//
// The paper's balancer "monitors the number of in-flight operations and
// the total number of bytes being read by those operations on both DRAM
// and PCIe interfaces" and balances them. This model has no wall clock:
// requests charge the links in modelled time, so an interface's in-flight
// work is its backlog, the operations and bytes it has been given, each
// costing its link time (bytes at the interface's rate plus its per-access
// cost: PCIe's completion framing, DRAM's row activation). A hit goes over
// PCIe when DRAM's backlog with it would finish later than PCIe's with it
// (earliest finish): the same two quantities per interface the paper
// counts, weighed by each interface's rate. Deterministic given the
// counters; at a 100% hit rate it splits interior traffic so both links
// stay equally busy.
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
