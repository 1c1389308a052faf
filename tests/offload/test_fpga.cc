// fpga (Honeycomb's interior-node cache) planner, device and image on
// synthetic trees: the planner places the heaviest interior nodes within
// the DRAM capacity and the four ways of each set, under placed parents;
// walks equal a reference walk over the tree (to the leaf when everything
// fits, to the deepest cached level when it does not); the device refuses
// over-capacity, over-ways and malformed batches without change; garbage
// and torn images never crash the walk; replanning an unchanged tree
// diffs to nothing.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>

#include <catch2/catch.hpp>

#include "fpga/fpga_backend.h"
#include "fpga/fpga_batch.h"
#include "fpga/fpga_device.h"
#include "fpga/fpga_image.h"
#include "fpga/fpga_planner.h"
#include "forein/offload/registry.h"
#include "offload/synthetic_tree.h"
#include "support/backend_names.h"
#include "support/seed.h"

using namespace forein;
using namespace forein::offload;
using namespace forein::offload::fpga;
using forein::offload::testing::SyntheticTree;
using forein::offload::testing::build_synthetic_tree;
using forein::offload::testing::random_words;
using forein::testing::test_seed;

namespace {

// Zipf-like weights over the leaves, in a random order of ranks.
void weigh_leaves(SyntheticTree& t, std::mt19937_64& rng) {
  std::vector<std::size_t> leaves;
  for (std::size_t i = 0; i < t.table.size(); ++i) {
    if (t.table[i].interval.level == 0) leaves.push_back(i);
  }
  std::shuffle(leaves.begin(), leaves.end(), rng);
  for (std::size_t r = 0; r < leaves.size(); ++r) {
    t.table[leaves[r]].weight = 1000.0 / std::pow(static_cast<double>(r + 1), 0.99);
  }
}

struct Reference {
  std::vector<std::vector<std::size_t>> children;  // ascending by lo
  std::vector<double> weight;                      // leaf weights beneath
  std::size_t root = 0;

  explicit Reference(const SyntheticTree& t) : children(t.table.size()), weight(t.table.size(), 0) {
    for (std::size_t i = 0; i < t.table.size(); ++i) {
      if (t.table[i].parent < 0) root = i;
      else children[static_cast<std::size_t>(t.table[i].parent)].push_back(i);
    }
    for (auto& c : children) {
      std::sort(c.begin(), c.end(), [&](std::size_t a, std::size_t b) {
        return t.table[a].interval.lo < t.table[b].interval.lo;
      });
    }
    // Table order: leaves first, then each level up.
    for (std::size_t i = 0; i < t.table.size(); ++i) {
      if (t.table[i].interval.level == 0) weight[i] += t.table[i].weight;
      if (t.table[i].parent >= 0) weight[static_cast<std::size_t>(t.table[i].parent)] += weight[i];
    }
  }

  // The root-to-leaf path of w, as table indexes.
  std::vector<std::size_t> path(const SyntheticTree& t, Word w) const {
    std::vector<std::size_t> p{root};
    while (!children[p.back()].empty()) {
      const auto& c = children[p.back()];
      std::size_t pick = c.front();
      for (std::size_t x : c) {
        if (t.table[x].interval.lo <= w) pick = x;
      }
      p.push_back(pick);
    }
    return p;
  }
};

std::unique_ptr<FpgaDevice> device_of(const CachePlan& plan, std::uint64_t capacity) {
  auto device = std::make_unique<FpgaDevice>(capacity);
  REQUIRE(device->apply(encode_batch(BatchKind::kInstall, plan.records)) == BackendStatus::kOk);
  return device;
}

PageId id_of(const SyntheticTree& t, std::size_t i) { return t.table[i].interval.node; }

// The walk a cache holding `cached` node ids must do for w.
StartHints reference_hints(const SyntheticTree& t, const Reference& ref, const std::set<PageId>& cached, Word w) {
  const std::vector<std::size_t> p = ref.path(t, w);
  StartHints h;
  for (std::size_t d = 1; d < p.size(); ++d) {
    if (cached.count(id_of(t, p[d])) == 0 || t.table[p[d]].interval.level == 0) {
      h.primary = Hint{id_of(t, p[d]), t.table[p[d]].interval.level, 0};
      h.secondary = Hint{id_of(t, p[d - 1]), t.table[p[d - 1]].interval.level, 0};
      return h;
    }
  }
  return h;
}

void check_walks(const SyntheticTree& t, const Reference& ref, const CachePlan& plan,
                 std::span<const std::byte> image, std::mt19937_64& rng, int words) {
  std::set<PageId> cached;
  for (const CacheRecord& r : plan.records) cached.insert(r.node);
  for (int i = 0; i < words; ++i) {
    const Word w = i % 2 == 0 ? t.words[rng() % t.words.size()] : rng();
    const StartHints want = reference_hints(t, ref, cached, w);
    const StartHints got = fpga_image_hint(image, w);
    INFO("word " << w);
    REQUIRE(got.primary.node == want.primary.node);
    CHECK(got.primary.level == want.primary.level);
    CHECK(got.secondary.node == want.secondary.node);
    CHECK(got.secondary.level == want.secondary.level);
  }
}

}  // namespace

