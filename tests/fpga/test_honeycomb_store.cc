// Honeycomb's store, CPU side (offload/backends/fpga/honeycomb): the node
// byte format, the order hints of Figures 7/8, a seeded random model test
// against std::map (GET and SCAN's predecessor semantics across merges,
// splits and tree growth), MVCC snapshots, MVCC off, the reader on garbage
// bytes, and invalid arguments.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fpga/honeycomb_items.h"
#include "forein/error.h"
#include "fpga/honeycomb/node_layout.h"
#include "forein/fpga/reader.h"
#include "forein/fpga/store.h"
#include "support/rng.h"
#include "support/seed.h"

using namespace forein::offload::fpga;
using forein::testing::Rng;

namespace Catch {
template <>
struct StringMaker<Item> {
  static std::string convert(const Item& it) { return "{" + it.key + "=" + it.value + "}"; }
};
}  // namespace Catch

namespace {

using forein::testing::key16;
using forein::testing::value16;

// SCAN's predecessor semantics on the model.
std::vector<Item> model_scan(const std::map<std::string, std::string>& m, const std::string& lo,
                             const std::string& hi) {
  auto it = m.upper_bound(lo);
  if (it != m.begin()) --it;  // largest key <= lo, else the first key
  std::vector<Item> out;
  for (; it != m.end() && it->first <= hi; ++it) out.push_back({it->first, it->second});
  return out;
}

std::vector<Item> model_items(const std::map<std::string, std::string>& m) {
  std::vector<Item> out;
  for (const auto& [k, v] : m) out.push_back({k, v});
  return out;
}

// Pins every retired buffer: an accelerator request that never ends.
class PinningLink : public AcceleratorLink {
 public:
  void map(Lid, NodeAddress) override { ++maps; }
  void unmap(Lid) override {}
  void set_read_version(Version v) override { grv = v; }
  void set_root(Lid r, std::uint32_t h) override {
    root = r;
    height = h;
  }
  std::uint64_t newest_sequence() override { return 1; }
  std::uint64_t oldest_sequence() override { return 1; }
  std::uint64_t maps = 0;
  Version grv = 0;
  Lid root = 0;
  std::uint32_t height = 0;
};

const std::string kHighest(kMaxKeyBytes + 1, '\xff');

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr std::uint64_t kScale = 4;  // sanitizer builds (often Debug): fewer operations
#else
constexpr std::uint64_t kScale = 1;
#endif

}  // namespace

TEST_CASE("honeycomb layout: header words round trip", "[honeycomb]") {
  alignas(8) std::byte node[kNodeBytes] = {};
  layout::Header h;
  h.type = layout::NodeType::kInterior;
  h.level = 3;
  h.leftmost = kMaxLid - 5;
  h.locked = true;
  h.seq = 0x7ffffffe;
  h.size = 4000;
  h.version = 0x123456789abcdefULL;
  h.old_version = 0xdeadbeef00ULL;
  h.left = 77;
  h.right = kMaxLid;
  h.sorted_end = 4000;
  h.shortcuts = 9;
  layout::write_header(node, h);
  std::byte copy[kHeaderBytes];
  copy_node_bytes(node, 0, kHeaderBytes, copy);
  const layout::Header d = layout::decode_header(copy);
  CHECK(d.type == h.type);
  CHECK(d.level == 3);
  CHECK(d.leftmost == h.leftmost);
  CHECK(d.locked);
  CHECK(d.seq == h.seq);
  CHECK(d.size == 4000);
  CHECK(d.version == h.version);
  CHECK(d.old_version == h.old_version);
  CHECK(d.left == 77);
  CHECK(d.right == kMaxLid);
  CHECK(d.sorted_end == 4000);
  CHECK(d.shortcuts == 9);
  // The fast path's last three steps are one word.
  const std::uint64_t w1 = layout::pack_lock_word(false, 12, 700);
  CHECK(!layout::lock_bit(w1));
  CHECK(layout::seq_of(w1) == 12);
  CHECK(layout::size_of(w1) == 700);
}

