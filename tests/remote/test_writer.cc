// The owner's writes (net/remote/writer.h) against a std::map model: random
// updates and inserts (leaf splits, inner splits, root splits) with walks
// between them, from the root and from stale hints, by one walker opened
// before the writes (a stale header: old root, old longest value). Every
// walk returns the latest value. And a region that fills up. Corruption:
// flipped bytes in nodes and records are caught, never a wrong value.
// FOREIN_SEED=<n> replays the randomized cases.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "forein/error.h"
#include "remote/build.h"
#include "remote/remote_support.h"
#include "remote/walk.h"
#include "remote/writer.h"
#include "support/rng.h"
#include "support/seed.h"

namespace rr = forein::net::remote;
using namespace forein::testing::remote;
using forein::testing::Rng;
using forein::testing::test_seed;

namespace {

#ifdef FOREIN_REMOTE_SMALL
constexpr int kWriterOps = 2500;
constexpr int kCorruptionRounds = 12;
#else
constexpr int kWriterOps = 6000;
constexpr int kCorruptionRounds = 40;
#endif

struct Model {
  std::uint32_t version;
  std::size_t len;
};

void check_against(const rr::LookupResult& r, std::uint64_t key, const std::map<std::uint64_t, Model>& model) {
  INFO("key " << key << " status " << rr::to_string(r.status));
  const auto it = model.find(key);
  if (it == model.end()) {
    REQUIRE(r.status == rr::LookupStatus::kNotFound);
    return;
  }
  REQUIRE(r.status == rr::LookupStatus::kFound);
  REQUIRE(r.value == test_value(key, it->second.version, it->second.len));
  REQUIRE(r.record_version == it->second.version);
}

}  // namespace

TEST_CASE("random puts with walks between them return the latest value", "[remote]") {
  const std::uint64_t seed = test_seed("remote writer model");
  for (const std::uint32_t fanout : {4u, 16u}) {
    Rng rng(seed + fanout);
    rr::BuildOptions o;
    o.geometry = rr::geometry_for_fanout(fanout);
    const std::uint64_t n = 200;  // fanout 16: height 2, 13 leaves under the root
    Tree t = build_tree(key_range(n, 1000), o, 24, 32 << 20);
    const std::uint32_t height0 = t.stats.height;
    std::map<std::uint64_t, Model> model;
    for (std::uint64_t i = 0; i < n; ++i) model[i * 1000] = {1, 24};
    rr::Writer writer(*t.region);
    rr::Walker w(region_reader(*t.region));
    REQUIRE(w.open());  // before the writes: its header goes stale
    std::vector<rr::Address> leaves;  // addresses that were leaves once: stale hints
    for (int op = 0; op < kWriterOps; ++op) {
      std::uint64_t key;
      if (rng.chance(1, 3) && !model.empty()) {
        auto it = model.lower_bound(rng.below(n * 1000));
        key = it == model.end() ? model.begin()->first : it->first;
      } else {
        key = rng.below(n * 1000 + 5000);  // mostly new keys; some past the end
      }
      // Mostly short values; now and then a long one (longer than any the
      // walker's header knows: a second READ).
      const std::size_t len = rng.chance(1, 50) ? 12 + rng.below(3000) : 12 + rng.below(40);
      const auto it = model.find(key);
      const std::uint32_t version = it == model.end() ? 1 : it->second.version + 1;
      const rr::PutResult pr = writer.put(key, test_value(key, version, len));
      REQUIRE(pr == (it == model.end() ? rr::PutResult::kInserted : rr::PutResult::kUpdated));
      model[key] = {version, len};
      // Walks: the key just written, and a random one from a stale hint.
      const rr::LookupResult r = w.lookup(key);
      check_against(r, key, model);
      leaves.push_back(r.leaf);
      const std::uint64_t other = rng.below(n * 1000 + 5000);
      check_against(w.lookup(other, leaves[rng.below(leaves.size())]), other, model);
    }
    INFO("fanout " << fanout);
    REQUIRE(writer.stats().splits > 0);
    REQUIRE(writer.stats().root_splits > 0);
    REQUIRE(writer.header().height > height0);
    REQUIRE(read_header(*t.region).key_count == model.size());
    // A fresh walker: every key in height + 1 READs.
    rr::Walker fresh(region_reader(*t.region));
    REQUIRE(fresh.open());
    for (const auto& [k, m] : model) {
      const rr::LookupResult r = fresh.lookup(k);
      check_against(r, k, model);
      REQUIRE(r.counters.reads == fresh.header().height + 1 + (m.len > fresh.header().max_value_bytes ? 1 : 0));
    }
    std::cout << "remote writer, fanout " << fanout << ": " << writer.stats().inserts << " inserts, "
              << writer.stats().updates << " updates, " << writer.stats().splits << " splits, "
              << writer.stats().root_splits << " root splits, height " << height0 << " -> "
              << writer.header().height << "; the stale walker: " << w.totals().sibling_moves
              << " right moves, " << w.totals().header_reads << " header reads\n";
  }
}

