// Concurrency stress: writers and readers on one tree at once. Every check
// here holds whatever the interleaving:
// - writers on disjoint key stripes keep exact serial oracles;
// - values encode their key, writer and a counter, so any reader can tell a
//   value belongs to its key;
// - scans come in strict order without duplicates, inside their bounds, and
//   return every key that was present for the whole scan;
// - hints (stale, from leaf_for() long ago, or garbage) never change results;
// - racing writers on shared keys leave each key as some writer's last
//   operation on it, and put/erase return values add up.
// Op counts are fixed (FOREIN_STRESS_OPS overrides the per-writer count;
// ThreadSanitizer builds default to fewer). Catch2 assertions are not
// thread-safe, so threads record failures and the main thread asserts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <latch>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "forein/error.h"
#include "forein/key.h"
#include "forein/node_interval.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "support/seed.h"

#if defined(__SANITIZE_THREAD__)
#define FOREIN_TEST_TSAN 1
#elif defined(__SANITIZE_ADDRESS__)
#define FOREIN_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FOREIN_TEST_TSAN 1
#elif __has_feature(address_sanitizer)
#define FOREIN_TEST_ASAN 1
#endif
#endif

namespace {

using forein::Direction;
using forein::KeyBound;
using forein::ScanSpec;
using forein::Tree;

constexpr std::uint64_t kIndexId = 77;

// Per-writer op count: FOREIN_STRESS_OPS, else 50k (10k under TSan, 20k
// under ASan).
std::uint64_t stress_ops() {
  if (const char* env = std::getenv("FOREIN_STRESS_OPS"); env != nullptr && *env != '\0') {
    const auto n = std::strtoull(env, nullptr, 10);
    if (n > 0) return n;
  }
#if defined(FOREIN_TEST_TSAN)
  return 10000;
#elif defined(FOREIN_TEST_ASAN)
  return 20000;
#else
  return 50000;
#endif
}

class Failures {
 public:
  void add(const std::string& what) {
    count_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(mu_);
    if (messages_.size() < 30) messages_.push_back(what);
  }
  std::size_t count() const { return count_.load(); }
  void report() {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& m : messages_) UNSCOPED_INFO(m);
  }

 private:
  std::atomic<std::size_t> count_{0};
  std::mutex mu_;
  std::vector<std::string> messages_;
};

// Runs fn on a thread, turning exceptions into failures.
template <typename Fn>
std::thread spawn(Failures& failures, const std::string& name, Fn fn) {
  return std::thread([&failures, name, fn]() mutable {
    try {
      fn();
    } catch (const std::exception& e) {
      failures.add(name + " threw: " + e.what());
    } catch (...) {
      failures.add(name + " threw a non-standard exception");
    }
  });
}

// Counts events from any thread; checks the index id.
class CountingObserver final : public forein::NodeObserver {
 public:
  void on_node_event(const forein::NodeEvent& e) override {
    events.fetch_add(1, std::memory_order_relaxed);
    if (e.interval.index != kIndexId) bad.fetch_add(1, std::memory_order_relaxed);
  }
  std::atomic<std::uint64_t> events{0};
  std::atomic<std::uint64_t> bad{0};
};

// Self-validating values: "k=<key>;w=<writer>;c=<counter>;" + padding whose
// length and letter follow from key and counter.
std::string make_value(std::int64_t k, unsigned w, std::uint64_t c, std::size_t max_pad) {
  std::string v = "k=" + std::to_string(k) + ";w=" + std::to_string(w) + ";c=" + std::to_string(c) + ";";
  v.append(static_cast<std::size_t>(c % (max_pad + 1)),
           static_cast<char>('a' + static_cast<std::uint64_t>(k + static_cast<std::int64_t>(c)) % 26));
  return v;
}

bool parse_number(std::string_view& s, std::uint64_t& out) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || p == s.data()) return false;
  s.remove_prefix(static_cast<std::size_t>(p - s.data()));
  return true;
}

