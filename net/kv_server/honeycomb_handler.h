// forein-kv-server --engine honeycomb: requests served by Honeycomb's store
// (offload/backends/fpga/honeycomb/) as the paper's server does: GET and
// SCAN executed by the accelerator model (the "SmartNIC"), PUT and DELETE
// by the CPU on the store. Start hints in requests are counted and ignored
// (Honeycomb's accelerator walks its own cached interior nodes).
#pragma once

#include <functional>
#include <string>

#include "forein/fpga/accelerator.h"
#include "forein/fpga/store.h"
#include "kv_server/handler.h"
#include "kv_server/stats.h"

namespace forein::net::kv {

class HoneycombHandler final : public PacketHandler {
 public:
  HoneycombHandler(offload::fpga::Store& store, offload::fpga::Accelerator& accelerator,
                   ServerStats& stats, std::function<std::string()> stats_json);

  Packet handle(const Packet& request) override;

 private:
  Packet scan(const Packet& request);

  offload::fpga::Store& store_;
  offload::fpga::Accelerator& accelerator_;
  ServerStats& stats_;
  std::function<std::string()> stats_json_;
};

}  // namespace forein::net::kv
