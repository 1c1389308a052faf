// dpa (DPA-Store's learned index over the tree's node boundaries) planner,
// device and image on synthetic trees: with room for everything every
// boundary word and every word between hints exactly the leaf a root
// descent reaches (and its parent as the secondary); under small budgets
// the index falls back to level 1 (hints at level 1) and further up;
// replanning diffs to nothing, a changed leaf copies only its path; the
// device refuses malformed, overlapping, dangling and over-capacity
// batches unchanged; garbage, torn and bit-flipped images never crash the
// walk (also under AddressSanitizer).
#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "dpa/dpa_backend.h"
#include "dpa/dpa_batch.h"
#include "dpa/dpa_device.h"
#include "dpa/dpa_image.h"
#include "dpa/dpa_layout.h"
#include "dpa/dpa_planner.h"
#include "forein/offload/registry.h"
#include "offload/synthetic_tree.h"
#include "support/backend_names.h"
#include "support/seed.h"

using namespace forein;
using namespace forein::offload;
using namespace forein::offload::dpa;
using forein::offload::testing::SyntheticTree;
using forein::offload::testing::build_synthetic_tree;
using forein::offload::testing::random_words;
using forein::testing::test_seed;

namespace {

// Words in clusters of consecutive runs with random gaps: a distribution
// a single line fits badly, so the PLA needs many segments.
std::vector<Word> clustered_words(std::mt19937_64& rng, std::size_t n) {
  std::vector<Word> w;
  Word at = rng() % 1000;
  while (w.size() < n) {
    const std::size_t run = 1 + rng() % 200;
    for (std::size_t i = 0; i < run && w.size() < n; ++i) w.push_back(at++);
    at += 1 + (rng() % 4 == 0 ? rng() % (Word{1} << 40) : rng() % 50);
  }
  return w;
}

constexpr std::size_t kNone = ~std::size_t{0};

// The root-to-node path of w down to `level`, as table indexes.
struct Reference {
  std::vector<std::vector<std::size_t>> children;
  std::size_t root = 0;

  explicit Reference(const SyntheticTree& t) : children(t.table.size()) {
    for (std::size_t i = 0; i < t.table.size(); ++i) {
      if (t.table[i].parent < 0) root = i;
      else children[static_cast<std::size_t>(t.table[i].parent)].push_back(i);
    }
    for (auto& c : children) {
      std::sort(c.begin(), c.end(), [&](std::size_t a, std::size_t b) {
        return t.table[a].interval.lo < t.table[b].interval.lo;
      });
    }
  }
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
  // The node at `level` a root descent for w passes, and its parent.
  std::pair<std::size_t, std::size_t> at_level(const SyntheticTree& t, Word w, std::uint16_t level) const {
    const std::vector<std::size_t> p = path(t, w);
    for (std::size_t d = 0; d < p.size(); ++d) {
      if (t.table[p[d]].interval.level == level) return {p[d], d > 0 ? p[d - 1] : kNone};
    }
    FAIL("no node at level " << level);
    return {0, 0};
  }
};

PageId id_of(const SyntheticTree& t, std::size_t i) { return t.table[i].interval.node; }

PlanInput input_of(const SyntheticTree& t, std::uint64_t capacity = 0) {
  return PlanInput{t.table, nullptr, capacity};
}

// Every boundary of `level` and words around and between them, plus random words.
std::vector<Word> probe_words(const SyntheticTree& t, std::uint16_t level, std::mt19937_64& rng) {
  std::vector<Word> out;
  for (const OffloadNode& n : t.table) {
    if (n.interval.level != level) continue;
    out.push_back(n.interval.lo);
    out.push_back(n.interval.lo + 1);
    if (n.interval.lo > 0) out.push_back(n.interval.lo - 1);
    if (!n.interval.hi_inf) {
      out.push_back(n.interval.hi - 1);
      if (n.interval.hi - n.interval.lo > 2) out.push_back(n.interval.lo + rng() % (n.interval.hi - n.interval.lo));
    }
  }
  for (int i = 0; i < 2000; ++i) out.push_back(rng());
  out.push_back(0);
  out.push_back(~Word{0});
  return out;
}

// Hints equal the root descent's node at `level` (and its parent) for every probe.
std::size_t check_exact(const SyntheticTree& t, std::span<const std::byte> image, std::uint16_t level,
                        std::mt19937_64& rng) {
  const Reference ref(t);
  std::size_t checked = 0, max_probes = 0, max_inner = 0;
  for (const Word w : probe_words(t, level, rng)) {
    const auto [node, parent] = ref.at_level(t, w, level);
    const IndexWalk walk = dpa_walk(image, w);
    INFO("word " << w);
    REQUIRE(walk.hints.primary.node == id_of(t, node));
    REQUIRE(walk.hints.primary.level == level);
    if (parent == kNone) {  // the root: no parent to name
      REQUIRE_FALSE(walk.hints.secondary.present());
    } else {
      REQUIRE(walk.hints.secondary.node == id_of(t, parent));
      REQUIRE(walk.hints.secondary.level == level + 1);
    }
    CHECK(walk.leaves == 1);
    max_probes = std::max(max_probes, walk.probes);
    max_inner = std::max(max_inner, walk.inner_nodes);
    ++checked;
  }
  UNSCOPED_INFO("max probes " << max_probes << ", inner nodes walked " << max_inner);
  return checked;
}

std::unique_ptr<DpaDevice> device_with(const ChangeBatch& install, std::uint64_t capacity = kDpaMemoryBytes) {
  auto d = std::make_unique<DpaDevice>(capacity);
  REQUIRE(d->apply(install) == BackendStatus::kOk);
  return d;
}

double metric(const PlanDiff& d, const std::string& name) {
  for (const PlanMetric& m : d.metrics) {
    if (m.name == name) return m.value;
  }
  FAIL("no metric " << name);
  return 0;
}

struct State {
  std::vector<std::byte> bytes;
  std::uint64_t version = 0;
  std::uint64_t used = 0;
  bool operator==(const State&) const = default;
};
State state_of(const Device& d) {
  const auto img = d.load_image();
  return State{img->bytes, img->version, d.usage().used};
}

}  // namespace

