// Optimistic readers against writers that move bytes around: keys of 1 to
// 40 bytes sharing prefix words (so key bytes live in the heap and searches
// compare whole keys), values of 0 to 120 bytes (in the slot or in the
// heap), replaced with other lengths, so node compaction, splits and merges
// run under readers all the time. A reader can check every value it gets:
// each value is a function of its key and its own length, so a torn read
// that slipped past validation would show up as a wrong byte. Under
// ThreadSanitizer this also checks that the read protocol has no data race
// by the C++ memory model.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "forein/key.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "support/seed.h"

namespace {

#if defined(__SANITIZE_THREAD__)
constexpr int kOpsPerThread = 20000;
#else
constexpr int kOpsPerThread = 150000;
#endif

const char* const kPrefixes[] = {"", "user:000", "user:000/profile/", "order:2026-11-24/"};

std::string key_of(std::uint64_t n) {
  const std::string p = kPrefixes[n % 4];
  const std::string digits = std::to_string(n * 2654435761u % 1000003);
  return (p + digits).substr(0, 40);
}

char value_byte(const std::string& key, std::size_t len, std::size_t i) {
  std::uint64_t h = len * 1099511628211u;
  for (char c : key) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211u;
  return static_cast<char>('!' + (h + i * 31) % 90);
}

std::string value_of(const std::string& key, std::size_t len) {
  std::string v(len, '\0');
  for (std::size_t i = 0; i < len; ++i) v[i] = value_byte(key, len, i);
  return v;
}

bool value_ok(const std::string& key, std::string_view v) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] != value_byte(key, v.size(), i)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("optimistic readers never see a torn key or value", "[concurrency][optimistic]") {
  const std::uint64_t seed = forein::testing::test_seed("optimistic readers never see a torn");
  auto tree = forein::Tree::create(std::make_unique<forein::MemoryPageStore>(4096));
  constexpr std::uint64_t kKeys = 6000;
  for (std::uint64_t n = 0; n < kKeys; n += 2) {
    const std::string k = key_of(n);
    tree->put(k, value_of(k, n % 121));
  }

  std::atomic<int> writers_left{2};
  std::mutex mu;
  std::vector<std::string> failures;
  auto fail = [&](std::string what) {
    std::lock_guard<std::mutex> lock(mu);
    if (failures.size() < 20) failures.push_back(std::move(what));
  };

  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(seed + 17 * w);
      for (int op = 0; op < kOpsPerThread; ++op) {
        const std::string k = key_of(rng() % kKeys);
        if (rng() % 4 == 0) {
          tree->erase(k);
        } else {
          tree->put(k, value_of(k, rng() % 121));
        }
      }
      writers_left.fetch_sub(1);
    });
  }
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(seed + 1000 + r);
      std::string v;
      while (writers_left.load() > 0) {
        if (rng() % 64 == 0) {
          // A scan: strictly ascending keys, every value intact.
          std::string prev;
          bool first = true;
          int seen = 0;
          const forein::ScanSpec spec{
              forein::KeyBound{key_of(rng() % kKeys), true}, std::nullopt,
              rng() % 2 ? forein::Direction::kForward : forein::Direction::kBackward};
          tree->scan(spec, [&](std::string_view k, std::string_view val) {
            const std::string key(k);
            if (!value_ok(key, val)) fail("scan: torn value under key " + key);
            if (!first && (spec.direction == forein::Direction::kForward ? prev >= key
                                                                         : prev <= key)) {
              fail("scan: keys out of order at " + key);
            }
            prev = key;
            first = false;
            return ++seen < 300;
          });
          continue;
        }
        const std::string k = key_of(rng() % kKeys);
        if (tree->get(k, &v) && !value_ok(k, v)) fail("get: torn value under key " + k);
      }
    });
  }
  for (auto& t : threads) t.join();
  INFO("seed " << seed << ", restarts " << tree->stats().restarts);
  for (const auto& f : failures) FAIL_CHECK(f);
  CHECK(failures.empty());
  tree->check();
}
