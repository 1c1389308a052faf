// The linearizability checker (linearizability.h) on hand-made histories and
// on seeded random ones generated from a sequential run of the model, with
// and without a corrupted result, cross-checked against a brute-force
// search on small histories.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "fpga/linearizability.h"
#include "support/seed.h"

using forein::testing::lin::check;
using forein::testing::lin::CheckResult;
using forein::testing::lin::describe;
using forein::testing::lin::History;
using forein::testing::lin::InitialMap;
using forein::testing::lin::KV;
using forein::testing::lin::KvState;
using forein::testing::lin::Operation;
using forein::testing::lin::OpKind;

namespace {

Operation make(int client, OpKind kind, std::string key, std::uint64_t invoke,
               std::uint64_t response) {
  Operation op;
  op.client = client;
  op.kind = kind;
  op.key = std::move(key);
  op.invoke = invoke;
  op.response = response;
  return op;
}
Operation put(int c, std::string k, std::string v, bool changed, std::uint64_t i, std::uint64_t r) {
  Operation op = make(c, OpKind::kPut, std::move(k), i, r);
  op.value = std::move(v);
  op.changed = changed;
  return op;
}
Operation update(int c, std::string k, std::string v, bool changed, std::uint64_t i,
                 std::uint64_t r) {
  Operation op = put(c, std::move(k), std::move(v), changed, i, r);
  op.kind = OpKind::kUpdate;
  return op;
}
Operation upsert(int c, std::string k, std::string v, std::uint64_t i, std::uint64_t r) {
  Operation op = put(c, std::move(k), std::move(v), false, i, r);
  op.kind = OpKind::kUpsert;
  return op;
}
Operation del(int c, std::string k, bool changed, std::uint64_t i, std::uint64_t r) {
  Operation op = make(c, OpKind::kDelete, std::move(k), i, r);
  op.changed = changed;
  return op;
}
Operation get(int c, std::string k, std::optional<std::string> found, std::uint64_t i,
              std::uint64_t r) {
  Operation op = make(c, OpKind::kGet, std::move(k), i, r);
  op.found = std::move(found);
  return op;
}
Operation scan(int c, std::string lo, std::string hi, std::vector<KV> items, std::uint64_t i,
               std::uint64_t r, std::size_t max_items = 0, bool truncated = false) {
  Operation op = make(c, OpKind::kScan, std::move(lo), i, r);
  op.hi = std::move(hi);
  op.items = std::move(items);
  op.max_items = max_items;
  op.truncated = truncated;
  return op;
}
Operation pending(Operation op) {
  op.pending = true;
  op.response = 0;
  return op;
}

std::shared_ptr<const InitialMap> initial_of(InitialMap map) {
  return std::make_shared<const InitialMap>(std::move(map));
}

// Checks that `order` is a linearization of `history`: every completed
// operation once, real-time order respected, every result as the model
// gives it.
void require_valid_linearization(const History& history, std::shared_ptr<const InitialMap> initial,
                                 const std::vector<std::size_t>& order) {
  std::vector<bool> seen(history.size(), false);
  KvState state(std::move(initial));
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Operation& op = history[order[k]];
    REQUIRE_FALSE(seen[order[k]]);
    seen[order[k]] = true;
    REQUIRE(state.step(op));
    // Nothing placed later may have responded before this was invoked.
    for (std::size_t l = k + 1; l < order.size(); ++l) {
      const Operation& later = history[order[l]];
      REQUIRE((later.pending || later.response > op.invoke));
    }
  }
  for (std::size_t i = 0; i < history.size(); ++i) {
    if (!history[i].pending) REQUIRE(seen[i]);
  }
}

bool linearizable(const History& history, std::shared_ptr<const InitialMap> initial = nullptr) {
  const CheckResult result = check(history, initial);
  REQUIRE(result.outcome != CheckResult::Outcome::kUnknown);
  if (result.linearizable()) {
    require_valid_linearization(history, initial, result.order);
  } else {
    REQUIRE_FALSE(result.explanation.empty());
  }
  return result.linearizable();
}