TEST_CASE("honeycomb layout: sorted blocks, shortcuts and log entries round trip", "[honeycomb]") {
  for (bool interior : {false, true}) {
    std::vector<std::string> keys, values;
    for (int i = 0; i < 150; ++i) {
      keys.push_back(key16(static_cast<std::uint64_t>(i) * 7));
      values.push_back(value16(static_cast<std::uint64_t>(i), 1));
    }
    std::vector<layout::BuildItem> items;
    for (std::size_t i = 0; i < keys.size(); ++i) items.push_back({keys[i], values[i], 1000 + i});
    alignas(8) std::byte node[kNodeBytes] = {};
    layout::Header h;
    if (interior) {
      h.type = layout::NodeType::kInterior;
      h.level = 1;
      h.leftmost = 5;
    }
    REQUIRE(layout::build_node(node, h, items));
    layout::Image img;
    std::memcpy(img.bytes.data(), node, kNodeBytes);
    img.header = layout::decode_header(img.bytes.data());
    REQUIRE(img.header.plausible());
    const auto segs = layout::parse_shortcuts(img);
    REQUIRE(segs);
    CHECK(segs->count() > 5);  // several segments of >= 256 bytes
    for (std::size_t i = 0; i + 1 < segs->count(); ++i) {
      CHECK(segs->end(i) - segs->start(i) >= 200);  // boundary keys are not repeated in segments
    }
    std::vector<layout::SortedItem> parsed;
    for (std::size_t i = 0; i < segs->count(); ++i) REQUIRE(layout::parse_segment(img, *segs, i, parsed));
    REQUIRE(parsed.size() == keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      CHECK(parsed[i].key == keys[i]);
      if (interior) CHECK(parsed[i].child == 1000 + i);
      else CHECK(parsed[i].value == values[i]);
    }
    // Every key is found in the segment its shortcuts name.
    for (std::size_t i = 0; i < keys.size(); ++i) {
      std::vector<layout::SortedItem> seg;
      REQUIRE(layout::parse_segment(img, *segs, segs->find(keys[i]), seg));
      CHECK(std::any_of(seg.begin(), seg.end(), [&](const auto& x) { return x.key == keys[i]; }));
    }
  }
  // A log entry.
  alignas(8) std::byte node[kNodeBytes] = {};
  layout::Header h;
  h.version = 100;
  const std::string key(kMaxKeyBytes, 'k'), value(7, 'v');
  layout::encode_log_entry(node + layout::kSortedStart, 600, 3, layout::kOpUpdate | layout::kReplaces,
                           layout::kMaxVersionDelta, key, value);
  h.size = static_cast<std::uint32_t>(layout::kSortedStart + layout::log_entry_bytes(key, value));
  layout::write_header(node, h);
  layout::Image img;
  std::memcpy(img.bytes.data(), node, kNodeBytes);
  img.header = layout::decode_header(img.bytes.data());
  const auto log = layout::parse_log(img);
  REQUIRE(log.size() == 1);
  CHECK(log[0].back == 600);
  CHECK(log[0].hint == 3);
  CHECK(log[0].flags == (layout::kOpUpdate | layout::kReplaces));
  CHECK(log[0].version == 100 + layout::kMaxVersionDelta);
  CHECK(log[0].key == key);
  CHECK(log[0].value == value);
}

TEST_CASE("honeycomb order hints: Figures 7/8 (90, 60, 30, 45)", "[honeycomb]") {
  Store store;
  for (const char* k : {"90", "60", "30", "45"}) REQUIRE(store.put(k, std::string("v") + k));
  MemoryPort& port = store.cpu_port();
  NodeAddress leaf = port.translate(port.root());
  REQUIRE(leaf != nullptr);
  layout::Image img;
  copy_node_bytes(leaf, 0, kHeaderBytes, img.bytes.data());
  img.header = layout::decode_header(img.bytes.data());
  copy_node_bytes(leaf, kHeaderBytes, img.header.size - kHeaderBytes, img.bytes.data() + kHeaderBytes);
  const auto log = layout::parse_log(img);
  REQUIRE(log.size() == 4);
  std::vector<int> hints;
  for (const auto& e : log) hints.push_back(e.hint);
  CHECK(hints == std::vector<int>{0, 0, 0, 1});
  std::vector<std::string> sorted;
  for (int i : layout::order_by_hints(log)) sorted.emplace_back(log[static_cast<std::size_t>(i)].key);
  CHECK(sorted == std::vector<std::string>{"30", "45", "60", "90"});
  CHECK(store.scan("50", "99").items ==
        std::vector<Item>{{"45", "v45"}, {"60", "v60"}, {"90", "v90"}});
  CHECK(store.scan("10", "30").items == std::vector<Item>{{"30", "v30"}});
}

