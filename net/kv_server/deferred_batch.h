// Switch-delta's deferred metadata processing (paper 002, section III-D):
// the switch's META_ASYNC copies are off the critical path, so the
// metadata node buffers them and applies them in batches once the buffer
// is full or no request is waiting, with the paper's two batching
// techniques:
//   - operation combining: the batch is sorted by key (neighbouring
//     updates touch neighbouring leaves) and only the newest update of a
//     key touches the tree (the older ones would be no-ops of the apply
//     rule anyway);
//   - prefetching pipeline: before applying update i the leaf of update
//     i + kPrefetchDistance is prefetched (Tree::prefetch), so the leaf
//     misses of a batch overlap instead of stalling one after another.
//     The paper switches coroutines at each node access (CoroBase); the
//     tree's inner levels are few and usually cached, so prefetching the
//     leaf a few keys ahead is the part that pays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kv_server/metadata_index.h"
#include "common/udp_address.h"
#include "protocol/visibility.h"

namespace forein::net::kv {

// One update of the index: a META_ASYNC copy (or a META_PUT), checked.
struct MetaUpdate {
  std::string key;
  StampedLocation stamped;  // --secondary-index: only ts (the SidxEntry names no log id)
  std::string secondary;    // --secondary-index: the write's secondary key
  std::uint16_t slot = 0;
  std::uint32_t fingerprint = 0;
  std::uint64_t seq = 0;
  UdpAddress from;  // where its CLEAR goes
};

// What applying a batch did.
struct BatchOutcome {
  std::size_t applied = 0;        // tree puts
  std::size_t ignored_older = 0;  // the tree already held this write or a newer one
  std::size_t combined = 0;       // superseded by a newer update of the key in the batch
};

class DeferredBatch {
 public:
  static constexpr std::size_t kPrefetchDistance = 4;

  // capacity: the batch size (--batch, >= 1).
  explicit DeferredBatch(std::size_t capacity);

  bool empty() const { return updates_.empty(); }
  std::size_t size() const { return updates_.size(); }
  bool full() const { return updates_.size() >= capacity_; }
  void push(MetaUpdate update) { updates_.push_back(std::move(update)); }

  // Applies the buffered updates as one batch (combined, sorted,
  // prefetched) and empties the buffer. done(u) is called for every
  // update, in key order (timestamps ascending within a key), once the
  // tree holds u or a newer write of its key.
  BatchOutcome apply(MetadataIndex& index, const std::function<void(const MetaUpdate&)>& done);
  // The same over another index (--secondary-index, secondary_index.h):
  // prefetch(u) starts loading what apply_one(u) will touch; apply_one
  // applies the newest update of each key by the index's apply rule.
  BatchOutcome apply(const std::function<void(const MetaUpdate&)>& prefetch,
                     const std::function<ApplyResult(const MetaUpdate&)>& apply_one,
                     const std::function<void(const MetaUpdate&)>& done);

 private:
  std::size_t capacity_;
  std::vector<MetaUpdate> updates_;
  std::vector<std::size_t> order_;  // reused: updates_ indices in key order
  std::vector<std::size_t> heads_;  // reused: the newest update of each key
};

}  // namespace forein::net::kv