bool eat(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// True if v is a value some writer could have stored under key k.
bool valid_value(std::int64_t k, std::string_view v, std::size_t max_pad) {
  std::string_view s = v;
  std::uint64_t w = 0, c = 0;
  if (!eat(s, "k=" + std::to_string(k) + ";w=")) return false;
  if (!parse_number(s, w) || !eat(s, ";c=") || !parse_number(s, c)) return false;
  return make_value(k, static_cast<unsigned>(w), c, max_pad) == v;
}

std::string hex(std::string_view s) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char ch : s) {
    out.push_back(digits[ch >> 4]);
    out.push_back(digits[ch & 15]);
  }
  return out;
}

// Checks one scan's output: strict order, bounds, valid values. Returns
// the keys seen.
std::vector<std::int64_t> verify_scan(const std::vector<std::pair<std::string, std::string>>& out,
                                      const ScanSpec& spec, std::size_t max_pad,
                                      Failures& failures, const std::string& who) {
  std::vector<std::int64_t> keys;
  keys.reserve(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto& [k, v] = out[i];
    if (k.size() != 8) {
      failures.add(who + ": scan returned a key of size " + std::to_string(k.size()));
      return keys;
    }
    const std::int64_t ki = forein::decode_int64(k);
    if (!valid_value(ki, v, max_pad))
      failures.add(who + ": scan value does not belong to key " + std::to_string(ki) + ": " + v.substr(0, 60));
    if (i > 0) {
      const int c = forein::compare_keys(out[i - 1].first, k);
      const bool ordered = spec.direction == Direction::kForward ? c < 0 : c > 0;
      if (!ordered)
        failures.add(who + ": scan out of order or repeated at " + hex(out[i - 1].first) + " then " +
                     hex(k));
    }
    if (spec.lower) {
      const int c = forein::compare_keys(k, spec.lower->key);
      if (c < 0 || (c == 0 && !spec.lower->inclusive))
        failures.add(who + ": scan key below the lower bound: " + std::to_string(ki));
    }
    if (spec.upper) {
      const int c = forein::compare_keys(k, spec.upper->key);
      if (c > 0 || (c == 0 && !spec.upper->inclusive))
        failures.add(who + ": scan key above the upper bound: " + std::to_string(ki));
    }
    keys.push_back(ki);
  }
  return keys;
}

// Hints that are stale, misleading or garbage.
forein::StartHints random_hints(std::mt19937_64& rng, const std::vector<forein::Hint>& stale,
                                Tree& tree) {
  forein::StartHints h;
  auto one = [&]() -> forein::Hint {
    switch (rng() % 4) {
      case 0:
      case 1:
        return stale[rng() % stale.size()];
      case 2: {
        forein::Hint g;  // garbage: any page id (meta page and past the end included)
        g.node = static_cast<forein::PageId>(rng() % (tree.store().page_count() + 50));
        g.level = static_cast<std::uint16_t>(rng() % 4);
        g.version = rng() % 8;
        return g;
      }
      default:
        return forein::Hint{};
    }
  };
  h.primary = one();
  h.secondary = one();
  return h;
}

struct ScanCheck {
  ScanSpec spec;
  std::int64_t lo = 0, hi = 0;  // inclusive integer range the bounds mean
};

ScanCheck random_scan(std::mt19937_64& rng, std::int64_t key_space, std::int64_t max_span) {
  ScanCheck s;
  const std::int64_t a = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(key_space + 200)) - 100;
  const std::int64_t b = a + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(max_span));
  const bool li = rng() % 2 == 0, ui = rng() % 2 == 0;
  s.spec.lower = KeyBound{forein::encode_int64(a), li};
  s.spec.upper = KeyBound{forein::encode_int64(b), ui};
  s.spec.direction = rng() % 2 ? Direction::kForward : Direction::kBackward;
  s.lo = li ? a : a + 1;
  s.hi = ui ? b : b - 1;
  return s;
}

std::vector<std::pair<std::string, std::string>> run_scan(Tree& tree, const ScanSpec& spec,
                                                          bool use_cursor,
                                                          const forein::StartHints* hints) {
  std::vector<std::pair<std::string, std::string>> out;
  if (use_cursor) {
    auto c = tree.scan(spec, hints);
    while (c.next()) out.emplace_back(std::string(c.key()), std::string(c.value()));
  } else {
    tree.scan(
        spec,
        [&](std::string_view k, std::string_view v) {
          out.emplace_back(std::string(k), std::string(v));
          return true;
        },
        hints);
  }
  return out;
}

}  // namespace