TEST_CASE("a full region refuses puts and leaves the tree as it was", "[remote]") {
  rr::BuildOptions o;
  o.geometry = rr::geometry_for_fanout(4);
  Tree t = build_tree(key_range(100, 10), o, 24, 4096);
  rr::Writer writer(*t.region);
  std::map<std::uint64_t, Model> model;
  for (std::uint64_t i = 0; i < 100; ++i) model[i * 10] = {1, 24};
  std::uint64_t key = 1;
  int full = 0;
  for (int i = 0; i < 200 && full == 0; ++i, key += 10) {
    const rr::PutResult pr = writer.put(key, test_value(key, 1, 24));
    if (pr == rr::PutResult::kRegionFull) {
      ++full;
    } else {
      model[key] = {1, 24};
    }
  }
  REQUIRE(full == 1);
  rr::Walker w(region_reader(*t.region));
  for (std::uint64_t k = 0; k < key + 10; ++k) check_against(w.lookup(k), k, model);
  REQUIRE_THROWS_AS(writer.put(3, std::string(rr::kMaxValueBytes + 1, 'q')), forein::InvalidArgument);
}

TEST_CASE("flipped bytes in nodes and records are caught: right value or gave up, never wrong", "[remote]") {
  const std::uint64_t seed = test_seed("remote corruption");
  Rng rng(seed);
  const std::uint64_t n = 2000;
  std::uint64_t gave_up = 0, right = 0, checksums = 0;
  for (int round = 0; round < kCorruptionRounds; ++round) {
    rr::BuildOptions o;
    o.geometry = rr::geometry_for_fanout(round % 2 == 0 ? 16 : 8);
    Tree t = build_tree(key_range(n), o, 32);
    rr::Region& region = *t.region;
    // Flip a byte in the checksummed part of a few objects on some keys'
    // paths: a node (any level) or a value record, chosen before any flip.
    std::vector<std::pair<rr::Address, std::uint64_t>> victims;  // where, bytes checksummed
    for (int f = 0; f < 3; ++f) {
      const std::uint64_t victim = rng.below(n);
      if (rng.chance(1, 2)) {
        const std::vector<rr::Address> path = path_of(region, victim);
        victims.emplace_back(path[rng.below(path.size())], o.geometry.node_bytes);
      } else {
        rr::Walker probe(region_reader(region));
        victims.emplace_back(probe.lookup(victim).record, rr::kRecordHeaderBytes + 32);
      }
    }
    for (const auto& [at, span] : victims) {
      std::byte b;
      const rr::Address where = at + rng.below(span);
      REQUIRE(region.read(where, 1, &b) == rr::ReadError::kOk);
      b ^= static_cast<std::byte>(1 + rng.below(255));
      region.write(where, std::span<const std::byte>(&b, 1));
    }
    rr::Walker w(region_reader(region));
    for (std::uint64_t k = 0; k < n; ++k) {
      const rr::LookupResult r = w.lookup(k, rng.chance(1, 4) ? rng.below(region.size()) : 0);
      INFO("round " << round << " key " << k << " status " << rr::to_string(r.status));
      REQUIRE(r.status != rr::LookupStatus::kNotFound);
      if (r.status == rr::LookupStatus::kGaveUp) {
        ++gave_up;
      } else {
        REQUIRE(r.value == test_value(k, 1, 32));
        ++right;
      }
    }
    checksums += w.totals().bad_checksums;
  }
  std::cout << "remote corruption: " << right << " right answers, " << gave_up << " gave up (the key's path "
            << "holds a flipped object), " << checksums << " bad checksums seen\n";
  REQUIRE(gave_up > 0);
  REQUIRE(checksums > 0);
}

TEST_CASE("a flipped region header: open fails, lookups give up", "[remote]") {
  Tree t = build_tree(key_range(10), rr::BuildOptions{});
  std::byte b;
  REQUIRE(t.region->read(30, 1, &b) == rr::ReadError::kOk);
  b ^= std::byte{4};
  t.region->write(30, std::span<const std::byte>(&b, 1));
  rr::Walker w(region_reader(*t.region));
  REQUIRE_FALSE(w.open());
  REQUIRE(w.lookup(3).status == rr::LookupStatus::kGaveUp);
  REQUIRE_THROWS_AS(rr::Writer(*t.region), forein::CorruptionError);
}
