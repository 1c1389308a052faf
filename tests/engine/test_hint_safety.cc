// Hint safety: a hint is advice and can never change a result
// (docs/design.md, "A hint is advice and is never trusted").
//
// A model-test-like random stream (puts, erases, gets, scans; growth and
// heavy-delete phases) where every operation carries random, stale or
// garbage StartHints, primary and secondary: random page ids (0, huge, just
// past store().page_count()), the right leaf with a wrong level, leaves
// recorded earlier with leaf_for() (stale after splits, merges and frees),
// nodes of another Tree, random versions, nodes snapshotted with
// for_each_node(). Every result must equal the std::map oracle, and the
// stats() counters must say what happened: hint_hits for a right hint,
// secondary_hits or fallbacks for a wrong one, move_rights for a hint to
// the left neighbour.
//
// At least 200,000 operations (FOREIN_HINT_OPS=<n> raises it);
// FOREIN_SEED=<n> replays a run.
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
#include "forein/node_interval.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "support/describe.h"
#include "support/model.h"
#include "support/rng.h"
#include "support/seed.h"

namespace {

using forein::Direction;
using forein::Hint;
using forein::KeyBound;
using forein::PageId;
using forein::ScanSpec;
using forein::StartHints;
using forein::Tree;
using forein::TreeStats;
using namespace forein::testing;
using forein::testing::describe;  // else hidden by the local describe(Delta)

constexpr std::uint64_t kOpsFloor = 200'000;
constexpr std::uint64_t kConfigs = 4;

enum class KeyKind { kInt64, kBytes };

std::uint64_t total_ops() { return ops_from_env("FOREIN_HINT_OPS", kOpsFloor); }

class KeyGen {
 public:
  KeyGen(KeyKind kind, Rng& rng) : kind_(kind), rng_(rng) {
    static const char kPrefixAlpha[] = {'a', 'b', '\0', '\xff'};
    for (int i = 0; i < 16; ++i) {
      std::string p(8, 'a');
      for (auto& c : p) c = kPrefixAlpha[rng_.below(4)];
      prefixes_.push_back(p);
    }
  }

  std::string operator()() {
    if (kind_ == KeyKind::kInt64) {
      const std::uint64_t c = rng_.below(100);
      std::int64_t v;
      if (c < 80) {
        constexpr std::int64_t kSpan = std::int64_t{1} << 19;
        v = (static_cast<std::int64_t>(rng_.below(2 * kSpan + 1)) - kSpan) * 13;
      } else if (c < 90) {
        v = static_cast<std::int64_t>(rng_.next());
      } else if (c < 95) {
        v = std::numeric_limits<std::int64_t>::min() + static_cast<std::int64_t>(rng_.below(100));
      } else {
        v = std::numeric_limits<std::int64_t>::max() - static_cast<std::int64_t>(rng_.below(100));
      }
      return forein::encode_int64(v);
    }
    static const char kAlpha[] = {'\0', '\x01', 'a', 'b', '\xff'};
    const std::uint64_t c = rng_.below(100);
    std::string k;
    if (c < 50) {
      k = prefixes_[rng_.below(prefixes_.size())];
      const std::size_t n = rng_.below(33);
      for (std::size_t i = 0; i < n; ++i) k += kAlpha[rng_.below(5)];
    } else if (c < 70) {
      const std::size_t n = rng_.below(9);
      for (std::size_t i = 0; i < n; ++i) k += kAlpha[rng_.below(5)];
    } else if (c < 80) {
      k = prefixes_[rng_.below(prefixes_.size())].substr(0, 1 + rng_.below(8));
      k.append(rng_.below(10), '\0');
    } else {
      const std::size_t n = rng_.below(41);
      for (std::size_t i = 0; i < n; ++i) k += static_cast<char>(rng_.below(256));
    }
    return k;
  }