// Brute force: every order consistent with real time, no memoization.
bool brute_force(const History& history, std::shared_ptr<const InitialMap> initial) {
  std::vector<std::size_t> live;
  for (std::size_t i = 0; i < history.size(); ++i) {
    if (!(history[i].pending && (history[i].kind == OpKind::kGet ||
                                 history[i].kind == OpKind::kScan))) {
      live.push_back(i);
    }
  }
  std::vector<bool> used(history.size(), false);
  std::function<bool(const KvState&)> go = [&](const KvState& state) {
    bool all_done = true;
    for (std::size_t i : live) {
      if (!used[i] && !history[i].pending) all_done = false;
    }
    if (all_done) return true;
    for (std::size_t i : live) {
      if (used[i]) continue;
      bool minimal = true;
      for (std::size_t j : live) {
        if (!used[j] && j != i && !history[j].pending && history[j].response < history[i].invoke) {
          minimal = false;
        }
      }
      if (!minimal) continue;
      KvState next = state;
      if (!next.step(history[i])) continue;
      used[i] = true;
      const bool ok = go(next);
      used[i] = false;
      if (ok) return true;
    }
    return false;
  };
  return go(KvState(std::move(initial)));
}

// --- random histories from a sequential run -----------------------------------

struct GenOptions {
  std::size_t ops = 100;
  int clients = 6;
  int keys = 10;
  int widen = 3;  // an interval reaches up to this many neighbours' points
  double pending_writes = 0.02;
  double pending_reads = 0.02;
};

std::string key_name(int k) {
  std::string s = "k00";
  s[1] = static_cast<char>('0' + k / 10);
  s[2] = static_cast<char>('0' + k % 10);
  return s;
}

History generate(std::mt19937_64& rng, std::shared_ptr<const InitialMap> initial,
                 const GenOptions& g) {
  History history;
  KvState state(initial);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  for (std::size_t i = 0; i < g.ops; ++i) {
    Operation op;
    op.client = pick(g.clients);
    const int r = pick(100);
    op.kind = r < 30   ? OpKind::kGet
              : r < 45 ? OpKind::kScan
              : r < 60 ? OpKind::kPut
              : r < 75 ? OpKind::kUpdate
              : r < 87 ? OpKind::kDelete
                       : OpKind::kUpsert;
    op.key = key_name(pick(g.keys));
    if (op.kind == OpKind::kScan) {
      if (pick(3) == 0) op.key += "m";  // a lo between keys
      op.hi = key_name(std::min(g.keys - 1, std::stoi(op.key.substr(1, 2)) + pick(4)));
      op.max_items = static_cast<std::size_t>(pick(5));
    }
    op.value = "v" + std::to_string(i);
    state.apply(op);
    // Linearization point 10 * (i + 1); the interval around it.
    const std::uint64_t point = 10 * (i + 1) + 1000;
    op.invoke = point - 1 - rng() % static_cast<std::uint64_t>(10 * g.widen + 1);
    op.response = point + 1 + rng() % static_cast<std::uint64_t>(10 * g.widen + 1);
    const bool write = op.kind != OpKind::kGet && op.kind != OpKind::kScan;
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    if (u < (write ? g.pending_writes : g.pending_reads)) op.pending = true;
    history.push_back(std::move(op));
  }
  // Times to ranks 1..2n (ties in any order keep every point inside its
  // interval).
  std::vector<std::pair<std::uint64_t, std::uint64_t*>> times;
  for (Operation& op : history) {
    times.push_back({op.invoke, &op.invoke});
    times.push_back({op.response, &op.response});
  }
  std::stable_sort(times.begin(), times.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t k = 0; k < times.size(); ++k) *times[k].second = k + 1;
  for (Operation& op : history) {
    if (op.pending) {
      op.response = 0;
      op.found.reset();
      op.items.clear();
      op.changed = false;
    }
  }
  return history;
}

std::shared_ptr<const InitialMap> random_initial(std::mt19937_64& rng, int keys) {
  InitialMap map;
  for (int k = 0; k < keys; ++k) {
    if (rng() % 2 == 0) map[key_name(k)] = "i" + std::to_string(k);
  }
  return initial_of(std::move(map));
}