TEST_CASE("dpa: registered with the paper's unit, capacity and capabilities", "[dpa]") {
  const BackendInfo* info = find_backend("dpa");
  REQUIRE(info != nullptr);
  CHECK(info == &kDpaBackend);
  CHECK(std::string(info->unit) == "DPA bytes");
  CHECK(info->default_capacity == (std::uint64_t{1} << 30));
  CHECK(info->capabilities == (kStartHints | kValueCache));
  CHECK(std::string(info->summary).find("DPA-Store") != std::string::npos);
  CHECK(serves_lookups(*info));
  CHECK(&backend_for_lookups("dpa") == info);
  // Listed (in registration order) among the backends hosts that look keys up accept.
  const std::string lookups = forein::testing::lookup_names_from_registry();
  CHECK(lookups.find("dpa") != std::string::npos);
  CHECK(lookup_backend_names() == lookups);
  CHECK(info->max_image_bytes(info->default_capacity) == kMaxImageBytes);
  CHECK(info->max_image_bytes(1000) < kMaxImageBytes);
  Backend b(*info);
  CHECK(b.usage().unit == "DPA bytes");
  CHECK(b.usage().capacity == kDpaMemoryBytes);
  CHECK_FALSE(b.hint_for_word(42).primary.present());
  CHECK_THROWS(DpaDevice(0));
  CHECK_THROWS(DpaDevice((std::uint64_t{1} << 40) + 1));
}

