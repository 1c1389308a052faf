// forein-kv-server --engine honeycomb: requests served by Honeycomb's store
// (offload/backends/fpga/honeycomb/) as the paper's server does: GET and
// SCAN executed by the accelerator model (the "SmartNIC"), PUT and DELETE
// by the CPU on the store. Start hints in requests are counted and ignored
// (Honeycomb's accelerator walks its own cached interior nodes).
// --honeycomb-reads cpu: GET and SCAN by the store's own CPU read path
// (Store::get/scan) instead, the same reader code on the CPU's port: a CPU
// server on Honeycomb's store, the paper's baseline.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "forein/fpga/accelerator.h"
#include "forein/fpga/store.h"
#include "kv_server/handler.h"
#include "kv_server/options.h"
#include "kv_server/stats.h"

namespace forein::net::kv {

class HoneycombHandler final : public PacketHandler {
 public:
  HoneycombHandler(offload::fpga::Store& store, offload::fpga::Accelerator& accelerator, HoneycombReads reads,
                   ServerStats& stats, std::function<std::string()> stats_json);

  Packet handle(const Packet& request) override;

 private:
  Packet scan(const Packet& request);
  // GET and SCAN(lo, hi, max) on the reader --honeycomb-reads names.
  std::optional<std::string> read_get(std::string_view key);
  offload::fpga::ScanResult read_scan(std::string_view lo, std::string_view hi, std::size_t max_items);

  offload::fpga::Store& store_;
  offload::fpga::Accelerator& accelerator_;
  HoneycombReads reads_;
  ServerStats& stats_;
  std::function<std::string()> stats_json_;
};

}  // namespace forein::net::kv
