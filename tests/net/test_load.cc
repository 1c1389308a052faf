// forein-load's parts (net/load): the workload generator's mixes and key
// distributions, the latency histogram's percentiles, the --verify rules,
// the command line, the report, and Switch-delta's ordered write / read
// steps (load/ordered.h) against hand-built replies.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "load/histogram.h"
#include "load/options.h"
#include "load/ordered.h"
#include "load/report.h"
#include "load/verify.h"
#include "load/workload.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "protocol/visibility.h"
#include "support/seed.h"
#include "support/zipf.h"

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
                     Workload::kF, Workload::kGetPutDel, Workload::kWriteOnly, Workload::kWriteHeavy}) {
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
  // Switch-delta's mixes (paper 002, V-B): write-only, write-heavy 50/50.
  CHECK(mix_for(Workload::kWriteOnly).percent[static_cast<int>(OpKind::kWrite)] == 100);
  CHECK(mix_for(Workload::kWriteHeavy).percent[static_cast<int>(OpKind::kWrite)] == 50);
  CHECK(mix_for(Workload::kWriteHeavy).percent[static_cast<int>(OpKind::kRead)] == 50);
  for (Workload w : {Workload::kA, Workload::kB, Workload::kC, Workload::kD, Workload::kE, Workload::kF,
                     Workload::kGetPutDel}) {
    CHECK(mix_for(w).percent[static_cast<int>(OpKind::kWrite)] == 0);
    CHECK_FALSE(is_ordered(w));
  }
  CHECK(is_ordered(Workload::kWriteOnly));
  CHECK(is_ordered(Workload::kWriteHeavy));
}

