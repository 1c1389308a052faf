#include "core/invalid_nodes.h"

#include <algorithm>

namespace forein::offload {

void InvalidNodes::add(std::span<const PageId> nodes, std::uint64_t confirm_seq) {
  if (nodes.empty()) return;
  std::lock_guard lock(mu_);
  for (PageId id : nodes) {
    std::uint64_t& seq = pending_[id];
    seq = std::max(seq, confirm_seq);
  }
  publish_locked();
}

void InvalidNodes::confirm(std::uint64_t applied_seq) {
  std::lock_guard lock(mu_);
  const std::size_t before = pending_.size();
  std::erase_if(pending_, [&](const auto& item) { return item.second <= applied_seq; });
  if (pending_.size() != before) publish_locked();
}

bool InvalidNodes::contains(PageId node) const {
  if (count_.load(std::memory_order_acquire) == 0) return false;
  return published_.read([node](const std::vector<PageId>& ids) {
    return std::binary_search(ids.begin(), ids.end(), node);
  });
}

void InvalidNodes::publish_locked() {
  auto ids = std::make_shared<std::vector<PageId>>();
  ids->reserve(pending_.size());
  for (const auto& item : pending_) ids->push_back(item.first);
  const std::size_t n = ids->size();
  published_.publish(std::move(ids));
  count_.store(n, std::memory_order_release);
}

}  // namespace forein::offload
