// forein-load's parts (net/load): the workload generator's mixes and key
// distributions, the latency histogram's percentiles, the --verify rules
// and the command line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "load/histogram.h"
#include "load/options.h"
#include "load/verify.h"
#include "load/workload.h"
#include "protocol/dataset.h"
#include "support/seed.h"

using namespace forein::net;
using namespace forein::net::load;

namespace {

std::map<OpKind, double> shares(Workload w, std::uint64_t seed, int n = 200000) {
  WorkloadGenerator g(w, Distribution::kUniform, 10000, 0.99, seed);
  std::map<OpKind, double> out;
  for (int i = 0; i < n; ++i) out[g.next().kind] += 1.0 / n;
  return out;
}

}  // namespace

TEST_CASE("workload mixes match YCSB and getputdel within tolerance", "[load]") {
  const std::uint64_t seed = forein::testing::test_seed("load mixes");
  for (Workload w : {Workload::kA, Workload::kB, Workload::kC, Workload::kD, Workload::kE,
                     Workload::kF, Workload::kGetPutDel}) {
    const Mix mix = mix_for(w);
    unsigned total = 0;
    for (unsigned p : mix.percent) total += p;
    REQUIRE(total == 100);
    const auto got = shares(w, seed);
    for (std::size_t k = 0; k < kOpKinds; ++k) {
      const auto kind = static_cast<OpKind>(k);
      const double want = mix.percent[k] / 100.0;
      const double have = got.count(kind) ? got.at(kind) : 0.0;
      INFO("workload " << to_string(w) << " op " << to_string(kind));
      CHECK(std::abs(have - want) < 0.01);
    }
  }
  CHECK(mix_for(Workload::kA).percent[static_cast<int>(OpKind::kUpdate)] == 50);
  CHECK(mix_for(Workload::kE).percent[static_cast<int>(OpKind::kScan)] == 95);
  CHECK(mix_for(Workload::kF).percent[static_cast<int>(OpKind::kRmw)] == 50);
}

TEST_CASE("inserts take fresh keys from N upwards; scans 1..100 entries", "[load]") {
  const std::uint64_t seed = forein::testing::test_seed("load inserts");
  WorkloadGenerator g(Workload::kE, Distribution::kUniform, 500, 0.99, seed);
  std::uint64_t next = 500;
  for (int i = 0; i < 20000; ++i) {
    const Operation op = g.next();
    if (op.kind == OpKind::kInsert) {
      CHECK(op.key == next++);
    } else {
      REQUIRE(op.kind == OpKind::kScan);
      CHECK(op.key < 500);
      CHECK(op.scan_len >= 1);
      CHECK(op.scan_len <= kMaxScanLength);
    }
  }
  CHECK(g.inserts() == next - 500);
}

TEST_CASE("zipf draws are skewed and scattered over the keys", "[load]") {
  const std::uint64_t seed = forein::testing::test_seed("load zipf");
  const std::uint64_t n = 100000;
  WorkloadGenerator g(Workload::kC, Distribution::kZipf, n, 0.99, seed);
  std::map<std::uint64_t, int> counts;
  const int draws = 200000;
  for (int i = 0; i < draws; ++i) {
    const std::uint64_t k = g.draw_key();
    REQUIRE(k < n);
    ++counts[k];
  }
  std::vector<int> c;
  for (const auto& [k, v] : counts) c.push_back(v);
  std::sort(c.rbegin(), c.rend());
  // Theta 0.99 over 100k keys: the hottest key takes ~1/zeta(n) ~ 8%, the
  // top 1% of keys over half of the draws; uniform would give 0.001% / 1%.
  CHECK(c[0] > draws * 0.05);
  CHECK(c[0] < draws * 0.12);
  int top = 0;
  for (std::size_t i = 0; i < std::min<std::size_t>(c.size(), n / 100); ++i) top += c[i];
  CHECK(top > draws / 2);
  // The hottest key is rank 0's image under the fixed permutation; ranks
  // 0..9 land far apart.
  CHECK(counts[g.scatter(0)] == c[0]);
  std::vector<std::uint64_t> hot;
  for (std::uint64_t r = 0; r < 10; ++r) hot.push_back(g.scatter(r));
  std::sort(hot.begin(), hot.end());
  CHECK(std::adjacent_find(hot.begin(), hot.end()) == hot.end());
  CHECK(hot.back() - hot.front() > n / 4);
  // The permutation is a bijection.
  WorkloadGenerator small(Workload::kC, Distribution::kZipf, 1000, 0.9, seed);
  std::vector<bool> seen(1000);
  for (std::uint64_t r = 0; r < 1000; ++r) seen[small.scatter(r)] = true;
  CHECK(std::all_of(seen.begin(), seen.end(), [](bool b) { return b; }));
}

