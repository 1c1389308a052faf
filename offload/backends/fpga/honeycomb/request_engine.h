// Request management of the accelerator model (paper 003, section 4.1):
// the epoch manager's sequence numbers and worker threads that run
// requests out of order.
//
// A request is registered first (begin: S_new is incremented and the
// number joins the in-flight set) and only then takes its read version and
// root and is queued (enqueue); workers pop requests and finish them in
// whatever order they complete. Registering before the read version is
// read is what makes reclamation safe: a node version retired while S_new
// was s is freed only once S_old > s, and every request that could still
// reach it has a number <= s or read the page table after the retirement.
// Idle workers sleep on a condition variable.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace forein::offload::fpga {

class RequestEngine {
 public:
  using Job = std::function<void()>;

  explicit RequestEngine(unsigned workers);
  ~RequestEngine();  // finishes every queued request, then joins
  RequestEngine(const RequestEngine&) = delete;
  RequestEngine& operator=(const RequestEngine&) = delete;

  // S_new + 1, now in flight.
  std::uint64_t begin();
  // Runs `job` on a worker; the request `seq` leaves the in-flight set
  // when it returns (or throws: the exception is swallowed, the callback
  // is the caller's to guard).
  void enqueue(std::uint64_t seq, Job job);
  // Waits until nothing is in flight.
  void drain();

  std::uint64_t newest_sequence() const;
  // The oldest in-flight request's number; S_new + 1 when none.
  std::uint64_t oldest_sequence() const;
  unsigned workers() const { return static_cast<unsigned>(threads_.size()); }

 private:
  void work();
  void finish(std::uint64_t seq);

  mutable std::mutex mu_;
  std::condition_variable work_cv_;   // queue non-empty or stopping
  std::condition_variable drain_cv_;  // in-flight set became empty
  std::deque<std::pair<std::uint64_t, Job>> queue_;
  std::set<std::uint64_t> in_flight_;
  std::uint64_t newest_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace forein::offload::fpga
