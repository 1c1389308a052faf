// Randomized model test: the tree against std::map<std::string, std::string>
// over a long stream of mixed operations (puts of new and existing keys,
// erases of present and absent keys, gets, bounded scans in both directions
// with both cursor and callback forms), for int64 keys and for byte-string
// keys that share prefix words, with a small and the default page size.
//
// The stream alternates growth phases (tens of thousands of keys, height >= 3
// on 4 KiB pages) with phases of heavy deletes (the tree shrinks to almost
// nothing, so merges and root collapses happen), and runs tree.check() plus a
// full comparison every ~100k operations and at every phase boundary.
//
// 1,000,000 operations in total by default; FOREIN_MODEL_OPS=<n> raises it
// (values below the floor are ignored). FOREIN_SEED=<n> replays a run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "forein/error.h"
#include "forein/key.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "support/describe.h"
#include "support/model.h"
#include "support/rng.h"
#include "support/seed.h"

namespace {

using forein::Direction;
using forein::KeyBound;
using forein::ScanSpec;
using forein::Tree;
using namespace forein::testing;

constexpr std::uint64_t kOpsFloor = 1'000'000;
constexpr std::uint64_t kConfigs = 4;

enum class KeyKind { kInt64, kBytes };

std::uint64_t total_ops() { return ops_from_env("FOREIN_MODEL_OPS", kOpsFloor); }

// Key generators. Every generator only produces keys of at most 40 bytes
// except the explicit max-size keys, which use the tree's limit.
class KeyGen {
 public:
  KeyGen(KeyKind kind, Rng& rng, std::size_t max_key) : kind_(kind), rng_(rng), max_key_(max_key) {
    static const char kPrefixAlpha[] = {'a', 'b', '\0', '\xff'};
    for (int i = 0; i < 24; ++i) {
      std::string p(8, 'a');
      for (auto& c : p) c = kPrefixAlpha[rng_.below(4)];
      prefixes_.push_back(p);
    }
  }

  std::string operator()() { return kind_ == KeyKind::kInt64 ? int_key() : byte_key(); }

  std::string int_key() { return forein::encode_int64(int_value()); }

  std::int64_t int_value() {
    static const std::int64_t kExtremes[] = {
        std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::min() + 1,
        -65536, -256, -255, -1, 0, 1, 255, 256, 65536,
        std::numeric_limits<std::int64_t>::max() - 1, std::numeric_limits<std::int64_t>::max()};
    const std::uint64_t c = rng_.below(100);
    if (c < 75) {
      // A dense band around zero: negatives and positives, gaps of 37.
      constexpr std::int64_t kSpan = std::int64_t{1} << 20;
      return (static_cast<std::int64_t>(rng_.below(2 * kSpan + 1)) - kSpan) * 37;
    }
    if (c < 85) return static_cast<std::int64_t>(rng_.next());
    if (c < 92) return kExtremes[rng_.below(std::size(kExtremes))];
    if (c < 96) return std::numeric_limits<std::int64_t>::min() + static_cast<std::int64_t>(rng_.below(2000));
    return std::numeric_limits<std::int64_t>::max() - static_cast<std::int64_t>(rng_.below(2000));
  }

  std::string byte_key() {
    static const char kAlpha5[] = {'\0', '\x01', 'a', 'b', '\xff'};
    static const char kAlpha3[] = {'\0', 'a', '\xff'};
    const std::uint64_t c = rng_.below(1000);
    std::string k;
    if (c < 450) {
      // Shares one of a few prefix words; suffix makes keys longer than 8.
      k = prefixes_[rng_.below(prefixes_.size())];
      const std::size_t n = rng_.below(33);
      for (std::size_t i = 0; i < n; ++i) k += kAlpha5[rng_.below(5)];
    } else if (c < 650) {
      const std::size_t n = rng_.below(9);
      for (std::size_t i = 0; i < n; ++i) k += kAlpha3[rng_.below(3)];
    } else if (c < 800) {
      const std::size_t n = rng_.below(41);
      for (std::size_t i = 0; i < n; ++i) k += kAlpha5[rng_.below(5)];
    } else if (c < 880) {
      // A (partial) prefix word followed by trailing zero bytes.
      k = prefixes_[rng_.below(prefixes_.size())].substr(0, 1 + rng_.below(8));
      k.append(rng_.below(13), '\0');
    } else if (c < 980) {
      const std::size_t n = rng_.below(41);
      for (std::size_t i = 0; i < n; ++i) k += static_cast<char>(rng_.below(256));
    } else if (c < 985) {
      k.clear();  // the empty key
    } else if (c < 998) {
      k.assign(rng_.below(41), '\xff');
    } else {
      // A key of exactly the maximum size (or just below).
      k = prefixes_[rng_.below(prefixes_.size())];
      const std::size_t len = max_key_ - rng_.below(2);
      while (k.size() < len) k += kAlpha5[rng_.below(5)];
      k.resize(len);
    }
    return k;
  }

