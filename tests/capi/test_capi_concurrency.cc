// Readers during publishes, through the C ABI: threads ask
// forein_offload_manager_hint while the writer refreshes with changing node
// tables (leaves split and merge). Every hint a reader gets names a node
// that was in some table the writer synced (never garbage), and every
// reader ends with hints. Runs under ThreadSanitizer (label concurrent).
#include <atomic>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "forein_offload.h"
#include "support/seed.h"

namespace {

// A root over `leaves` equal leaves; leaf ids start at `first_id`.
std::vector<forein_offload_node> table(int leaves, std::uint32_t first_id, std::uint64_t version) {
  std::vector<forein_offload_node> nodes;
  forein_offload_node root{};
  root.node = 1;
  root.level = 1;
  root.hi_inf = 1;
  root.version = version;
  nodes.push_back(root);
  const std::uint64_t step = ~std::uint64_t{0} / static_cast<std::uint64_t>(leaves) + 1;
  for (int i = 0; i < leaves; ++i) {
    forein_offload_node n{};
    n.node = first_id + static_cast<std::uint32_t>(i);
    n.lo = step * static_cast<std::uint64_t>(i);
    n.hi = step * static_cast<std::uint64_t>(i + 1);
    n.hi_inf = i == leaves - 1;
    n.version = version;
    nodes.push_back(n);
  }
  return nodes;
}

}  // namespace

TEST_CASE("capi: readers never block or see garbage while the writer publishes",
          "[capi][concurrent]") {
  const std::uint64_t seed = forein::testing::test_seed("capi concurrency");
  char err[256] = {0};
  forein_offload_config config;
  forein_offload_config_init(&config);
  config.capacity = 4000;
  forein_offload_manager* m =
      forein_offload_manager_create(forein_offload_backend_id("switch_lpm"), &config, err, sizeof err);
  REQUIRE(m != nullptr);

  // Tables alternate between 64 leaves (ids 100..163) and 96 (ids 200..295).
  std::vector<std::uint64_t> words;
  for (std::uint64_t i = 0; i < 4096; ++i) words.push_back(i * (~std::uint64_t{0} / 4096));

  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> bad{0}, hinted{0}, lookups{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&, r] {
      std::uint64_t x = seed + static_cast<std::uint64_t>(r) * 7919;
      while (!stop.load(std::memory_order_relaxed)) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        forein_offload_hints h;
        forein_offload_manager_hint(m, x, &h);
        for (const forein_offload_start_hint& one : {h.primary, h.secondary}) {
          const std::uint32_t n = one.node;
          const bool known = n == 0 || n == 1 || (n >= 100 && n < 164) || (n >= 200 && n < 296);
          if (!known) bad.fetch_add(1);
        }
        if (h.primary.node != 0) hinted.fetch_add(1, std::memory_order_relaxed);
        lookups.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (int round = 0; round < 40; ++round) {
    const auto nodes = round % 2 == 0 ? table(64, 100, 10 + static_cast<std::uint64_t>(round))
                                      : table(96, 200, 10 + static_cast<std::uint64_t>(round));
    REQUIRE(forein_offload_manager_sync_nodes(m, nodes.data(), nodes.size(), err, sizeof err) == 0);
    REQUIRE(forein_offload_manager_refresh(m, words.data(), words.size(), err, sizeof err) == 0);
    // The readers look up between publishes, however the threads are
    // scheduled (a refresh with unchanged words is quick: without this the
    // writer could finish before a reader ran).
    const std::uint64_t seen = lookups.load();
    while (lookups.load() < seen + 64) std::this_thread::yield();
  }
  stop = true;
  for (auto& t : readers) t.join();
  CHECK(bad.load() == 0);
  CHECK(hinted.load() > 0);
  forein_offload_stats st;
  forein_offload_manager_stats(m, &st);
  CHECK(st.refreshes == 40);
  CHECK(st.used == st.target_records);
  forein_offload_manager_destroy(m);
}