TEST_CASE("dpa: with room for everything every word hints exactly its leaf", "[dpa]") {
  std::mt19937_64 rng(test_seed("dpa exact hints"));
  struct Case {
    const char* name;
    std::vector<Word> words;
    std::size_t leaf, fanout;
    std::uint32_t eps_leaf = kDefaultEpsilonLeaf, eps_inner = kDefaultEpsilonInner;
  };
  std::vector<Case> cases;
  cases.push_back({"sparse", random_words(rng, 60000), 8, 12});
  cases.push_back({"clustered", clustered_words(rng, 60000), 6, 20});
  std::vector<Word> dense(40000);
  for (std::size_t i = 0; i < dense.size(); ++i) dense[i] = 1000 + 3 * i;
  cases.push_back({"dense", dense, 16, 64});
  cases.push_back({"one leaf", {5, 9}, 8, 12});
  // Error bounds of 1 over random keys: short segments, a deep index.
  cases.push_back({"deep (eps 1)", random_words(rng, 40000), 2, 16, 1, 1});
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      const SyntheticTree t = build_synthetic_tree(c.words, c.leaf, c.fanout);
      DpaPlanner planner(BackendConfig{}, c.eps_leaf, c.eps_inner);
      const PlanDiff diff = planner.plan(input_of(t));
      CHECK(metric(diff, "host_level") == 0);
      if (c.eps_inner == 1) CHECK(metric(diff, "depth") >= 3);
      CHECK(diff.remove.records == 0);
      const auto device = device_with(diff.install);
      const std::vector<std::byte> image = device->load_image()->bytes;
      CHECK(device->usage().used == diff.target_records);
      CHECK(diff.new_records == diff.target_records);
      CHECK(image.size() <= dpa_image_max_bytes(device->usage().used));
      const ImageSummary s = summarize_image(image);
      const std::size_t leaves = t.words.size() / c.leaf + 1;
      if (leaves > kLeafCapacity) CHECK(s.depth >= 2);
      CHECK(s.depth == metric(diff, "depth"));
      const std::size_t n = check_exact(t, image, 0, rng);
      std::printf("  dpa %s: %zu host leaves -> %zu index leaves, %zu inner nodes, depth %zu, %llu DPA bytes, "
                  "image %zu bytes; %zu words hinted exactly\n",
                  c.name, static_cast<std::size_t>(metric(diff, "boundaries")), s.leaves, s.inner_nodes, s.depth,
                  static_cast<unsigned long long>(device->usage().used), image.size(), n);
      // The records list every boundary once.
      std::size_t boundaries = 0;
      for (const ImageRecord& r : dpa_image_records(image)) boundaries += r.kind == 0;
      CHECK(boundaries == metric(diff, "boundaries"));
      // The model: deeper index, slower hint.
      const BackendModel m = device->model();
      CHECK(m.hint_latency_ns == Approx(4.5 * 465 * static_cast<double>(s.depth - 1) + 465 + 2 * 910));
      CHECK(m.hints_per_second == Approx(176 / (m.hint_latency_ns * 1e-9)));
      CHECK(m.source.find("4.2.6") != std::string::npos);
    }
  }
}

TEST_CASE("dpa: small budgets index level 1 (and higher) instead", "[dpa]") {
  std::mt19937_64 rng(test_seed("dpa fallback levels"));
  const SyntheticTree t = build_synthetic_tree(random_words(rng, 50000), 8, 10);
  DpaPlanner roomy(BackendConfig{});
  const PlanDiff full = roomy.plan(input_of(t));
  REQUIRE(metric(full, "host_level") == 0);

  // A budget just under the leaf-level index: level 1.
  BackendConfig tight;
  tight.budget = full.target_records - 1;
  DpaPlanner planner(tight);
  const PlanDiff diff = planner.plan(input_of(t));
  CHECK(metric(diff, "host_level") == 1);
  CHECK(diff.target_records <= tight.budget);
  const auto device = device_with(diff.install);
  check_exact(t, device->load_image()->bytes, 1, rng);
  CHECK(summarize_image(device->load_image()->bytes).host_level == 1);

  // A capacity that small (budget: half of it) likewise.
  DpaPlanner by_capacity(BackendConfig{});
  const PlanDiff small = by_capacity.plan(input_of(t, 2 * full.target_records - 2));
  CHECK(metric(small, "host_level") >= 1);

  // Room for one 80-byte leaf only: the root's level, one entry.
  BackendConfig one;
  one.budget = kMinNodeBytes;
  DpaPlanner top(one);
  const PlanDiff root_only = top.plan(input_of(t));
  CHECK(root_only.target_records == kMinNodeBytes);
  const auto d2 = device_with(root_only.install);
  const StartHints h = dpa_image_hint(d2->load_image()->bytes, rng());
  CHECK(h.primary.node == t.table.back().interval.node);
  CHECK(h.primary.level == t.table.back().interval.level);
  CHECK_FALSE(h.secondary.present());

  // No room at all: nothing planned, nothing hinted.
  BackendConfig none;
  none.budget = kMinNodeBytes - 1;
  DpaPlanner nothing(none);
  const PlanDiff empty = nothing.plan(input_of(t));
  CHECK(empty.install.records == 0);
  CHECK(empty.target_records == 0);
}

TEST_CASE("dpa: the image room caps the index too", "[dpa]") {
  std::mt19937_64 rng(test_seed("dpa image room"));
  // 400,000 words in leaves of 2: 200,000 boundaries, ~3.3 MB of index
  // leaves, over half the 4 MiB image room: level 1 instead.
  const SyntheticTree t = build_synthetic_tree(random_words(rng, 400000), 2, 16);
  DpaPlanner planner(BackendConfig{});
  const PlanDiff diff = planner.plan(input_of(t));
  CHECK(metric(diff, "host_level") == 1);
  const auto device = device_with(diff.install);
  CHECK(device->load_image()->bytes.size() <= kMaxImageBytes / 2);
  check_exact(t, device->load_image()->bytes, 1, rng);
}