TEST_CASE("latest reads favour the newest keys, inserts included", "[load]") {
  const std::uint64_t seed = forein::testing::test_seed("load latest");
  const std::uint64_t n = 10000;
  WorkloadGenerator g(Workload::kD, Distribution::kLatest, n, 0.99, seed);
  int newest_hits = 0, recent = 0, reads = 0;
  for (int i = 0; i < 100000; ++i) {
    const Operation op = g.next();
    if (op.kind != OpKind::kRead) continue;
    ++reads;
    const std::uint64_t newest = n + g.inserts() - 1;
    REQUIRE(op.key <= newest);
    if (op.key == newest) ++newest_hits;
    if (newest - op.key < 100) ++recent;
  }
  CHECK(g.inserts() > 0);
  CHECK(newest_hits > reads / 20);
  CHECK(recent > reads / 2);
}

TEST_CASE("histogram percentiles are within the bucket precision", "[load]") {
  LatencyHistogram h;
  CHECK(h.percentile(0.5) == 0);
  for (std::uint64_t v = 1; v <= 100000; ++v) h.record(v * 1000);  // 1 us .. 100 ms
  CHECK(h.count() == 100000);
  auto near = [](std::uint64_t got, double want) {
    return got >= want && static_cast<double>(got) <= want * 1.04;
  };
  CHECK(near(h.percentile(0.5), 50000e3));
  CHECK(near(h.percentile(0.99), 99000e3));
  CHECK(near(h.percentile(0.999), 99900e3));
  CHECK(h.percentile(1.0) == 100000000);
  CHECK(h.min() == 1000);
  CHECK(h.mean() == Approx(50000.5e3));
  // Small values are exact; every value lands in a bucket whose bound is >= it.
  for (std::uint64_t v : {0ull, 1ull, 31ull, 32ull, 33ull, 1000ull, 123456789ull, ~0ull}) {
    const std::size_t b = LatencyHistogram::bucket_of(v);
    REQUIRE(b < LatencyHistogram::kBuckets);
    CHECK(LatencyHistogram::bucket_upper(b) >= v);
    if (v > 0) CHECK((b == 0 || LatencyHistogram::bucket_upper(b - 1) < v));
  }
  LatencyHistogram one;
  one.record(777);
  CHECK(one.percentile(0.5) == 777);
  CHECK(one.percentile(0.999) == 777);
  LatencyHistogram merged;
  merged.merge(h);
  merged.merge(one);
  CHECK(merged.count() == 100001);
  CHECK(merged.min() == 777);
}