TEST_CASE("honeycomb store: seeded random model test against std::map", "[honeycomb]") {
  const std::uint64_t seed = forein::testing::test_seed("honeycomb store model");
  Rng rng(seed);
  Store store;
  std::map<std::string, std::string> model;
  // Bulk-load even keys, then write random keys (odd ones are new: splits).
  // The writes grow the key count by about 17%; leaves loaded to 90% have
  // room for about 5% more, so every seed splits (at 80% some did not).
  constexpr std::uint64_t kKeys = 120000 / kScale;
  std::vector<Item> load;
  for (std::uint64_t k = 0; k < kKeys; k += 2) load.push_back({key16(k), value16(k, 0)});
  store.bulk_load(load, 0.9);
  for (const Item& it : load) model[it.key] = it.value;
  CHECK(store.stats().height >= (kScale == 1 ? 3u : 2u));
  const std::uint64_t height0 = store.stats().height;

  for (std::uint64_t op = 1; op <= 150000 / kScale; ++op) {
    const std::uint64_t k = rng.below(kKeys);
    const std::string key = key16(k), value = value16(k, op);
    const bool present = model.count(key) != 0;
    switch (rng.below(5)) {
      case 0:
        REQUIRE(store.put(key, value) == !present);
        if (!present) model[key] = value;
        break;
      case 1:
        REQUIRE(store.update(key, value) == present);
        if (present) model[key] = value;
        break;
      case 2:
        REQUIRE(store.erase(key) == present);
        model.erase(key);
        break;
      case 3:
        store.upsert(key, value);
        model[key] = value;
        break;
      default: {
        const auto got = store.get(key);
        REQUIRE(got.has_value() == present);
        if (present) REQUIRE(*got == model[key]);
      }
    }
    if (op % 500 == 0) {
      const std::string lo = key16(rng.below(kKeys + 10)), hi = key16(rng.below(kKeys + 10));
      INFO("scan " << lo << " .. " << hi << " op " << op);
      REQUIRE(store.scan(lo, hi).items == model_scan(model, lo, hi));
      const auto limited = store.scan(lo, hi, 3);
      const auto want = model_scan(model, lo, hi);
      CHECK(limited.truncated == (want.size() > 3));
      CHECK(limited.items == std::vector<Item>(want.begin(), want.begin() + std::min<std::size_t>(3, want.size())));
    }
  }
  const StoreStats st = store.stats();
  CHECK(st.log_appends > 0);
  CHECK(st.merges > 0);
  CHECK(st.splits > 0);
  CHECK(st.height >= height0);
  REQUIRE(store.dump() == model_items(model));
  // Before the first key and past the last.
  CHECK(store.scan("a", "a").items.empty());
  CHECK(store.scan("k", key16(0)).items == model_scan(model, "k", key16(0)));
  const auto tail = store.scan("z", "zz").items;
  REQUIRE(tail.size() == 1);
  CHECK(tail[0].key == model.rbegin()->first);
}