 private:
  KeyKind kind_;
  Rng& rng_;
  std::vector<std::string> prefixes_;
};

std::string gen_value(Rng& rng, std::size_t max_value) {
  std::size_t len = rng.chance(1, 200) ? max_value : rng.below(std::min<std::size_t>(300, max_value) + 1);
  std::string v(len, '\0');
  for (std::size_t i = 0; i < len; ++i) v[i] = static_cast<char>(rng.below(256));
  return v;
}

// What the test knows about a hint it built.
enum class Expect {
  kUnknown,   // may or may not be accepted
  kReject,    // can never be accepted for this key
  kAccept,    // the exact leaf: accepted without moving
  kMoveRight  // the leaf holding the key's predecessor: accepted, then moves right
};

struct BuiltHint {
  Hint hint;
  Expect expect = Expect::kUnknown;
  const char* kind = "";
  PageId page_count = 0;  // store().page_count() when the hint was built
};

struct Delta {
  std::uint64_t operations, hinted, hint_hits, secondary_hits, fallbacks, move_rights;
};

Delta delta(const TreeStats& a, const TreeStats& b) {
  return Delta{b.operations - a.operations,         b.hinted - a.hinted,       b.hint_hits - a.hint_hits,
               b.secondary_hits - a.secondary_hits, b.fallbacks - a.fallbacks, b.move_rights - a.move_rights};
}

std::string describe(const Delta& d) {
  std::ostringstream os;
  os << "stats delta {operations " << d.operations << ", hinted " << d.hinted << ", hint_hits " << d.hint_hits
     << ", secondary_hits " << d.secondary_hits << ", fallbacks " << d.fallbacks << ", move_rights "
     << d.move_rights << "}";
  return os.str();
}

class SafetyRun {
 public:
  SafetyRun(KeyKind kind, std::uint32_t page_size, std::uint64_t ops, std::uint64_t seed, std::string name)
      : ops_(ops),
        seed_(seed),
        name_(std::move(name)),
        rng_(seed),
        keys_(kind, rng_),
        tree_(Tree::create(std::make_unique<forein::MemoryPageStore>(page_size))),
        other_(Tree::create(std::make_unique<forein::MemoryPageStore>(forein::kMinPageSize))) {}