TEST_CASE("dpa: replanning diffs by content; a changed leaf copies only its path", "[dpa]") {
  std::mt19937_64 rng(test_seed("dpa diffs"));
  SyntheticTree t = build_synthetic_tree(random_words(rng, 60000), 8, 12);
  DpaPlanner planner(BackendConfig{});
  const PlanDiff first = planner.plan(input_of(t));
  DpaDevice device;
  REQUIRE(device.apply(first.install) == BackendStatus::kOk);
  const std::size_t depth = static_cast<std::size_t>(metric(first, "depth"));
  REQUIRE(depth >= 2);

  // Unchanged: nothing to do.
  const PlanDiff again = planner.plan(input_of(t));
  CHECK(again.install.records == 0);
  CHECK(again.remove.records == 0);
  CHECK(again.new_records == 0);
  CHECK(again.target_records == first.target_records);

  // Splits: a new leaf in the middle of an existing one's interval, a few
  // times at random places; each diff copies the changed index leaf (or
  // the leaves it is split into) and its path, frees what it replaced, and
  // the device then hints the new tree exactly.
  std::size_t worst_copies = 0, total_copies = 0;
  const int rounds = 30;
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::size_t> leaves;
    for (std::size_t i = 0; i < t.table.size(); ++i) {
      const auto& iv = t.table[i].interval;
      if (iv.level == 0 && !iv.hi_inf && iv.hi - iv.lo > 4) leaves.push_back(i);
    }
    const std::size_t victim = leaves[rng() % leaves.size()];
    OffloadNode split = t.table[victim];
    split.interval.node = static_cast<PageId>(t.table.size() + 1000);
    split.interval.lo = t.table[victim].interval.lo + (t.table[victim].interval.hi - t.table[victim].interval.lo) / 2;
    t.table[victim].interval.hi = split.interval.lo;
    t.table.push_back(split);
    const PlanDiff d = planner.plan(input_of(t));
    const std::size_t copies = d.install.records - 1;  // less the CONNECT
    worst_copies = std::max(worst_copies, copies);
    total_copies += copies;
    // The leaf and its path are replaced; a full leaf (128 boundaries, as
    // the bulk load packs them) split into leaves of the retrain bound
    // (32): up to 5 where 1 was.
    CHECK(d.remove.records == depth);
    CHECK(copies >= depth);
    CHECK(copies <= depth + 4);
    const State before = state_of(device);
    REQUIRE(device.apply(d.install) == BackendStatus::kOk);
    REQUIRE(device.apply(d.remove) == BackendStatus::kOk);
    CHECK(device.usage().used == d.target_records);
    CHECK(state_of(device).version == before.version + 2);
    check_exact(t, device.load_image()->bytes, 0, rng);
    // The planner's full target is the device's state.
    DpaDevice fresh;
    REQUIRE(fresh.apply(planner.full_target()) == BackendStatus::kOk);
    CHECK(fresh.usage().used == device.usage().used);
    CHECK(summarize_image(fresh.load_image()->bytes).root == summarize_image(device.load_image()->bytes).root);
    CHECK(fresh.load_image()->bytes.size() == device.load_image()->bytes.size());
    CHECK(fresh.load_image()->bytes == device.load_image()->bytes);
  }
  std::printf("  dpa diffs: depth %zu, %d splits copied %zu nodes (at most %zu a split)\n", depth, rounds,
              total_copies, worst_copies);
  // reset(): the next plan is everything again.
  planner.reset();
  const PlanDiff whole = planner.plan(input_of(t));
  CHECK(whole.new_records == whole.target_records);
  CHECK(whole.remove.records == 0);
}