// Corrupts one completed read so that no linearization can exist: a value
// never written.
void corrupt_never_written(std::mt19937_64& rng, History& history) {
  std::vector<std::size_t> reads;
  for (std::size_t i = 0; i < history.size(); ++i) {
    const Operation& op = history[i];
    if (op.pending) continue;
    if (op.kind == OpKind::kGet || (op.kind == OpKind::kScan && !op.items.empty())) reads.push_back(i);
  }
  REQUIRE_FALSE(reads.empty());
  Operation& op = history[reads[rng() % reads.size()]];
  if (op.kind == OpKind::kGet) {
    op.found = "never";
  } else {
    op.items[rng() % op.items.size()].value = "never";
  }
}

// Any change to one completed result (may or may not stay linearizable).
void corrupt_any(std::mt19937_64& rng, History& history, int keys) {
  std::vector<std::size_t> done;
  for (std::size_t i = 0; i < history.size(); ++i) {
    if (!history[i].pending && history[i].kind != OpKind::kUpsert) done.push_back(i);
  }
  if (done.empty()) return;
  Operation& op = history[done[rng() % done.size()]];
  switch (op.kind) {
    case OpKind::kGet:
      if (op.found && rng() % 2 == 0) {
        op.found.reset();
      } else {
        // Some value written in the history, or an initial one.
        const Operation& other = history[rng() % history.size()];
        op.found = rng() % 3 == 0 ? "i" + std::to_string(rng() % keys) : other.value;
      }
      break;
    case OpKind::kScan:
      if (!op.items.empty() && rng() % 3 != 0) {
        op.items.erase(op.items.begin() + static_cast<long>(rng() % op.items.size()));
      } else if (rng() % 2 == 0 && op.max_items != 0) {
        op.truncated = !op.truncated;
      } else {
        op.items.push_back({key_name(keys - 1) + "z", "v0"});
      }
      break;
    default: op.changed = !op.changed; break;
  }
}

}  // namespace

TEST_CASE("checker: sequential histories", "[lin]") {
  History h{put(0, "a", "1", true, 1, 2),      get(0, "a", "1", 3, 4),
            put(0, "a", "2", false, 5, 6),     update(0, "a", "2", true, 7, 8),
            get(0, "a", "2", 9, 10),           scan(0, "a", "z", {{"a", "2"}}, 11, 12),
            del(0, "a", true, 13, 14),         get(0, "a", std::nullopt, 15, 16),
            del(0, "a", false, 17, 18),        update(0, "a", "3", false, 19, 20),
            upsert(0, "a", "4", 21, 22),       get(0, "a", "4", 23, 24),
            upsert(0, "a", "5", 25, 26),       get(0, "a", "5", 27, 28)};
  REQUIRE(linearizable(h));
  REQUIRE(linearizable({}));

  // Each result changed in turn makes it non-linearizable.
  for (std::size_t i = 0; i < h.size(); ++i) {
    History bad = h;
    Operation& op = bad[i];
    if (op.kind == OpKind::kUpsert) continue;
    if (op.kind == OpKind::kGet) {
      op.found = op.found ? std::nullopt : std::optional<std::string>("1");
    } else if (op.kind == OpKind::kScan) {
      op.items.clear();
    } else {
      op.changed = !op.changed;
    }
    INFO(describe(op));
    REQUIRE_FALSE(linearizable(bad));
  }
}