TEST_CASE("honeycomb store: variable key and value sizes up to the limits", "[honeycomb]") {
  const std::uint64_t seed = forein::testing::test_seed("honeycomb store sizes");
  Rng rng(seed);
  Store store;
  std::map<std::string, std::string> model;
  auto random_key = [&] {
    const std::size_t len = rng.chance(1, 10) ? kMaxKeyBytes - rng.below(3) : 1 + rng.below(40);
    std::string k(len, 'a');
    for (char& c : k) c = static_cast<char>('a' + rng.below(4));  // collisions on short keys
    return k;
  };
  for (int op = 0; op < 12000; ++op) {
    const std::string key = random_key();
    const std::size_t vlen = rng.chance(1, 8) ? kMaxValueBytes - rng.below(3) : rng.below(30);
    const std::string value(vlen, static_cast<char>('A' + op % 26));
    const bool present = model.count(key) != 0;
    switch (rng.below(4)) {
      case 0:
      case 1:
        store.upsert(key, value);
        model[key] = value;
        break;
      case 2:
        REQUIRE(store.erase(key) == present);
        model.erase(key);
        break;
      default:
        REQUIRE(store.put(key, value) == !present);
        if (!present) model[key] = value;
    }
    if (op % 200 == 0) {
      const std::string lo = random_key(), hi = random_key();
      REQUIRE(store.scan(lo, hi).items == model_scan(model, lo, hi));
    }
  }
  CHECK(store.stats().splits > 0);
  REQUIRE(store.dump() == model_items(model));
  for (const auto& [k, v] : model) REQUIRE(store.get(k) == v);
}

TEST_CASE("honeycomb MVCC: an old read version keeps its snapshot across merges and splits", "[honeycomb]") {
  PinningLink link;  // keeps every old version alive for the saved readers
  Store store({}, &link);
  std::vector<Item> load;
  for (std::uint64_t k = 0; k < 20000; k += 2) load.push_back({key16(k), value16(k, 0)});
  store.bulk_load(load, 0.95);
  std::map<std::string, std::string> model;
  for (const Item& it : load) model[it.key] = it.value;
  CHECK(link.root != 0);

  struct Snapshot {
    Version rv;
    std::vector<Item> items;
  };
  std::vector<Snapshot> snapshots{{store.read_version(), model_items(model)}};
  Rng rng(7);
  for (int round = 1; round <= 4; ++round) {
    for (int i = 0; i < 4000; ++i) {
      const std::uint64_t k = rng.below(20000);
      if (rng.chance(1, 4)) {
        store.erase(key16(k));
        model.erase(key16(k));
      } else {
        store.upsert(key16(k), value16(k, static_cast<std::uint64_t>(round)));
        model[key16(k)] = value16(k, static_cast<std::uint64_t>(round));
      }
    }
    snapshots.push_back({store.read_version(), model_items(model)});
  }
  CHECK(store.stats().splits > 0);
  CHECK(store.stats().merges > 0);
  CHECK(link.grv == store.read_version());
  for (const Snapshot& s : snapshots) {
    ReadTrace trace;
    const auto r = honeycomb_scan(store.cpu_port(), "", kHighest, s.rv, 0, &trace);
    INFO("rv " << s.rv);
    REQUIRE(r.items == s.items);
    if (s.rv < store.read_version()) CHECK(trace.old_versions > 0);
    // Ranged scans and gets at the old version too.
    std::map<std::string, std::string> m;
    for (const Item& it : s.items) m[it.key] = it.value;
    for (int i = 0; i < 50; ++i) {
      const std::string lo = key16(rng.below(20000)), hi = key16(rng.below(20000));
      REQUIRE(honeycomb_scan(store.cpu_port(), lo, hi, s.rv).items == model_scan(m, lo, hi));
      const std::string k = key16(rng.below(20000));
      const auto got = honeycomb_get(store.cpu_port(), k, s.rv);
      REQUIRE(got.has_value() == (m.count(k) != 0));
    }
  }
  CHECK(store.stats().buffers_freed == 0);  // pinned by the link
}

TEST_CASE("honeycomb MVCC: snapshots across root splits (tree growth from one leaf)", "[honeycomb]") {
  PinningLink link;
  Store store({}, &link);
  std::map<std::string, std::string> model;
  std::vector<std::pair<Version, std::vector<Item>>> snapshots{{store.read_version(), {}}};
  for (std::uint64_t i = 0; i < 60000 / kScale; ++i) {
    const std::uint64_t k = (i * 7919) % (60000 / kScale);  // scattered inserts
    REQUIRE(store.put(key16(k), value16(k, i)));
    model[key16(k)] = value16(k, i);
    if (i % 4000 == 0) snapshots.emplace_back(store.read_version(), model_items(model));
  }
  CHECK(store.stats().height >= (kScale == 1 ? 3u : 2u));
  CHECK(link.height == store.stats().height);
  for (const auto& [rv, items] : snapshots) {
    INFO("rv " << rv);
    REQUIRE(honeycomb_scan(store.cpu_port(), "", kHighest, rv).items == items);
  }
}