TEST_CASE("fpga: registered, with the paper's unit and capacity", "[fpga]") {
  const BackendInfo& info = backend_for_lookups("fpga");
  CHECK(&info == &kFpgaBackend);
  CHECK(info.capabilities == (kStartHints | kScanExecution));
  CHECK(std::string(info.unit) == "cache bytes");
  CHECK(info.default_capacity == kBoardDramBytes);
  // Listed (in registration order) among the backends hosts that look keys up accept.
  const std::string lookups = forein::testing::lookup_names_from_registry();
  CHECK(lookups.find("fpga") != std::string::npos);
  CHECK(lookup_backend_names() == lookups);
  // PostgreSQL reserves the image room up front: it stays bounded.
  CHECK(info.max_image_bytes(kBoardDramBytes) <= kMaxImageBytes);
  CHECK(info.max_image_bytes(0) >= kImageHeaderBytes + record_data_bytes(kMaxChildren));
  const BackendModel m = FpgaDevice().model();
  CHECK(m.install_latency_us >= 1.0);
  CHECK(m.hint_latency_ns > 0);
  CHECK(!m.source.empty());
  CHECK(fpga_model(2).hint_latency_ns > fpga_model(1).hint_latency_ns);
  CHECK(fpga_model(2).hints_per_second < fpga_model(1).hints_per_second);
}

TEST_CASE("fpga: with room for everything, every walk reaches the leaf", "[fpga]") {
  std::mt19937_64 rng(test_seed("fpga exact"));
  for (int round = 0; round < 4; ++round) {
    SyntheticTree t = build_synthetic_tree(random_words(rng, 20000 + rng() % 20000), 4 + rng() % 30,
                                           4 + rng() % 60);
    weigh_leaves(t, rng);
    const Reference ref(t);
    const CachePlan plan = plan_cache(t.table, CachePlanSettings{});
    std::size_t interior = 0;
    for (const OffloadNode& n : t.table) interior += n.interval.level >= 1;
    REQUIRE(plan.records.size() == interior);  // no leaf, every interior node
    CHECK(plan.records.front().root);
    CHECK(plan.records.front().node == id_of(t, ref.root));
    const auto device = device_of(plan, kBoardDramBytes);
    CHECK(device->usage().used == (interior - 1) * kNodeBytes);
    const auto image = device->load_image();
    for (std::size_t k = 0; k < t.words.size(); k += 7) {
      const StartHints h = fpga_image_hint(image->bytes, t.words[k]);
      REQUIRE(h.primary.node == id_of(t, t.leaf_of_key[k]));
      CHECK(h.primary.level == 0);
      CHECK(h.secondary.node == id_of(t, static_cast<std::size_t>(t.table[t.leaf_of_key[k]].parent)));
    }
    check_walks(t, ref, plan, image->bytes, rng, 5000);
  }
}