TEST_CASE("checker: concurrent histories linearizable only by a non-obvious order", "[lin]") {
  // The PUT takes effect after c2's GET and before c3's; the DELETE after c3's.
  REQUIRE(linearizable({put(0, "x", "1", true, 1, 10), del(1, "x", true, 2, 9),
                        get(2, "x", std::nullopt, 3, 4), get(3, "x", "1", 5, 6),
                        get(4, "x", std::nullopt, 11, 12)}));
  // The later-invoked UPSERT takes effect first.
  REQUIRE(linearizable({upsert(0, "x", "1", 1, 10), upsert(1, "x", "2", 2, 9),
                        get(2, "x", "2", 3, 4), get(3, "x", "1", 5, 6),
                        get(4, "x", "1", 11, 12)}));
  // Two scans overlapping a PUT: the one that responds first misses it.
  auto init = initial_of({{"a", "0"}, {"c", "0"}});
  REQUIRE(linearizable({put(0, "b", "1", true, 1, 20),
                        scan(1, "a", "c", {{"a", "0"}, {"b", "1"}, {"c", "0"}}, 2, 5),
                        scan(2, "a", "c", {{"a", "0"}, {"c", "0"}}, 3, 8)},
                       init));
  // A PUT that fails because a concurrent PUT of the same key, invoked
  // later, came first; readers see only the winner.
  REQUIRE(linearizable({put(0, "k", "a", false, 1, 8), put(1, "k", "b", true, 2, 5),
                        get(2, "k", "b", 3, 4), get(2, "k", "b", 9, 10)}));
  // UPDATE succeeds only between a concurrent PUT and DELETE.
  REQUIRE(linearizable({put(0, "k", "a", true, 1, 3), del(1, "k", true, 2, 9),
                        update(2, "k", "u", true, 4, 8), get(3, "k", "u", 5, 6),
                        get(3, "k", std::nullopt, 10, 11)}));
  // The same with the GET after the DELETE responded: not linearizable.
  REQUIRE_FALSE(linearizable({put(0, "k", "a", true, 1, 3), del(1, "k", true, 2, 7),
                              update(2, "k", "u", true, 4, 8), get(3, "k", "u", 9, 10)}));
}

TEST_CASE("checker: stale reads and impossible values are rejected", "[lin]") {
  auto init = initial_of({{"x", "1"}});
  // A stale read after a completed write.
  const History stale{update(0, "x", "2", true, 1, 2), get(1, "x", "1", 3, 4)};
  const CheckResult r = check(stale, init);
  REQUIRE_FALSE(r.linearizable());
  std::cout << "stale read explanation:\n" << r.explanation;
  REQUIRE(r.unplaced.size() == 1);
  REQUIRE(r.explanation.find("model has x=2") != std::string::npos);
  // The same read concurrent with the write is fine.
  REQUIRE(linearizable({update(0, "x", "2", true, 1, 4), get(1, "x", "1", 2, 3)}, init));
  // A value never written.
  REQUIRE_FALSE(linearizable({get(0, "x", "7", 1, 2)}, init));
  REQUIRE_FALSE(linearizable({upsert(0, "x", "2", 1, 4), get(1, "x", "3", 2, 3)}, init));
  // Going back: a read sees the new value, a later read the old one.
  REQUIRE_FALSE(linearizable({update(0, "x", "2", true, 1, 10), get(1, "x", "2", 2, 3),
                              get(2, "x", "1", 4, 5)},
                             init));
  // Wrong write results.
  REQUIRE_FALSE(linearizable({put(0, "x", "2", true, 1, 2)}, init));
  REQUIRE_FALSE(linearizable({del(0, "y", true, 1, 2)}, init));
  REQUIRE_FALSE(linearizable({update(0, "y", "2", true, 1, 2)}, init));
}

TEST_CASE("checker: a scan seeing a later write but missing an earlier completed one",
          "[lin]") {
  const History h{put(0, "a", "1", true, 1, 2), put(1, "b", "1", true, 3, 10),
                  scan(2, "a", "z", {{"b", "1"}}, 4, 5)};
  const CheckResult r = check(h, nullptr);
  REQUIRE_FALSE(r.linearizable());
  std::cout << "scan explanation:\n" << r.explanation;
  // Seeing both, or only the earlier, is fine.
  REQUIRE(linearizable({put(0, "a", "1", true, 1, 2), put(1, "b", "1", true, 3, 10),
                        scan(2, "a", "z", {{"a", "1"}, {"b", "1"}}, 4, 5)}));
  REQUIRE(linearizable({put(0, "a", "1", true, 1, 2), put(1, "b", "1", true, 3, 10),
                        scan(2, "a", "z", {{"a", "1"}}, 4, 5)}));
  // Two scans disagreeing on the order of two concurrent writes.
  REQUIRE_FALSE(linearizable({put(0, "a", "1", true, 1, 20), put(1, "b", "1", true, 2, 20),
                              scan(2, "a", "z", {{"a", "1"}}, 3, 4),
                              scan(3, "a", "z", {{"b", "1"}}, 5, 6)}));
}