  void run() {
    build_other_tree();
    while (op_ < ops_) {
      const std::uint64_t slice = op_ * 10 / ops_;
      const bool growth = slice < 4 || (slice >= 6 && slice < 8);
      one_op(growth);
      if (op_ % 2'000 == 0) snapshot_nodes();
      if (op_ % 50'000 == 0) verify("periodic");
      peak_size_ = std::max<std::uint64_t>(peak_size_, model_.size());
      peak_height_ = std::max<std::uint16_t>(peak_height_, tree_->height());
    }
    verify("end");

    std::cout << name_ << ": " << op_ << " ops, peak " << peak_size_ << " keys, height " << peak_height_
              << "; stats checks: accept " << checked_accept_ << ", move-right " << checked_move_right_
              << ", reject " << checked_reject_ << ", secondary " << checked_secondary_ << std::endl;
    INFO(name_ << " (config seed " << seed_ << "): peak " << peak_size_ << " keys, height " << peak_height_
                << "; stat checks: accept " << checked_accept_ << ", move-right " << checked_move_right_
                << ", reject " << checked_reject_ << ", secondary " << checked_secondary_);
    // The stream must have exercised every kind of expectation.
    CHECK(peak_height_ >= 2);
    CHECK(checked_accept_ > 100);
    CHECK(checked_move_right_ > 10);
    CHECK(checked_reject_ > 100);
    CHECK(checked_secondary_ > 10);
    const TreeStats s = tree_->stats();
    CHECK(s.hint_hits > 0);
    CHECK(s.secondary_hits > 0);
    CHECK(s.fallbacks > 0);
    CHECK(s.move_rights > 0);
    CHECK(s.hinted <= s.operations);
    // reset_stats() clears the counters.
    tree_->reset_stats();
    const TreeStats z = tree_->stats();
    CHECK(z.operations == 0);
    CHECK(z.hinted == 0);
    CHECK(z.hint_hits == 0);
    CHECK(z.secondary_hits == 0);
    CHECK(z.fallbacks == 0);
    CHECK(z.move_rights == 0);
    CHECK(z.nodes_visited == 0);
  }

 private:
  [[noreturn]] void fail(const std::string& what, const std::string& detail) {
    std::ostringstream os;
    os << name_ << " (config seed " << seed_ << ") op " << op_ << " [" << what << "]: " << detail
       << " (model size " << model_.size() << ", height " << tree_->height() << ", page_count "
       << tree_->store().page_count() << ")";
    FAIL(os.str());
    throw std::logic_error("unreachable");
  }

  void build_other_tree() {
    Rng r(seed_ ^ 0x5bd1e995);
    for (int i = 0; i < 30'000; ++i) {
      other_->put(forein::encode_int64(static_cast<std::int64_t>(r.next() % 1'000'000)), std::string(r.below(200), 'o'));
    }
    other_->for_each_node([&](const forein::NodeInterval& n) {
      other_hints_.push_back(Hint{n.node, n.level, n.version});
    });
    REQUIRE(other_hints_.size() > 100);
  }

  void snapshot_nodes() {
    snapshot_.clear();
    tree_->for_each_node([&](const forein::NodeInterval& n) { snapshot_.push_back(Hint{n.node, n.level, n.version}); });
  }

  void record(const std::string& key) {
    const Hint h = tree_->leaf_for(key);
    if (recorded_.size() < 512) {
      recorded_.push_back(h);
    } else {
      recorded_[rng_.below(recorded_.size())] = h;
    }
  }

  std::uint64_t random_version() {
    switch (rng_.below(4)) {
      case 0: return 0;
      case 1: return rng_.below(16);
      case 2: return std::numeric_limits<std::uint64_t>::max() - rng_.below(4);
      default: return rng_.next();
    }
  }

  std::uint16_t random_level() {
    return rng_.chance(1, 8) ? static_cast<std::uint16_t>(rng_.next()) : static_cast<std::uint16_t>(rng_.below(6));
  }

  // A hint for `key`; move-right expectations only hold for the primary.
  BuiltHint build(const std::string& key, bool primary) {
    const PageId count = tree_->store().page_count();
    BuiltHint b;
    b.page_count = count;
    switch (rng_.below(15)) {
      case 0:
        b.kind = "absent";
        b.hint = Hint{};
        if (rng_.chance(1, 2)) {
          b.hint.level = random_level();
          b.hint.version = random_version();
        }
        return b;
      case 1: {
        b.kind = "random id";
        b.hint = Hint{static_cast<PageId>(rng_.below(count + 10)), random_level(), random_version()};
        if (b.hint.node >= count + 3) b.expect = Expect::kReject;  // never allocated, even by this op
        return b;
      }
      case 2: {
        b.kind = "huge id";
        static const PageId kHuge[] = {std::numeric_limits<PageId>::max(), std::numeric_limits<PageId>::max() - 1,
                                       PageId{1} << 31, PageId{1} << 24, (PageId{1} << 24) - 1};
        b.hint = Hint{kHuge[rng_.below(std::size(kHuge))], random_level(), random_version()};
        if (b.hint.node >= count + 3) b.expect = Expect::kReject;
        return b;
      }
      case 3: {
        b.kind = "just past page_count";
        b.hint = Hint{static_cast<PageId>(count + rng_.below(3)), static_cast<std::uint16_t>(rng_.below(3)),
                      random_version()};
        // Gets allocate nothing, so these are never live for a get; writes
        // may allocate them (see check_write_stats).
        b.expect = Expect::kReject;
        return b;
      }
      case 4: {
        b.kind = "right leaf, wrong level";
        const Hint h = tree_->leaf_for(key);
        std::uint16_t level = static_cast<std::uint16_t>(1 + rng_.below(4));
        if (rng_.chance(1, 4)) level = std::numeric_limits<std::uint16_t>::max();
        b.hint = Hint{h.node, level, rng_.chance(1, 2) ? h.version : random_version()};
        b.expect = Expect::kReject;
        return b;
      }
      case 5:
      case 6: {
        b.kind = "recorded earlier";
        if (recorded_.empty()) return build_exact(key);
        b.hint = recorded_[rng_.below(recorded_.size())];
        if (rng_.chance(1, 4)) b.hint.version = random_version();
        return b;
      }
      case 7: {
        b.kind = "snapshot node";
        if (snapshot_.empty()) return build_exact(key);
        b.hint = snapshot_[rng_.below(snapshot_.size())];
        if (rng_.chance(1, 4)) b.hint.version = random_version();
        if (rng_.chance(1, 4)) b.hint.level = random_level();
        return b;
      }
      case 8: {
        b.kind = "other tree's node";
        b.hint = other_hints_[rng_.below(other_hints_.size())];
        if (rng_.chance(1, 2)) b.hint = other_->leaf_for(key);
        return b;
      }
      case 9: {
        b.kind = "right leaf, random version";
        b.hint = tree_->leaf_for(key);
        b.hint.version = random_version();
        return b;
      }
      case 10:
      case 11:
        return build_exact(key);
      case 12: {
        // The leaf holding the key's predecessor.
        b.kind = "predecessor's leaf";
        auto it = model_.lower_bound(key);
        if (it == model_.begin()) return build_exact(key);
        const Hint mine = tree_->leaf_for(key);
        b.hint = tree_->leaf_for(std::prev(it)->first);
        b.expect = b.hint.node == mine.node ? Expect::kAccept : Expect::kMoveRight;
        if (!primary && b.expect == Expect::kMoveRight) b.expect = Expect::kUnknown;
        return b;
      }
      case 13: {
        // The leaf holding a larger key, when that is not the key's leaf:
        // its lo is above the key, so it can never be accepted.
        b.kind = "right neighbour's leaf";
        auto it = model_.upper_bound(key);
        for (std::uint64_t skip = rng_.below(40); skip > 0 && it != model_.end(); --skip) ++it;
        if (it == model_.end()) return build_exact(key);
        const Hint mine = tree_->leaf_for(key);
        b.hint = tree_->leaf_for(it->first);
        b.expect = b.hint.node == mine.node ? Expect::kAccept : Expect::kReject;
        return b;
      }
      default: {
        b.kind = "random id, level 0";
        b.hint = Hint{static_cast<PageId>(1 + rng_.below(count + 1)), 0, random_version()};
        return b;
      }
    }
  }

  BuiltHint build_exact(const std::string& key) {
    BuiltHint b;
    b.kind = "exact leaf";
    b.hint = tree_->leaf_for(key);
    b.expect = Expect::kAccept;
    return b;
  }

  // Checks the counters one get moved. Returns silently when the hints
  // carry no definite expectation.
  void check_get_stats(const BuiltHint& p, const BuiltHint& s, const Delta& d, const std::string& ctx) {
    auto bad = [&](const char* why) {
      fail("get stats", std::string(why) + "; primary " + p.kind + " " + describe(p.hint) + ", secondary " + s.kind +
                            " " + describe(s.hint) + "; " + describe(d) + "; " + ctx);
    };
    if (d.operations != 1) bad("operations must grow by 1 per get");
    if (!p.hint.present()) return;
    if (d.hinted != 1) bad("a get with a primary hint is hinted");
    switch (p.expect) {
      case Expect::kAccept:
        if (d.hint_hits != 1 || d.fallbacks != 0 || d.secondary_hits != 0) bad("the exact leaf must be accepted");
        checked_accept_++;
        return;
      case Expect::kMoveRight:
        if (d.hint_hits != 1 || d.fallbacks != 0 || d.secondary_hits != 0 || d.move_rights < 1) {
          bad("the predecessor's leaf must be accepted and move right");
        }
        checked_move_right_++;
        return;
      case Expect::kReject:
        if (d.hint_hits != 0) bad("a wrong primary hint was accepted");
        if (!s.hint.present() || s.expect == Expect::kReject) {
          if (d.fallbacks != 1 || d.secondary_hits != 0) bad("a wrong primary and no usable secondary fall back");
          checked_reject_++;
        } else if (s.expect == Expect::kAccept) {
          if (d.secondary_hits != 1 || d.fallbacks != 0) bad("an exact secondary must be accepted");
          checked_secondary_++;
        } else {
          if (d.secondary_hits + d.fallbacks != 1) bad("a rejected primary ends in the secondary or the root");
        }
        return;
      case Expect::kUnknown:
        if (d.hint_hits + d.secondary_hits + d.fallbacks < 1) bad("a hinted get counts its outcome");
        return;
    }
  }

  // Weak checks for writers (which may descend again to split or merge).
  void check_write_stats(const BuiltHint& p, const BuiltHint& s, const Delta& d, const std::string& ctx) {
    auto bad = [&](const char* why) {
      fail("write stats", std::string(why) + "; primary " + p.kind + " " + describe(p.hint) + ", secondary " +
                              s.kind + " " + describe(s.hint) + "; " + describe(d) + "; " + ctx);
    };
    if (!p.hint.present()) return;
    if (d.hinted < 1) bad("a hinted write is hinted");
    if (p.expect == Expect::kAccept && d.hint_hits < 1) bad("the exact leaf must be accepted");
    // Ids at or just past page_count may be allocated by this very write
    // (a split), so only ids far from it count as certainly wrong here.
    const bool may_be_allocated = p.hint.node >= p.page_count && p.hint.node < p.page_count + 64;
    if (p.expect == Expect::kReject && !may_be_allocated && d.hint_hits != 0) {
      bad("a wrong primary hint was accepted");
    }
  }

  std::string pick_present() { return forein::testing::pick_present(model_, keys_); }

  void one_op(bool growth) {
    const std::uint64_t c = rng_.below(100);
    std::string key;
    int op;  // 0 put, 1 erase, 2 get, 3 scan
    if (growth) {
      op = c < 52 ? 0 : c < 60 ? 1 : c < 88 ? 2 : 3;
      if (op == 0) key = c < 45 ? keys_() : pick_present();
      if (op == 1 || op == 2) key = rng_.chance(1, 2) ? pick_present() : keys_();
    } else {
      op = c < 8 ? 0 : c < 60 ? 1 : c < 88 ? 2 : 3;
      if (op == 0) key = keys_();
      if (op == 1) key = rng_.chance(5, 6) ? pick_present() : keys_();
      if (op == 2) key = rng_.chance(1, 2) ? pick_present() : keys_();
    }

    if (op == 3) {
      do_scan();
      return;
    }
    const BuiltHint p = build(key, true);
    BuiltHint s;
    s.kind = "none";
    if (rng_.chance(1, 2)) s = build(key, false);
    const StartHints hints{p.hint, s.hint};
    const std::string ctx = "key " + hex(key);

    const TreeStats before = tree_->stats();
    if (op == 0) {
      const std::string value = gen_value(rng_, tree_->max_value_size());
      const bool was_new = model_.find(key) == model_.end();
      const bool got = tree_->put(key, value, &hints);
      model_[key] = value;
      check_write_stats(p, s, delta(before, tree_->stats()), ctx);
      if (got != was_new) fail("put", "returned " + std::to_string(got) + " with primary " + p.kind + "; " + ctx);
    } else if (op == 1) {
      const bool was_present = model_.erase(key) == 1;
      const bool got = tree_->erase(key, &hints);
      check_write_stats(p, s, delta(before, tree_->stats()), ctx);
      if (got != was_present) fail("erase", "returned " + std::to_string(got) + " with primary " + p.kind + "; " + ctx);
    } else {
      std::string value = "untouched";
      const bool got = tree_->get(key, &value, &hints);
      check_get_stats(p, s, delta(before, tree_->stats()), ctx);
      auto it = model_.find(key);
      if (got != (it != model_.end())) {
        fail("get", "returned " + std::to_string(got) + " with primary " + p.kind + " " + describe(p.hint) +
                        ", secondary " + s.kind + " " + describe(s.hint) + "; " + ctx);
      }
      if (got && value != it->second) fail("get", "wrong value with primary " + std::string(p.kind) + "; " + ctx);
    }
    if (rng_.chance(1, 3)) record(rng_.chance(1, 2) ? key : keys_());
    ++op_;
  }

  void do_scan() {
    const ScanSpec spec = random_spec(rng_, model_, keys_);
    const std::size_t limit = rng_.chance(1, 20) ? 1 + rng_.below(1000) : 1 + rng_.below(40);
    // The hint applies to the scan's starting key.
    const std::optional<KeyBound>& start = spec.direction == Direction::kForward ? spec.lower : spec.upper;
    const std::string hint_key = start ? start->key : keys_();
    const BuiltHint p = build(hint_key, true);
    BuiltHint s;
    if (rng_.chance(1, 2)) s = build(hint_key, false);
    const StartHints hints{p.hint, s.hint};

    const Entries want = model_scan(model_, spec, limit);
    Entries got;
    if (rng_.chance(1, 2)) {
      tree_->scan(
          spec,
          [&](std::string_view k, std::string_view v) {
            got.emplace_back(std::string(k), std::string(v));
            return got.size() < limit;
          },
          &hints);
    } else {
      forein::Cursor cur = tree_->scan(spec, &hints);
      while (got.size() < limit && cur.next()) got.emplace_back(std::string(cur.key()), std::string(cur.value()));
    }
    if (got != want) {
      std::ostringstream os;
      os << (spec.direction == Direction::kForward ? "forward" : "backward") << " limit " << limit << " lower "
         << (spec.lower ? hex(spec.lower->key) + (spec.lower->inclusive ? " incl" : " excl") : "open") << " upper "
         << (spec.upper ? hex(spec.upper->key) + (spec.upper->inclusive ? " incl" : " excl") : "open")
         << " primary " << p.kind << " " << describe(p.hint) << ": want " << want.size() << " entries, got "
         << got.size();
      fail("scan", os.str());
    }
    ++op_;
  }

  void verify(const char* when) {
    try {
      tree_->check();
    } catch (const forein::CorruptionError& e) {
      fail(when, std::string("check() threw: ") + e.what());
    }
    if (tree_->size() != model_.size()) fail(when, "size mismatch");
    if (scan_entries(*tree_) != Entries(model_.begin(), model_.end())) fail(when, "full scan differs from the model");
  }

  std::uint64_t ops_;
  std::uint64_t seed_;
  std::string name_;
  Rng rng_;
  KeyGen keys_;
  std::unique_ptr<Tree> tree_;
  std::unique_ptr<Tree> other_;
  Model model_;
  std::vector<Hint> recorded_;
  std::vector<Hint> snapshot_;
  std::vector<Hint> other_hints_;
  std::uint64_t op_ = 0;
  std::uint64_t peak_size_ = 0;
  std::uint16_t peak_height_ = 0;
  std::uint64_t checked_accept_ = 0;
  std::uint64_t checked_move_right_ = 0;
  std::uint64_t checked_reject_ = 0;
  std::uint64_t checked_secondary_ = 0;
};

void run_config(KeyKind kind, std::uint32_t page_size, std::uint64_t index, std::uint64_t seed) {
  std::ostringstream name;
  name << "hint safety " << (kind == KeyKind::kInt64 ? "int64" : "bytes") << "/page " << page_size;
  SafetyRun run(kind, page_size, total_ops() / kConfigs, seed * 0x9e3779b97f4a7c15ULL + index, name.str());
  run.run();
}

}  // namespace

TEST_CASE("hint safety: garbage and stale hints never change results (int64 keys)", "[hints]") {
  const std::uint64_t seed = forein::testing::test_seed("hint safety int64");
  run_config(KeyKind::kInt64, forein::kMinPageSize, 0, seed);
  run_config(KeyKind::kInt64, forein::kDefaultPageSize, 1, seed);
}

TEST_CASE("hint safety: garbage and stale hints never change results (byte keys)", "[hints]") {
  const std::uint64_t seed = forein::testing::test_seed("hint safety bytes");
  run_config(KeyKind::kBytes, forein::kMinPageSize, 2, seed);
  run_config(KeyKind::kBytes, forein::kDefaultPageSize, 3, seed);
}