TEST_CASE("fpga: under small capacities the planner picks by weight within the ways and walks stop at the deepest "
          "cached level",
          "[fpga]") {
  std::mt19937_64 rng(test_seed("fpga limits"));
  for (int round = 0; round < 12; ++round) {
    SyntheticTree t = build_synthetic_tree(random_words(rng, 5000 + rng() % 30000), 2 + rng() % 16,
                                           3 + rng() % 20);
    weigh_leaves(t, rng);
    const Reference ref(t);
    CachePlanSettings s;
    s.capacity = (1 + rng() % 64) * kNodeBytes + rng() % kNodeBytes;
    s.budget = rng() % 2 == 0 ? s.capacity : (rng() % 64) * kNodeBytes;
    const CachePlan plan = plan_cache(t.table, s);
    INFO("round " << round << ", capacity " << s.capacity << ", budget " << s.budget);
    REQUIRE(!plan.records.empty());
    const std::uint64_t sets = cache_sets(s.capacity);
    const std::uint64_t slots = std::min(cache_slots(s.capacity), s.budget / kNodeBytes);
    std::map<PageId, std::size_t> index_of;
    for (std::size_t i = 0; i < t.table.size(); ++i) index_of[id_of(t, i)] = i;
    std::set<PageId> cached;
    std::map<std::uint64_t, std::uint32_t> ways;
    double lightest = 1e300;
    for (const CacheRecord& r : plan.records) {
      cached.insert(r.node);
      CHECK(r.level >= 1);
      CHECK(record_error(r).empty());
      if (r.root) continue;
      ++ways[cache_set_of(r.node, sets)];
      lightest = std::min(lightest, ref.weight[index_of[r.node]]);
    }
    CHECK(plan.dram_nodes == plan.records.size() - 1);
    CHECK(plan.dram_nodes <= slots);
    for (const auto& [set, n] : ways) CHECK(n <= kCacheWays);
    for (const CacheRecord& r : plan.records) {  // placed under placed parents
      if (r.root) continue;
      const auto p = t.table[index_of[r.node]].parent;
      REQUIRE(p >= 0);
      CHECK(cached.count(id_of(t, static_cast<std::size_t>(p))) == 1);
    }
    // An interior node left out under a placed parent: its set is full, or
    // the slots are all taken by nodes at least as heavy.
    for (std::size_t i = 0; i < t.table.size(); ++i) {
      const OffloadNode& n = t.table[i];
      if (n.interval.level == 0 || cached.count(n.interval.node) != 0) continue;
      if (cached.count(id_of(t, static_cast<std::size_t>(n.parent))) == 0) continue;
      const bool set_full = ways[cache_set_of(n.interval.node, sets)] >= kCacheWays;
      const bool slots_full = plan.dram_nodes == slots && ref.weight[i] <= lightest;
      CHECK((set_full || slots_full));
    }
    const auto device = device_of(plan, s.capacity);
    CHECK(device->usage().used == plan.dram_nodes * kNodeBytes);
    CHECK(device->usage().used <= device->usage().capacity);
    check_walks(t, ref, plan, device->load_image()->bytes, rng, 4000);
  }
}

TEST_CASE("fpga: ties by level then id; the same input plans the same", "[fpga]") {
  std::mt19937_64 rng(test_seed("fpga ties"));
  SyntheticTree t = build_synthetic_tree(random_words(rng, 4000), 4, 4);  // all weights 0
  CachePlanSettings s;
  s.capacity = 64 * kNodeBytes;
  const CachePlan a = plan_cache(t.table, s);
  const CachePlan b = plan_cache(t.table, s);
  CHECK(a.records == b.records);
  // Equal weights: levels top down, so the level below the root comes first.
  std::uint16_t lowest = 0xFFFF;
  for (const CacheRecord& r : a.records) lowest = std::min(lowest, r.level);
  std::size_t below_root = 0, placed_below_root = 0;
  for (const OffloadNode& n : t.table) {
    if (n.parent >= 0 && t.table[static_cast<std::size_t>(n.parent)].parent < 0) {
      ++below_root;
      for (const CacheRecord& r : a.records) placed_below_root += r.node == n.interval.node;
    }
  }
  CHECK(placed_below_root == below_root);
}

