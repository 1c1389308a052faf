#include "fpga/honeycomb/request_engine.h"

#include <algorithm>

namespace forein::offload::fpga {

RequestEngine::RequestEngine(unsigned workers) {
  const unsigned n = std::max(1u, workers);
  threads_.reserve(n);
  for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
}

RequestEngine::~RequestEngine() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::uint64_t RequestEngine::begin() {
  std::lock_guard lock(mu_);
  const std::uint64_t seq = ++newest_;
  in_flight_.insert(seq);
  return seq;
}

void RequestEngine::enqueue(std::uint64_t seq, Job job) {
  {
    std::lock_guard lock(mu_);
    queue_.emplace_back(seq, std::move(job));
  }
  work_cv_.notify_one();
}

void RequestEngine::work() {
  for (;;) {
    std::pair<std::uint64_t, Job> item;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and the queue is drained
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      item.second();
    } catch (...) {
      // A request's failure must not take the engine down or leave it in
      // flight forever (S_old would stall reclamation).
    }
    finish(item.first);
  }
}

void RequestEngine::finish(std::uint64_t seq) {
  bool empty = false;
  {
    std::lock_guard lock(mu_);
    in_flight_.erase(seq);
    empty = in_flight_.empty();
  }
  if (empty) drain_cv_.notify_all();
}

void RequestEngine::drain() {
  std::unique_lock lock(mu_);
  drain_cv_.wait(lock, [this] { return in_flight_.empty(); });
}

std::uint64_t RequestEngine::newest_sequence() const {
  std::lock_guard lock(mu_);
  return newest_;
}

std::uint64_t RequestEngine::oldest_sequence() const {
  std::lock_guard lock(mu_);
  return in_flight_.empty() ? newest_ + 1 : *in_flight_.begin();
}

}  // namespace forein::offload::fpga
