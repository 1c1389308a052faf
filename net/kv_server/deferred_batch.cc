#include "kv_server/deferred_batch.h"

#include <algorithm>
#include <numeric>

namespace forein::net::kv {

DeferredBatch::DeferredBatch(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {
  updates_.reserve(capacity_);
  order_.reserve(capacity_);
  heads_.reserve(capacity_);
}

BatchOutcome DeferredBatch::apply(MetadataIndex& index, const std::function<void(const MetaUpdate&)>& done) {
  return apply([&index](const MetaUpdate& u) { index.prefetch(u.key); },
               [&index](const MetaUpdate& u) { return index.apply(u.key, u.stamped); }, done);
}

BatchOutcome DeferredBatch::apply(const std::function<void(const MetaUpdate&)>& prefetch,
                                  const std::function<ApplyResult(const MetaUpdate&)>& apply_one,
                                  const std::function<void(const MetaUpdate&)>& done) {
  BatchOutcome out;
  if (updates_.empty()) return out;
  // Operation combining: key order, timestamps ascending within a key
  // (arrival order breaks ties, so a duplicate stays behind its original).
  order_.resize(updates_.size());
  std::iota(order_.begin(), order_.end(), std::size_t{0});
  std::sort(order_.begin(), order_.end(), [this](std::size_t a, std::size_t b) {
    const MetaUpdate& x = updates_[a];
    const MetaUpdate& y = updates_[b];
    if (const int c = x.key.compare(y.key); c != 0) return c < 0;
    if (x.stamped.ts != y.stamped.ts) return x.stamped.ts < y.stamped.ts;
    return a < b;
  });
  heads_.clear();
  for (std::size_t i = 0; i < order_.size(); ++i) {
    if (i + 1 == order_.size() || updates_[order_[i + 1]].key != updates_[order_[i]].key) heads_.push_back(i);
  }
  // Prefetching pipeline over the keys the tree will see.
  const std::size_t ahead = std::min(kPrefetchDistance, heads_.size());
  for (std::size_t h = 0; h < ahead; ++h) prefetch(updates_[order_[heads_[h]]]);
  std::size_t first = 0;  // the key's first update in order_
  for (std::size_t h = 0; h < heads_.size(); ++h) {
    if (h + ahead < heads_.size()) prefetch(updates_[order_[heads_[h + ahead]]]);
    const MetaUpdate& newest = updates_[order_[heads_[h]]];
    if (apply_one(newest) == ApplyResult::kApplied) {
      ++out.applied;
    } else {
      ++out.ignored_older;
    }
    out.combined += heads_[h] - first;
    for (std::size_t i = first; i <= heads_[h]; ++i) done(updates_[order_[i]]);
    first = heads_[h] + 1;
  }
  updates_.clear();
  return out;
}

}  // namespace forein::net::kv
