#include "core/control_plane.h"

#include <utility>

namespace forein::offload {

std::uint64_t DelayedControlPlane::enqueue(ChangeBatch batch, ManagerDuration due) {
  std::lock_guard lock(mu_);
  const std::uint64_t seq = next_seq_++;
  queue_.push_back(Batch{seq, due, std::move(batch)});
  return seq;
}

PumpResult DelayedControlPlane::pump(ManagerDuration now) { return apply_head(true, now); }

PumpResult DelayedControlPlane::flush() { return apply_head(false, ManagerDuration{0}); }

PumpResult DelayedControlPlane::apply_head(bool only_due, ManagerDuration now) {
  std::lock_guard lock(mu_);
  PumpResult result;
  while (!queue_.empty() && (!only_due || queue_.front().due <= now)) {
    Batch& batch = queue_.front();
    const BackendStatus status = device_.apply(batch.batch);
    if (listener_ != nullptr) listener_->on_applied(batch.batch, status);
    if (batch.batch.kind == BatchKind::kInstall) {
      if (status == BackendStatus::kOk) {
        result.installed += batch.batch.records;
      } else {
        ++result.failed_installs;
      }
    } else if (status == BackendStatus::kOk) {
      result.removed += batch.batch.records;
    }
    applied_seq_ = batch.seq;
    ++result.batches;
    queue_.pop_front();
  }
  result.applied_seq = applied_seq_;
  return result;
}

std::shared_ptr<const BackendImage> DelayedControlPlane::set_listener(ApplyListener* listener) {
  std::lock_guard lock(mu_);
  listener_ = listener;
  return device_.load_image();
}

std::size_t DelayedControlPlane::pending() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

std::uint64_t DelayedControlPlane::enqueued_seq() const {
  std::lock_guard lock(mu_);
  return next_seq_ - 1;
}

std::uint64_t DelayedControlPlane::applied_seq() const {
  std::lock_guard lock(mu_);
  return applied_seq_;
}

}  // namespace forein::offload
