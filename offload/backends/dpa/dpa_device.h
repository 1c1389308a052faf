// dpa's device model: DPA memory holding DPA-Store's learned index, changed
// only by stitch commands (section 3.2.2). apply() takes a batch all or
// nothing: an install's COPY records write nodes at the addresses the host
// chose, its CONNECT swaps the root pointer; a remove's FREE records
// reclaim nodes (skipping addresses that hold none). Refused, changing
// nothing: a malformed batch, COPY records overlapping one another or a
// node held at another address, an inner node whose child address holds
// no node one index level down, a CONNECT to a node not copied
// (kInvalidEntry); a node outside the DPA memory [0, capacity) or an image
// over the image room (kCapacityExceeded). A COPY to the address of a held
// node replaces it (the host re-sends a whole target after a refusal). A
// new image is published after every applied batch.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "dpa/dpa_layout.h"
#include "forein/offload/backend.h"

namespace forein::offload::dpa {

// The largest capacity a device takes (DPA bytes): 1 TiB.
inline constexpr std::uint64_t kMaxCapacity = std::uint64_t{1} << 40;

class DpaDevice final : public Device {
 public:
  // Throws InvalidArgument for a capacity outside 1..2^40 DPA bytes.
  explicit DpaDevice(std::uint64_t capacity = kDpaMemoryBytes);

  BackendStatus apply(const ChangeBatch& batch) override;
  BackendUsage usage() const override;
  BackendModel model() const override;

  std::uint64_t capacity() const { return capacity_; }

 private:
  struct Memory {
    std::map<std::uint64_t, std::vector<std::byte>> nodes;  // by DPA address
    std::uint64_t root = kNoAddress;
    std::uint64_t used = 0;
  };
  bool publish_locked(const Memory& m);

  const std::uint64_t capacity_;
  mutable std::mutex mu_;  // serializes writers; readers use the image only
  Memory memory_;          // guarded by mu_
  std::uint64_t version_ = 0;
};

// The cost model's figures for a walk through `inner_levels` inner nodes
// to an index leaf, and an install rate for nodes of `node_bytes` on average.
BackendModel dpa_model(std::size_t inner_levels, double node_bytes);

}  // namespace forein::offload::dpa