TEST_CASE("checker: predecessor semantics of SCAN", "[lin]") {
  auto init = initial_of({{"b", "1"}, {"d", "2"}, {"f", "3"}});
  // From the largest key <= lo.
  REQUIRE(linearizable({scan(0, "c", "e", {{"b", "1"}, {"d", "2"}}, 1, 2)}, init));
  REQUIRE_FALSE(linearizable({scan(0, "c", "e", {{"d", "2"}}, 1, 2)}, init));
  // lo itself live.
  REQUIRE(linearizable({scan(0, "d", "e", {{"d", "2"}}, 1, 2)}, init));
  REQUIRE_FALSE(linearizable({scan(0, "d", "e", {{"b", "1"}, {"d", "2"}}, 1, 2)}, init));
  // Nothing <= lo: from the first key >= lo.
  REQUIRE(linearizable({scan(0, "a", "c", {{"b", "1"}}, 1, 2)}, init));
  // An empty answer only when nothing is in range at all.
  REQUIRE(linearizable({scan(0, "g", "z", {{"f", "3"}}, 1, 2)}, init));
  REQUIRE_FALSE(linearizable({scan(0, "g", "z", {}, 1, 2)}, init));
  // max_items and truncated.
  REQUIRE(linearizable({scan(0, "a", "z", {{"b", "1"}, {"d", "2"}}, 1, 2, 2, true)}, init));
  REQUIRE_FALSE(linearizable({scan(0, "a", "z", {{"b", "1"}, {"d", "2"}}, 1, 2, 2, false)}, init));
  REQUIRE(linearizable({scan(0, "c", "f", {{"b", "1"}, {"d", "2"}, {"f", "3"}}, 1, 2, 3, false)},
                       init));
  // The predecessor deleted before the scan: the scan starts at the next.
  REQUIRE(linearizable({del(0, "b", true, 1, 2), scan(1, "c", "e", {{"d", "2"}}, 3, 4)}, init));
  REQUIRE_FALSE(linearizable({del(0, "b", true, 1, 2),
                              scan(1, "c", "e", {{"b", "1"}, {"d", "2"}}, 3, 4)},
                             init));
  // A new predecessor inserted before the scan.
  REQUIRE(linearizable({put(0, "c", "9", true, 1, 2),
                        scan(1, "c", "e", {{"c", "9"}, {"d", "2"}}, 3, 4)},
                       init));
  REQUIRE_FALSE(linearizable({put(0, "c", "9", true, 1, 2),
                              scan(1, "c", "e", {{"b", "1"}, {"c", "9"}, {"d", "2"}}, 3, 4)},
                             init));
  REQUIRE(linearizable({put(0, "bb", "9", true, 1, 2),
                        scan(1, "c", "e", {{"bb", "9"}, {"d", "2"}}, 3, 4)},
                       init));
  REQUIRE_FALSE(linearizable({put(0, "bb", "9", true, 1, 2),
                              scan(1, "c", "e", {{"b", "1"}, {"bb", "9"}, {"d", "2"}}, 3, 4)},
                             init));
  // Concurrent: either predecessor, but consistent with a later read.
  REQUIRE(linearizable({put(0, "c", "9", true, 1, 10),
                        scan(1, "c", "e", {{"b", "1"}, {"d", "2"}}, 2, 3),
                        scan(2, "c", "e", {{"c", "9"}, {"d", "2"}}, 4, 5)},
                       init));
  REQUIRE_FALSE(linearizable({put(0, "c", "9", true, 1, 10),
                              scan(1, "c", "e", {{"c", "9"}, {"d", "2"}}, 2, 3),
                              scan(2, "c", "e", {{"b", "1"}, {"d", "2"}}, 4, 5)},
                             init));
}

