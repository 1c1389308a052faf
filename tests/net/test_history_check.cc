// forein-load --history files and their linearizability check
// (history_check.h): the line format both ways, malformed lines refused;
// hand-made histories: linearizable ones pass (overlapping writes seen in
// either order, failed writes seen late or never), and the negative
// controls fail: a stale read, a version never written, a read missing a
// write acknowledged before it started; the corrupt_* functions on those
// histories; seeded random register histories (from a sequential run with
// intervals around each linearization point) pass and fail once corrupted.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <unistd.h>

#include "history_check.h"
#include "support/seed.h"

using forein::testing::check_history;
using forein::testing::corrupt_missed_write;
using forein::testing::corrupt_stale_read;
using forein::testing::corrupt_unwritten_version;
using forein::testing::HistoryOp;
using Outcome = HistoryOp::Outcome;

namespace {

HistoryOp W(std::uint32_t slot, std::uint64_t key, std::int64_t version, std::uint64_t invoke, std::uint64_t response,
            Outcome outcome = Outcome::kOk, std::uint32_t resends = 0) {
  return HistoryOp{slot, true, key, version, invoke, response, outcome, resends};
}
HistoryOp R(std::uint32_t slot, std::uint64_t key, std::int64_t version, std::uint64_t invoke, std::uint64_t response,
            Outcome outcome = Outcome::kOk) {
  return HistoryOp{slot, false, key, version, invoke, response, outcome, 0};
}

bool linearizable(const std::vector<HistoryOp>& h) {
  const auto c = check_history(h);
  INFO(c.summary() << "\n" << c.explanation);
  CHECK(!c.unknown);
  return c.linearizable;
}

}  // namespace

TEST_CASE("history lines: format and parse", "[history]") {
  const std::vector<HistoryOp> ops = {
      W(3, 17, 5, 100, 250), R(0, 17, 5, 300, 400), R(1, 17, 0, 300, 401),
      R(2, 9, HistoryOp::kNoVersion, 10, 20, Outcome::kFailed), R(4, 9, HistoryOp::kBadRecord, 10, 20),
      W(5, 1, 7, 50, 0, Outcome::kPending), W(6, 2, 8, 50, 900, Outcome::kFailed, 3)};
  for (const HistoryOp& op : ops) {
    const std::string line = forein::net::load::format_history_line(op);
    std::string why;
    const auto back = forein::net::load::parse_history_line(line, &why);
    INFO(line << ": " << why);
    REQUIRE(back);
    CHECK(*back == op);
  }
  CHECK(forein::net::load::format_history_line(ops[0]) == "3 W 17 5 100 250 ok 0");
  CHECK(forein::net::load::format_history_line(ops[5]) == "5 W 1 7 50 - pending 0");
  CHECK(forein::net::load::format_history_line(ops[6]) == "6 W 2 8 50 900 failed 3");
  for (const char* bad : {"", "1 W 2 3 4 5 ok", "1 X 2 3 4 5 ok 0", "1 W 2 3 4 5 done 0", "1 W 2 - 4 5 ok 0",
                          "1 R 2 - 4 5 ok 0", "1 W 2 3 9 5 ok 0", "1 W 2 3 4 - ok 0", "1 W 2 3 4 5 pending 0",
                          "a W 2 3 4 5 ok 0", "1 W 2 3 4 5 ok 0 x", "1 W 2 -3 4 5 ok 0", "1 W 2 3 4 5 ok -1"}) {
    std::string why;
    INFO("line \"" << bad << "\"");
    CHECK(!forein::net::load::parse_history_line(bad, &why));
    CHECK(!why.empty());
  }
}