TEST_CASE("honeycomb MVCC off: single-threaded operations", "[honeycomb]") {
  const std::uint64_t seed = forein::testing::test_seed("honeycomb mvcc off");
  Rng rng(seed);
  StoreOptions options;
  options.mvcc = false;
  Store store(options);
  std::map<std::string, std::string> model;
  for (int op = 0; op < 40000; ++op) {
    const std::uint64_t k = rng.below(30000);
    const std::string key = key16(k), value = value16(k, static_cast<std::uint64_t>(op));
    if (rng.chance(1, 5)) {
      REQUIRE(store.erase(key) == (model.erase(key) != 0));
    } else {
      store.upsert(key, value);
      model[key] = value;
    }
  }
  CHECK(store.read_version() == 0);
  CHECK(store.write_version() == 0);
  CHECK(store.stats().splits > 0);
  REQUIRE(store.dump() == model_items(model));
  const std::string lo = key16(12345), hi = key16(20000);
  CHECK(store.scan(lo, hi).items == model_scan(model, lo, hi));
  store.collect_garbage();
  CHECK(store.stats().buffers_freed > 0);
}

TEST_CASE("honeycomb broken release order: single-threaded writes still work, nothing is freed", "[honeycomb]") {
  StoreOptions options;
  options.release_out_of_order_for_testing = true;
  Store store(options);
  std::map<std::string, std::string> model;
  for (std::uint64_t i = 0; i < 5000; ++i) {
    store.upsert(key16(i % 3000), value16(i, i));
    model[key16(i % 3000)] = value16(i, i);
  }
  CHECK(store.read_version() == store.write_version());
  REQUIRE(store.dump() == model_items(model));
  store.collect_garbage();
  CHECK(store.stats().buffers_retired > 0);
  CHECK(store.stats().buffers_freed == 0);  // GRV may go backwards: keep every old version
}

namespace {

// Serves random bytes, or a real store's bytes torn at random.
class GarbagePort : public MemoryPort {
 public:
  GarbagePort(std::uint64_t seed, MemoryPort* real) : rng_(seed), real_(real) {}
  NodeAddress translate(Lid lid) override {
    if (real_ != nullptr && !rng_.chance(1, 20)) {
      NodeAddress a = real_->translate(lid);
      if (a != nullptr) real_addresses_.insert(a);
      return a;
    }
    return rng_.chance(1, 30) ? nullptr : fake_;
  }
  void read(const NodeRead& r, std::byte* out) override {
    // Only buffers this port handed out are real memory; a torn old-version
    // pointer names anything, and a port cannot read that.
    if (real_addresses_.count(r.address) != 0) {
      real_->read(r, out);
      for (std::uint32_t i = 0; i < r.length; ++i) {
        if (rng_.chance(1, 200)) out[i] = static_cast<std::byte>(rng_.next());
      }
      return;
    }
    for (std::uint32_t i = 0; i < r.length; ++i) out[i] = static_cast<std::byte>(rng_.next());
    // Sometimes a plausible header, so the parsers below it run.
    if (r.offset == 0 && r.length >= kHeaderBytes && rng_.chance(1, 2)) {
      layout::Header h;
      h.type = rng_.chance(1, 2) ? layout::NodeType::kLeaf : layout::NodeType::kInterior;
      h.level = h.type == layout::NodeType::kLeaf ? 0 : static_cast<std::uint8_t>(1 + rng_.below(3));
      h.leftmost = rng_.below(5);
      h.sorted_end = static_cast<std::uint16_t>(512 + rng_.below(7000));
      h.size = h.type == layout::NodeType::kLeaf ? h.sorted_end + static_cast<std::uint32_t>(rng_.below(600)) : h.sorted_end;
      if (h.size > kNodeBytes) h.size = kNodeBytes;
      h.shortcuts = static_cast<std::uint16_t>(rng_.below(30));
      h.version = rng_.below(3);
      h.old_version = rng_.chance(1, 3) ? reinterpret_cast<std::uintptr_t>(fake_) : 0;
      h.left = rng_.below(4);
      h.right = rng_.below(4);
      alignas(8) std::byte hb[kHeaderBytes] = {};
      layout::write_header(hb, h);
      std::memcpy(out, hb, kHeaderBytes);
    }
  }
  Lid root() override { return real_ != nullptr ? real_->root() : 1 + rng_.below(3); }
  Version read_version() override { return 1; }