TEST_CASE("checker: pending operations may be linearized or dropped", "[lin]") {
  REQUIRE(linearizable({pending(put(0, "x", "1", true, 1, 0)), get(1, "x", "1", 5, 6)}));
  REQUIRE(linearizable({pending(put(0, "x", "1", true, 1, 0)), get(1, "x", std::nullopt, 5, 6)}));
  REQUIRE_FALSE(linearizable({pending(put(0, "x", "1", true, 1, 0)), get(1, "x", "1", 5, 6),
                              get(1, "x", std::nullopt, 7, 8)}));
  // Not before its invocation.
  REQUIRE_FALSE(linearizable({get(1, "x", "1", 1, 2), pending(put(0, "x", "1", true, 3, 0))}));
  // A pending read is dropped whatever it holds.
  REQUIRE(linearizable({pending(get(1, "x", "zz", 1, 0))}));
  // A pending PUT's effect decides a completed PUT's result.
  REQUIRE(linearizable({pending(put(0, "x", "1", true, 1, 0)), put(1, "x", "2", false, 2, 3),
                        get(1, "x", "1", 4, 5)}));
}

TEST_CASE("checker: a large initial map costs nothing per state", "[lin]") {
  InitialMap map;
  for (int i = 0; i < 200000; i += 2) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "key%08d", i);
    map[buf] = "init";
  }
  auto init = initial_of(std::move(map));
  History h;
  std::uint64_t t = 1;
  for (int round = 0; round < 40; ++round) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "key%08d", 1001 + 2 * round);
    const std::string k = buf;
    h.push_back(put(round % 4, k, "n", true, t, t + 5));
    h.push_back(scan((round + 1) % 4, k, k, {{k, "n"}}, t + 6, t + 7));
    t += 8;
  }
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(linearizable(h, init));
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cout << "80 ops over a 100000-key initial map: " << ms << " ms\n";
  REQUIRE(ms < 2000);
}

TEST_CASE("checker: random histories from a sequential run are linearizable", "[lin]") {
  const std::uint64_t seed = forein::testing::test_seed("checker random histories");
  std::mt19937_64 rng(seed);
  std::uint64_t max_steps = 0;
  double total_ms = 0;
  for (int round = 0; round < 300; ++round) {
    GenOptions g;
    g.ops = 50 + rng() % 151;
    g.clients = 4 + static_cast<int>(rng() % 5);
    g.keys = 4 + static_cast<int>(rng() % 12);
    g.widen = 1 + static_cast<int>(rng() % 6);
    auto init = random_initial(rng, g.keys);
    const History h = generate(rng, init, g);
    const auto start = std::chrono::steady_clock::now();
    const CheckResult r = check(h, init);
    total_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    INFO("round " << round << ": " << r.explanation);
    REQUIRE(r.linearizable());
    require_valid_linearization(h, init, r.order);
    max_steps = std::max(max_steps, r.steps);
  }
  std::cout << "300 random histories of 50-200 ops: " << total_ms << " ms, max steps "
            << max_steps << "\n";
}

TEST_CASE("checker: random histories with a value never written are rejected", "[lin]") {
  const std::uint64_t seed = forein::testing::test_seed("checker corrupted histories");
  std::mt19937_64 rng(seed);
  double total_ms = 0;
  for (int round = 0; round < 200; ++round) {
    GenOptions g;
    g.ops = 50 + rng() % 151;
    g.clients = 4 + static_cast<int>(rng() % 5);
    g.keys = 4 + static_cast<int>(rng() % 12);
    g.widen = 1 + static_cast<int>(rng() % 5);
    auto init = random_initial(rng, g.keys);
    History h = generate(rng, init, g);
    corrupt_never_written(rng, h);
    const auto start = std::chrono::steady_clock::now();
    const CheckResult r = check(h, init);
    total_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    INFO("round " << round);
    REQUIRE(r.outcome == CheckResult::Outcome::kNotLinearizable);
    REQUIRE_FALSE(r.unplaced.empty());
    if (round == 0) std::cout << "first corrupted history:\n" << r.explanation;
  }
  std::cout << "200 corrupted histories: " << total_ms << " ms\n";
}

