// fattree's device model: the switches of a k=4 FatTree path (fattree_types.h)
// holding a fat root and five node sets. apply() takes a batch of range and
// node records all or nothing under the paper's limits (1,024 fat-root
// ranges, 4,096 nodes per node set, and the device's capacity in in-switch
// nodes), rebuilds the fat root's chained range tables by Algorithm 1, as
// the paper's controller does on every change, and publishes the image.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>

#include "fattree/fattree_types.h"
#include "forein/offload/backend.h"

namespace forein::offload::fattree {

class FattreeDevice final : public Device {
 public:
  // Throws InvalidArgument for a capacity outside 1..2^30.
  explicit FattreeDevice(std::uint64_t capacity = kCapacity);

  BackendStatus apply(const ChangeBatch& batch) override;
  BackendUsage usage() const override;
  BackendModel model() const override;

 private:
  struct Tables {
    std::map<Word, RangeRecord> ranges;                            // by lo
    std::array<std::map<Address, NodeRecord>, kNodeSets> sets;  // by address
  };
  std::uint64_t used(const Tables& t) const;
  // The image of t, or empty if it does not fit (cannot happen within the
  // limits; checked so that the image room hosts reserve is never passed).
  bool publish_locked(const Tables& t);

  const std::uint64_t capacity_;
  mutable std::mutex mu_;  // serializes writers; readers use the image only
  Tables tables_;          // guarded by mu_
  std::uint64_t version_ = 0;
};

}  // namespace forein::offload::fattree