TEST_CASE("verify: data set values, this client's writes, deletes", "[load]") {
  Verifier v(100);
  const auto val = [](std::uint64_t k, std::uint32_t ver = 0) { return dataset_value(k, ver); };
  // Untouched keys: the data set's value; keys >= N absent.
  auto r = v.begin_read();
  CHECK(v.check_get(5, r, val(5)));
  CHECK_FALSE(v.check_get(5, r, val(6)));
  CHECK_FALSE(v.check_get(5, r, val(5, 1)));
  CHECK_FALSE(v.check_get(5, r, std::nullopt));
  CHECK(v.check_get(100, r, std::nullopt));
  CHECK_FALSE(v.check_get(100, r, val(100)));
  v.end_read(r);

  // A write in flight: old or new value; once acknowledged: only the new.
  const auto w1 = v.begin_write(5, 1);
  r = v.begin_read();
  CHECK(v.check_get(5, r, val(5)));
  CHECK(v.check_get(5, r, val(5, 1)));
  v.end_read(r);
  v.write_acked(w1);
  r = v.begin_read();
  CHECK(v.check_get(5, r, val(5, 1)));
  CHECK_FALSE(v.check_get(5, r, val(5)));
  // A read that started before the ack may still see the original.
  v.end_read(r);

  // Several writes in flight: any of them; a delete: not found too.
  const auto w2 = v.begin_write(5, 2);
  const auto w3 = v.begin_write(5, Verifier::kAbsent);
  r = v.begin_read();
  CHECK(v.check_get(5, r, val(5, 1)));
  CHECK(v.check_get(5, r, val(5, 2)));
  CHECK(v.check_get(5, r, std::nullopt));
  CHECK_FALSE(v.check_get(5, r, val(5, 3)));
  v.write_acked(w3);
  v.write_acked(w2);
  // Acked in either order: both stay possible (the server's order is unknown).
  CHECK(v.check_get(5, r, val(5, 2)));
  v.end_read(r);
  r = v.begin_read();
  CHECK(v.check_get(5, r, val(5, 2)));
  CHECK(v.check_get(5, r, std::nullopt));
  CHECK_FALSE(v.check_get(5, r, val(5, 1)));  // superseded before this read began
  CHECK_FALSE(v.check_get(5, r, val(5)));
  v.end_read(r);

  // A read started before a write was acked still accepts the old value.
  const auto r_old = v.begin_read();
  const auto w4 = v.begin_write(7, 1);
  v.write_acked(w4);
  const auto w5 = v.begin_write(7, 2);
  v.write_acked(w5);
  CHECK(v.check_get(7, r_old, val(7)));
  CHECK(v.check_get(7, r_old, val(7, 1)));
  CHECK(v.check_get(7, r_old, val(7, 2)));
  v.end_read(r_old);
  r = v.begin_read();
  CHECK_FALSE(v.check_get(7, r, val(7, 1)));
  CHECK(v.check_get(7, r, val(7, 2)));
  v.end_read(r);

  // A resent or failed write may land late: it is never ruled out.
  const auto w6 = v.begin_write(9, 1);
  v.write_resent(w6);
  v.write_acked(w6);
  const auto w7 = v.begin_write(9, 2);
  v.write_acked(w7);
  const auto w8 = v.begin_write(11, 1);
  v.write_failed(w8);
  r = v.begin_read();
  CHECK(v.check_get(9, r, val(9, 1)));
  CHECK(v.check_get(9, r, val(9, 2)));
  CHECK(v.check_get(11, r, val(11)));
  CHECK(v.check_get(11, r, val(11, 1)));
  v.end_read(r);

  // Inserts: a key >= N exists once its PUT is acknowledged.
  const auto w9 = v.begin_write(150, 1);
  r = v.begin_read();
  CHECK(v.check_get(150, r, std::nullopt));
  v.write_acked(w9);
  CHECK(v.check_get(150, r, val(150, 1)));
  v.end_read(r);
  r = v.begin_read();
  CHECK_FALSE(v.check_get(150, r, std::nullopt));
  v.end_read(r);
}

TEST_CASE("verify: a hot key's history stays short", "[load]") {
  Verifier v(10);
  for (std::uint32_t i = 1; i <= 10000; ++i) {
    const auto w = v.begin_write(3, i);
    v.write_acked(w);
    const auto r = v.begin_read();
    REQUIRE(v.check_get(3, r, dataset_value(3, i)));
    v.end_read(r);
  }
  CHECK(v.tracked_writes() <= 2);
}

TEST_CASE("verify: scans", "[load]") {
  Verifier v(20);
  auto entries = [](std::vector<std::pair<std::uint64_t, std::uint32_t>> kv) {
    std::vector<ScanEntry> out;
    for (auto [k, ver] : kv) out.push_back({dataset_key(k), dataset_value(k, ver)});
    return out;
  };
  std::string why;
  auto r = v.begin_read();
  CHECK(v.check_scan(3, 3, r, entries({{3, 0}, {4, 0}, {5, 0}}), false, &why));
  CHECK_FALSE(v.check_scan(3, 3, r, entries({{3, 0}, {5, 0}, {6, 0}}), false, &why));  // 4 skipped
  CHECK(why.find("skipped") != std::string::npos);
  CHECK_FALSE(v.check_scan(3, 3, r, entries({{3, 0}, {4, 1}, {5, 0}}), false, &why));  // wrong value
  CHECK_FALSE(v.check_scan(3, 2, r, entries({{3, 0}, {4, 0}, {5, 0}}), false, &why));  // too many
  CHECK_FALSE(v.check_scan(3, 3, r, entries({{4, 0}, {3, 0}}), false, &why));          // order
  // The end of the data set: fewer entries are right only at the end.
  CHECK(v.check_scan(18, 5, r, entries({{18, 0}, {19, 0}}), false, &why));
  CHECK_FALSE(v.check_scan(16, 5, r, entries({{16, 0}, {17, 0}}), false, &why));
  CHECK(v.check_scan(16, 5, r, entries({{16, 0}, {17, 0}}), true, &why));  // more: the server stopped early
  v.end_read(r);
  // A deleted key may be skipped; an inserted one must be there once acked.
  const auto d = v.begin_write(4, Verifier::kAbsent);
  v.write_acked(d);
  const auto ins = v.begin_write(20, 1);
  v.write_acked(ins);
  r = v.begin_read();
  CHECK(v.check_scan(3, 3, r, entries({{3, 0}, {5, 0}, {6, 0}}), false, &why));
  CHECK(v.check_scan(18, 5, r, entries({{18, 0}, {19, 0}, {20, 1}}), false, &why));
  CHECK_FALSE(v.check_scan(18, 5, r, entries({{18, 0}, {19, 0}}), false, &why));
  v.end_read(r);
}