TEST_CASE("concurrency: disjoint writers, readers with invariants", "[tree][concurrent]") {
  const auto seed = forein::testing::test_seed("concurrency disjoint writers");
  const std::uint64_t ops = stress_ops();
  constexpr unsigned kWriters = 4;
  constexpr unsigned kReaders = 2;
  constexpr unsigned kStripes = kWriters + 1;  // stripe kWriters: stable keys
  constexpr std::int64_t kKeys = 40000;
  constexpr std::size_t kMaxPad = 120;
  INFO("seed " << seed << ", " << ops << " ops per writer");

  CountingObserver observer;
  forein::TreeOptions options;
  options.index_id = kIndexId;
  options.observer = &observer;
  auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(4096), options);

  // Fill every key, remember leaf hints, then empty the writers' stripes:
  // the hints are stale before the threads start (merged, freed, reused).
  for (std::int64_t k = 0; k < kKeys; ++k)
    tree->put(forein::encode_int64(k), make_value(k, kWriters, static_cast<std::uint64_t>(k), kMaxPad));
  std::vector<forein::Hint> stale;
  for (std::int64_t k = 0; k < kKeys; k += 37) stale.push_back(tree->leaf_for(forein::encode_int64(k)));
  for (std::int64_t k = 0; k < kKeys; ++k)
    if (k % kStripes != kWriters) tree->erase(forein::encode_int64(k));
  tree->check();
  for (std::int64_t k = 0; k < kKeys; k += 41) stale.push_back(tree->leaf_for(forein::encode_int64(k)));
  auto stable_value = [](std::int64_t k) {
    return make_value(k, kWriters, static_cast<std::uint64_t>(k), kMaxPad);
  };

  Failures failures;
  std::vector<std::map<std::int64_t, std::string>> oracles(kWriters);
  std::latch start(kWriters + kReaders);
  std::vector<std::thread> threads;

  for (unsigned w = 0; w < kWriters; ++w) {
    threads.push_back(spawn(failures, "writer " + std::to_string(w), [&, w] {
      std::mt19937_64 rng(seed + w);
      auto& oracle = oracles[w];
      const std::int64_t per_stripe = kKeys / kStripes;
      start.arrive_and_wait();
      for (std::uint64_t i = 0; i < ops; ++i) {
        // Insert-heavy and erase-heavy phases alternate, so leaves fill
        // and empty (splits and merges) while the others read.
        const std::int64_t slot = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(per_stripe));
        const std::int64_t k = slot * kStripes + w;
        const std::string key = forein::encode_int64(k);
        const unsigned dice = static_cast<unsigned>(rng() % 100);
        const bool erase_phase = (i / 2000) % 2 == 1;
        if (dice < (erase_phase ? 30u : 65u)) {
          const std::string v = make_value(k, w, i, kMaxPad);
          const bool is_new = oracle.find(k) == oracle.end();
          const bool got = tree->put(key, v);
          if (got != is_new) failures.add("writer put returned " + std::to_string(got) + " for key " + std::to_string(k));
          oracle[k] = v;
        } else if (dice < 95) {
          const bool present = oracle.erase(k) == 1;
          const bool got = tree->erase(key);
          if (got != present) failures.add("writer erase returned " + std::to_string(got) + " for key " + std::to_string(k));
        } else {
          std::string v;
          const auto it = oracle.find(k);
          const bool got = tree->get(key, &v);
          if (got != (it != oracle.end()) || (got && v != it->second))
            failures.add("writer get disagrees with its oracle at key " + std::to_string(k));
        }
      }
    }));
  }

  std::atomic<std::uint64_t> reader_scans{0}, reader_gets{0};
  for (unsigned r = 0; r < kReaders; ++r) {
    threads.push_back(spawn(failures, "reader " + std::to_string(r), [&, r] {
      std::mt19937_64 rng(seed + 1000 + r);
      const std::string who = "reader " + std::to_string(r);
      const std::uint64_t reader_ops = std::max<std::uint64_t>(ops / 4, 100);
      start.arrive_and_wait();
      for (std::uint64_t i = 0; i < reader_ops; ++i) {
        const unsigned dice = static_cast<unsigned>(rng() % 100);
        if (dice < 70) {
          // Point lookups, with no hint, a fresh one, or stale/garbage ones.
          const std::int64_t k = static_cast<std::int64_t>(rng() % (kKeys + 100)) - 50;
          const std::string key = forein::encode_int64(k);
          forein::StartHints hints;
          const forein::StartHints* hp = nullptr;
          if (dice < 25) {
            hints = random_hints(rng, stale, *tree);
            hp = &hints;
          } else if (dice < 35) {
            hints.primary = tree->leaf_for(key);  // may be stale by the time it is used
            hp = &hints;
          }
          std::string v;
          const bool found = tree->get(key, &v, hp);
          reader_gets.fetch_add(1, std::memory_order_relaxed);
          const bool stable = k >= 0 && k < kKeys && k % kStripes == kWriters;
          if (k < 0 || k >= kKeys) {
            if (found) failures.add(who + ": found key outside the key space " + std::to_string(k));
          } else if (stable) {
            if (!found || v != stable_value(k))
              failures.add(who + ": stable key " + std::to_string(k) + (found ? " has a wrong value" : " missing") +
                           (hp ? " (hinted)" : ""));
          } else if (found && !valid_value(k, v, kMaxPad)) {
            failures.add(who + ": value does not belong to key " + std::to_string(k));
          }
        } else {
          ScanCheck sc = i % 500 == 499 ? ScanCheck{} : random_scan(rng, kKeys, 800);
          if (i % 500 == 499) {  // occasionally everything
            sc.lo = std::numeric_limits<std::int64_t>::min();
            sc.hi = std::numeric_limits<std::int64_t>::max();
            sc.spec.direction = rng() % 2 ? Direction::kForward : Direction::kBackward;
          }
          forein::StartHints hints;
          const bool hinted = rng() % 3 == 0;
          if (hinted) hints = random_hints(rng, stale, *tree);
          const auto out = run_scan(*tree, sc.spec, rng() % 2 == 0, hinted ? &hints : nullptr);
          reader_scans.fetch_add(1, std::memory_order_relaxed);
          const auto keys = verify_scan(out, sc.spec, kMaxPad, failures, who);
          // Every stable key in range was present throughout: it must appear.
          const std::set<std::int64_t> seen(keys.begin(), keys.end());
          const std::int64_t from = std::max<std::int64_t>(sc.lo, 0);
          const std::int64_t to = std::min<std::int64_t>(sc.hi, kKeys - 1);
          std::size_t missing = 0;
          for (std::int64_t k = from; k <= to; ++k)
            if (k % kStripes == kWriters && seen.count(k) == 0) ++missing;
          if (missing > 0)
            failures.add(who + ": scan [" + std::to_string(sc.lo) + ", " + std::to_string(sc.hi) + "] " +
                         (sc.spec.direction == Direction::kForward ? "forward" : "backward") + " missed " +
                         std::to_string(missing) + " stable keys" + (hinted ? " (hinted)" : ""));
          for (std::size_t j = 0; j < keys.size(); ++j) {
            const std::int64_t k = keys[j];
            if (k >= 0 && k < kKeys && k % kStripes == kWriters && out[j].second != stable_value(k))
              failures.add(who + ": scan returned a wrong value for stable key " + std::to_string(k));
          }
        }
      }
    }));
  }
  for (auto& t : threads) t.join();
  failures.report();
  REQUIRE(failures.count() == 0);
  CHECK(reader_gets.load() > 0);
  CHECK(reader_scans.load() > 0);
  CHECK(observer.bad.load() == 0);
  CHECK(observer.events.load() > 0);

  // The tree is the union of the oracles plus the stable stripe.
  std::map<std::string, std::string> want;
  for (const auto& o : oracles)
    for (const auto& [k, v] : o) want[forein::encode_int64(k)] = v;
  for (std::int64_t k = kWriters; k < kKeys; k += kStripes) want[forein::encode_int64(k)] = stable_value(k);
  tree->check();
  REQUIRE(tree->size() == want.size());
  std::vector<std::pair<std::string, std::string>> all = run_scan(*tree, ScanSpec{}, false, nullptr);
  const std::vector<std::pair<std::string, std::string>> expected(want.begin(), want.end());
  REQUIRE(all.size() == expected.size());
  CHECK(all == expected);
  std::size_t bad = 0;
  std::string v;
  for (const auto& [k, val] : want)
    if (!tree->get(k, &v) || v != val) ++bad;
  CHECK(bad == 0);
}