TEST_CASE("checker: sequential random histories with any result changed are rejected",
          "[lin]") {
  const std::uint64_t seed = forein::testing::test_seed("checker sequential corrupted");
  std::mt19937_64 rng(seed);
  int changed = 0;
  for (int round = 0; round < 300; ++round) {
    GenOptions g;
    g.ops = 20 + rng() % 60;
    g.keys = 3 + static_cast<int>(rng() % 6);
    g.widen = 0;  // no overlap: the model alone decides
    g.pending_reads = g.pending_writes = 0;
    auto init = random_initial(rng, g.keys);
    History h = generate(rng, init, g);
    const History original = h;
    corrupt_any(rng, h, g.keys);
    bool differs = false;
    for (std::size_t i = 0; i < h.size(); ++i) {
      const Operation& a = h[i];
      const Operation& b = original[i];
      differs = differs || a.changed != b.changed || a.found != b.found || a.items != b.items ||
                a.truncated != b.truncated;
    }
    INFO("round " << round);
    REQUIRE(linearizable(original, init));
    if (!differs) continue;
    ++changed;
    REQUIRE_FALSE(linearizable(h, init));
  }
  REQUIRE(changed > 200);
}

TEST_CASE("checker: agrees with brute force on small random histories", "[lin]") {
  const std::uint64_t seed = forein::testing::test_seed("checker vs brute force");
  std::mt19937_64 rng(seed);
  int yes = 0, no = 0;
  for (int round = 0; round < 3000; ++round) {
    GenOptions g;
    g.ops = 3 + rng() % 6;
    g.clients = 3;
    g.keys = 2 + static_cast<int>(rng() % 3);
    g.widen = static_cast<int>(rng() % 5);
    g.pending_reads = g.pending_writes = 0.1;
    auto init = random_initial(rng, g.keys);
    History h = generate(rng, init, g);
    if (rng() % 4 != 0) corrupt_any(rng, h, g.keys);
    const bool expected = brute_force(h, init);
    std::string text;
    for (const Operation& op : h) text += describe(op) + "\n";
    INFO("round " << round << "\n" << text);
    REQUIRE(linearizable(h, init) == expected);
    (expected ? yes : no) += 1;
  }
  std::cout << "brute force agreement: " << yes << " linearizable, " << no << " not\n";
  REQUIRE(yes > 300);
  REQUIRE(no > 300);
}

TEST_CASE("checker: checking key by key agrees with checking the whole history", "[lin]") {
  const std::uint64_t seed = forein::testing::test_seed("checker partitioned");
  std::mt19937_64 rng(seed);
  int yes = 0, no = 0;
  forein::testing::lin::CheckOptions by_key;
  by_key.partition_by_key = true;
  for (int round = 0; round < 500; ++round) {
    GenOptions g;
    g.ops = 20 + rng() % 60;
    g.keys = 2 + static_cast<int>(rng() % 5);
    g.widen = static_cast<int>(rng() % 4);
    auto init = random_initial(rng, g.keys);
    History h = generate(rng, init, g);
    // No scans: turn them into GETs of their lo key.
    KvState replay(init);
    for (Operation& op : h) {
      if (op.kind == OpKind::kScan) {
        op.kind = OpKind::kGet;
        op.key = op.key.substr(0, 3);
      }
    }
    // Results again from the sequential order (the generator's).
    std::vector<Operation*> seq;
    for (Operation& op : h) seq.push_back(&op);
    for (Operation* op : seq) {
      const bool was_pending = op->pending;
      replay.apply(*op);
      op->pending = was_pending;
    }
    if (rng() % 2 == 0) corrupt_any(rng, h, g.keys);
    const CheckResult whole = check(h, init);
    const CheckResult parts = check(h, init, by_key);
    INFO("round " << round);
    REQUIRE(whole.outcome == parts.outcome);
    (whole.linearizable() ? yes : no) += 1;
  }
  std::cout << "key by key agreement: " << yes << " linearizable, " << no << " not\n";
  REQUIRE(yes > 50);
  REQUIRE(no > 50);
}