TEST_CASE("fpga: the planner diffs against its last plan", "[fpga]") {
  std::mt19937_64 rng(test_seed("fpga diff"));
  SyntheticTree t = build_synthetic_tree(random_words(rng, 20000), 16, 16);
  weigh_leaves(t, rng);
  BackendConfig config;
  FpgaPlanner planner(config);
  FpgaDevice device(64 * kNodeBytes);
  const PlanDiff first = planner.plan(PlanInput{t.table, nullptr, device.capacity()});
  CHECK(first.remove.records == 0);
  CHECK(first.install.records >= 2);
  CHECK(first.target_records == (first.install.records - 1) * kNodeBytes);
  CHECK(first.new_records == first.target_records);
  REQUIRE(device.apply(first.install) == BackendStatus::kOk);
  CHECK(device.usage().used == first.target_records);
  const PlanDiff again = planner.plan(PlanInput{t.table, nullptr, device.capacity()});
  CHECK(again.install.records == 0);
  CHECK(again.remove.records == 0);
  CHECK(again.new_records == 0);
  CHECK(again.target_records == first.target_records);
  // Other leaves become hot: some nodes go, others come.
  weigh_leaves(t, rng);
  const PlanDiff moved = planner.plan(PlanInput{t.table, nullptr, device.capacity()});
  if (moved.remove_first) REQUIRE(device.apply(moved.remove) == BackendStatus::kOk);
  REQUIRE(device.apply(moved.install) == BackendStatus::kOk);
  REQUIRE(device.apply(moved.remove) == BackendStatus::kOk);
  CHECK(device.usage().used == moved.target_records);
  // The full target re-sent to a fresh device gives the same image.
  FpgaDevice fresh(64 * kNodeBytes);
  REQUIRE(fresh.apply(planner.full_target()) == BackendStatus::kOk);
  CHECK(fresh.load_image()->bytes == device.load_image()->bytes);
}

TEST_CASE("fpga: the device refuses over-capacity, over-ways and malformed batches unchanged", "[fpga]") {
  std::mt19937_64 rng(test_seed("fpga device"));
  SyntheticTree t = build_synthetic_tree(random_words(rng, 30000), 8, 8);
  const CachePlan all = plan_cache(t.table, CachePlanSettings{});
  REQUIRE(all.dram_nodes > 40);
  FpgaDevice small(8 * kNodeBytes);
  const CachePlan few = [&] {
    CachePlanSettings s;
    s.capacity = small.capacity();
    return plan_cache(t.table, s);
  }();
  REQUIRE(small.apply(encode_batch(BatchKind::kInstall, few.records)) == BackendStatus::kOk);
  const auto before = small.load_image();
  const std::uint64_t used = small.usage().used;
  auto unchanged = [&] {
    CHECK(small.load_image()->bytes == before->bytes);
    CHECK(small.load_image()->version == before->version);
    CHECK(small.usage().used == used);
  };
  // Over the DRAM bytes.
  CHECK(small.apply(encode_batch(BatchKind::kInstall, all.records)) == BackendStatus::kCapacityExceeded);
  unchanged();
  // Over the ways of one set, within the bytes: five nodes of one set.
  {
    FpgaDevice roomy(1024 * kNodeBytes);
    std::vector<CacheRecord> same_set;
    for (PageId id = 1; same_set.size() < 5; ++id) {
      if (cache_set_of(id, roomy.sets()) != cache_set_of(1, roomy.sets())) continue;
      CacheRecord r;
      r.node = id;
      r.level = 1;
      r.hi_inf = true;
      r.children = {CacheChild{0, 100000 + id}};
      same_set.push_back(r);
    }
    const auto empty = roomy.load_image();
    CHECK(roomy.apply(encode_batch(BatchKind::kInstall, same_set)) == BackendStatus::kCapacityExceeded);
    CHECK(roomy.load_image()->version == empty->version);
    same_set.pop_back();
    CHECK(roomy.apply(encode_batch(BatchKind::kInstall, same_set)) == BackendStatus::kOk);
    CHECK(roomy.usage().used == 4 * kNodeBytes);
  }
  // Malformed: each refused with kInvalidEntry, nothing changed.
  const ChangeBatch good = encode_batch(BatchKind::kInstall, {all.records[1], all.records[2]});
  std::vector<ChangeBatch> bad;
  for (std::size_t records : {std::size_t{0}, std::size_t{1}, std::size_t{3}, ~std::size_t{0}}) {
    ChangeBatch b = good;
    b.records = records;
    bad.push_back(b);
  }
  for (std::size_t cut : {std::size_t{1}, std::size_t{16}, good.bytes.size() - 1}) {
    ChangeBatch b = good;
    b.bytes.resize(good.bytes.size() - cut);
    bad.push_back(b);
  }
  {
    ChangeBatch b = good;
    b.bytes.resize(good.bytes.size() + 32);
    bad.push_back(b);
  }
  auto with = [&](auto change) {
    CacheRecord r = all.records[1];
    change(r);
    bad.push_back(encode_batch(BatchKind::kInstall, {r}));
  };
  with([](CacheRecord& r) { r.level = 0; });                                 // a leaf
  with([](CacheRecord& r) { r.node = kNoPage; });                            // no node, not the root
  with([](CacheRecord& r) { r.children.clear(); });                          // no children
  with([](CacheRecord& r) { std::reverse(r.children.begin(), r.children.end()); });  // not ascending
  with([](CacheRecord& r) { r.children.back().node = kNoPage; });
  with([](CacheRecord& r) { r.children.resize(kMaxChildren + 1, CacheChild{~Word{0}, 7}); });
  with([](CacheRecord& r) { r.hi_inf = false; r.hi = r.lo; });             // empty interval
  {
    ChangeBatch b = good;
    b.bytes[1] = std::byte{0x80};  // unknown flag
    bad.push_back(b);
    b = good;
    b.bytes[0] = std::byte{2};  // unknown kind
    bad.push_back(b);
  }
  for (ChangeBatch& b : bad) {
    for (BatchKind kind : {BatchKind::kInstall, BatchKind::kRemove}) {
      b.kind = kind;
      INFO("bad batch of " << b.bytes.size() << " bytes, " << b.records << " records");
      CHECK(small.apply(b) == BackendStatus::kInvalidEntry);
      unchanged();
    }
  }
  // Remove is invalidation: nodes not cached are skipped; the root too.
  REQUIRE(small.apply(encode_batch(BatchKind::kRemove, all.records)) == BackendStatus::kOk);
  CHECK(small.usage().used == 0);
  CHECK(fpga_image_records(small.load_image()->bytes).empty());
  CHECK(!fpga_image_hint(small.load_image()->bytes, 12345).primary.present());
}