 private:
  KeyKind kind_;
  Rng& rng_;
  std::size_t max_key_;
  std::vector<std::string> prefixes_;
};

std::string gen_value(Rng& rng, std::size_t max_value) {
  const std::uint64_t c = rng.below(1000);
  std::size_t len;
  if (c < 3) {
    len = max_value;
  } else if (c < 8 && max_value > 300) {
    len = 300 + rng.below(max_value - 300 + 1);
  } else {
    len = rng.below(std::min<std::size_t>(300, max_value) + 1);
  }
  std::string v(len, '\0');
  std::size_t i = 0;
  while (i < len) {
    std::uint64_t w = rng.next();
    for (int b = 0; b < 8 && i < len; ++b, ++i, w >>= 8) v[i] = static_cast<char>(w & 0xff);
  }
  return v;
}

Entries tree_scan_cursor(Tree& t, const ScanSpec& spec, std::size_t limit) {
  Entries out;
  forein::Cursor c = t.scan(spec);
  while (out.size() < limit && c.next()) out.emplace_back(std::string(c.key()), std::string(c.value()));
  return out;
}

std::string describe_bound(const std::optional<KeyBound>& b) {
  if (!b) return "open";
  return std::string(b->inclusive ? "incl " : "excl ") + hex(b->key);
}

std::string describe_spec(const ScanSpec& spec, std::size_t limit) {
  std::ostringstream os;
  os << (spec.direction == Direction::kForward ? "forward" : "backward") << " lower=" << describe_bound(spec.lower)
     << " upper=" << describe_bound(spec.upper) << " limit=" << limit;
  return os.str();
}

// First difference between two entry lists, for failure messages.
std::string diff_entries(const Entries& want, const Entries& got) {
  std::ostringstream os;
  os << "want " << want.size() << " entries, got " << got.size();
  const std::size_t n = std::min(want.size(), got.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (want[i] != got[i]) {
      os << "; first difference at " << i << ": want key " << hex(want[i].first) << " value "
         << hex(want[i].second, 16) << ", got key " << hex(got[i].first) << " value " << hex(got[i].second, 16);
      return os.str();
    }
  }
  if (want.size() > n) os << "; missing from " << hex(want[n].first);
  if (got.size() > n) os << "; extra from " << hex(got[n].first);
  return os.str();
}

class ModelRun {
 public:
  ModelRun(KeyKind kind, std::uint32_t page_size, std::uint64_t ops, std::uint64_t seed, std::string name)
      : kind_(kind),
        ops_(ops),
        seed_(seed),
        name_(std::move(name)),
        rng_(seed),
        tree_(Tree::create(std::make_unique<forein::MemoryPageStore>(page_size))),
        max_key_(tree_->max_key_size()),
        max_value_(tree_->max_value_size()),
        keys_(kind, rng_, max_key_) {}

