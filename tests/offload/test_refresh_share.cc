// The background refresh's CPU bound (ManagerOptions::max_refresh_share):
// refreshes whose plan is expensive space out so that the manager's thread
// takes at most that share of a core, and a cheap refresh keeps the period.
#include <catch2/catch.hpp>

#include <time.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "forein/offload/backend.h"
#include "forein/offload/manager.h"
#include "forein/offload/tree_source.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "manager_fixture.h"
#include "switch_lpm/switch_lpm_backend.h"

namespace {

using namespace forein::offload;
using namespace std::chrono_literals;
using forein::offload::testing::int_key;

constexpr auto kBurn = 30ms;  // the slow planner's CPU time per plan

std::chrono::nanoseconds thread_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// switch_lpm's planner, spending kBurn of its thread's CPU on every plan.
class SlowPlanner final : public Planner {
 public:
  explicit SlowPlanner(std::unique_ptr<Planner> inner) : inner_(std::move(inner)) {}
  PlanDiff plan(const PlanInput& input) override {
    const auto start = thread_cpu();
    volatile std::uint64_t spin = 0;
    while (thread_cpu() - start < kBurn) spin = spin + 1;
    return inner_->plan(input);
  }
  ChangeBatch full_target() const override { return inner_->full_target(); }
  void reset() override { inner_->reset(); }

 private:
  std::unique_ptr<Planner> inner_;
};

const BackendInfo& slow_switch_lpm() {
  static const BackendInfo info = [] {
    BackendInfo i = kSwitchLpmBackend;
    i.make_planner = [](const BackendConfig& c) -> std::unique_ptr<Planner> {
      return std::make_unique<SlowPlanner>(kSwitchLpmBackend.make_planner(c));
    };
    return i;
  }();
  return info;
}

// A manager refreshing every millisecond on its own thread, planning at
// every refresh (skip_unchanged off, so every refresh costs kBurn), until
// it has refreshed `refreshes` times; returns its stats then.
ManagerStats run_background(double share, std::uint64_t refreshes) {
  Backend backend(slow_switch_lpm());
  ManagerOptions options;
  options.refresh_period = 1ms;
  options.pump_period = 1ms;
  options.skip_unchanged = false;
  options.max_refresh_share = share;
  OffloadManager manager(backend, options);
  forein::TreeOptions to;
  to.observer = &manager;
  auto tree = forein::Tree::create(std::make_unique<forein::MemoryPageStore>(4096), to);
  std::vector<std::pair<std::string, std::string>> rows;
  for (std::int64_t i = 0; i < 2000; ++i) rows.emplace_back(int_key(i), "v");
  tree->bulk_load(rows);
  TreeIndexSource source(*tree);
  manager.attach(source);
  // Wait for the thread's refreshes (a deadline, not a synchronization:
  // the stats say when they happened).
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  ManagerStats s = manager.stats();
  while (s.refreshes < refreshes && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
    s = manager.stats();
  }
  manager.detach();
  REQUIRE(s.refreshes >= refreshes);
  return s;
}

}  // namespace

TEST_CASE("refresh share: the interval is the period, or the cost over the share", "[manager][share]") {
  CHECK(background_refresh_interval(100ms, 1ms, 0.05) == 100ms);   // 20 ms < period
  CHECK(background_refresh_interval(100ms, 10ms, 0.05) == 200ms);  // 5 % of a core
  CHECK(background_refresh_interval(100ms, 400ms, 0.05) == 8s);
  CHECK(background_refresh_interval(100ms, 400ms, 0.0) == 100ms);  // unbounded
  CHECK(background_refresh_interval(100ms, 0ms, 0.05) == 100ms);
  CHECK(background_refresh_interval(100ms, 400ms, 2.0) == 400ms);  // a share above 1 is a whole core
  CHECK(background_refresh_interval(100ms, std::chrono::hours(1000), 0.01) == std::chrono::hours(1));
}

TEST_CASE("refresh share: an expensive plan spaces the background refreshes out", "[manager][share]") {
  const ManagerStats s = run_background(0.25, 2);
  // Each refresh cost at least kBurn of CPU, so at 25 % of a core the next
  // is due at least 4 kBurn later.
  CHECK(s.last_refresh_cpu_us >= 30000);
  CHECK(s.refresh_cpu_us >= s.refreshes * 30000);
  CHECK(s.refresh_interval_ms >= 120);
}

TEST_CASE("refresh share: without a bound the period stays", "[manager][share]") {
  const ManagerStats s = run_background(0.0, 2);
  CHECK(s.last_refresh_cpu_us >= 30000);
  CHECK(s.refresh_interval_ms == 1);
}
