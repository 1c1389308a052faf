// dpa store: NIC-side stitcher threads (DPA-Store 3.2.2). The host sends
// each patch's node updates as one batch to the queue of the partition it
// touches: COPY stitches fill nodes the host already allocated, then one
// CONNECT swaps a pointer (a child slot or the root) and makes them
// visible; RESET clears a leaf's insert buffer after an UPDATE-only patch.
//
// Partitions: the tree beneath the first level of inner nodes (the root's
// children); child i belongs to queue i mod stitchers, so updates in
// different partitions run in parallel and updates in one partition run
// in order. A batch that changes the root is fenced ("the stitch that
// installs an updated root node is blocked by a queue fence until earlier
// updates have completed"): it enters every queue, runs once all stitchers
// have reached it, and no stitcher passes it before it has run, so
// batches sent after it see the new root.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "dpa/store/nic_layout.h"

namespace forein::offload::dpa::detail {

struct Stitch {
  enum class Kind : std::uint8_t { kCopyLeaf, kCopyInner, kConnectChild, kConnectRoot, kReset };
  Kind kind = Kind::kCopyLeaf;
  NicLeaf* leaf = nullptr;       // kCopyLeaf, kReset
  LeafImage leaf_image;          // kCopyLeaf
  NicInner* inner = nullptr;     // kCopyInner; kConnectChild: the parent
  InnerLayout layout;            // kCopyInner
  std::vector<NicNode*> children;  // kCopyInner: child pointers
  std::size_t index = 0;         // kConnectChild: the child slot
  NicNode* target = nullptr;     // kConnectChild, kConnectRoot: the new node
};

struct StitchBatch {
  std::vector<Stitch> stitches;
  std::vector<NicNode*> retire;  // unlinked by this batch's CONNECT
  bool fenced = false;
  std::size_t partition = 0;
  // Fence state (fenced batches only).
  std::mutex mutex;
  std::condition_variable cv;
  std::size_t arrived = 0;
  bool done = false;
};

struct StitchCounters {
  std::atomic<std::uint64_t> copies{0}, connects{0}, resets{0}, bytes{0};
  // DPA lines written by CONNECT (the pointer's line) and RESET (the
  // leaf's metadata line and its buffer's lines) stitches; COPY payloads
  // are counted in bytes.
  std::atomic<std::uint64_t> lines{0};
};

class Stitchers {
 public:
  // on_done runs on the stitcher thread after a batch's stitches.
  Stitchers(std::size_t threads, std::atomic<NicNode*>& root, std::function<void(StitchBatch&)> on_done);
  ~Stitchers();
  Stitchers(const Stitchers&) = delete;
  Stitchers& operator=(const Stitchers&) = delete;

  void submit(std::shared_ptr<StitchBatch> batch);
  std::size_t threads() const { return queues_.size(); }
  const StitchCounters& counters() const { return counters_; }

 private:
  struct Queue {
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<std::shared_ptr<StitchBatch>> batches;
  };
  void run(std::size_t self);
  void apply(StitchBatch& batch);
  void pass_fence(std::size_t self, StitchBatch& batch);

  std::atomic<NicNode*>& root_;
  std::function<void(StitchBatch&)> on_done_;
  std::mutex submit_mutex_;
  std::vector<std::unique_ptr<Queue>> queues_;
  StitchCounters counters_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace forein::offload::dpa::detail
