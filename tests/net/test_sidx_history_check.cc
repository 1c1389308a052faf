// The secondary-index history check (sidx_history_check.h): hand-made
// histories for each rule and each allowance (concurrent writes, resent
// and failed writes, truncated listings), then seeded random histories of
// a correct index that must pass, with the three corruptions as negative
// controls that must fail.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "history_check.h"
#include "protocol/secondary_index.h"
#include "sidx_history_check.h"
#include "support/seed.h"

using forein::net::secondary_index_of;
using forein::net::load::SidxMember;
using namespace forein::testing;

namespace {

constexpr SidxRun kRun{100, 10};

HistoryOp write(std::uint64_t key, std::uint32_t version, std::uint64_t invoke, std::uint64_t response,
                HistoryOp::Outcome outcome = HistoryOp::Outcome::kOk, std::uint32_t resends = 0) {
  HistoryOp op;
  op.sidx = true;
  op.write = true;
  op.key = key;
  op.version = version;
  op.secondary = secondary_index_of(key, version, kRun.secondary_keys);
  op.invoke_ns = invoke;
  op.response_ns = response;
  op.outcome = outcome;
  op.resends = resends;
  return op;
}

HistoryOp read(std::uint64_t j, std::uint64_t invoke, std::uint64_t response, std::vector<SidxMember> members,
               bool truncated = false) {
  HistoryOp op;
  op.sidx = true;
  op.key = j;
  op.invoke_ns = invoke;
  op.response_ns = response;
  op.members = std::move(members);
  op.truncated = truncated;
  return op;
}

// The preloaded keys naming j, as members (version 0).
std::vector<SidxMember> preloaded(std::uint64_t j, std::uint64_t except = ~std::uint64_t{0}) {
  std::vector<SidxMember> out;
  for (std::uint64_t i = 0; i < kRun.keys; ++i) {
    if (i != except && secondary_index_of(i, 0, kRun.secondary_keys) == j) out.push_back({i, 0});
  }
  return out;
}

// The first version >= from of key naming a secondary key other than `not_j`.
std::uint32_t version_away(std::uint64_t key, std::uint32_t from, std::uint64_t not_j) {
  while (secondary_index_of(key, from, kRun.secondary_keys) == not_j) ++from;
  return from;
}

std::uint64_t j_of(std::uint64_t key, std::uint32_t version) {
  return secondary_index_of(key, version, kRun.secondary_keys);
}

SidxCheck check(const std::vector<HistoryOp>& ops) {
  const SidxCheck c = check_sidx_history(ops, kRun);
  INFO(c.summary() << "\n" << c.explanation);
  return c;
}

}  // namespace

TEST_CASE("sidx history: the header and the kind of history", "[history][sidx]") {
  const auto run = sidx_run_of("forein-load history 1 keys=20000 workload=secondary-index dist=zipf seed=5 "
                               "outstanding=16 secondary_keys=800 sidx_read_count=10");
  REQUIRE(run);
  CHECK(run->keys == 20000);
  CHECK(run->secondary_keys == 800);
  CHECK_FALSE(sidx_run_of("forein-load history 1 keys=20000 workload=write-heavy"));
  CHECK_FALSE(sidx_run_of("forein-load history 1 keys=x secondary_keys=3"));
  CHECK_FALSE(sidx_run_of("forein-load history 1 keys=5 secondary_keys=0"));
  const std::vector<HistoryOp> ops{write(1, 1, 10, 20), read(j_of(1, 1), 30, 40, {{1, 1}})};
  CHECK(is_sidx_history(ops));
  // The linearizability check leaves secondary-index lines alone.
  CHECK(check_history(ops).ops == 0);
}