TEST_CASE("concurrency: writers racing on shared keys", "[tree][concurrent]") {
  const auto seed = forein::testing::test_seed("concurrency shared keys");
  const std::uint64_t ops = stress_ops();
  constexpr unsigned kWriters = 4;
  constexpr unsigned kReaders = 2;

  struct Shape {
    const char* name;
    std::int64_t keys;
    std::size_t max_pad;
  };
  // Many keys with medium values; and a few keys with values so large that
  // a leaf holds only a handful, so leaves split and merge all the time.
  const Shape shape = GENERATE(Shape{"3000 keys", 3000, 300}, Shape{"64 hot keys", 64, 900});
  INFO(shape.name << ", seed " << seed << ", " << ops << " ops per writer");

  CountingObserver observer;
  forein::TreeOptions options;
  options.index_id = kIndexId;
  options.observer = &observer;
  auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(4096), options);
  // Padding up to the largest value the tree takes (the prefix is < 48 bytes).
  REQUIRE(tree->max_value_size() > 64);
  const std::size_t max_pad = std::min(shape.max_pad, tree->max_value_size() - 48);
  REQUIRE(make_value(shape.keys, 9, ops * 10, 0).size() + max_pad <= tree->max_value_size());

  // Half the keys start present, written by "writer" kWriters.
  std::vector<std::optional<std::string>> initial(static_cast<std::size_t>(shape.keys));
  for (std::int64_t k = 0; k < shape.keys; k += 2) {
    initial[static_cast<std::size_t>(k)] = make_value(k, kWriters, static_cast<std::uint64_t>(k), max_pad);
    tree->put(forein::encode_int64(k), *initial[static_cast<std::size_t>(k)]);
  }
  std::vector<forein::Hint> stale;
  for (std::int64_t k = 0; k < shape.keys; ++k) stale.push_back(tree->leaf_for(forein::encode_int64(k)));

  struct WriterLog {
    // Per key: touched?, last op (value or erase), put-new and erase-hit counts.
    std::vector<bool> touched;
    std::vector<std::optional<std::string>> last;
    std::vector<std::int64_t> added, removed;
  };
  std::vector<WriterLog> logs(kWriters);
  for (auto& l : logs) {
    l.touched.assign(static_cast<std::size_t>(shape.keys), false);
    l.last.assign(static_cast<std::size_t>(shape.keys), std::nullopt);
    l.added.assign(static_cast<std::size_t>(shape.keys), 0);
    l.removed.assign(static_cast<std::size_t>(shape.keys), 0);
  }

  Failures failures;
  std::latch start(kWriters + kReaders);
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < kWriters; ++w) {
    threads.push_back(spawn(failures, "writer " + std::to_string(w), [&, w] {
      std::mt19937_64 rng(seed + 7 * w);
      auto& log = logs[w];
      start.arrive_and_wait();
      for (std::uint64_t i = 0; i < ops; ++i) {
        const auto k = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(shape.keys));
        const auto ki = static_cast<std::size_t>(k);
        const std::string key = forein::encode_int64(k);
        forein::StartHints hints;
        const forein::StartHints* hp = nullptr;
        if (rng() % 4 == 0) {  // writers take stale hints too
          hints.primary = stale[rng() % stale.size()];
          hp = &hints;
        }
        log.touched[ki] = true;
        if (rng() % 100 < 55) {
          const std::string v = make_value(k, w, i, max_pad);
          if (tree->put(key, v, hp)) ++log.added[ki];
          log.last[ki] = v;
        } else {
          if (tree->erase(key, hp)) ++log.removed[ki];
          log.last[ki] = std::nullopt;
        }
      }
    }));
  }
  for (unsigned r = 0; r < kReaders; ++r) {
    threads.push_back(spawn(failures, "reader " + std::to_string(r), [&, r] {
      std::mt19937_64 rng(seed + 5000 + r);
      const std::string who = "reader " + std::to_string(r);
      const std::uint64_t reader_ops = std::max<std::uint64_t>(ops / 4, 100);
      start.arrive_and_wait();
      for (std::uint64_t i = 0; i < reader_ops; ++i) {
        forein::StartHints hints = random_hints(rng, stale, *tree);
        const bool hinted = rng() % 4 != 0;
        if (rng() % 100 < 75) {
          const auto k = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(shape.keys + 4)) - 2;
          std::string v;
          const bool found = tree->get(forein::encode_int64(k), &v, hinted ? &hints : nullptr);
          if (found && (k < 0 || k >= shape.keys))
            failures.add(who + ": found key outside the key space " + std::to_string(k));
          else if (found && !valid_value(k, v, max_pad))
            failures.add(who + ": value does not belong to key " + std::to_string(k));
        } else {
          const ScanCheck sc = random_scan(rng, shape.keys, shape.keys / 4 + 8);
          const auto out = run_scan(*tree, sc.spec, rng() % 2 == 0, hinted ? &hints : nullptr);
          const auto keys = verify_scan(out, sc.spec, max_pad, failures, who);
          for (auto k : keys)
            if (k < 0 || k >= shape.keys) failures.add(who + ": scan found key outside the key space");
        }
      }
    }));
  }
  for (auto& t : threads) t.join();
  failures.report();
  REQUIRE(failures.count() == 0);
  CHECK(observer.bad.load() == 0);
  tree->check();

  // Each key ends as some writer's last operation on it (or its initial
  // state if no writer touched it), and put/erase results add up.
  std::size_t wrong_final = 0, wrong_balance = 0, present = 0;
  for (std::int64_t k = 0; k < shape.keys; ++k) {
    const auto ki = static_cast<std::size_t>(k);
    std::string v;
    const bool found = tree->get(forein::encode_int64(k), &v);
    present += found;
    bool touched = false, matches = false;
    std::int64_t balance = initial[ki] ? 1 : 0;
    for (const auto& log : logs) {
      balance += log.added[ki] - log.removed[ki];
      if (!log.touched[ki]) continue;
      touched = true;
      if (log.last[ki].has_value() == found && (!found || *log.last[ki] == v)) matches = true;
    }
    if (!touched) matches = initial[ki].has_value() == found && (!found || *initial[ki] == v);
    if (!matches) {
      if (wrong_final++ < 10) UNSCOPED_INFO("key " << k << " ends " << (found ? v.substr(0, 40) : "absent"));
    }
    if (balance != (found ? 1 : 0)) {
      if (wrong_balance++ < 10)
        UNSCOPED_INFO("key " << k << ": puts-new minus erases-hit = " << balance << " but key is "
                             << (found ? "present" : "absent"));
    }
  }
  CHECK(wrong_final == 0);
  CHECK(wrong_balance == 0);
  CHECK(tree->size() == present);
  const auto all = run_scan(*tree, ScanSpec{}, true, nullptr);
  CHECK(all.size() == present);
}