TEST_CASE("command line: defaults, errors", "[load]") {
  auto parse = [](std::vector<std::string> args, LoadOptions* o, std::string* err) {
    std::vector<char*> argv;
    static std::string prog = "forein-load";
    argv.push_back(prog.data());
    for (auto& a : args) argv.push_back(a.data());
    bool help = false;
    return parse_options(static_cast<int>(argv.size()), argv.data(), o, err, &help);
  };
  LoadOptions o;
  std::string err;
  REQUIRE(parse({"--target", "127.0.0.1:9000", "--keys", "1000", "--workload", "d"}, &o, &err));
  CHECK(o.target_port == 9000);
  CHECK(o.dist == Distribution::kLatest);  // D reads the latest keys by default
  CHECK(o.outstanding == 16);
  REQUIRE(parse({"--target", "localhost:1", "--keys", "5", "--workload", "getputdel", "--dist", "zipf",
                 "--zipf", "0.9", "--seconds", "0.5", "--outstanding", "4", "--verify", "--timeout-ms",
                 "50", "--retries", "0", "--seed", "42"},
                &o, &err));
  CHECK(o.workload == Workload::kGetPutDel);
  CHECK(o.theta == 0.9);
  CHECK(o.verify);
  CHECK(o.retries == 0);
  CHECK(o.seed == 42);
  CHECK_FALSE(parse({"--keys", "5", "--workload", "a"}, &o, &err));
  CHECK(err.find("--target") != std::string::npos);
  CHECK_FALSE(parse({"--target", "h:1", "--keys", "5", "--workload", "g"}, &o, &err));
  CHECK_FALSE(parse({"--target", "h:0", "--keys", "5", "--workload", "a"}, &o, &err));
  CHECK_FALSE(parse({"--target", "h:1", "--keys", "0", "--workload", "a"}, &o, &err));
  CHECK_FALSE(parse({"--target", "h:1", "--keys", "5", "--workload", "a", "--zipf", "1.5"}, &o, &err));
  CHECK_FALSE(parse({"--target", "h:1", "--keys", "5", "--workload", "a", "--bogus", "1"}, &o, &err));
  CHECK_FALSE(parse({"--target", "h:1", "--keys", "5", "--workload", "a", "--seconds"}, &o, &err));
}

TEST_CASE("command line: --agent, --agent-token, --index", "[load]") {
  auto parse = [](std::vector<std::string> args, LoadOptions* o, std::string* err) {
    std::vector<std::string> all = {"forein-load", "--target", "127.0.0.1:9000", "--keys", "10",
                                    "--workload", "c"};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    bool help = false;
    return parse_options(static_cast<int>(argv.size()), argv.data(), o, err, &help);
  };
  LoadOptions o;
  std::string err;
  REQUIRE(parse({}, &o, &err));
  CHECK(o.agent.empty());
  CHECK(o.index_id == forein::net::kDatasetIndexId);  // what forein-kv-server publishes under
  REQUIRE(parse({"--agent", "127.0.0.1:50051", "--agent-token", "t", "--index", "7"}, &o, &err));
  CHECK(o.agent == "127.0.0.1:50051");
  CHECK(o.agent_token == "t");
  CHECK(o.index_id == 7);
  REQUIRE(parse({"--agent", "localhost:50051"}, &o, &err));
  CHECK(o.index_id == forein::net::kDatasetIndexId);
  CHECK_FALSE(parse({"--agent", "nohostport"}, &o, &err));
  CHECK_FALSE(parse({"--agent", "h:0"}, &o, &err));
  CHECK_FALSE(parse({"--agent-token", "t"}, &o, &err));
  CHECK(err.find("needs --agent") != std::string::npos);
  CHECK_FALSE(parse({"--index", "3"}, &o, &err));
  CHECK(err.find("needs --agent") != std::string::npos);
  CHECK_FALSE(parse({"--agent", "h:1", "--index", "x"}, &o, &err));
}
