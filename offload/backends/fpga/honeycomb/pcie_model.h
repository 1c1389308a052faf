// The accelerator's two off-chip interfaces as modelled links: PCIe to host
// memory and the card's on-board DRAM. Time is modelled (nanoseconds from
// bytes and bandwidths), never slept. Each link is a shared token bucket of
// depth one transfer (a FIFO link): a transfer ready at t starts when the
// link is free, occupies it for its wire time and completes one access
// latency later. Its busy time is what bounds the accelerator's throughput
// (AcceleratorModel); the latency is what a request's dependent reads add.
#pragma once

#include <cstdint>
#include <mutex>

namespace forein::offload::fpga {

struct LinkConfig {
  double bytes_per_second = 13e9;  // payload rate for full-size units
  double latency_ns = 1000;        // per access, beyond the wire time
  // Transfers are carried in units of unit_bytes, each with
  // unit_overhead_bytes more on the wire; round_up: a partial unit costs a
  // whole one (DRAM bursts) rather than its bytes (PCIe payloads).
  std::uint32_t unit_bytes = 256;
  std::uint32_t unit_overhead_bytes = 20;
  bool round_up = false;
  // Link time every transfer costs beyond its units (DRAM: opening a row).
  double access_ns = 0;
};

// PCIe: two Gen3 x8 links to host memory, 13 GB/s measured, > 1 us latency
// (paper 003, section 2). IOPS model: every DMA read is returned as
// completion TLPs of at most 256 B (the usual max payload size) and each
// TLP carries 20 B more on the wire (PCIe 3.0 base spec: 4 B STP framing
// token with the sequence number, 12 B 3-DW completion header, 4 B LCRC).
// The measured 13 GB/s is taken as the payload rate of full 256 B TLPs, so
// a DMA of whole 256 B chunks costs exactly bytes / 13 GB/s and small or
// ragged DMAs cost more per byte: throughput falls as IOPS rise.
LinkConfig pcie_link(double bytes_per_second, double latency_ns);

// On-board DRAM: two DDR4-2133 channels (paper 003, section 6.1), 17 GB/s
// peak each (2133 MT/s x 8 B, JEDEC DDR4). Every access moves whole 64 B
// bursts (BL8 on a 64-bit channel), so small metadata reads cost a burst,
// and costs access_ns more: the accelerator's accesses are random (a
// page-table entry, a metadata set, a node block), each opening a row.
// The paper says the DRAM is limited by accesses as much as bytes:
// "page table and cache metadata reads consume a small fraction of
// available on-board DRAM bandwidth but a significant fraction of IOPS"
// (6.4), and with every interior node cached and no load balancing the
// DRAM, not PCIe, bounds the accelerator at 8.0 Mreqs/s while PCIe has
// 4 GB/s to spare. kDramAccessNs (accelerator.h) is derived from that
// point: see its comment.
LinkConfig dram_link(double bytes_per_second, double latency_ns, double access_ns);

struct Transfer {
  double start_ns = 0;     // when the link started carrying it
  double wire_ns = 0;      // link time it occupied
  double done_ns = 0;      // start + wire + latency
  double unloaded_ns = 0;  // wire + latency: what it adds to a dependent chain
};

class LinkModel {
 public:
  explicit LinkModel(LinkConfig config);

  // Link time of one transfer of `bytes` (no counting).
  double wire_ns(std::uint64_t bytes) const;
  // Records one transfer of `bytes` that is ready at ready_ns (modelled).
  Transfer transfer(std::uint64_t bytes, double ready_ns = 0);

  std::uint64_t transfers() const;  // DMAs / accesses (IOPS numerator)
  std::uint64_t bytes() const;      // payload bytes
  double busy_ns() const;           // total wire time
  // Total time transfers were outstanding (wire + latency each): what a
  // bounded number of outstanding transfers (PCIe read tags) limits.
  double outstanding_ns() const;
  double free_at_ns() const;        // the token bucket's clock
  const LinkConfig& config() const { return config_; }
  void reset();

 private:
  const LinkConfig config_;
  mutable std::mutex mu_;
  std::uint64_t transfers_ = 0;
  std::uint64_t bytes_ = 0;
  double busy_ns_ = 0;
  double outstanding_ns_ = 0;
  double free_at_ns_ = 0;
};

}  // namespace forein::offload::fpga