TEST_CASE("concurrency: readers during bulk-loaded tree shrink and regrow", "[tree][concurrent]") {
  // One writer empties and refills a bulk-loaded tree (merges down to a
  // single leaf, splits back up) while readers hold hints from the start.
  const auto seed = forein::testing::test_seed("concurrency shrink and regrow");
  const std::uint64_t ops = stress_ops();
  const std::int64_t n = static_cast<std::int64_t>(std::min<std::uint64_t>(ops / 2, 20000));
  constexpr std::size_t kMaxPad = 40;
  auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(4096));
  std::vector<std::pair<std::string, std::string>> entries;
  for (std::int64_t k = 0; k < n; ++k) entries.emplace_back(forein::encode_int64(k), make_value(k, 0, 0, kMaxPad));
  tree->bulk_load(entries);
  std::vector<forein::Hint> stale;
  for (std::int64_t k = 0; k < n; k += 13) stale.push_back(tree->leaf_for(forein::encode_int64(k)));
  // Key -1 is never written: always absent. Key n is always present.
  tree->put(forein::encode_int64(n), make_value(n, 0, 0, kMaxPad));

  Failures failures;
  std::latch start(3);
  std::vector<std::thread> threads;
  threads.push_back(spawn(failures, "writer", [&] {
    start.arrive_and_wait();
    for (int round = 0; round < 2; ++round) {
      for (std::int64_t k = 0; k < n; ++k)
        if (!tree->erase(forein::encode_int64(k))) failures.add("erase of a present key failed");
      for (std::int64_t k = n - 1; k >= 0; --k)
        if (!tree->put(forein::encode_int64(k), make_value(k, 1, static_cast<std::uint64_t>(round + 1), kMaxPad)))
          failures.add("put of an absent key was not new");
    }
  }));
  for (unsigned r = 0; r < 2; ++r) {
    threads.push_back(spawn(failures, "reader " + std::to_string(r), [&, r] {
      std::mt19937_64 rng(seed + r);
      const std::string who = "reader " + std::to_string(r);
      start.arrive_and_wait();
      for (std::uint64_t i = 0; i < ops / 4 + 100; ++i) {
        forein::StartHints hints;
        hints.primary = stale[rng() % stale.size()];
        hints.secondary = stale[rng() % stale.size()];
        std::string v;
        if (tree->get(forein::encode_int64(-1), &v, &hints)) failures.add(who + ": found key -1");
        if (!tree->get(forein::encode_int64(n), &v, &hints) || v != make_value(n, 0, 0, kMaxPad))
          failures.add(who + ": lost the always-present key");
        const auto k = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n));
        if (tree->get(forein::encode_int64(k), &v, &hints) && !valid_value(k, v, kMaxPad))
          failures.add(who + ": bad value for key " + std::to_string(k));
        if (i % 50 == 0) {
          ScanSpec spec;
          spec.direction = i % 100 == 0 ? Direction::kForward : Direction::kBackward;
          const auto out = run_scan(*tree, spec, i % 150 == 0, &hints);
          const auto keys = verify_scan(out, spec, kMaxPad, failures, who);
          if (std::find(keys.begin(), keys.end(), n) == keys.end())
            failures.add(who + ": full scan missed the always-present key");
        }
      }
    }));
  }
  for (auto& t : threads) t.join();
  failures.report();
  REQUIRE(failures.count() == 0);
  tree->check();
  REQUIRE(tree->size() == static_cast<std::uint64_t>(n) + 1);
  std::string v;
  for (std::int64_t k = 0; k < n; ++k) {
    REQUIRE(tree->get(forein::encode_int64(k), &v));
    REQUIRE(v == make_value(k, 1, 2, kMaxPad));
  }
}

