// Conformance 5: usage() is in the hardware's units and matches the plan.
//
// For every backend of conformance_backends() (the registered ones, then any
// a test file adds), with the default configuration, an explicit capacity
// (4096 records: a power of two, as switch_visibility's table needs; scaled
// by units_per_record for a backend counting cache or DPA bytes) and a small
// budget: usage().unit == info.unit; capacity is config.capacity, else
// info.default_capacity (a backend that holds nothing, default_capacity 0,
// reports 0 whatever it is configured with); used <= capacity at every step;
// once nothing is pending, used equals the manager's stats().target_entries
// (capacity > 0), and also after writes, while batches are pending under an
// install delay, and after they are all applied. The published image fits
// info.max_image_bytes(used) and max_image_bytes(capacity).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>

#include "conformance_fixture.h"
#include "support/rng.h"
#include "support/seed.h"

namespace {

using namespace std::chrono_literals;
using forein::testing::Rng;
using namespace forein::offload;
using namespace forein::offload::conformance;

void check_usage(ConformanceTree& t, std::uint64_t want_capacity, bool settled) {
  const BackendInfo& info = t.backend.info();
  const BackendUsage u = t.backend.usage();
  const ManagerStats s = t.manager.stats();
  INFO(info.name << ": used " << u.used << " of " << u.capacity << " " << u.unit << ", target "
                 << s.target_entries << ", pending " << s.pending_batches);
  CHECK(u.unit == std::string(info.unit));
  CHECK(u.capacity == want_capacity);
  CHECK(u.used <= u.capacity);
  if (settled) {
    CHECK(s.pending_batches == 0);
    CHECK(s.failed_installs == 0);
    if (u.capacity > 0) CHECK(u.used == s.target_entries);
  }
  const std::size_t image = t.image_bytes().size();
  CHECK(image <= info.max_image_bytes(u.used));
  CHECK(image <= info.max_image_bytes(u.capacity));
}

}  // namespace

TEST_CASE("conformance: usage() in the hardware's units, equal to the plan once installed",
          "[conformance][usage]") {
  const std::uint64_t seed = forein::testing::test_seed("conformance usage");
  std::uint64_t index = 0;
  for (const BackendInfo* info : conformance_backends()) {
    DYNAMIC_SECTION(info->name) {
      Rng rng(seed + index);
      struct Case {
        const char* name;
        BackendConfig config;
      };
      BackendConfig explicit_capacity;
      explicit_capacity.capacity = 4096 * units_per_record(*info);
      BackendConfig small_budget;
      small_budget.capacity = 4096 * units_per_record(*info);
      small_budget.budget = 100 * units_per_record(*info);
      for (const Case& c : {Case{"default", BackendConfig{}}, Case{"capacity 4096", explicit_capacity},
                            Case{"capacity 4096, budget 100", small_budget}}) {
        INFO("config: " << c.name);
        const std::uint64_t want_capacity = !holds_records(*info) ? 0
                                            : c.config.capacity != 0 ? c.config.capacity
                                                                     : info->default_capacity;
        ManagerOptions options;
        options.install_delay = 1ms;
        options.install_delay_jitter = 2ms;
        options.delay_seed = rng.next();
        options.sample_rate = 1;
        ConformanceTree t(*info, c.config, options);
        check_usage(t, want_capacity, true);  // empty device: nothing planned yet
        CHECK(t.backend.usage().used == 0);
        bulk_load_ints(*t.tree, 8000, 5, 120);
        t.settle();
        check_usage(t, want_capacity, true);
        if (plans_records(*info)) CHECK(t.backend.usage().used > 0);
        if (c.config.budget != 0 && plans_records(*info)) CHECK(t.backend.usage().used <= c.config.budget);

        // Writes with sampled accesses; refreshes whose batches wait for the delay.
        for (int round = 0; round < 20; ++round) {
          for (int i = 0; i < 500; ++i) {
            const std::int64_t k = static_cast<std::int64_t>(rng.below(8000 * 5));
            const std::string key = int_key(k);
            if (rng.chance(1, 2)) {
              t.tree->put(key, std::string(120, 'p'));
            } else {
              t.tree->erase(key);
            }
            t.manager.record_access(forein::word_of(key));
          }
          t.manager.refresh();
          check_usage(t, want_capacity, false);
          t.clock.advance(std::chrono::microseconds(rng.below(3000)));
          t.manager.pump();
          check_usage(t, want_capacity, false);
        }
        t.manager.flush();
        check_usage(t, want_capacity, true);
        t.settle();
        check_usage(t, want_capacity, true);
        std::cout << "  " << info->name << " (" << c.name << "): " << t.backend.usage().used << " of "
                  << t.backend.usage().capacity << " " << t.backend.usage().unit << ", image "
                  << t.image_bytes().size() << " bytes\n";
      }
    }
    ++index;
  }
}