TEST_CASE("ordered workloads draw data set keys, zipf by default theta", "[load]") {
  const std::uint64_t seed = forein::testing::test_seed("load ordered keys");
  WorkloadGenerator g(Workload::kWriteHeavy, Distribution::kZipf, 1000, 0.99, seed);
  for (int i = 0; i < 10000; ++i) {
    const Operation op = g.next();
    REQUIRE((op.kind == OpKind::kRead || op.kind == OpKind::kWrite));
    CHECK(op.key < 1000);
  }
  CHECK(g.inserts() == 0);
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

TEST_CASE("zipf ranks follow the pmf for theta >= 1 (rejection-inversion)", "[load]") {
  // P(rank r) = (r + 1)^-theta / H(n, theta). Each of the 20 hottest ranks'
  // share of 400k draws is within 5 standard deviations of its pmf (at
  // least 0.002 absolute), and so is the share of all ranks past 20.
  const std::uint64_t seed = forein::testing::test_seed("load zipf theta >= 1");
  const std::uint64_t n = 1000000;
  for (double theta : {1.0, 1.1, 1.2, 2.0}) {
    INFO("theta " << theta << " seed " << seed);
    forein::testing::ZipfGenerator z(n, theta);
    std::mt19937_64 rng(seed);
    const int draws = 400000;
    std::vector<int> counts(21);
    for (int i = 0; i < draws; ++i) {
      const std::uint64_t r = z(rng);
      REQUIRE(r < n);
      ++counts[std::min<std::uint64_t>(r, 20)];
    }
    double h = 0;
    for (std::uint64_t i = 1; i <= n; ++i) h += std::pow(static_cast<double>(i), -theta);
    double head = 0;
    for (int r = 0; r <= 20; ++r) {
      const double p = r < 20 ? std::pow(r + 1.0, -theta) / h : 1.0 - head;
      if (r < 20) head += p;
      const double got = static_cast<double>(counts[r]) / draws;
      const double tol = std::max(0.002, 5 * std::sqrt(p * (1 - p) / draws));
      INFO("rank " << r << (r == 20 ? " and beyond" : "") << ": pmf " << p << ", drawn " << got);
      CHECK(std::abs(got - p) < tol);
    }
  }
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
  CHECK_FALSE(parse({"--target", "h:1", "--keys", "5", "--workload", "a", "--zipf", "2.5"}, &o, &err));
  CHECK_FALSE(parse({"--target", "h:1", "--keys", "5", "--workload", "a", "--zipf", "0"}, &o, &err));
  REQUIRE(parse({"--target", "h:1", "--keys", "5", "--workload", "a", "--zipf", "1.2"}, &o, &err));
  CHECK(o.theta == 1.2);
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

TEST_CASE("command line: write-only, write-heavy, --record-bytes", "[load]") {
  auto parse = [](std::vector<std::string> args, LoadOptions* o, std::string* err) {
    std::vector<std::string> all = {"forein-load", "--target", "127.0.0.1:9000", "--keys", "10"};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    bool help = false;
    return parse_options(static_cast<int>(argv.size()), argv.data(), o, err, &help);
  };
  LoadOptions o;
  std::string err;
  REQUIRE(parse({"--workload", "write-only"}, &o, &err));
  CHECK(o.workload == Workload::kWriteOnly);
  CHECK(o.record_bytes == 128);
  CHECK(o.theta == 0.99);
  CHECK(std::string(to_string(o.workload)) == "write-only");
  REQUIRE(parse({"--workload", "write-heavy", "--dist", "zipf", "--record-bytes", "27", "--verify"}, &o, &err));
  CHECK(o.workload == Workload::kWriteHeavy);
  CHECK(std::string(to_string(o.workload)) == "write-heavy");
  CHECK(o.dist == Distribution::kZipf);
  CHECK(o.record_bytes == 27);
  REQUIRE(parse({"--workload", "write-heavy", "--record-bytes", "4096"}, &o, &err));
  CHECK(o.record_bytes == 4096);
  for (const char* bad : {"26", "0", "4097", "-1", "x", "128k", ""}) {
    INFO("--record-bytes '" << bad << "'");
    CHECK_FALSE(parse({"--workload", "write-only", "--record-bytes", bad}, &o, &err));
    CHECK(err.find("--record-bytes") != std::string::npos);
  }
  // --record-bytes is the ordered workloads' only.
  CHECK_FALSE(parse({"--workload", "a", "--record-bytes", "128"}, &o, &err));
  CHECK(err.find("write-only") != std::string::npos);
  // No hints on Switch-delta's path.
  CHECK_FALSE(parse({"--workload", "write-heavy", "--agent", "127.0.0.1:50051"}, &o, &err));
  CHECK(err.find("--agent") != std::string::npos);
  CHECK_FALSE(parse({"--workload", "write-only", "--agent", "h:1", "--index", "3"}, &o, &err));
  CHECK_FALSE(parse({"--workload", "write"}, &o, &err));
  // Other workloads keep --agent.
  CHECK(parse({"--workload", "e", "--agent", "h:1"}, &o, &err));
  CHECK(usage_text("forein-load").find("write-heavy") != std::string::npos);
  CHECK(usage_text("forein-load").find("--record-bytes") != std::string::npos);
}

TEST_CASE("verify: ordered records and their versions", "[load]") {
  Verifier v(100);
  std::string why;
  const auto rec = [](std::uint64_t k, std::uint32_t ver, std::size_t bytes = kRecordBytes) {
    return dataset_record(k, ver, bytes);
  };
  // The preloaded record (version 0), any record size.
  auto r = v.begin_read();
  CHECK(v.check_record(5, r, rec(5, 0), &why));
  CHECK(v.check_record(5, r, rec(5, 0, 27), &why));
  // Garbage, another key's record, a truncated record, a version never issued.
  CHECK_FALSE(v.check_record(5, r, "garbage", &why));
  CHECK(why.find("not a record") != std::string::npos);
  CHECK_FALSE(v.check_record(5, r, std::string(128, '\0'), &why));
  CHECK_FALSE(v.check_record(5, r, rec(6, 0), &why));
  CHECK_FALSE(v.check_record(5, r, rec(5, 0).substr(0, 100) + std::string(28, 'a'), &why));
  CHECK_FALSE(v.check_record(5, r, rec(5, 1), &why));  // no invented data
  CHECK(why.find("version 1") != std::string::npos);
  v.end_read(r);

  // A write in flight: old or new; a read of the newer in-flight write is fine.
  const auto w1 = v.begin_write(5, 1);
  r = v.begin_read();
  CHECK(v.check_record(5, r, rec(5, 0), &why));
  CHECK(v.check_record(5, r, rec(5, 1), &why));
  CHECK_FALSE(v.check_record(5, r, rec(5, 2), &why));
  v.end_read(r);
  v.write_acked(w1);  // committed (one round trip or phase 2)

  // Committed before the read started: the preloaded record is stale.
  r = v.begin_read();
  CHECK(v.check_record(5, r, rec(5, 1), &why));
  CHECK_FALSE(v.check_record(5, r, rec(5, 0), &why));
  CHECK(why.find("preloaded") != std::string::npos);
  v.end_read(r);

  // A later write committed: version 1 is stale for reads after it.
  const auto w2 = v.begin_write(5, 7);
  const auto r_during = v.begin_read();
  v.write_acked(w2);
  r = v.begin_read();
  CHECK_FALSE(v.check_record(5, r, rec(5, 1), &why));
  CHECK(why.find("stale") != std::string::npos);
  CHECK(v.check_record(5, r, rec(5, 7), &why));
  // A read that started before that commit may see either.
  CHECK(v.check_record(5, r_during, rec(5, 1), &why));
  CHECK(v.check_record(5, r_during, rec(5, 7), &why));
  v.end_read(r);
  v.end_read(r_during);

  // Writes in flight together land in the data node's order, not the
  // versions': after both commit either may be the last.
  const auto w3 = v.begin_write(9, 3);
  const auto w4 = v.begin_write(9, 4);
  v.write_acked(w4);
  v.write_acked(w3);
  r = v.begin_read();
  CHECK(v.check_record(9, r, rec(9, 3), &why));
  CHECK(v.check_record(9, r, rec(9, 4), &why));
  CHECK_FALSE(v.check_record(9, r, rec(9, 0), &why));
  v.end_read(r);

  // A write retransmitted (a LOG_APPEND may be appended twice and its
  // late reply stored by the switch) is never ruled out.
  const auto w5 = v.begin_write(11, 5);
  v.write_resent(w5);
  v.write_acked(w5);
  const auto w6 = v.begin_write(11, 6);
  v.write_acked(w6);
  r = v.begin_read();
  CHECK(v.check_record(11, r, rec(11, 5), &why));
  CHECK(v.check_record(11, r, rec(11, 6), &why));
  v.end_read(r);
}

namespace {

SlotKey slot_of(std::uint64_t i) { return slot_key(dataset_key(i)); }

// The reply a server (or the switch) sends to `request`.
Packet reply_to(const Packet& request, Status status, std::string value = {},
                std::optional<VisibilityHeader> vis = std::nullopt) {
  Packet r;
  r.op = Op::kReply;
  r.status = status;
  r.seq = request.seq;
  r.key = request.key;
  r.value = std::move(value);
  r.visibility = vis;
  return r;
}

VisibilityHeader vis(std::uint64_t i, VisState state, std::uint32_t ts = 0) {
  const SlotKey k = slot_of(i);
  VisibilityHeader h;
  h.slot = k.slot;
  h.fingerprint = k.fingerprint;
  h.state = state;
  h.ts = ts;
  return h;
}

// Every request a step produces is one the wire takes.
void check_encodes(const Packet& p) {
  Packet back;
  const auto d = encode_packet(p);
  REQUIRE(parse_packet(d, &back) == ParseError::kNone);
  CHECK(back.op == p.op);
  CHECK(back.key == p.key);
  CHECK(back.value == p.value);
  CHECK(back.visibility == p.visibility);
}

}  // namespace

TEST_CASE("ordered write: LOG_APPEND, then done or META_PUT", "[load]") {
  const LogLocation where{2, 41};
  const std::string loc = encode_location(where);

  SECTION("the switch stored it: committed after one request") {
    OrderedWrite w(17, 3);
    const Packet append = w.start();
    CHECK(append.op == Op::kLogAppend);
    CHECK(append.key == dataset_key(17));
    CHECK(append.value == dataset_record(17, 3));
    CHECK(append.value.size() == kRecordBytes);
    REQUIRE(append.visibility);
    CHECK(append.visibility->slot == slot_of(17).slot);
    CHECK(append.visibility->fingerprint == slot_of(17).fingerprint);
    CHECK(append.visibility->state == VisState::kNone);
    CHECK(append.seq == 0);
    check_encodes(append);
    const Step s = w.on_reply(reply_to(append, Status::kOk, loc, vis(17, VisState::kStored, 900)));
    CHECK(s.kind == Step::Kind::kDone);
    CHECK(w.phase() == OrderedWrite::Phase::kCommitted);
    CHECK(w.one_rtt());
    CHECK(w.ts() == 900);
    CHECK(w.location() == loc);
  }

  SECTION("fallback: META_PUT with the same location and ts, committed by its reply") {
    OrderedWrite w(17, 4, 300);
    const Packet append = w.start();
    CHECK(append.value == dataset_record(17, 4, 300));
    const Step s = w.on_reply(reply_to(append, Status::kOk, loc, vis(17, VisState::kFallback, 901)));
    REQUIRE(s.kind == Step::Kind::kSend);
    CHECK(w.phase() == OrderedWrite::Phase::kMetaPut);
    const Packet& put = s.request;
    CHECK(put.op == Op::kMetaPut);
    CHECK(put.key == dataset_key(17));
    CHECK(put.value == loc);
    REQUIRE(put.visibility);
    CHECK(put.visibility->slot == slot_of(17).slot);
    CHECK(put.visibility->fingerprint == slot_of(17).fingerprint);
    CHECK(put.visibility->ts == 901);
    CHECK(put.visibility->state == VisState::kNone);
    check_encodes(put);
    // The reply comes back with the header's slot and ts; held or not, kOk commits.
    const Step done = w.on_reply(reply_to(put, Status::kOk, {}, vis(17, VisState::kNone, 901)));
    CHECK(done.kind == Step::Kind::kDone);
    CHECK(w.phase() == OrderedWrite::Phase::kCommitted);
    CHECK_FALSE(w.one_rtt());
    // Nothing after the end.
    CHECK(w.on_reply(reply_to(put, Status::kOk)).kind == Step::Kind::kFailed);
  }

  SECTION("no visibility on the path (state kNone): phase 2 too") {
    OrderedWrite w(3, 1);
    const Step s = w.on_reply(reply_to(w.start(), Status::kOk, loc, vis(3, VisState::kNone, 5)));
    REQUIRE(s.kind == Step::Kind::kSend);
    CHECK(s.request.op == Op::kMetaPut);
    CHECK(s.request.visibility->ts == 5);
  }

  SECTION("a stamped location (10 bytes) is taken as its location") {
    OrderedWrite w(3, 1);
    const Step s = w.on_reply(reply_to(w.start(), Status::kOk, encode_stamped({where, 77}),
                                       vis(3, VisState::kFallback, 77)));
    REQUIRE(s.kind == Step::Kind::kSend);
    CHECK(s.request.value == loc);
  }

  SECTION("error replies end the write") {
    const auto first = [&](Packet reply) {
      OrderedWrite w(3, 1);
      const Step s = w.on_reply(reply);
      CHECK(w.phase() == OrderedWrite::Phase::kFailed);
      return s;
    };
    const Packet append = OrderedWrite(3, 1).start();
    Step s = first(reply_to(append, Status::kServerError, loc, vis(3, VisState::kNone, 1)));
    CHECK(s.kind == Step::Kind::kFailed);
    CHECK(s.why.find("server error") != std::string::npos);
    CHECK(first(reply_to(append, Status::kTooLarge)).kind == Step::Kind::kFailed);
    s = first(reply_to(append, Status::kOk, loc));  // no visibility header
    CHECK(s.kind == Step::Kind::kFailed);
    CHECK(s.why.find("visibility") != std::string::npos);
    s = first(reply_to(append, Status::kOk, "xyz", vis(3, VisState::kStored, 1)));  // not a location
    CHECK(s.kind == Step::Kind::kFailed);
    CHECK(first(reply_to(append, Status::kOk, encode_location({0, 0}).substr(0, 5) + '\0',
                         vis(3, VisState::kStored, 1)))
              .kind == Step::Kind::kFailed);  // log id 0
    CHECK(first(reply_to(append, Status::kOk, loc, vis(3, VisState::kSwitchRead, 1))).kind ==
          Step::Kind::kFailed);
    Packet other = reply_to(append, Status::kOk, loc, vis(3, VisState::kStored, 1));
    other.key = dataset_key(4);
    CHECK(first(other).kind == Step::Kind::kFailed);
    Packet error = reply_to(append, Status::kOk, loc, vis(3, VisState::kStored, 1));
    error.op = Op::kError;
    CHECK(first(error).kind == Step::Kind::kFailed);
    // Phase 2's reply not ok.
    OrderedWrite w(3, 1);
    const Step put = w.on_reply(reply_to(append, Status::kOk, loc, vis(3, VisState::kFallback, 2)));
    REQUIRE(put.kind == Step::Kind::kSend);
    s = w.on_reply(reply_to(put.request, Status::kServerError));
    CHECK(s.kind == Step::Kind::kFailed);
    CHECK(s.why.find("META_PUT") != std::string::npos);
  }
}

TEST_CASE("ordered read: META_GET, LOG_READ, retry on mismatch", "[load]") {
  const std::string loc = encode_location({1, 12345});
  const std::string other_loc = encode_location({1, 99});

  SECTION("the metadata node's location, then the record") {
    OrderedRead r(42);
    const Packet get = r.start();
    CHECK(get.op == Op::kMetaGet);
    CHECK(get.key == dataset_key(42));
    CHECK(get.value.empty());
    REQUIRE(get.visibility);
    CHECK(get.visibility->slot == slot_of(42).slot);
    CHECK(get.visibility->fingerprint == slot_of(42).fingerprint);
    CHECK(get.visibility->state == VisState::kNone);
    check_encodes(get);
    Step s = r.on_reply(reply_to(get, Status::kOk, loc, vis(42, VisState::kNone)));
    REQUIRE(s.kind == Step::Kind::kSend);
    CHECK(r.phase() == OrderedRead::Phase::kLogRead);
    CHECK_FALSE(r.from_switch());
    const Packet& read = s.request;
    CHECK(read.op == Op::kLogRead);
    CHECK(read.key == dataset_key(42));
    CHECK(read.value == loc);
    REQUIRE(read.visibility);
    CHECK(read.visibility->slot == slot_of(42).slot);
    CHECK(read.visibility->fingerprint == slot_of(42).fingerprint);
    check_encodes(read);
    s = r.on_reply(reply_to(read, Status::kOk, dataset_record(42, 8)));
    CHECK(s.kind == Step::Kind::kDone);
    CHECK(r.phase() == OrderedRead::Phase::kDone);
    CHECK(r.record() == dataset_record(42, 8));
    CHECK(r.retries() == 0);
  }

  SECTION("the switch answered META_GET; no visibility header is fine too") {
    OrderedRead r(42);
    Step s = r.on_reply(reply_to(r.start(), Status::kOk, loc, vis(42, VisState::kSwitchRead)));
    REQUIRE(s.kind == Step::Kind::kSend);
    CHECK(r.from_switch());
    CHECK(r.on_reply(reply_to(s.request, Status::kOk, dataset_record(42, 0))).kind == Step::Kind::kDone);
    CHECK(r.from_switch());
    OrderedRead plain(43);
    CHECK(plain.on_reply(reply_to(plain.start(), Status::kOk, loc)).kind == Step::Kind::kSend);
    CHECK_FALSE(plain.from_switch());
  }

  SECTION("mismatch: retry from META_GET, bounded") {
    OrderedRead r(42, /*max_retries=*/2);
    Step s = r.on_reply(reply_to(r.start(), Status::kOk, other_loc, vis(42, VisState::kSwitchRead)));
    REQUIRE(s.kind == Step::Kind::kSend);
    s = r.on_reply(reply_to(s.request, Status::kMismatch));
    REQUIRE(s.kind == Step::Kind::kRetry);
    CHECK(r.retries() == 1);
    CHECK(r.phase() == OrderedRead::Phase::kMetaGet);
    CHECK_FALSE(r.from_switch());
    CHECK(s.request.op == Op::kMetaGet);
    CHECK(s.request.key == dataset_key(42));
    CHECK(s.request.visibility == r.start().visibility);
    // Again the other key's location, again a mismatch.
    s = r.on_reply(reply_to(s.request, Status::kOk, other_loc, vis(42, VisState::kSwitchRead)));
    REQUIRE(s.kind == Step::Kind::kSend);
    s = r.on_reply(reply_to(s.request, Status::kMismatch));
    REQUIRE(s.kind == Step::Kind::kRetry);
    CHECK(r.retries() == 2);
    // The slot cleared: the metadata node's location and the record.
    s = r.on_reply(reply_to(s.request, Status::kOk, loc));
    REQUIRE(s.kind == Step::Kind::kSend);
    CHECK(s.request.value == loc);
    CHECK(r.on_reply(reply_to(s.request, Status::kOk, dataset_record(42, 0))).kind == Step::Kind::kDone);

    // One mismatch over the bound: an error.
    OrderedRead bounded(42, 1);
    s = bounded.on_reply(reply_to(bounded.start(), Status::kOk, other_loc));
    s = bounded.on_reply(reply_to(s.request, Status::kMismatch));
    REQUIRE(s.kind == Step::Kind::kRetry);
    s = bounded.on_reply(reply_to(s.request, Status::kOk, other_loc));
    s = bounded.on_reply(reply_to(s.request, Status::kMismatch));
    CHECK(s.kind == Step::Kind::kFailed);
    CHECK(s.why.find("mismatch") != std::string::npos);
    CHECK(bounded.phase() == OrderedRead::Phase::kFailed);
    CHECK(kMaxReadRetries == 100);
  }

  SECTION("error replies end the read") {
    const Packet get = OrderedRead(42).start();
    OrderedRead a(42);
    Step s = a.on_reply(reply_to(get, Status::kNotFound));
    CHECK(s.kind == Step::Kind::kFailed);
    CHECK(s.why.find("not found") != std::string::npos);
    OrderedRead b(42);
    CHECK(b.on_reply(reply_to(get, Status::kServerError)).kind == Step::Kind::kFailed);
    OrderedRead c(42);
    CHECK(c.on_reply(reply_to(get, Status::kOk, "bad")).kind == Step::Kind::kFailed);
    OrderedRead d(42);
    CHECK(d.on_reply(reply_to(get, Status::kMismatch)).kind == Step::Kind::kFailed);  // only LOG_READ's
    OrderedRead e(42);
    s = e.on_reply(reply_to(get, Status::kOk, loc));
    REQUIRE(s.kind == Step::Kind::kSend);
    const Step nf = e.on_reply(reply_to(s.request, Status::kNotFound));
    CHECK(nf.kind == Step::Kind::kFailed);
    CHECK(nf.why.find("LOG_READ") != std::string::npos);
    OrderedRead f(42);
    Packet other = reply_to(get, Status::kOk, loc);
    other.key = dataset_key(41);
    CHECK(f.on_reply(other).kind == Step::Kind::kFailed);
  }
}

TEST_CASE("report: the ordered workloads' fields", "[load]") {
  RunReport r;
  r.options.workload = Workload::kWriteHeavy;
  r.options.keys = 1000;
  r.options.record_bytes = 256;
  r.elapsed_s = 2;
  r.ops = 10;
  r.per_op[static_cast<std::size_t>(OpKind::kWrite)] = 6;
  r.per_op[static_cast<std::size_t>(OpKind::kRead)] = 4;
  r.writes_one_rtt = 5;
  r.writes_two_phase = 1;
  r.reads_from_switch = 1;
  r.read_retries = 2;
  for (std::uint64_t ns : {10000, 11000, 12000, 13000, 14000, 30000}) {
    r.write_latency.record(ns);
    r.latency.record(ns);
  }
  for (std::uint64_t ns : {20000, 21000, 22000, 23000}) {
    r.read_latency.record(ns);
    r.latency.record(ns);
  }
  const std::string json = report_json(r);
  INFO(json);
  CHECK(json.front() == '{');
  CHECK(json.back() == '}');
  CHECK(json.find("\"ops\":10") != std::string::npos);
  CHECK(json.find("\"ops_per_s\":5.0") != std::string::npos);
  CHECK(json.find("\"writes\":6") != std::string::npos);
  CHECK(json.find("\"reads\":4") != std::string::npos);
  CHECK(json.find("\"writes_one_rtt\":5") != std::string::npos);
  CHECK(json.find("\"writes_two_phase\":1") != std::string::npos);
  CHECK(json.find("\"reads_from_switch\":1") != std::string::npos);
  CHECK(json.find("\"read_retries\":2") != std::string::npos);
  CHECK(json.find("\"record_bytes\":256") != std::string::npos);
  CHECK(json.find("\"workload\":\"write-heavy\"") != std::string::npos);
  const auto object = [&](const std::string& name) {
    const auto at = json.find("\"" + name + "\":{");
    REQUIRE(at != std::string::npos);
    return json.substr(at, json.find('}', at) - at + 1);
  };
  const std::string w = object("write_latency_ns");
  CHECK(w.find("\"count\":6") != std::string::npos);
  CHECK(w.find("\"min\":10000") != std::string::npos);
  CHECK(w.find("\"max\":30000") != std::string::npos);
  for (const char* f : {"\"p50\":", "\"p90\":", "\"p99\":", "\"p999\":", "\"mean\":"}) {
    CHECK(w.find(f) != std::string::npos);
  }
  CHECK(w.find("\"p50\":" + std::to_string(r.write_latency.percentile(0.5))) != std::string::npos);
  const std::string rd = object("read_latency_ns");
  CHECK(rd.find("\"count\":4") != std::string::npos);
  CHECK(rd.find("\"max\":23000") != std::string::npos);
  CHECK(rd.find("\"p99\":" + std::to_string(r.read_latency.percentile(0.99))) != std::string::npos);
  // Each key once.
  CHECK(json.find("\"reads\":") == json.rfind("\"reads\":"));
  CHECK(json.find("\"writes\":") == json.rfind("\"writes\":"));
  const std::string text = format_report(r);
  CHECK(text.find("write latency us") != std::string::npos);
  CHECK(text.find("read latency us") != std::string::npos);
  CHECK(text.find("two-phase 1") != std::string::npos);
  CHECK(text.rfind(json + "\n") == text.size() - json.size() - 1);

  // Other workloads: none of the ordered fields.
  RunReport a;
  a.options.workload = Workload::kA;
  const std::string ja = report_json(a);
  CHECK(ja.find("writes_one_rtt") == std::string::npos);
  CHECK(ja.find("write_latency_ns") == std::string::npos);
  CHECK(format_report(a).find("write latency") == std::string::npos);
}