TEST_CASE("concurrency: appenders with the append fast path, writers behind them, readers",
          "[tree][concurrent][append]") {
  // TreeOptions::append_fast_path: appenders on interleaved stripes keep
  // writing just past the largest key (the remembered rightmost leaf, its
  // splits, a new one remembered), now and then erasing their own tail
  // (the rightmost leaf shrinks and merges) or rewriting and erasing older
  // keys of their stripe (splits and merges behind them); some appends
  // carry hints. Readers check every value they see and that the keys
  // of a stable stripe below the appends are always there.
  const auto seed = forein::testing::test_seed("concurrency append fast path");
  const std::uint64_t ops = stress_ops();
  constexpr unsigned kWriters = 4;
  constexpr unsigned kReaders = 2;
  constexpr std::int64_t kStable = 5000;  // keys [0, kStable): stable, never written again
  constexpr std::size_t kMaxPad = 60;
  INFO("seed " << seed << ", " << ops << " ops per writer");

  CountingObserver observer;
  forein::TreeOptions options;
  options.index_id = kIndexId;
  options.observer = &observer;
  options.append_fast_path = true;
  auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(4096), options);
  auto stable_value = [](std::int64_t k) { return make_value(k, kWriters, 0, kMaxPad); };
  for (std::int64_t k = 0; k < kStable; ++k) tree->put(forein::encode_int64(k), stable_value(k));

  Failures failures;
  std::vector<std::map<std::int64_t, std::string>> oracles(kWriters);
  std::vector<std::atomic<std::int64_t>> frontier(kWriters);  // next append index per stripe
  for (auto& f : frontier) f.store(0);
  std::latch start(kWriters + kReaders);
  std::vector<std::thread> threads;
  auto key_of = [](std::int64_t i, unsigned w) { return kStable + i * kWriters + w; };

  for (unsigned w = 0; w < kWriters; ++w) {
    threads.push_back(spawn(failures, "appender " + std::to_string(w), [&, w] {
      std::mt19937_64 rng(seed + w);
      auto& oracle = oracles[w];
      std::int64_t next = 0;
      start.arrive_and_wait();
      for (std::uint64_t i = 0; i < ops; ++i) {
        const unsigned dice = static_cast<unsigned>(rng() % 100);
        if (dice < 70 || next == 0) {
          const std::int64_t k = key_of(next++, w);
          const std::string key = forein::encode_int64(k);
          const std::string v = make_value(k, w, i, kMaxPad);
          forein::StartHints hints;
          if (dice % 10 == 0) hints.primary = tree->leaf_for(key);  // possibly stale when used
          const bool got = dice % 10 == 0 ? tree->put(key, v, &hints) : tree->insert(key, v);
          if (!got) failures.add("append of key " + std::to_string(k) + " was not new");
          oracle[k] = v;
          frontier[w].store(next, std::memory_order_relaxed);
        } else if (dice < 73) {
          // Erase this stripe's tail, then go on appending above what is left.
          const int n = static_cast<int>(rng() % 300);
          for (int j = 0; j < n && !oracle.empty(); ++j) {
            const auto last = std::prev(oracle.end());
            if (!tree->erase(forein::encode_int64(last->first)))
              failures.add("tail erase of key " + std::to_string(last->first) + " missed");
            oracle.erase(last);
          }
        } else {
          const std::int64_t k = key_of(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(next)), w);
          const std::string key = forein::encode_int64(k);
          if (dice < 88) {
            const std::string v = make_value(k, w, i, kMaxPad);
            const bool is_new = oracle.find(k) == oracle.end();
            if (tree->put(key, v) != is_new) failures.add("put of key " + std::to_string(k) + " disagrees");
            oracle[k] = v;
          } else {
            const bool present = oracle.erase(k) == 1;
            if (tree->erase(key) != present) failures.add("erase of key " + std::to_string(k) + " disagrees");
          }
        }
      }
    }));
  }
  for (unsigned r = 0; r < kReaders; ++r) {
    threads.push_back(spawn(failures, "reader " + std::to_string(r), [&, r] {
      std::mt19937_64 rng(seed + 1000 + r);
      const std::string who = "reader " + std::to_string(r);
      start.arrive_and_wait();
      for (std::uint64_t i = 0; i < std::max<std::uint64_t>(ops / 4, 100); ++i) {
        const unsigned w = static_cast<unsigned>(rng() % kWriters);
        const std::int64_t top = key_of(frontier[w].load(std::memory_order_relaxed) + 2, w);
        const std::int64_t k = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(top));
        std::string v;
        const bool found = tree->get(forein::encode_int64(k), &v);
        if (k < kStable) {
          if (!found || v != stable_value(k)) failures.add(who + ": stable key " + std::to_string(k) + " lost");
        } else if (found && !valid_value(k, v, kMaxPad)) {
          failures.add(who + ": value does not belong to key " + std::to_string(k));
        }
        if (i % 64 == 0) {
          // The last stable keys and whatever is being appended above them.
          ScanSpec spec;
          spec.lower = KeyBound{forein::encode_int64(kStable - 100), true};
          spec.direction = i % 128 == 0 ? Direction::kForward : Direction::kBackward;
          const auto out = run_scan(*tree, spec, i % 192 == 0, nullptr);
          const auto keys = verify_scan(out, spec, kMaxPad, failures, who);
          std::size_t stable_seen = 0;
          for (std::int64_t key : keys) stable_seen += key < kStable ? 1 : 0;
          if (stable_seen != 100) failures.add(who + ": scan saw " + std::to_string(stable_seen) + " of 100 stable keys");
        }
      }
    }));
  }
  for (auto& t : threads) t.join();
  failures.report();
  REQUIRE(failures.count() == 0);
  CHECK(observer.bad.load() == 0);

  std::map<std::string, std::string> want;
  for (std::int64_t k = 0; k < kStable; ++k) want[forein::encode_int64(k)] = stable_value(k);
  for (const auto& o : oracles)
    for (const auto& [k, v] : o) want[forein::encode_int64(k)] = v;
  tree->check();
  REQUIRE(tree->size() == want.size());
  const auto all = run_scan(*tree, ScanSpec{}, false, nullptr);
  const std::vector<std::pair<std::string, std::string>> expected(want.begin(), want.end());
  REQUIRE(all.size() == expected.size());
  CHECK(all == expected);
}
