#include "fpga/honeycomb/pcie_model.h"

#include <algorithm>

namespace forein::offload::fpga {

LinkConfig pcie_link(double bytes_per_second, double latency_ns) {
  return LinkConfig{bytes_per_second, latency_ns, 256, 20, false};
}

LinkConfig dram_link(double bytes_per_second, double latency_ns, double access_ns) {
  return LinkConfig{bytes_per_second, latency_ns, 64, 0, true, access_ns};
}

LinkModel::LinkModel(LinkConfig config) : config_(config) {}

double LinkModel::wire_ns(std::uint64_t bytes) const {
  if (bytes == 0) return 0;
  const std::uint64_t unit = config_.unit_bytes;
  const std::uint64_t units = (bytes + unit - 1) / unit;
  const double payload = config_.round_up ? static_cast<double>(units * unit) : bytes;
  const double wire = payload + static_cast<double>(units * config_.unit_overhead_bytes);
  // The configured rate is the payload rate of full units; the wire rate
  // is higher by the per-unit overhead.
  const double wire_rate =
      config_.bytes_per_second * static_cast<double>(unit + config_.unit_overhead_bytes) / unit;
  return wire / wire_rate * 1e9 + config_.access_ns;
}

Transfer LinkModel::transfer(std::uint64_t bytes, double ready_ns) {
  const double wire = wire_ns(bytes);
  Transfer t;
  t.wire_ns = wire;
  t.unloaded_ns = wire + config_.latency_ns;
  std::lock_guard lock(mu_);
  t.start_ns = std::max(ready_ns, free_at_ns_);
  free_at_ns_ = t.start_ns + wire;
  t.done_ns = free_at_ns_ + config_.latency_ns;
  ++transfers_;
  bytes_ += bytes;
  busy_ns_ += wire;
  outstanding_ns_ += t.unloaded_ns;
  return t;
}

std::uint64_t LinkModel::transfers() const {
  std::lock_guard lock(mu_);
  return transfers_;
}

std::uint64_t LinkModel::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

double LinkModel::busy_ns() const {
  std::lock_guard lock(mu_);
  return busy_ns_;
}

double LinkModel::outstanding_ns() const {
  std::lock_guard lock(mu_);
  return outstanding_ns_;
}

double LinkModel::free_at_ns() const {
  std::lock_guard lock(mu_);
  return free_at_ns_;
}

void LinkModel::reset() {
  std::lock_guard lock(mu_);
  transfers_ = 0;
  bytes_ = 0;
  busy_ns_ = 0;
  outstanding_ns_ = 0;
  free_at_ns_ = 0;
}

}  // namespace forein::offload::fpga
