// fpga's device model: Honeycomb's interior-node cache (section 5). The
// root in on-chip SRAM; other interior nodes in on-board DRAM, one 8 KB
// slot each, four-way set associative by node id. apply() takes a batch
// of records all or nothing: an install over the DRAM capacity in cache
// bytes, over the four ways of a set, or over the image room is refused
// (kCapacityExceeded), a malformed batch too (kInvalidEntry), each
// changing nothing; a remove is an invalidation (skipping nodes not
// cached). A new image is published after every applied batch.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "fpga/fpga_types.h"
#include "forein/offload/backend.h"

namespace forein::offload::fpga {

class FpgaDevice final : public Device {
 public:
  // Throws InvalidArgument for a capacity outside 1..2^40 cache bytes.
  explicit FpgaDevice(std::uint64_t capacity = kBoardDramBytes);

  BackendStatus apply(const ChangeBatch& batch) override;
  BackendUsage usage() const override;
  BackendModel model() const override;

  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t sets() const { return sets_; }

 private:
  struct Cache {
    std::optional<CacheRecord> root;     // on-chip SRAM
    std::map<PageId, CacheRecord> dram;  // on-board DRAM, by node id
  };
  bool fits(const Cache& c) const;
  bool publish_locked(const Cache& c);

  const std::uint64_t capacity_;
  const std::uint64_t sets_;
  mutable std::mutex mu_;  // serializes writers; readers use the image only
  Cache cache_;            // guarded by mu_
  std::uint64_t version_ = 0;
};

// The cost model's figures for walks that read `dram_levels` cached levels
// below the root (model() uses the deepest walk of the cached nodes).
BackendModel fpga_model(std::size_t dram_levels);

}  // namespace forein::offload::fpga