TEST_CASE("history files: read back, malformed line named", "[history]") {
  char dir[] = "/tmp/forein-history-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/h";
  {
    forein::net::load::HistoryWriter w(path, "forein-load history 1 keys=10");
    w.add(W(0, 1, 1, 10, 20));
    w.add(R(1, 1, 1, 30, 40));
    w.close();
    CHECK(w.lines() == 2);
  }
  const auto h = forein::testing::read_history(path);
  CHECK(h.header == "forein-load history 1 keys=10");
  REQUIRE(h.ops.size() == 2);
  CHECK(h.ops[1] == R(1, 1, 1, 30, 40));
  CHECK(check_history(h.ops).linearizable);
  {
    std::ofstream out(path, std::ios::app);
    out << "2 R 1 x 50 60 ok 0\n";
  }
  CHECK_THROWS_WITH(forein::testing::read_history(path), Catch::Contains(":5: bad version"));
  CHECK_THROWS(forein::net::load::HistoryWriter(std::string(dir) + "/no/such/dir/h", "x"));
  std::remove(path.c_str());
  ::rmdir(dir);
}

TEST_CASE("history check: linearizable histories pass", "[history]") {
  // Sequential: the preloaded version, then each write in turn.
  CHECK(linearizable({R(0, 1, 0, 10, 20), W(0, 1, 1, 30, 40), R(1, 1, 1, 50, 60), W(1, 1, 2, 70, 80),
                      R(0, 1, 2, 90, 100)}));
  // Two overlapping writes: later reads may see either order, but once
  // one order is seen it stays.
  CHECK(linearizable({W(0, 1, 1, 10, 50), W(1, 1, 2, 20, 60), R(2, 1, 1, 70, 80), R(3, 1, 1, 90, 100)}));
  CHECK(linearizable({W(0, 1, 1, 10, 50), W(1, 1, 2, 20, 60), R(2, 1, 2, 70, 80)}));
  // A read overlapping a write sees the old or the new version.
  CHECK(linearizable({W(0, 1, 1, 10, 50), R(1, 1, 0, 20, 30), R(2, 1, 1, 25, 35), R(3, 1, 1, 60, 70)}));
  // A failed write may land late (after its give-up time) or never.
  CHECK(linearizable({W(0, 1, 1, 10, 20), W(1, 1, 2, 30, 40, Outcome::kFailed), R(2, 1, 1, 50, 60),
                      R(2, 1, 2, 70, 80)}));
  CHECK(linearizable({W(0, 1, 1, 10, 20), W(1, 1, 2, 30, 40, Outcome::kPending), R(2, 1, 1, 50, 60)}));
  // A resent write's late copy may bring its version back after a newer
  // write; without a resend that is a stale read.
  CHECK(linearizable({W(0, 1, 1, 10, 20, Outcome::kOk, 1), W(1, 1, 2, 30, 40), R(2, 1, 1, 50, 60)}));
  CHECK(linearizable({W(0, 1, 1, 10, 20, Outcome::kOk, 2), R(1, 1, 1, 25, 28), W(1, 1, 2, 30, 40),
                      R(2, 1, 2, 50, 60), R(2, 1, 1, 70, 80)}));
  CHECK(!linearizable({W(0, 1, 1, 10, 20, Outcome::kOk, 2), R(1, 1, 1, 25, 28), W(1, 1, 2, 30, 40),
                       R(2, 1, 2, 50, 60), R(2, 1, 1, 70, 80), R(2, 1, 2, 90, 100)}));
  // Failed reads say nothing; keys are independent.
  CHECK(linearizable({W(0, 1, 1, 10, 20), R(1, 1, HistoryOp::kNoVersion, 30, 40, Outcome::kFailed),
                      R(2, 2, 0, 30, 40), W(3, 2, 3, 50, 60), R(4, 2, 3, 70, 80)}));
}

