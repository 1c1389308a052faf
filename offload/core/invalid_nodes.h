// Nodes merged away whose entries may still be on the device (FOREIN,
// section V-D: "invalid pointers are tracked, with queries redirected until
// confirmation of update completion").
//
// The manager adds a dead node with the sequence number of the last batch
// queued when it learned of the death; once the control plane has applied
// that batch, the device holds no entry of the dead node (or only entries of
// a new node on the reused page) and the node is dropped. Hosts ask
// contains() on every hinted lookup: lock-free, and free while the set is
// empty.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "forein/offload/published.h"
#include "forein/page_store.h"

namespace forein::offload {

class InvalidNodes {
 public:
  InvalidNodes() : published_(std::make_shared<const std::vector<PageId>>()) {}

  void add(std::span<const PageId> nodes, std::uint64_t confirm_seq);
  // Drops the nodes whose confirming batch is applied (seq <= applied_seq).
  void confirm(std::uint64_t applied_seq);

  bool contains(PageId node) const;
  std::size_t size() const { return count_.load(std::memory_order_acquire); }

 private:
  void publish_locked();

  std::mutex mu_;
  std::map<PageId, std::uint64_t> pending_;  // node -> confirming batch; guarded by mu_
  std::atomic<std::size_t> count_{0};
  Published<std::vector<PageId>> published_;  // sorted ids
};

}  // namespace forein::offload
