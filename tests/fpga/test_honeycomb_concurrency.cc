// Honeycomb's store under concurrency: writer threads (each owning a key
// subset it checks after every write) and CPU reader threads (scans must be
// sorted and duplicate-free, values must belong to their keys) run at once
// while leaves merge and split and the tree grows; the final dump is the
// union of the writers' models; retired buffers are freed. Run under
// ThreadSanitizer too (the "concurrent" label).
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "forein/fpga/reader.h"
#include "forein/fpga/store.h"
#include "support/rng.h"
#include "support/seed.h"

using namespace forein::offload::fpga;
using forein::testing::Rng;

namespace Catch {
template <>
struct StringMaker<Item> {
  static std::string convert(const Item& it) { return "{" + it.key + "=" + it.value + "}"; }
};
}  // namespace Catch

namespace {

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int kScale = 4;  // sanitizers: fewer operations
#else
constexpr int kScale = 1;
#endif

std::string key_of(std::uint64_t k) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "key%013llu", static_cast<unsigned long long>(k));
  return buf;
}
// A value names its key, so readers can check what they see.
std::string value_of(std::uint64_t k, std::uint64_t gen) { return key_of(k).substr(3) + "/" + std::to_string(gen); }
bool value_matches(const Item& it) { return it.value.compare(0, 13, it.key, 3, 13) == 0; }

void run_mixed(StoreOptions options, int writers, int readers, std::uint64_t keys, int ops_per_writer,
               std::uint64_t seed) {
  Store store(options);
  std::vector<Item> load;
  for (std::uint64_t k = 0; k < keys; k += 4) load.push_back({key_of(k), value_of(k, 0)});
  store.bulk_load(load, 0.9);  // nearly full leaves: inserts split soon

  std::vector<std::map<std::string, std::string>> models(static_cast<std::size_t>(writers));
  for (const Item& it : load) {
    const std::uint64_t k = std::stoull(it.key.substr(3));
    models[k % static_cast<std::uint64_t>(writers)][it.key] = it.value;
  }
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::atomic<std::uint64_t> scans{0};

  std::vector<std::thread> threads;
  for (int t = 0; t < writers; ++t) {
    threads.emplace_back([&, t] {
      Rng rng(seed + static_cast<std::uint64_t>(t));
      auto& model = models[static_cast<std::size_t>(t)];
      for (int op = 1; op <= ops_per_writer; ++op) {
        const std::uint64_t k = rng.below(keys / static_cast<std::uint64_t>(writers)) * static_cast<std::uint64_t>(writers) +
                                static_cast<std::uint64_t>(t);
        const std::string key = key_of(k), value = value_of(k, static_cast<std::uint64_t>(op));
        const bool present = model.count(key) != 0;
        bool ok = true;
        switch (rng.below(4)) {
          case 0:
            ok = store.put(key, value) == !present;
            if (!present) model[key] = value;
            break;
          case 1:
            ok = store.update(key, value) == present;
            if (present) model[key] = value;
            break;
          case 2:
            ok = store.erase(key) == present;
            model.erase(key);
            break;
          default:
            store.upsert(key, value);
            model[key] = value;
        }
        // The write was released before it returned: a read sees it.
        const auto got = store.get(key);
        const auto want = model.find(key);
        ok = ok && (want == model.end() ? !got.has_value() : got == want->second);
        if (!ok) failures.fetch_add(1);
      }
    });
  }
  for (int r = 0; r < readers; ++r) {
    threads.emplace_back([&, r] {
      Rng rng(seed * 31 + static_cast<std::uint64_t>(r));
      Version last_rv = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        // In-order release: GRV never moves backwards.
        const Version rv = store.read_version();
        if (rv < last_rv) failures.fetch_add(1);
        last_rv = rv;
        const std::uint64_t lo = rng.below(keys);
        const auto res = store.scan(key_of(lo), key_of(lo + 1 + rng.below(600)));
        for (std::size_t i = 0; i < res.items.size(); ++i) {
          if (!value_matches(res.items[i]) || (i > 0 && !(res.items[i - 1].key < res.items[i].key))) {
            failures.fetch_add(1);
          }
        }
        scans.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (int t = 0; t < writers; ++t) threads[static_cast<std::size_t>(t)].join();
  stop = true;
  for (std::size_t t = static_cast<std::size_t>(writers); t < threads.size(); ++t) threads[t].join();

  CHECK(failures.load() == 0);
  CHECK(scans.load() > 0);
  std::map<std::string, std::string> all;
  for (const auto& m : models) all.insert(m.begin(), m.end());
  std::vector<Item> want;
  for (const auto& [k, v] : all) want.push_back({k, v});
  REQUIRE(store.dump() == want);
  store.collect_garbage();
  const StoreStats st = store.stats();
  INFO("restarts " << st.restarts << " splits " << st.splits << " merges " << st.merges);
  CHECK(st.splits > 0);
  CHECK(st.merges > 0);
  CHECK(st.buffers_retired > 0);
  CHECK(st.buffers_freed > 0);
  // Nothing in flight now: every retired buffer can go.
  CHECK(st.buffers_freed == st.buffers_retired);
  if (options.mvcc) CHECK(store.read_version() == store.write_version());
}

}  // namespace

TEST_CASE("honeycomb concurrency: writers and readers with splits, merges and reclamation", "[honeycomb]") {
  const std::uint64_t seed = forein::testing::test_seed("honeycomb concurrency");
  run_mixed({}, 3, 2, 40000, 12000 / kScale, seed);
}

TEST_CASE("honeycomb concurrency: a small log block (more merges) and variable threads", "[honeycomb]") {
  const std::uint64_t seed = forein::testing::test_seed("honeycomb concurrency small log");
  StoreOptions options;
  options.log_block_bytes = 128;
  run_mixed(options, 3, 1, 8000, 15000 / kScale, seed);
}

TEST_CASE("honeycomb concurrency: MVCC off keeps single-key operations correct", "[honeycomb]") {
  const std::uint64_t seed = forein::testing::test_seed("honeycomb concurrency mvcc off");
  StoreOptions options;
  options.mvcc = false;
  run_mixed(options, 2, 2, 20000, 15000 / kScale, seed);
}

TEST_CASE("honeycomb concurrency: readers at a saved read version while writers run", "[honeycomb]") {
  // Readers that pin nothing must use Store::scan; this one checks that a
  // thread's own snapshot reads (rv = GRV at its start) are consistent:
  // every writer bumps one counter key per write in a fixed order, so a
  // snapshot sees them non-increasing along the key order.
  Store store;
  constexpr int kCounters = 64;
  for (int i = 0; i < kCounters; ++i) store.put(key_of(static_cast<std::uint64_t>(i)), "0");
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::thread writer([&] {
    for (int round = 1; round <= 400 / kScale; ++round) {
      for (int i = 0; i < kCounters; ++i) store.update(key_of(static_cast<std::uint64_t>(i)), std::to_string(round));
    }
    stop = true;
  });
  std::thread reader([&] {
    while (!stop.load()) {
      const auto items = store.scan(key_of(0), key_of(kCounters)).items;
      if (items.size() != kCounters) failures.fetch_add(1);
      for (std::size_t i = 1; i < items.size(); ++i) {
        if (std::stoi(items[i].value) > std::stoi(items[i - 1].value)) failures.fetch_add(1);
        if (std::stoi(items[0].value) - std::stoi(items[i].value) > 1) failures.fetch_add(1);
      }
    }
  });
  writer.join();
  reader.join();
  CHECK(failures.load() == 0);
}