  void run() {
    REQUIRE(max_key_ >= 40);
    REQUIRE(max_value_ >= 300);
    REQUIRE(max_key_ == tree_->store().page_size() / 16);
    REQUIRE(max_value_ == tree_->store().page_size() / 8);
    REQUIRE(tree_->size() == 0);

    std::uint64_t last_check = 0;
    int prev_phase = phase_of(0);
    std::uint64_t nodes_after_growth = 0;
    std::uint64_t size_after_growth = 0;
    while (op_ < ops_) {
      const int phase = phase_of(op_);
      if (phase != prev_phase) {
        // Phase boundary: full verification and a structural snapshot.
        full_check("phase boundary");
        const std::uint64_t nodes = count_nodes();
        if (is_growth(prev_phase)) {
          nodes_after_growth = nodes;
          size_after_growth = model_.size();
        } else if (nodes_after_growth > 0 && model_.size() * 8 < size_after_growth) {
          // Most keys were deleted: merges must have given nodes back.
          INFO(name_ << " seed " << seed_ << ": " << size_after_growth << " keys in " << nodes_after_growth
                     << " nodes shrank to " << model_.size() << " keys in " << nodes << " nodes");
          CHECK(nodes * 2 < nodes_after_growth);
          shrink_checks_++;
        }
        prev_phase = phase;
      }
      one_op(is_growth(phase));
      if (op_ - last_check >= 100'000) {
        full_check("periodic");
        last_check = op_;
      }
      if (op_ >= next_oversize_) {
        oversize_checks();
        next_oversize_ = op_ + 25'000;
      }
      if (op_ % 1024 == 0 && tree_->size() != model_.size()) {
        fail("size", "tree.size() " + std::to_string(tree_->size()) + " != model " + std::to_string(model_.size()));
      }
      peak_size_ = std::max<std::uint64_t>(peak_size_, model_.size());
      peak_height_ = std::max<std::uint16_t>(peak_height_, tree_->height());
    }
    full_check("end");
    oversize_checks();
    drain();

    std::cout << name_ << ": " << op_ << " ops, peak " << peak_size_ << " keys, peak height " << peak_height_
              << ", " << full_checks_ << " full checks" << std::endl;
    INFO(name_ << " seed " << seed_ << ": peak " << peak_size_ << " keys, peak height " << peak_height_);
    if (ops_ >= kOpsFloor / kConfigs) {
      // The op mix must actually have grown the tree and exercised merges.
      CHECK(peak_size_ >= 20'000);
      CHECK(shrink_checks_ >= 1);
      if (tree_->store().page_size() == forein::kMinPageSize) CHECK(peak_height_ >= 3);
    }
    CHECK(get_hits_ > 0);
    CHECK(get_misses_ > 0);
    CHECK(nonempty_scans_ > 0);
    CHECK(big_values_ > 0);
  }

 private:
  // 20 slices: growth 0-6, shrink 7-10, growth 11-15, shrink 16-19.
  int phase_of(std::uint64_t op) const {
    const std::uint64_t slice = op * 20 / ops_;
    if (slice < 7) return 0;
    if (slice < 11) return 1;
    if (slice < 16) return 2;
    return 3;
  }
  static bool is_growth(int phase) { return phase % 2 == 0; }

  [[noreturn]] void fail(const std::string& what, const std::string& detail) {
    std::ostringstream os;
    os << name_ << " (config seed " << seed_ << ") op " << op_ << " [" << what << "]: " << detail
       << " (model size " << model_.size() << ", tree height " << tree_->height() << ")";
    FAIL(os.str());
    throw std::logic_error("unreachable");  // FAIL throws; keeps [[noreturn]] honest
  }

  std::string pick_present() { return forein::testing::pick_present(model_, keys_); }

  std::string pick_absent() {
    for (int i = 0; i < 4; ++i) {
      std::string k = keys_();
      if (!model_.count(k)) return k;
    }
    return keys_();
  }

  void do_put(const std::string& key, const std::string& value, const char* what) {
    const bool was_new = model_.find(key) == model_.end();
    const bool got = tree_->put(key, value);
    model_[key] = value;
    if (value.size() > 300) big_values_++;
    if (got != was_new) fail(what, "put(" + hex(key) + ") returned " + std::to_string(got));
    ++op_;
  }

  void do_erase(const std::string& key, const char* what) {
    const bool was_present = model_.erase(key) == 1;
    const bool got = tree_->erase(key);
    if (got != was_present) fail(what, "erase(" + hex(key) + ") returned " + std::to_string(got));
    ++op_;
  }

  void do_get(const std::string& key, const char* what) {
    auto it = model_.find(key);
    std::string value = "sentinel-not-touched";
    const bool got = tree_->get(key, &value);
    if (got != (it != model_.end())) fail(what, "get(" + hex(key) + ") returned " + std::to_string(got));
    if (got) {
      get_hits_++;
      if (value != it->second) {
        fail(what, "get(" + hex(key) + ") value " + hex(value) + " != model " + hex(it->second));
      }
      // The null-out form must agree.
      if (rng_.chance(1, 16) && !tree_->get(key, nullptr)) fail(what, "get(" + hex(key) + ", nullptr) missed");
    } else {
      get_misses_++;
    }
    ++op_;
  }

  void do_scan() {
    const ScanSpec spec = random_spec(rng_, model_, keys_);
    const std::size_t limit = rng_.chance(1, 25) ? 1 + rng_.below(2000) : 1 + rng_.below(64);
    const Entries want = model_scan(model_, spec, limit);
    const bool cursor = rng_.chance(1, 2);
    const Entries got = cursor ? tree_scan_cursor(*tree_, spec, limit) : scan_entries(*tree_, spec, limit);
    if (got != want) {
      // Localise: does a point lookup of the first differing key agree?
      std::string extra;
      for (std::size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
        if (want[i] == got[i]) continue;
        std::string v;
        const bool found = tree_->get(got[i].first, &v);
        extra = "; get(got key) found=" + std::to_string(found) + " value " + hex(v, 16);
        break;
      }
      fail(cursor ? "scan/cursor" : "scan/callback",
           describe_spec(spec, limit) + ": " + diff_entries(want, got) + extra);
    }
    if (!want.empty()) nonempty_scans_++;
    ++op_;
  }

  void do_erase_run() {
    if (model_.empty()) {
      do_erase(keys_(), "erase-run/empty");
      return;
    }
    auto it = model_.lower_bound(keys_());
    if (it == model_.end()) it = model_.begin();
    const std::size_t n = 1 + rng_.below(48);
    std::vector<std::string> victims;
    for (; it != model_.end() && victims.size() < n; ++it) victims.push_back(it->first);
    if (rng_.chance(1, 2)) std::reverse(victims.begin(), victims.end());
    for (const auto& k : victims) do_erase(k, "erase-run");
  }

  void one_op(bool growth) {
    // Weights out of 100.
    const std::uint64_t c = rng_.below(100);
    if (growth) {
      if (c < 50) return do_put(keys_(), gen_value(rng_, max_value_), "put-new");
      if (c < 58) return do_put(pick_present(), gen_value(rng_, max_value_), "put-replace");
      if (c < 64) return do_erase(pick_present(), "erase-present");
      if (c < 68) return do_erase(pick_absent(), "erase-absent");
      if (c < 80) return do_get(pick_present(), "get-present");
      if (c < 88) return do_get(pick_absent(), "get-absent");
      return do_scan();
    }
    if (c < 8) return do_put(keys_(), gen_value(rng_, max_value_), "put-new");
    if (c < 13) return do_put(pick_present(), gen_value(rng_, max_value_), "put-replace");
    if (c < 60) return do_erase(pick_present(), "erase-present");
    if (c < 64) return do_erase_run();
    if (c < 69) return do_erase(pick_absent(), "erase-absent");
    if (c < 79) return do_get(pick_present(), "get-present");
    if (c < 87) return do_get(pick_absent(), "get-absent");
    return do_scan();
  }

  std::uint64_t count_nodes() {
    std::uint64_t n = 0;
    tree_->for_each_node([&](const forein::NodeInterval&) { ++n; });
    return n;
  }

  void full_check(const char* when) {
    try {
      tree_->check();
    } catch (const forein::CorruptionError& e) {
      fail(when, std::string("check() threw CorruptionError: ") + e.what());
    }
    if (tree_->size() != model_.size()) {
      fail(when, "tree.size() " + std::to_string(tree_->size()) + " != model " + std::to_string(model_.size()));
    }
    const Entries want(model_.begin(), model_.end());
    const Entries got = scan_entries(*tree_);
    if (got != want) fail(when, "full forward scan: " + diff_entries(want, got));
    ScanSpec back;
    back.direction = Direction::kBackward;
    Entries got_back = tree_scan_cursor(*tree_, back, std::numeric_limits<std::size_t>::max());
    std::reverse(got_back.begin(), got_back.end());
    if (got_back != want) fail(when, "full backward scan: " + diff_entries(want, got_back));
    full_checks_++;
  }

  // Oversized keys and values throw InvalidArgument and change nothing.
  void oversize_checks() {
    const std::uint64_t size_before = tree_->size();
    const std::string big_key(max_key_ + 1 + rng_.below(3), kind_ == KeyKind::kInt64 ? '\x80' : 'a');
    CHECK_THROWS_AS(tree_->put(big_key, "v"), forein::InvalidArgument);
    const std::string huge_key(max_key_ * 4, 'z');
    CHECK_THROWS_AS(tree_->put(huge_key, ""), forein::InvalidArgument);
    const std::string big_value(max_value_ + 1, 'v');
    const std::string fresh = pick_absent();
    if (!model_.count(fresh)) {
      CHECK_THROWS_AS(tree_->put(fresh, big_value), forein::InvalidArgument);
      CHECK_FALSE(tree_->get(fresh, nullptr));
    }
    if (!model_.empty()) {
      const std::string present = pick_present();
      CHECK_THROWS_AS(tree_->put(present, std::string(max_value_ + 1 + rng_.below(100), 'w')),
                      forein::InvalidArgument);
      std::string v;
      CHECK(tree_->get(present, &v));
      CHECK(v == model_.at(present));
    }
    CHECK(tree_->size() == size_before);
    CHECK(tree_->size() == model_.size());
    // Exactly the maximum is accepted.
    const std::string max_key_str(max_key_, kind_ == KeyKind::kInt64 ? '\x7f' : 'm');
    const std::string max_value_str(max_value_, 'q');
    const bool was_new = model_.find(max_key_str) == model_.end();
    CHECK(tree_->put(max_key_str, max_value_str) == was_new);
    model_[max_key_str] = max_value_str;
    std::string v;
    CHECK(tree_->get(max_key_str, &v));
    CHECK(v == max_value_str);
    CHECK(tree_->erase(max_key_str));
    model_.erase(max_key_str);
    CHECK(tree_->size() == model_.size());
  }

  // Erase everything (random order), verify the empty tree, then reuse it.
  void drain() {
    std::vector<std::string> all;
    all.reserve(model_.size());
    for (const auto& [k, v] : model_) all.push_back(k);
    std::shuffle(all.begin(), all.end(), rng_.gen());
    for (const auto& k : all) {
      if (!tree_->erase(k)) fail("drain", "erase(" + hex(k) + ") returned false");
      model_.erase(k);
    }
    full_check("drained");
    CHECK(tree_->size() == 0);
    bool any = false;
    tree_->scan(ScanSpec{}, [&](std::string_view, std::string_view) {
      any = true;
      return true;
    });
    CHECK_FALSE(any);
    for (int i = 0; i < 2000; ++i) {
      const std::string k = keys_();
      const std::string v = gen_value(rng_, max_value_);
      const bool was_new = model_.find(k) == model_.end();
      if (tree_->put(k, v) != was_new) fail("refill", "put(" + hex(k) + ") wrong return");
      model_[k] = v;
    }
    full_check("refilled");
  }

  KeyKind kind_;
  std::uint64_t ops_;
  std::uint64_t seed_;
  std::string name_;
  Rng rng_;
  std::unique_ptr<Tree> tree_;
  std::size_t max_key_;
  std::size_t max_value_;
  KeyGen keys_;
  Model model_;
  std::uint64_t op_ = 0;
  std::uint64_t next_oversize_ = 1'000;
  std::uint64_t peak_size_ = 0;
  std::uint16_t peak_height_ = 0;
  std::uint64_t get_hits_ = 0;
  std::uint64_t get_misses_ = 0;
  std::uint64_t nonempty_scans_ = 0;
  std::uint64_t big_values_ = 0;
  std::uint64_t full_checks_ = 0;
  std::uint64_t shrink_checks_ = 0;
};

void run_config(KeyKind kind, std::uint32_t page_size, std::uint64_t config_index, std::uint64_t seed) {
  const std::uint64_t ops = total_ops() / kConfigs;
  std::ostringstream name;
  name << (kind == KeyKind::kInt64 ? "int64" : "bytes") << "/page " << page_size;
  // Each configuration gets its own stream, derived from the printed seed.
  const std::uint64_t config_seed = seed * 0x9e3779b97f4a7c15ULL + config_index;
  ModelRun run(kind, page_size, ops, config_seed, name.str());
  INFO(name.str() << ": FOREIN_SEED=" << seed << ", " << ops << " ops");
  run.run();
}

}  // namespace

TEST_CASE("model: int64 keys against std::map", "[model]") {
  const std::uint64_t seed = forein::testing::test_seed("model int64");
  run_config(KeyKind::kInt64, forein::kMinPageSize, 0, seed);
  run_config(KeyKind::kInt64, forein::kDefaultPageSize, 1, seed);
}

TEST_CASE("model: byte-string keys against std::map", "[model]") {
  const std::uint64_t seed = forein::testing::test_seed("model bytes");
  run_config(KeyKind::kBytes, forein::kMinPageSize, 2, seed);
  run_config(KeyKind::kBytes, forein::kDefaultPageSize, 3, seed);
}

TEST_CASE("model: oversize input throws InvalidArgument and changes nothing", "[model]") {
  for (std::uint32_t page_size : {forein::kMinPageSize, forein::kDefaultPageSize, forein::kMaxPageSize}) {
    auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(page_size));
    INFO("page size " << page_size);
    // tree.h: "key: at most page_size / 16 bytes (512 at 8 KiB); value: at
    // most page_size / 8 bytes (1024 at 8 KiB)".
    CHECK(tree->max_key_size() == page_size / 16);
    CHECK(tree->max_value_size() == page_size / 8);
    for (int i = 0; i < 500; ++i) REQUIRE(tree->put(forein::encode_int64(i * 7), std::string(i % 50, 'x')));
    REQUIRE(tree->size() == 500);

    const std::string old_key = forein::encode_int64(7 * 10);
    CHECK_THROWS_AS(tree->put(std::string(tree->max_key_size() + 1, 'k'), "v"), forein::InvalidArgument);
    CHECK_THROWS_AS(tree->put(old_key, std::string(tree->max_value_size() + 1, 'v')), forein::InvalidArgument);
    CHECK_THROWS_AS(tree->put(forein::encode_int64(-5), std::string(tree->max_value_size() + 1, 'v')),
                    forein::InvalidArgument);
    CHECK(tree->size() == 500);
    std::string v;
    CHECK(tree->get(old_key, &v));
    CHECK(v == std::string(10, 'x'));
    CHECK_FALSE(tree->get(forein::encode_int64(-5), nullptr));
    CHECK_FALSE(tree->get(std::string(tree->max_key_size() + 1, 'k').substr(0, tree->max_key_size()), nullptr));
    CHECK_NOTHROW(tree->check());

    // The limits themselves are accepted.
    CHECK(tree->put(std::string(tree->max_key_size(), 'k'), std::string(tree->max_value_size(), 'v')));
    CHECK(tree->get(std::string(tree->max_key_size(), 'k'), &v));
    CHECK(v.size() == tree->max_value_size());
    CHECK(tree->size() == 501);
    CHECK_NOTHROW(tree->check());
  }
}