 private:
  std::set<NodeAddress> real_addresses_;
  Rng rng_;
  MemoryPort* real_;
  std::byte fake_byte_{};
  NodeAddress fake_ = &fake_byte_;  // never dereferenced: reads go through read()
};

}  // namespace

TEST_CASE("honeycomb reader: garbage and torn bytes never crash or hang", "[honeycomb]") {
  const std::uint64_t seed = forein::testing::test_seed("honeycomb garbage reader");
  {
    GarbagePort port(seed, nullptr);
    for (int i = 0; i < 20000; ++i) {
      ReadTrace trace;
      const auto r = honeycomb_scan(port, "k5", "k9", 1, 0, &trace);
      for (std::size_t j = 1; j < r.items.size(); ++j) REQUIRE(r.items[j - 1].key < r.items[j].key);
      (void)honeycomb_get(port, "k7", 0);
    }
  }
  Store store;
  std::vector<Item> load;
  for (std::uint64_t k = 0; k < 20000; ++k) load.push_back({key16(k), value16(k, 0)});
  store.bulk_load(load);
  for (std::uint64_t k = 0; k < 3000; ++k) store.upsert(key16(k * 5), "x");
  GarbagePort torn(seed + 1, &store.cpu_port());
  Rng rng(seed);
  for (int i = 0; i < 3000; ++i) {
    const std::string lo = key16(rng.below(20000)), hi = key16(rng.below(20000));
    (void)honeycomb_scan(torn, lo, hi, store.read_version(), 100);
    (void)honeycomb_get(torn, lo, store.read_version());
  }
}

TEST_CASE("honeycomb store: invalid arguments throw InvalidArgument", "[honeycomb]") {
  Store store;
  const std::string long_key(kMaxKeyBytes + 1, 'k'), long_value(kMaxValueBytes + 1, 'v');
  CHECK_THROWS_AS(store.put("", "v"), forein::InvalidArgument);
  CHECK_THROWS_AS(store.put(long_key, "v"), forein::InvalidArgument);
  CHECK_THROWS_AS(store.put("k", long_value), forein::InvalidArgument);
  CHECK_THROWS_AS(store.update(long_key, "v"), forein::InvalidArgument);
  CHECK_THROWS_AS(store.upsert("k", long_value), forein::InvalidArgument);
  CHECK_THROWS_AS(store.erase(""), forein::InvalidArgument);
  CHECK_THROWS_AS(store.get(""), forein::InvalidArgument);
  const std::vector<Item> unsorted{{"b", "1"}, {"a", "2"}};
  CHECK_THROWS_AS(store.bulk_load(unsorted), forein::InvalidArgument);
  const std::vector<Item> dup{{"a", "1"}, {"a", "2"}};
  CHECK_THROWS_AS(store.bulk_load(dup), forein::InvalidArgument);
  const std::vector<Item> ok{{"a", "1"}, {"b", "2"}};
  CHECK_THROWS_AS(store.bulk_load(ok, 0.0), forein::InvalidArgument);
  StoreOptions bad;
  bad.log_block_bytes = 1;
  CHECK_THROWS_AS(Store(bad), forein::InvalidArgument);
  store.bulk_load(ok);
  CHECK_THROWS_AS(store.bulk_load(ok), forein::InvalidArgument);  // not empty
  CHECK(store.get("a") == "1");
  CHECK(store.put(std::string(kMaxKeyBytes, 'z'), std::string(kMaxValueBytes, 'v')));
  CHECK(store.get(std::string(kMaxKeyBytes, 'z')) == std::string(kMaxValueBytes, 'v'));
}
