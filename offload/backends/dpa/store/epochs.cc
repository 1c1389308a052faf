#include "dpa/store/epochs.h"

namespace forein::offload::dpa::detail {

void Epochs::retire(NicNode* node) {
  Retired r{node, {}};
  r.in_seen.reserve(contexts_.size());
  for (const auto& c : contexts_) r.in_seen.push_back(c->in.load());
  std::lock_guard<std::mutex> lock(mutex_);
  retired_.push_back(std::move(r));
  retired_count_.fetch_add(1);
}

std::size_t Epochs::reclaim() {
  std::vector<NicNode*> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t kept = 0;
    for (std::size_t at = 0; at < retired_.size(); ++at) {
      Retired& r = retired_[at];
      bool passed = true;
      for (std::size_t i = 0; i < contexts_.size() && passed; ++i) {
        passed = contexts_[i]->out.load() >= r.in_seen[i];
      }
      if (passed) {
        done.push_back(r.node);
      } else {
        if (kept != at) retired_[kept] = std::move(r);
        ++kept;
      }
    }
    retired_.resize(kept);
  }
  for (NicNode* n : done) free_node(n);
  reclaimed_count_.fetch_add(done.size());
  return done.size();
}

void Epochs::free_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& r : retired_) free_node(r.node);
  retired_.clear();
}

std::uint64_t Epochs::pending_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::uint64_t b = 0;
  for (const auto& r : retired_) b += r.node->bytes;
  return b;
}

void Epochs::free_node(NicNode* node) {
  memory_.release(node->bytes);
  if (node->is_leaf) host_bytes_.fetch_sub(static_cast<NicLeaf*>(node)->host->bytes());
  destroy_node(node);
}

}  // namespace forein::offload::dpa::detail
