// Where forein-load's hint trailers come from (docs/network.md,
// "forein-load", --agent). Until the DPDK switch exists the client plays
// the switch's part: a HintSource looks a key up in the offload image it
// holds and names the start nodes the request carries to the server. The
// engine knows only this interface; the gRPC implementation
// (load/agent_hints.h) is linked into the program, not into forein_load.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "forein/node_interval.h"

namespace forein::net::load {

class HintSource {
 public:
  virtual ~HintSource() = default;
  // The start hints for key, or nullopt when the source holds no image or
  // the image names no node for it. Never blocks; called from the engine's
  // thread for every request.
  virtual std::optional<StartHints> hint(std::string_view key) const = 0;
  // Image fetches that succeeded and that failed, so far.
  virtual std::uint64_t fetches() const = 0;
  virtual std::uint64_t errors() const = 0;
};

}  // namespace forein::net::load