TEST_CASE("dpa: the device refuses malformed, dangling and over-capacity batches unchanged", "[dpa]") {
  std::mt19937_64 rng(test_seed("dpa device refusals"));
  const SyntheticTree t = build_synthetic_tree(random_words(rng, 30000), 8, 12);
  DpaPlanner planner(BackendConfig{});
  const PlanDiff plan = planner.plan(input_of(t));
  const auto stitches = decode_batch(plan.install, nullptr);
  REQUIRE(stitches.has_value());
  REQUIRE(stitches->size() >= 3);
  std::uint64_t end = 0;
  for (const Stitch& s : *stitches) {
    if (s.kind == StitchKind::kCopy) end = std::max<std::uint64_t>(end, s.address + s.node.size());
  }
  CHECK(end == plan.target_records);  // a fresh plan packs from address 0

  // Refusals of the big batch, edited, on an empty device.
  DpaDevice blank;
  const State empty = state_of(blank);
  auto refused_blank = [&](const ChangeBatch& b, BackendStatus want, const char* what) {
    INFO(what);
    CHECK(blank.apply(b) == want);
    CHECK(state_of(blank) == empty);
  };
  auto with = [&](auto edit) {
    std::vector<Stitch> s = *stitches;
    edit(s);
    return encode_batch(BatchKind::kInstall, s);
  };
  // The edits are what make them fail: unedited, the batch applies.
  {
    DpaDevice check;
    CHECK(check.apply(with([](auto&) {})) == BackendStatus::kOk);
  }

  // A device holding a small tree's index.
  DpaDevice device;
  const SyntheticTree small = build_synthetic_tree(random_words(rng, 300), 8, 12);
  DpaPlanner small_planner(BackendConfig{});
  REQUIRE(device.apply(small_planner.plan(input_of(small)).install) == BackendStatus::kOk);
  const State before = state_of(device);
  auto refused = [&](const ChangeBatch& b, BackendStatus want, const char* what) {
    INFO(what);
    CHECK(device.apply(b) == want);
    CHECK(state_of(device) == before);
  };

  // Over capacity: a device one byte smaller than the plan's addresses.
  {
    DpaDevice tight(end - 1);
    CHECK(tight.apply(plan.install) == BackendStatus::kCapacityExceeded);
    CHECK(tight.usage().used == 0);
    DpaDevice exact(end);
    CHECK(exact.apply(plan.install) == BackendStatus::kOk);
    CHECK(exact.usage().used == end);
  }
  // A node at an address past the DPA memory.
  refused_blank(with([](auto& s) { s.front().address = kDpaMemoryBytes; }), BackendStatus::kCapacityExceeded,
          "address past DPA memory");
  // Two COPY records overlapping.
  refused_blank(with([](auto& s) { s[1].address = s[0].address + 16; }), BackendStatus::kInvalidEntry, "overlapping copies");
  // CONNECT to a node not copied, or missing, or not last.
  refused_blank(with([](auto& s) { s.back().address = 1u << 20; }), BackendStatus::kInvalidEntry, "connect not copied");
  refused_blank(with([](auto& s) { s.pop_back(); }), BackendStatus::kInvalidEntry, "no connect");
  refused_blank(with([](auto& s) { std::swap(s[0], s.back()); }), BackendStatus::kInvalidEntry, "connect first");
  // An inner node whose child is not held: drop a leaf's COPY.
  refused_blank(with([](auto& s) { s.erase(s.begin()); }), BackendStatus::kInvalidEntry, "dangling child");
  // A node with a model outside its error bound, keys out of order, reserved bytes.
  refused_blank(with([](auto& s) { s.front().node[38] ^= std::byte{0x01}; }), BackendStatus::kInvalidEntry, "model off");
  refused_blank(with([](auto& s) {
            std::swap_ranges(s.front().node.begin() + 64, s.front().node.begin() + 72, s.front().node.begin() + 72);
          }),
          BackendStatus::kInvalidEntry, "keys swapped");
  refused_blank(with([](auto& s) { s.front().node[7] = std::byte{1}; }), BackendStatus::kInvalidEntry, "reserved");
  refused_blank(with([](auto& s) { s.front().address += 8; }), BackendStatus::kInvalidEntry, "unaligned address");
  // Record counts off, bytes cut.
  {
    ChangeBatch b = plan.install;
    b.records += 1;
    refused_blank(b, BackendStatus::kInvalidEntry, "count high");
    b.records -= 2;
    refused_blank(b, BackendStatus::kInvalidEntry, "count low");
    b = plan.install;
    b.bytes.resize(b.bytes.size() - 1);
    refused_blank(b, BackendStatus::kInvalidEntry, "cut");
    b = plan.install;
    b.kind = BatchKind::kRemove;
    refused_blank(b, BackendStatus::kInvalidEntry, "copies as a remove");
  }
  // A COPY over a held node at another address.
  {
    const auto held = decode_batch(small_planner.full_target(), nullptr);
    REQUIRE(held.has_value());
    // The first held node (a leaf, at address 0) copied 16 bytes on: it
    // overlaps the node held there.
    Stitch leaf = held->front();
    REQUIRE(leaf.kind == StitchKind::kCopy);
    leaf.address += 16;
    std::vector<Stitch> one{leaf, Stitch{StitchKind::kConnect, leaf.address, {}, 0}};
    refused(encode_batch(BatchKind::kInstall, one), BackendStatus::kInvalidEntry, "over a held node");
  }
  // The same whole target again (a re-send after a refusal) replaces in place.
  CHECK(device.apply(small_planner.full_target()) == BackendStatus::kOk);
  CHECK(device.usage().used == before.used);
  CHECK(device.load_image()->bytes == before.bytes);
  // A remove skips addresses that hold nothing; freeing the root clears it.
  {
    const State now = state_of(device);
    std::vector<Stitch> frees{Stitch{StitchKind::kFree, 1u << 24, {}, 80}};
    CHECK(device.apply(encode_batch(BatchKind::kRemove, frees)) == BackendStatus::kOk);
    CHECK(device.usage().used == now.used);
    const auto all = decode_batch(small_planner.full_target(), nullptr);
    frees.clear();
    for (const Stitch& s : *all) {
      if (s.kind == StitchKind::kCopy) frees.push_back(Stitch{StitchKind::kFree, s.address, {}, static_cast<std::uint32_t>(s.node.size())});
    }
    CHECK(device.apply(encode_batch(BatchKind::kRemove, frees)) == BackendStatus::kOk);
    CHECK(device.usage().used == 0);
    CHECK(summarize_image(device.load_image()->bytes).root == kNoAddress);
    CHECK_FALSE(dpa_image_hint(device.load_image()->bytes, 7).primary.present());
  }
}

