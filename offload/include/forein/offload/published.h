// A value published as immutable versions: readers never block, a writer
// swaps in a new version and retires the old one once no reader can still
// be reaching it.
//
// Why not std::atomic<std::shared_ptr>: libstdc++ 12 unlocks it with a
// relaxed store after a load, which is a data race under the C++ memory
// model (ThreadSanitizer reports it against the next store).
//
// Scheme: userspace RCU with two reader counters. A reader adds itself to
// the counter of the current epoch's parity, reads the current box, and
// leaves. A writer exchanges the box, then twice flips the epoch and waits
// for the counter of the old parity to drain; after both flips no reader
// can still hold the old box, so it is deleted. A reader that wants to keep
// a version past its read section copies the box's shared_ptr (load()).
// Counters are striped over cache lines by thread so readers on different
// cores do not share one.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace forein::offload {

template <typename T>
class Published {
 public:
  explicit Published(std::shared_ptr<const T> initial) : current_(new Box{std::move(initial)}) {}
  ~Published() { delete current_.load(std::memory_order_relaxed); }
  Published(const Published&) = delete;
  Published& operator=(const Published&) = delete;

  // Runs fn(const T&) on the current version inside a read section and
  // returns its result. fn must be short, must not publish, and must not
  // return a reference or pointer into the version (use load() to keep one).
  template <typename Fn>
  decltype(auto) read(Fn&& fn) const {
    ReadSection section(*this);
    return std::forward<Fn>(fn)(*section.box->value);
  }

  // The current version, kept alive for as long as the caller holds it.
  std::shared_ptr<const T> load() const {
    ReadSection section(*this);
    return section.box->value;
  }

  // Makes `next` current. Waits (briefly: read sections are short) for the
  // readers that may still see the old box, then frees the box; the old
  // version itself lives on while load()ers hold it. Writers serialize here.
  void publish(std::shared_ptr<const T> next) {
    std::lock_guard lock(write_mu_);
    const Box* old = current_.exchange(new Box{std::move(next)}, std::memory_order_seq_cst);
    for (int flip = 0; flip < 2; ++flip) {
      const std::uint64_t epoch = epoch_.load(std::memory_order_seq_cst);
      epoch_.store(epoch + 1, std::memory_order_seq_cst);
      wait_for_readers(epoch & 1);
    }
    delete old;
  }

 private:
  struct Box {
    std::shared_ptr<const T> value;
  };
  static constexpr std::size_t kStripes = 16;
  struct alignas(64) Counter {
    std::atomic<std::uint64_t> readers{0};
  };

  static std::size_t stripe_of_this_thread() {
    static std::atomic<std::size_t> next_stripe{0};
    thread_local const std::size_t stripe = next_stripe.fetch_add(1, std::memory_order_relaxed) % kStripes;
    return stripe;
  }

  struct ReadSection {
    explicit ReadSection(const Published& p)
        : counter(p.counters_[p.epoch_.load(std::memory_order_seq_cst) & 1][stripe_of_this_thread()]
                      .readers) {
      counter.fetch_add(1, std::memory_order_seq_cst);
      box = p.current_.load(std::memory_order_seq_cst);
    }
    ~ReadSection() { counter.fetch_sub(1, std::memory_order_release); }
    ReadSection(const ReadSection&) = delete;
    ReadSection& operator=(const ReadSection&) = delete;

    std::atomic<std::uint64_t>& counter;
    const Box* box = nullptr;
  };

  void wait_for_readers(std::uint64_t parity) const {
    for (const Counter& c : counters_[parity]) {
      while (c.readers.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
    }
  }

  std::atomic<const Box*> current_;
  std::atomic<std::uint64_t> epoch_{0};
  mutable std::array<std::array<Counter, kStripes>, 2> counters_;
  std::mutex write_mu_;
};

}  // namespace forein::offload
