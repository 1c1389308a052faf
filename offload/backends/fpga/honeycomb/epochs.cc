// Epoch-based reclamation (epochs.h).
#include "fpga/honeycomb/epochs.h"

#include <array>
#include <list>

#include "forein/error.h"

namespace forein::offload::fpga {

// A slot's state word: sequence << 1 | busy. The sequence lives in the
// slot, not the thread, so it only grows even when slots are reused.
struct Epochs::Slots {
  static constexpr std::size_t kCount = 512;
  std::array<std::atomic<bool>, kCount> claimed{};
  std::array<std::atomic<std::uint64_t>, kCount> state{};
  std::atomic<std::size_t> high_water{0};  // slots [0, high_water) may be claimed
};

namespace {

// The calling thread's slots, one per Epochs instance it has used; released
// at thread exit. shared_ptr keeps a slot array alive past its Epochs.
struct Registration {
  std::shared_ptr<Epochs::Slots> slots;
  std::size_t index;
  unsigned depth = 0;
};
struct ThreadSlots {
  std::list<Registration> regs;  // stable addresses: guards keep &depth
  ~ThreadSlots() {
    for (Registration& r : regs) {
      const std::uint64_t s = r.slots->state[r.index].load(std::memory_order_relaxed);
      r.slots->state[r.index].store(s & ~std::uint64_t{1}, std::memory_order_release);
      r.slots->claimed[r.index].store(false, std::memory_order_release);
    }
  }
};
thread_local ThreadSlots thread_slots;

Registration& registration(const std::shared_ptr<Epochs::Slots>& slots) {
  auto& regs = thread_slots.regs;
  for (Registration& r : regs) {
    if (r.slots == slots) return r;
  }
  // Drop registrations of slot arrays whose Epochs is gone.
  std::erase_if(regs, [](const Registration& r) { return r.slots.use_count() == 1; });
  for (std::size_t i = 0; i < Epochs::Slots::kCount; ++i) {
    bool expected = false;
    if (slots->claimed[i].compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
      std::size_t hw = slots->high_water.load(std::memory_order_relaxed);
      while (hw < i + 1 && !slots->high_water.compare_exchange_weak(hw, i + 1, std::memory_order_acq_rel)) {
      }
      regs.push_back({slots, i, 0});
      return regs.back();
    }
  }
  throw Error("honeycomb: more threads than epoch slots");
}

}  // namespace

Epochs::Epochs(AcceleratorLink* link, FreeFn free)
    : link_(link), free_(std::move(free)), slots_(std::make_shared<Slots>()) {}

Epochs::~Epochs() { free_all(); }

void Epochs::free_all() {
  std::vector<Batch> all;
  {
    std::lock_guard lock(mutex_);
    all.swap(batches_);
    pending_ = 0;
  }
  for (const Batch& b : all) {
    for (const Retired& r : b.items) free_(r);
  }
}

Epochs::Guard::Guard(Epochs& epochs) {
  Registration& r = registration(epochs.slots_);
  state_ = &r.slots->state[r.index];
  depth_ = &r.depth;
  if ((*depth_)++ == 0) {
    const std::uint64_t seq = (state_->load(std::memory_order_relaxed) >> 1) + 1;
    // seq_cst, like the page-table, root and GRV loads that follow and the
    // writers' remap / GRV stores and slot loads in retire(): either a
    // retiring writer sees this operation busy, or this operation sees
    // the change that unlinked what is retired.
    state_->store(seq << 1 | 1, std::memory_order_seq_cst);
  }
}

Epochs::Guard::~Guard() {
  if (--*depth_ == 0) {
    state_->store(state_->load(std::memory_order_relaxed) & ~std::uint64_t{1}, std::memory_order_release);
  }
}

void Epochs::retire(std::vector<Retired> batch) {
  if (batch.empty()) return;
  // The unlinking stores (seq_cst) happened before these seq_cst loads.
  Batch b;
  const std::size_t hw = slots_->high_water.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < hw; ++i) {
    const std::uint64_t s = slots_->state[i].load(std::memory_order_seq_cst);
    if ((s & 1) != 0) b.busy.emplace_back(static_cast<std::uint32_t>(i), s >> 1);
  }
  b.accelerator = link_ != nullptr ? link_->newest_sequence() : 0;
  b.items = std::move(batch);
  std::lock_guard lock(mutex_);
  pending_ += b.items.size();
  batches_.push_back(std::move(b));
}

bool Epochs::reachable(const Batch& batch, std::uint64_t accel_oldest) const {
  for (const auto& [slot, seq] : batch.busy) {
    const std::uint64_t s = slots_->state[slot].load(std::memory_order_acquire);
    if ((s >> 1) == seq && (s & 1) != 0) return true;  // that operation still runs
  }
  return link_ != nullptr && !(batch.accelerator < accel_oldest);
}

std::size_t Epochs::collect() {
  std::vector<Batch> done;
  {
    std::lock_guard lock(mutex_);
    if (batches_.empty()) return 0;
    const std::uint64_t oldest = link_ != nullptr ? link_->oldest_sequence() : 0;
    std::vector<Batch> keep;
    for (Batch& b : batches_) (reachable(b, oldest) ? keep : done).push_back(std::move(b));
    batches_ = std::move(keep);
    for (const Batch& b : done) pending_ -= b.items.size();
  }
  std::size_t n = 0;
  for (const Batch& b : done) {
    for (const Retired& r : b.items) {
      free_(r);
      ++n;
    }
  }
  return n;
}

std::size_t Epochs::pending() const {
  std::lock_guard lock(mutex_);
  return pending_;
}

}  // namespace forein::offload::fpga