TEST_CASE("fpga: garbage, torn and flipped images never crash the walk", "[fpga]") {
  std::mt19937_64 rng(test_seed("fpga garbage images"));
  SyntheticTree t = build_synthetic_tree(random_words(rng, 20000), 8, 12);
  weigh_leaves(t, rng);
  CachePlanSettings s;
  s.capacity = 40 * kNodeBytes;
  const auto device = device_of(plan_cache(t.table, s), s.capacity);
  const std::vector<std::byte> real = device->load_image()->bytes;
  std::set<PageId> ids;
  for (const OffloadNode& n : t.table) ids.insert(n.interval.node);
  std::size_t present = 0;
  auto probe = [&](std::span<const std::byte> bytes) {
    for (int i = 0; i < 20; ++i) {
      const Word w = i % 2 == 0 ? t.words[rng() % t.words.size()] : rng();
      const CacheWalk walk = fpga_walk(bytes, w);
      CHECK(walk.cached_nodes <= kMaxLevel + 1);
      present += walk.hints.primary.present();
    }
    (void)fpga_image_records(bytes);
    (void)fpga_image_usage(bytes, s.capacity);
  };
  for (std::size_t n = 0; n <= real.size(); ++n) {  // torn: every prefix
    std::vector<std::byte> cut(real.begin(), real.begin() + static_cast<std::ptrdiff_t>(n));
    probe(cut);
  }
  for (int i = 0; i < 3000; ++i) {
    std::vector<std::byte> b = real;
    if (i % 3 == 0) {
      for (auto& x : b) x = static_cast<std::byte>(rng());
      if (i % 2 == 0) b.resize(rng() % (b.size() + 1));
    } else {
      const int flips = 1 + static_cast<int>(rng() % 16);
      for (int f = 0; f < flips; ++f) b[rng() % b.size()] = static_cast<std::byte>(rng());
    }
    probe(b);
  }
  // A cycle: a record naming itself as its child, as garbage could.
  {
    CacheRecord root;
    root.node = 5;
    root.level = 3;
    root.root = true;
    root.hi_inf = true;
    root.children = {CacheChild{0, 6}};
    CacheRecord self;
    self.node = 6;
    self.level = 3;  // not below its parent: the walk stops
    self.hi_inf = true;
    self.children = {CacheChild{0, 6}};
    const auto bytes = build_image(&root, {&self}, kBoardDramBytes);
    const CacheWalk walk = fpga_walk(bytes, 42);
    CHECK(walk.cached_nodes == 1);
    CHECK(walk.hints.primary.node == 6);
  }
  // The real image walks from every prefix at full length only.
  CHECK(present > 0);
}