TEST_CASE("dpa: garbage, torn and flipped images never crash the walk", "[dpa]") {
  std::mt19937_64 rng(test_seed("dpa garbage images"));
  const SyntheticTree t = build_synthetic_tree(random_words(rng, 20000), 8, 12);
  DpaPlanner planner(BackendConfig{});
  const auto device = device_with(planner.plan(input_of(t)).install);
  const std::vector<std::byte> real = device->load_image()->bytes;
  std::size_t present = 0;
  auto probe = [&](std::span<const std::byte> bytes) {
    // An exact-size heap copy, so ASan sees any read past the span.
    const std::vector<std::byte> copy(bytes.begin(), bytes.end());
    for (int i = 0; i < 20; ++i) {
      const Word w = i % 2 == 0 ? t.words[rng() % t.words.size()] : rng();
      const IndexWalk walk = dpa_walk(copy, w);
      CHECK(walk.inner_nodes + walk.leaves <= kMaxIndexDepth);
      CHECK(walk.probes <= kMaxIndexDepth * (kSegmentPivots + 2));
      present += walk.hints.primary.present();
    }
    (void)dpa_image_records(copy);
    (void)dpa_image_usage(copy, 0);
    (void)summarize_image(copy);
  };
  for (std::size_t n = 0; n <= real.size(); n += 1 + n / 64) {  // torn: prefixes
    probe(std::span<const std::byte>(real.data(), n));
  }
  for (int i = 0; i < 3000; ++i) {
    std::vector<std::byte> b = real;
    if (i % 3 == 0) {
      for (auto& x : b) x = static_cast<std::byte>(rng());
      if (i % 2 == 0) b.resize(rng() % (b.size() + 1));
    } else {
      const int flips = 1 + static_cast<int>(rng() % 16);
      for (int f = 0; f < flips; ++f) {
        const std::size_t at = rng() % b.size();
        b[at] = rng() % 2 ? static_cast<std::byte>(rng()) : (b[at] ^ static_cast<std::byte>(1u << (rng() % 8)));
      }
    }
    probe(b);
  }
  // A cycle: an inner node whose child is itself (the walk stops: a child
  // must lie one index level lower), and a leaf with a lying count.
  {
    IndexNode self;
    self.leaf = false;
    self.index_level = 1;
    self.keys = {0};
    self.children = {0};
    self.segments = {IndexSegment{FixedModel{}, 0, 1}};
    std::map<std::uint64_t, std::vector<std::byte>> nodes{{0, encode_node(self)}};
    const auto bytes = build_image(nodes, 0, kDpaMemoryBytes);
    const IndexWalk walk = dpa_walk(bytes, 42);
    CHECK(walk.inner_nodes == 1);
    CHECK_FALSE(walk.hints.primary.present());
  }
  CHECK(present > 0);
}