TEST_CASE("history check: negative controls fail", "[history]") {
  // A read returns an older acknowledged version after a newer write was
  // acknowledged before the read started.
  CHECK(!linearizable({W(0, 1, 1, 10, 20), W(1, 1, 2, 30, 40), R(2, 1, 1, 50, 60)}));
  // A read returns a version never written (and one that is no record).
  CHECK(!linearizable({W(0, 1, 1, 10, 20), R(2, 1, 7, 30, 40)}));
  CHECK(!linearizable({R(2, 1, HistoryOp::kBadRecord, 30, 40)}));
  // A read misses a write acknowledged before it was invoked.
  CHECK(!linearizable({W(0, 1, 1, 10, 20), R(1, 1, 0, 30, 40)}));
  // Monotonic: once a read saw the new version, a later one cannot see
  // the old (the write overlaps both).
  CHECK(!linearizable({W(0, 1, 1, 10, 100), R(1, 1, 1, 20, 30), R(2, 1, 0, 40, 50)}));
  // A failed write cannot take effect before it was invoked.
  CHECK(!linearizable({R(1, 1, 2, 10, 20), W(0, 1, 2, 30, 40, Outcome::kFailed)}));
}

TEST_CASE("history corruptions make hand-made linearizable histories fail", "[history]") {
  const std::vector<HistoryOp> good = {W(0, 1, 1, 10, 20), W(1, 1, 2, 30, 40), R(2, 1, 2, 50, 60),
                                       W(3, 1, 3, 70, 200), R(4, 1, 2, 80, 90)};
  REQUIRE(linearizable(good));
  auto h = good;
  auto why = corrupt_stale_read(&h);
  REQUIRE(why);
  INFO(*why);
  CHECK(h[2].version == 1);  // write 1 was superseded by write 2 before the read
  CHECK(!linearizable(h));
  h = good;
  why = corrupt_missed_write(&h);
  REQUIRE(why);
  INFO(*why);
  CHECK(h[3].response_ns == 79);  // write 3 now acknowledged before read 4, which saw 2
  CHECK(!linearizable(h));
  h = good;
  REQUIRE(corrupt_unwritten_version(&h));
  CHECK(!linearizable(h));
  // Nothing to corrupt: reads only, or no write superseded before a read
  // and no read during a write.
  std::vector<HistoryOp> reads = {R(0, 1, 0, 10, 20)};
  CHECK(!corrupt_stale_read(&reads));
  CHECK(!corrupt_missed_write(&reads));
  // Only version 0 superseded: the stale read falls back to it.
  std::vector<HistoryOp> once = {W(0, 1, 1, 10, 20), R(1, 1, 1, 30, 40)};
  why = corrupt_stale_read(&once);
  REQUIRE(why);
  CHECK(once[1].version == 0);
  CHECK(!linearizable(once));
}

TEST_CASE("history check: random register histories, then corrupted", "[history]") {
  const std::uint64_t seed = forein::testing::test_seed("history check random");
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 40; ++round) {
    // A sequential run on 3 keys; each op's interval is drawn around its
    // linearization point (time 100*i), wide enough to overlap others.
    const int n = 60;
    std::vector<std::int64_t> value(3, 0);
    std::vector<HistoryOp> h;
    std::uint32_t version = 1;
    for (int i = 0; i < n; ++i) {
      const std::uint64_t key = rng() % 3;
      const std::uint64_t at = 1000 + 100 * static_cast<std::uint64_t>(i);
      const std::uint64_t invoke = at - 1 - rng() % 300, response = at + 1 + rng() % 300;
      if (rng() % 2 == 0) {
        value[key] = version;
        const bool failed = rng() % 10 == 0;
        h.push_back(W(static_cast<std::uint32_t>(i % 16), key, version++, invoke, response,
                      failed ? Outcome::kFailed : Outcome::kOk));
      } else {
        h.push_back(R(static_cast<std::uint32_t>(i % 16), key, value[key], invoke, response));
      }
    }
    INFO("round " << round);
    REQUIRE(linearizable(h));
    auto bad = h;
    if (corrupt_stale_read(&bad)) CHECK(!linearizable(bad));
    bad = h;
    if (corrupt_missed_write(&bad)) CHECK(!linearizable(bad));
    bad = h;
    REQUIRE(corrupt_unwritten_version(&bad));
    CHECK(!linearizable(bad));
  }
}