TEST_CASE("sidx history: preloaded records and acknowledged writes must be listed", "[history][sidx]") {
  const std::uint64_t key = 3;
  const std::uint64_t j0 = j_of(key, 0);
  const std::uint32_t v = version_away(key, 1, j0);
  const std::uint64_t j1 = j_of(key, v);

  // Before any write: every preloaded key of j0.
  CHECK(check({read(j0, 10, 20, preloaded(j0))}).ok);
  const SidxCheck missing = check({read(j0, 10, 20, preloaded(j0, key))});
  CHECK_FALSE(missing.ok);
  CHECK(missing.explanation.find("key 3 missing") != std::string::npos);
  // Truncated: keys may be missing.
  CHECK(check({read(j0, 10, 20, preloaded(j0, key), true)}).ok);

  // Acknowledged at 200, then read: listed under j1, gone from j0.
  std::vector<SidxMember> in_j1 = preloaded(j1);
  in_j1.push_back({key, v});
  CHECK(check({write(key, v, 100, 200), read(j1, 300, 400, in_j1), read(j0, 300, 400, preloaded(j0, key))}).ok);
  const SidxCheck missed = check({write(key, v, 100, 200), read(j1, 300, 400, preloaded(j1))});
  CHECK_FALSE(missed.ok);
  CHECK(missed.explanation.find("key 3 missing") != std::string::npos);
  std::vector<SidxMember> stale = preloaded(j0);  // key 3 at version 0: overwritten at 200
  const SidxCheck overwritten = check({write(key, v, 100, 200), read(j0, 300, 400, stale)});
  CHECK_FALSE(overwritten.ok);
  CHECK(overwritten.explanation.find("overwritten") != std::string::npos);

  // Overlapping the write: either state.
  CHECK(check({write(key, v, 100, 200), read(j0, 150, 400, preloaded(j0))}).ok);
  CHECK(check({write(key, v, 100, 200), read(j0, 150, 400, preloaded(j0, key))}).ok);
  CHECK(check({write(key, v, 100, 200), read(j1, 150, 400, in_j1)}).ok);
  CHECK(check({write(key, v, 100, 200), read(j1, 150, 400, preloaded(j1))}).ok);
  // A read that ended before the write started cannot list it.
  const SidxCheck early = check({write(key, v, 100, 200), read(j1, 10, 50, in_j1)});
  CHECK_FALSE(early.ok);
  CHECK(early.explanation.find("invoked after the read ended") != std::string::npos);
}

TEST_CASE("sidx history: versions never written or naming another key", "[history][sidx]") {
  const std::uint64_t key = 3;
  const std::uint64_t j0 = j_of(key, 0);
  std::vector<SidxMember> bogus = preloaded(j0);
  bogus.push_back({key == 0 ? 1u : 0u, 999});
  const SidxCheck never = check({read(j0, 10, 20, bogus)});
  CHECK_FALSE(never.ok);
  CHECK(never.explanation.find("no write of the key has that version") != std::string::npos);
  // A version of the key that names another secondary key.
  const std::uint32_t v = version_away(key, 1, j0);
  std::vector<SidxMember> wrong = preloaded(j0, key);
  wrong.push_back({key, v});
  const SidxCheck other = check({write(key, v, 100, 200), read(j0, 150, 400, wrong)});
  CHECK_FALSE(other.ok);
  CHECK(other.explanation.find("names secondary key") != std::string::npos);
  // A key outside the data set at version 0.
  std::vector<SidxMember> outside = preloaded(j0);
  outside.push_back({kRun.keys + 5, 0});
  CHECK_FALSE(check({read(j0, 10, 20, outside)}).ok);
}

TEST_CASE("sidx history: concurrent, resent and failed writes may land late", "[history][sidx]") {
  const std::uint64_t key = 8;
  const std::uint64_t j0 = j_of(key, 0);
  const std::uint32_t v1 = version_away(key, 1, j0);
  const std::uint64_t a = j_of(key, v1);
  std::uint32_t v2 = v1 + 1;
  while (j_of(key, v2) == a || j_of(key, v2) == j0) ++v2;
  const std::uint64_t b = j_of(key, v2);
  auto with = [](std::vector<SidxMember> m, SidxMember x) {
    m.push_back(x);
    return m;
  };

  // Two writes of the key in flight together, both acknowledged before
  // the reads: either may have landed last.
  const HistoryOp w1 = write(key, v1, 100, 300);
  const HistoryOp w2 = write(key, v2, 150, 250);
  CHECK(check({w1, w2, read(a, 400, 500, with(preloaded(a), {key, v1})), read(b, 400, 500, preloaded(b))}).ok);
  CHECK(check({w1, w2, read(b, 400, 500, with(preloaded(b), {key, v2})), read(a, 400, 500, preloaded(a))}).ok);
  // Sequential: the second superseded the first.
  const HistoryOp s2 = write(key, v2, 350, 380);
  CHECK_FALSE(check({w1, s2, read(a, 400, 500, with(preloaded(a), {key, v1}))}).ok);
  CHECK_FALSE(check({w1, s2, read(b, 400, 500, preloaded(b))}).ok);

  // Resent: its LOG_APPEND may be appended again after its answer, so it
  // is never superseded.
  const HistoryOp r1 = write(key, v1, 100, 200, HistoryOp::Outcome::kOk, 1);
  CHECK(check({r1, s2, read(a, 400, 500, with(preloaded(a), {key, v1}))}).ok);
  CHECK(check({r1, s2, read(b, 400, 500, preloaded(b))}).ok);
  // Failed or pending: may land at any time after its invocation, or never.
  for (auto outcome : {HistoryOp::Outcome::kFailed, HistoryOp::Outcome::kPending}) {
    const HistoryOp f = write(key, v2, 150, 160, outcome);
    CHECK(check({w1, f, read(b, 400, 500, with(preloaded(b), {key, v2}))}).ok);
    CHECK(check({w1, f, read(a, 400, 500, preloaded(a))}).ok);
    CHECK(check({w1, f, read(a, 400, 500, with(preloaded(a), {key, v1}))}).ok);
  }
  // Failed reads constrain nothing.
  HistoryOp lost = read(a, 400, 500, {});
  lost.outcome = HistoryOp::Outcome::kFailed;
  CHECK(check({w1, s2, lost}).ok);
}

