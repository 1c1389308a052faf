// Epoch-based reclamation of node versions and LIDs (section 3.2, [39]).
// Each CPU thread runs one operation at a time and exposes its current
// operation sequence number in a slot; the accelerator exposes its newest
// and oldest in-flight request sequence numbers. A retired batch is tagged
// with a vector timestamp (every busy CPU slot's sequence number and the
// accelerator's newest) and freed once every tagged CPU operation has
// ended and the accelerator's oldest in-flight request is newer.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "forein/fpga/memory_port.h"

namespace forein::offload::fpga {

struct Retired {
  std::byte* buffer = nullptr;  // a node version no longer reachable by new requests
  Lid lid = kNoLid;             // a LID to recycle with it (split nodes), or none
};

class Epochs {
 public:
  struct Slots;  // shared with the threads' registrations (epochs.cc)
  using FreeFn = std::function<void(const Retired&)>;

  Epochs(AcceleratorLink* link, FreeFn free);
  // Frees everything still retired: no request may be running.
  ~Epochs();
  Epochs(const Epochs&) = delete;
  Epochs& operator=(const Epochs&) = delete;

  // Marks the calling thread busy for one operation (nested guards share
  // the outer one's sequence number). The thread's slot is claimed on its
  // first operation and released when the thread exits.
  class Guard {
   public:
    explicit Guard(Epochs& epochs);
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    std::atomic<std::uint64_t>* state_;
    unsigned* depth_;
  };

  // Call after the change that unlinked these versions is visible to new
  // requests (released).
  void retire(std::vector<Retired> batch);
  // Frees every retired batch no CPU operation or accelerator request can
  // still reach; returns the number of buffers freed.
  std::size_t collect();
  std::size_t pending() const;
  // Frees everything retired, reachable or not (teardown only).
  void free_all();

 private:
  struct Batch {
    std::vector<std::pair<std::uint32_t, std::uint64_t>> busy;  // slot, sequence
    std::uint64_t accelerator = 0;
    std::vector<Retired> items;
  };
  bool reachable(const Batch& batch, std::uint64_t accel_oldest) const;

  AcceleratorLink* link_;
  FreeFn free_;
  std::shared_ptr<Slots> slots_;
  mutable std::mutex mutex_;
  std::vector<Batch> batches_;
  std::size_t pending_ = 0;
};

}  // namespace forein::offload::fpga