// Leaves that hold garbage (bytes of erased or shrunk entries not yet
// compacted) and then receive entries that need no heap bytes at all: 8-byte
// keys with empty values. Deterministic; compared against the model after
// every round.
TEST_CASE("model: empty values into leaves holding garbage", "[model]") {
  for (std::uint32_t page_size : {forein::kMinPageSize, forein::kDefaultPageSize}) {
    for (KeyKind kind : {KeyKind::kInt64, KeyKind::kBytes}) {
      INFO("page size " << page_size << (kind == KeyKind::kInt64 ? ", int64 keys" : ", short byte keys"));
      auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(page_size));
      Model model;
      std::mt19937_64 rng(page_size + (kind == KeyKind::kInt64 ? 0 : 1));
      auto key_of = [&](std::uint64_t i) {
        if (kind == KeyKind::kInt64) return forein::encode_int64(static_cast<std::int64_t>(i % 4096) - 2048);
        std::string k(1 + i % 8, 'a');  // at most 8 bytes: no heap bytes for the key
        for (std::size_t j = 0; j < k.size(); ++j) k[j] = static_cast<char>('a' + (i >> (2 * j)) % 4);
        return k;
      };
      const std::size_t big = tree->max_value_size();
      for (int round = 0; round < 60; ++round) {
        // Big values, half of them erased again: garbage in the leaves.
        std::vector<std::string> bigs;
        for (int i = 0; i < 12; ++i) {
          const std::string k = key_of(rng());
          const std::string v(big / 2 + rng() % (big / 2 + 1), static_cast<char>('A' + i));
          REQUIRE(tree->put(k, v) == (model.count(k) == 0));
          model[k] = v;
          bigs.push_back(k);
        }
        for (std::size_t i = 0; i < bigs.size(); i += 2) {
          REQUIRE(tree->erase(bigs[i]) == (model.erase(bigs[i]) == 1));
        }
        // Entries with no heap bytes.
        for (int i = 0; i < 120; ++i) {
          const std::string k = key_of(rng());
          REQUIRE(tree->put(k, "") == (model.count(k) == 0));
          model[k] = "";
        }
        REQUIRE_NOTHROW(tree->check());
        REQUIRE(tree->size() == model.size());
        const Entries got = scan_entries(*tree);
        const Entries want(model.begin(), model.end());
        INFO("round " << round << ": " << diff_entries(want, got));
        REQUIRE(got == want);
      }
    }
  }
}