namespace {

// A correct system's history: each operation takes effect atomically at a
// random instant inside its interval (a resent write possibly once more
// later, a failed write maybe after its end or never); a read lists every
// key whose current record names its secondary key then, the first
// `count` of them (truncated when more exist).
std::vector<HistoryOp> simulate(std::mt19937_64& rng, int ops, std::uint32_t count) {
  struct Effect {
    std::uint64_t at;
    std::size_t op;
  };
  std::vector<HistoryOp> h;
  std::vector<Effect> effects;
  std::uniform_int_distribution<std::uint64_t> key(0, 19);  // 20 hot keys of 100
  std::uniform_int_distribution<std::uint64_t> sec(0, kRun.secondary_keys - 1);
  std::uniform_int_distribution<int> roll(0, 99);
  std::uint64_t t = 1000;
  std::uint32_t version = 1;
  for (int n = 0; n < ops; ++n) {
    t += 1 + rng() % 40;
    const std::uint64_t invoke = t;
    const std::uint64_t response = invoke + 10 + rng() % 200;
    const std::uint64_t effect = invoke + 1 + rng() % (response - invoke - 1);
    if (roll(rng) < 50) {
      const int kind = roll(rng);
      HistoryOp w = write(key(rng), version++, invoke, response);
      if (kind < 5) {
        w.outcome = HistoryOp::Outcome::kFailed;
        if (kind < 3) effects.push_back({response + rng() % 500, h.size()});  // lands late
      } else {
        effects.push_back({effect, h.size()});
        if (kind < 10) {
          w.resends = 1;
          effects.push_back({response + rng() % 500, h.size()});  // the late copy
        }
      }
      h.push_back(w);
    } else {
      h.push_back(read(sec(rng), invoke, response, {}));
      effects.push_back({effect, h.size() - 1});
    }
  }
  std::sort(effects.begin(), effects.end(), [](const Effect& a, const Effect& b) { return a.at < b.at; });
  std::map<std::uint64_t, std::uint32_t> current;  // key -> version
  for (std::uint64_t i = 0; i < kRun.keys; ++i) current[i] = 0;
  for (const Effect& e : effects) {
    HistoryOp& op = h[e.op];
    if (op.write) {
      current[op.key] = static_cast<std::uint32_t>(op.version);
      continue;
    }
    for (const auto& [i, v] : current) {
      if (j_of(i, v) != op.key) continue;
      if (op.members.size() == count) {
        op.truncated = true;
        break;
      }
      op.members.push_back({i, v});
    }
    // The client sees "truncated" when it got `count` keys too.
    if (op.members.size() == count) op.truncated = true;
  }
  return h;
}

}  // namespace

TEST_CASE("sidx history: random correct histories pass, their corruptions fail", "[history][sidx]") {
  const std::uint64_t seed = test_seed("sidx history random");
  std::mt19937_64 rng(seed);
  int missing_controls = 0, overwritten_controls = 0, unwritten_controls = 0;
  for (int round = 0; round < 40; ++round) {
    const std::uint32_t count = round % 2 == 0 ? 256 : 12;
    const auto h = simulate(rng, 400, count);
    INFO("seed " << seed << " round " << round);
    const SidxCheck good = check(h);
    REQUIRE(good.ok);
    CHECK(good.reads > 100);

    auto missing = h;
    if (const auto why = corrupt_sidx_missing_member(&missing, kRun)) {
      INFO(*why);
      CHECK_FALSE(check(missing).ok);
      ++missing_controls;
    }
    auto overwritten = h;
    if (const auto why = corrupt_sidx_overwritten_member(&overwritten, kRun)) {
      INFO(*why);
      const SidxCheck c = check(overwritten);
      CHECK_FALSE(c.ok);
      CHECK(c.explanation.find("overwritten") != std::string::npos);
      ++overwritten_controls;
    }
    auto unwritten = h;
    if (const auto why = corrupt_sidx_unwritten_version(&unwritten)) {
      INFO(*why);
      CHECK_FALSE(check(unwritten).ok);
      ++unwritten_controls;
    }
  }
  // Each control found something to corrupt in most rounds.
  CHECK(missing_controls >= 30);
  CHECK(overwritten_controls >= 30);
  CHECK(unwritten_controls >= 30);
}
