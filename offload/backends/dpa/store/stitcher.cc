#include "dpa/store/stitcher.h"

namespace forein::offload::dpa::detail {

Stitchers::Stitchers(std::size_t threads, std::atomic<NicNode*>& root, std::function<void(StitchBatch&)> on_done)
    : root_(root), on_done_(std::move(on_done)) {
  for (std::size_t i = 0; i < threads; ++i) queues_.push_back(std::make_unique<Queue>());
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this, i] { run(i); });
}

Stitchers::~Stitchers() {
  stop_.store(true);
  for (auto& q : queues_) {
    std::lock_guard<std::mutex> lock(q->mutex);
    q->cv.notify_all();
  }
  for (auto& t : threads_) t.join();
}

void Stitchers::submit(std::shared_ptr<StitchBatch> batch) {
  // One submission at a time: two fenced batches must enter every queue in
  // the same order, or the stitchers would wait on each other.
  std::lock_guard<std::mutex> order(submit_mutex_);
  if (batch->fenced) {
    for (auto& q : queues_) {
      std::lock_guard<std::mutex> lock(q->mutex);
      q->batches.push_back(batch);
      q->cv.notify_one();
    }
    return;
  }
  Queue& q = *queues_[batch->partition % queues_.size()];
  std::lock_guard<std::mutex> lock(q.mutex);
  q.batches.push_back(std::move(batch));
  q.cv.notify_one();
}

void Stitchers::run(std::size_t self) {
  Queue& q = *queues_[self];
  for (;;) {
    std::shared_ptr<StitchBatch> batch;
    {
      std::unique_lock<std::mutex> lock(q.mutex);
      q.cv.wait(lock, [&] { return stop_.load() || !q.batches.empty(); });
      if (q.batches.empty()) return;  // stopping, queue drained
      batch = q.batches.front();
      q.batches.pop_front();
    }
    if (batch->fenced) {
      pass_fence(self, *batch);
    } else {
      apply(*batch);
      on_done_(*batch);
    }
  }
}

// Stitcher 0 runs a fenced batch once every stitcher has reached it; the
// others wait until it has run.
void Stitchers::pass_fence(std::size_t self, StitchBatch& batch) {
  std::unique_lock<std::mutex> lock(batch.mutex);
  ++batch.arrived;
  batch.cv.notify_all();
  if (self == 0) {
    batch.cv.wait(lock, [&] { return batch.arrived == queues_.size(); });
    lock.unlock();
    apply(batch);
    on_done_(batch);
    lock.lock();
    batch.done = true;
    batch.cv.notify_all();
  } else {
    batch.cv.wait(lock, [&] { return batch.done; });
  }
}

void Stitchers::apply(StitchBatch& batch) {
  for (Stitch& s : batch.stitches) {
    switch (s.kind) {
      case Stitch::Kind::kCopyLeaf:
        s.leaf->image = s.leaf_image;
        counters_.copies.fetch_add(1);
        counters_.bytes.fetch_add(kLeafStitchBytes);
        break;
      case Stitch::Kind::kCopyInner:
        s.inner->layout = std::move(s.layout);
        for (std::size_t i = 0; i < s.children.size(); ++i) {
          s.inner->children[i].store(s.children[i], std::memory_order_relaxed);
        }
        counters_.copies.fetch_add(1);
        counters_.bytes.fetch_add(s.inner->bytes);
        break;
      case Stitch::Kind::kConnectChild:
        // seq_cst (a release): the COPYs above become visible with the
        // pointer, and the epochs read the counters after it.
        s.inner->children[s.index].store(s.target);
        counters_.connects.fetch_add(1);
        counters_.lines.fetch_add(1);
        break;
      case Stitch::Kind::kConnectRoot:
        root_.store(s.target);
        counters_.connects.fetch_add(1);
        counters_.lines.fetch_add(1);
        break;
      case Stitch::Kind::kReset:
        for (std::uint32_t i = 0; i < s.leaf->capacity; ++i) s.leaf->entries[i].tag.store(0);
        s.leaf->generation.fetch_add(1);
        s.leaf->committed.store(0);
        s.leaf->reserved.store(0);
        counters_.resets.fetch_add(1);
        counters_.lines.fetch_add(s.leaf->bytes / kLine);
        break;
    }
  }
}

}  // namespace forein::offload::dpa::detail
