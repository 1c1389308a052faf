// Hint exactness (docs/design.md contract 2): "the hinted leaf is exactly
// the leaf a root descent would reach for k". For every probe key (present
// keys, absent keys between and beyond them, keys sharing a prefix word, the
// empty key, maximum keys) start_leaf(k, &hints) must equal leaf_for(k) for
// every kind of hint: none, the oracle leaf, the leaf of a smaller key (moves
// right or falls back), an inner node on k's path, a node right of k, and a
// garbage primary with a valid secondary. Checked on int64 and byte-string
// trees, several page sizes, height >= 3, after bulk loads, random puts and
// after heavy random erases (merges), with hints recorded before the churn.
//
// The stats() counters confirm the paths taken: an inner node on the path and
// the oracle leaf are accepted (hint_hits), the leaf just left of k's leaf is
// accepted and moves right (move_rights), a garbage primary with a valid
// secondary counts a secondary hit. FOREIN_SEED=<n> replays a run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
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
#include "support/seed.h"

namespace {

using forein::Hint;
using forein::NodeInterval;
using forein::PageId;
using forein::StartHints;
using forein::Tree;
using forein::TreeStats;
using forein::Word;
using namespace forein::testing;
using forein::testing::describe;  // else hidden by the local describe(Delta)

enum class KeyKind { kInt64, kBytes };

// Keys whose smallest key of their word is the key itself: at most 8 bytes
// and no trailing zero byte. For them the word intervals of for_each_node()
// tell exactly which node of each level holds the key.
bool word_exact(std::string_view k) { return k.size() <= 8 && (k.empty() || k.back() != '\0'); }

// The live nodes of one tree, per level, sorted by word interval.
struct Layout {
  std::vector<std::vector<NodeInterval>> levels;  // levels[L], ordered by lo
  Hint root;

  explicit Layout(Tree& t) {
    t.for_each_node([&](const NodeInterval& n) {
      if (levels.size() <= n.level) levels.resize(n.level + 1);
      levels[n.level].push_back(n);
    });
    for (auto& lv : levels) {
      std::stable_sort(lv.begin(), lv.end(), [](const NodeInterval& a, const NodeInterval& b) { return a.lo < b.lo; });
    }
    if (!levels.empty() && !levels.back().empty()) {
      const NodeInterval& r = levels.back().front();
      root = Hint{r.node, r.level, r.version};
    }
  }

  std::size_t node_count() const {
    std::size_t n = 0;
    for (const auto& lv : levels) n += lv.size();
    return n;
  }

  // The node of `level` whose (non-empty) word interval contains w.
  const NodeInterval* owner(std::uint16_t level, Word w) const {
    if (level >= levels.size()) return nullptr;
    const auto& lv = levels[level];
    auto it = std::upper_bound(lv.begin(), lv.end(), w, [](Word x, const NodeInterval& n) { return x < n.lo; });
    while (it != lv.begin()) {
      --it;
      if (!it->empty()) return it->contains(w) ? &*it : nullptr;
    }
    return nullptr;
  }
};

Hint as_hint(const NodeInterval& n) { return Hint{n.node, n.level, n.version}; }

struct Delta {
  std::uint64_t hinted, hint_hits, secondary_hits, fallbacks, move_rights;
};
Delta delta(const TreeStats& a, const TreeStats& b) {
  return Delta{b.hinted - a.hinted, b.hint_hits - a.hint_hits, b.secondary_hits - a.secondary_hits,
               b.fallbacks - a.fallbacks, b.move_rights - a.move_rights};
}
std::string describe(const Delta& d) {
  std::ostringstream os;
  os << "{hinted " << d.hinted << ", hint_hits " << d.hint_hits << ", secondary_hits " << d.secondary_hits
     << ", fallbacks " << d.fallbacks << ", move_rights " << d.move_rights << "}";
  return os.str();
}

class Exactness {
 public:
  Exactness(Tree& tree, std::mt19937_64& rng, std::string name) : tree_(tree), rng_(rng), name_(std::move(name)) {}

  // All sorted present keys (ascending) and extra absent probes.
  void sweep(const std::vector<std::string>& present, const std::vector<std::string>& absent,
             const std::vector<Hint>& stale) {
    const Layout layout(tree_);
    REQUIRE(layout.root.present());
    REQUIRE(layout.levels.size() == tree_.height());
    const PageId garbage = tree_.store().page_count() + 7;

    // Leaf of every present key, in key order: consecutive keys in different
    // leaves give each leaf's left neighbour.
    std::vector<Hint> leaf_of(present.size());
    for (std::size_t i = 0; i < present.size(); ++i) {
      leaf_of[i] = tree_.leaf_for(present[i]);
      if (i > 0 && leaf_of[i].node != leaf_of[i - 1].node) ++leaf_changes_;
    }

    // Every key gets the core hint kinds; a sample (all keys of small
    // trees) gets every kind, including the stats checks.
    full_every_ = std::max<std::size_t>(1, (present.size() + absent.size()) / 30'000);
    for (std::size_t i = 0; i < present.size(); ++i) {
      const std::string& k = present[i];
      const Hint oracle = leaf_of[i];
      probe(k, oracle, layout, garbage, i % full_every_ == 0);
      // The predecessor's leaf: accepted (its lo <= k), then moves right.
      if (i > 0) {
        expect_same(k, oracle, StartHints{leaf_of[i - 1], {}}, "predecessor's leaf");
        if (leaf_of[i - 1].node != oracle.node) check_move_right(k, leaf_of[i - 1]);
      }
      // Leaves further left: move right within the bound, or fall back.
      if (i > 0 && rng_() % 4 == 0) {
        const std::size_t j = rng_() % i;
        expect_same(k, oracle, StartHints{leaf_of[j], {}}, "leaf of a smaller key");
        expect_same(k, oracle, StartHints{leaf_of[j], layout.root}, "leaf of a smaller key + root");
      }
      // A leaf to the right: rejected.
      if (i + 1 < present.size() && rng_() % 4 == 0) {
        const std::size_t j = i + 1 + rng_() % std::min<std::size_t>(present.size() - i - 1, 500);
        expect_same(k, oracle, StartHints{leaf_of[j], {}}, "leaf of a larger key");
        if (leaf_of[j].node != oracle.node) check_reject(k, leaf_of[j]);
      }
      if (!stale.empty() && rng_() % 4 == 0) {
        expect_same(k, oracle, StartHints{stale[rng_() % stale.size()], stale[rng_() % stale.size()]},
                    "stale hints");
      }
    }
    for (std::size_t a = 0; a < absent.size(); ++a) {
      const std::string& k = absent[a];
      const Hint oracle = tree_.leaf_for(k);
      probe(k, oracle, layout, garbage, a % full_every_ == 0);
      // A present key just below k: its leaf's lo <= k.
      auto it = std::lower_bound(present.begin(), present.end(), k);
      if (it != present.begin()) {
        const std::size_t idx = static_cast<std::size_t>(it - present.begin()) - 1;
        expect_same(k, oracle, StartHints{leaf_of[idx], {}}, "predecessor's leaf (absent key)");
        if (leaf_of[idx].node != oracle.node) check_move_right(k, leaf_of[idx]);
      }
      if (!stale.empty()) {
        expect_same(k, oracle, StartHints{stale[rng_() % stale.size()], {}}, "stale hint (absent key)");
      }
    }
  }

  std::uint64_t comparisons() const { return comparisons_; }
  std::uint64_t move_right_checks() const { return move_right_checks_; }
  std::uint64_t path_checks() const { return path_checks_; }
  std::uint64_t secondary_checks() const { return secondary_checks_; }
  // Boundaries between leaves seen in key order (0: all keys in one leaf).
  std::uint64_t leaf_changes() const { return leaf_changes_; }

 private:
  void probe(const std::string& k, const Hint& oracle, const Layout& layout, PageId garbage, bool full) {
    if (oracle.level != 0 || !oracle.present()) {
      FAIL(name_ << ": leaf_for(" << hex(k) << ") returned " << describe(oracle));
    }
    // No hints at all.
    const Hint none = tree_.start_leaf(k, nullptr);
    if (none.node != oracle.node || none.level != 0 || none.version != oracle.version) {
      FAIL(name_ << ": start_leaf(" << hex(k) << ", nullptr) = " << describe(none) << ", leaf_for = "
                 << describe(oracle));
    }
    ++comparisons_;
    if (!full) {
      expect_same(k, oracle, StartHints{oracle, {}}, "oracle leaf");
      if (layout.levels.size() > 1) {
        const NodeInterval* n = layout.owner(1, forein::word_of(k));
        if (n == nullptr) FAIL(name_ << ": no node of level 1 owns the word of " << hex(k));
        expect_same(k, oracle, StartHints{as_hint(*n), {}}, "level-1 node by word");
        expect_same(k, oracle, StartHints{Hint{garbage, 1, 0}, as_hint(*n)}, "garbage primary + level-1 node");
      }
      return;
    }
    expect_same(k, oracle, StartHints{}, "absent hints");
    expect_same(k, oracle, StartHints{oracle, {}}, "oracle leaf");
    expect_same(k, oracle, StartHints{Hint{oracle.node, oracle.level, oracle.version + 12345}, {}},
                "oracle leaf, other version");
    expect_same(k, oracle, StartHints{Hint{oracle.node, 1, oracle.version}, {}}, "oracle leaf, level 1");
    expect_same(k, oracle, StartHints{Hint{garbage, 0, 0}, {}}, "garbage primary");
    expect_same(k, oracle, StartHints{Hint{garbage, 0, 0}, layout.root}, "garbage primary + root");
    expect_same(k, oracle, StartHints{Hint{garbage, 0, 0}, oracle}, "garbage primary + oracle secondary");
    expect_same(k, oracle, StartHints{layout.root, {}}, "root");
    expect_same(k, oracle, StartHints{{}, layout.root}, "absent primary + root");

    // Inner nodes on the path (found through the word intervals).
    const Word w = forein::word_of(k);
    for (std::uint16_t level = 1; level < layout.levels.size(); ++level) {
      const NodeInterval* n = layout.owner(level, w);
      if (n == nullptr) {
        FAIL(name_ << ": no node of level " << level << " owns word " << w);
      }
      const Hint h = as_hint(*n);
      expect_same(k, oracle, StartHints{h, {}}, "inner node by word");
      expect_same(k, oracle, StartHints{Hint{garbage, level, 1}, h}, "garbage primary + inner node");
      if (word_exact(k)) {
        // The node owning k's word holds k: it is on k's path.
        check_accepted(k, h, "inner node on the path");
        check_secondary(k, Hint{garbage, level, 0}, h);
      }
      // A random node of that level: accepted or not, the same leaf.
      const auto& lv = layout.levels[level];
      expect_same(k, oracle, StartHints{as_hint(lv[rng_() % lv.size()]), {}}, "random inner node");
    }
    // The leaf owning k's word, and a random leaf.
    if (const NodeInterval* leaf = layout.owner(0, w); leaf != nullptr) {
      expect_same(k, oracle, StartHints{as_hint(*leaf), {}}, "leaf by word");
      if (word_exact(k) && leaf->node != oracle.node) {
        FAIL(name_ << ": key " << hex(k) << " has leaf_for " << describe(oracle) << " but its word " << w
                   << " belongs to leaf " << leaf->node << " [" << leaf->lo << ", "
                   << (leaf->hi_inf ? std::string("inf") : std::to_string(leaf->hi)) << ")");
      }
    }
    const auto& leaves = layout.levels[0];
    expect_same(k, oracle, StartHints{as_hint(leaves[rng_() % leaves.size()]), as_hint(leaves[rng_() % leaves.size()])},
                "random leaves");
    // The root, always on the path, as primary and behind a garbage primary.
    check_accepted(k, layout.root, "root");
    check_secondary(k, Hint{garbage, 0, 0}, layout.root);
    check_secondary(k, Hint{oracle.node, 3, oracle.version}, oracle);
  }

  void expect_same(const std::string& k, const Hint& oracle, const StartHints& hints, const char* what) {
    const Hint got = tree_.start_leaf(k, &hints);
    if (got.node != oracle.node || got.level != 0) {
      FAIL(name_ << ": start_leaf(" << hex(k) << ") with " << what << " (primary " << describe(hints.primary)
                 << ", secondary " << describe(hints.secondary) << ") = " << describe(got) << ", leaf_for = "
                 << describe(oracle));
    }
    ++comparisons_;
  }

  // A get with `hint` as primary must accept it.
  void check_accepted(const std::string& k, const Hint& hint, const char* what) {
    const StartHints hints{hint, {}};
    const TreeStats before = tree_.stats();
    tree_.get(k, nullptr, &hints);
    const Delta d = delta(before, tree_.stats());
    if (d.hinted != 1 || d.hint_hits != 1 || d.fallbacks != 0 || d.secondary_hits != 0) {
      FAIL(name_ << ": get(" << hex(k) << ") with " << what << " " << describe(hint)
                 << " as primary should be accepted; stats delta " << describe(d));
    }
    ++path_checks_;
  }

  // A get with a primary that cannot be valid and a valid secondary.
  void check_secondary(const std::string& k, const Hint& bad, const Hint& good) {
    const StartHints hints{bad, good};
    const TreeStats before = tree_.stats();
    tree_.get(k, nullptr, &hints);
    const Delta d = delta(before, tree_.stats());
    if (d.hinted != 1 || d.hint_hits != 0 || d.secondary_hits != 1 || d.fallbacks != 0) {
      FAIL(name_ << ": get(" << hex(k) << ") with primary " << describe(bad) << ", secondary " << describe(good)
                 << " should use the secondary; stats delta " << describe(d));
    }
    ++secondary_checks_;
  }

  // The leaf just left of k's leaf: lo <= k, so it is accepted and the
  // operation moves right.
  void check_move_right(const std::string& k, const Hint& left) {
    const StartHints hints{left, {}};
    const TreeStats before = tree_.stats();
    tree_.get(k, nullptr, &hints);
    const Delta d = delta(before, tree_.stats());
    if (d.hinted != 1 || d.hint_hits != 1 || d.fallbacks != 0 || d.move_rights < 1) {
      FAIL(name_ << ": get(" << hex(k) << ") with the left neighbour leaf " << describe(left)
                 << " should be accepted and move right; stats delta " << describe(d));
    }
    ++move_right_checks_;
  }

  // A leaf right of k's leaf (lo > k) is rejected; no secondary: root.
  void check_reject(const std::string& k, const Hint& right) {
    const StartHints hints{right, {}};
    const TreeStats before = tree_.stats();
    tree_.get(k, nullptr, &hints);
    const Delta d = delta(before, tree_.stats());
    if (d.hinted != 1 || d.hint_hits != 0 || d.fallbacks != 1) {
      FAIL(name_ << ": get(" << hex(k) << ") with a leaf right of its own " << describe(right)
                 << " should fall back; stats delta " << describe(d));
    }
  }

  Tree& tree_;
  std::mt19937_64& rng_;
  std::string name_;
  std::uint64_t comparisons_ = 0;
  std::uint64_t move_right_checks_ = 0;
  std::uint64_t path_checks_ = 0;
  std::uint64_t secondary_checks_ = 0;
  std::uint64_t leaf_changes_ = 0;
  std::size_t full_every_ = 1;
};

// --- key sets ---------------------------------------------------------------

std::string random_byte_key(std::mt19937_64& rng, const std::vector<std::string>& prefixes) {
  static const char kAlpha[] = {'\0', '\x01', 'a', 'b', '\xff'};
  std::string k;
  const auto c = rng() % 100;
  if (c < 60) {
    k = prefixes[rng() % prefixes.size()];
    const std::size_t n = rng() % 25;
    for (std::size_t i = 0; i < n; ++i) k += kAlpha[rng() % 5];
  } else if (c < 75) {
    const std::size_t n = rng() % 9;
    for (std::size_t i = 0; i < n; ++i) k += kAlpha[rng() % 5];
  } else if (c < 85) {
    k = prefixes[rng() % prefixes.size()].substr(0, 1 + rng() % 8);
    k.append(rng() % 6, '\0');
  } else {
    const std::size_t n = rng() % 41;
    for (std::size_t i = 0; i < n; ++i) k += static_cast<char>(rng() % 256);
  }
  return k;
}

std::vector<std::string> make_prefixes(std::mt19937_64& rng) {
  static const char kAlpha[] = {'a', 'b', '\0', '\xff', 'c'};
  std::vector<std::string> p;
  for (int i = 0; i < 20; ++i) {
    std::string s(8, 'a');
    for (auto& c : s) c = kAlpha[rng() % 5];
    p.push_back(s);
  }
  return p;
}

// Absent keys around the present ones: between neighbours, beyond both
// ends, sharing a prefix word, the empty key, maximum keys.
std::vector<std::string> absent_probes(const std::set<std::string>& present, std::size_t max_key, std::mt19937_64& rng,
                                       std::size_t count) {
  std::vector<std::string> out = {
      "",
      std::string(1, '\0'),
      std::string(8, '\0'),
      std::string(max_key, '\xff'),
      std::string(max_key, '\0'),
      std::string(8, '\xff'),
      std::string(9, '\xff'),
      forein::encode_int64(std::numeric_limits<std::int64_t>::min()),
      forein::encode_int64(std::numeric_limits<std::int64_t>::max()),
      forein::encode_int64(0),
      forein::encode_int64(-1),
  };
  std::vector<std::string> sample;
  std::sample(present.begin(), present.end(), std::back_inserter(sample), count, rng);
  for (const std::string& k : sample) {
    out.push_back(k + std::string(1, '\0'));   // just after k
    out.push_back(k + "\xff\xff");             // further after k, same word for long keys
    if (!k.empty()) {
      std::string t = k;
      t.pop_back();                            // a prefix of k: before it
      out.push_back(t);
      std::string u = k;
      if (static_cast<unsigned char>(u.back()) > 0) {
        u.back() = static_cast<char>(static_cast<unsigned char>(u.back()) - 1);
        out.push_back(u);
      }
    }
    if (k.size() >= 8) {
      std::string w = k.substr(0, 8);          // the bare word of k
      out.push_back(w);
      out.push_back(w + std::string(max_key - 8, '\xff'));  // largest key with that word
    }
  }
  std::vector<std::string> filtered;
  for (auto& k : out) {
    if (k.size() <= max_key && !present.count(k)) filtered.push_back(std::move(k));
  }
  return filtered;
}

std::string small_value(std::mt19937_64& rng) { return std::string(16 + rng() % 24, static_cast<char>('a' + rng() % 26)); }

// Runs a full sweep over a tree holding exactly `present`.
void sweep_tree(Tree& tree, const std::set<std::string>& present, std::mt19937_64& rng, const std::string& name,
                const std::vector<Hint>& stale, std::size_t absent_sample) {
  REQUIRE(tree.size() == present.size());
  REQUIRE_NOTHROW(tree.check());
  Exactness ex(tree, rng, name);
  const std::vector<std::string> sorted(present.begin(), present.end());
  const std::vector<std::string> absent = absent_probes(present, tree.max_key_size(), rng, absent_sample);
  ex.sweep(sorted, absent, stale);
  std::cout << name << ": " << sorted.size() << " keys, " << absent.size() << " absent probes, height "
            << tree.height() << "; " << ex.comparisons() << " comparisons, " << ex.move_right_checks()
            << " move-right, " << ex.path_checks() << " accepted-path, " << ex.secondary_checks()
            << " secondary checks" << std::endl;
  INFO(name << ": " << ex.comparisons() << " comparisons, " << ex.move_right_checks() << " move-right checks, "
            << ex.path_checks() << " path checks, " << ex.secondary_checks() << " secondary checks, height "
            << tree.height());
  CHECK(ex.comparisons() > 0);
  CHECK(ex.path_checks() > 0);
  CHECK(ex.secondary_checks() > 0);
  if (ex.leaf_changes() > 0) CHECK(ex.move_right_checks() >= ex.leaf_changes());
}

std::vector<Hint> record_hints(Tree& tree, const std::set<std::string>& present, std::mt19937_64& rng) {
  std::vector<Hint> hints;
  std::vector<std::string> sample;
  std::sample(present.begin(), present.end(), std::back_inserter(sample), 2000, rng);
  for (const auto& k : sample) hints.push_back(tree.leaf_for(k));
  tree.for_each_node([&](const NodeInterval& n) {
    if (rng() % 8 == 0) hints.push_back(as_hint(n));
  });
  return hints;
}

// Grows a tree to `n` keys by random puts, sweeps, churns (erases most keys,
// so nodes merge and pages are freed, and puts new ones), sweeps again with
// hints recorded before the churn.
void grow_churn_sweep(KeyKind kind, std::uint32_t page_size, std::size_t n, std::uint16_t min_height,
                      std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::string name = std::string(kind == KeyKind::kInt64 ? "int64" : "bytes") + "/page " +
                           std::to_string(page_size) + "/" + std::to_string(n) + " keys";
  INFO(name);
  auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(page_size));
  const auto prefixes = make_prefixes(rng);
  auto gen = [&]() {
    if (kind == KeyKind::kInt64) {
      const auto c = rng() % 100;
      std::int64_t v;
      if (c < 90) {
        v = static_cast<std::int64_t>(rng() % (8 * n)) - static_cast<std::int64_t>(4 * n);
        v *= 3;
      } else if (c < 95) {
        v = static_cast<std::int64_t>(rng());
      } else {
        v = (c % 2 ? std::numeric_limits<std::int64_t>::max() - static_cast<std::int64_t>(rng() % 1000)
                   : std::numeric_limits<std::int64_t>::min() + static_cast<std::int64_t>(rng() % 1000));
      }
      return forein::encode_int64(v);
    }
    return random_byte_key(rng, prefixes);
  };

  std::set<std::string> present;
  // Extremes first, so the tree's first and last leaves hold them.
  if (kind == KeyKind::kInt64) {
    present.insert(forein::encode_int64(std::numeric_limits<std::int64_t>::min()));
    present.insert(forein::encode_int64(std::numeric_limits<std::int64_t>::max()));
  } else {
    present.insert("");
    present.insert(std::string(tree->max_key_size(), '\xff'));
  }
  for (const auto& k : present) REQUIRE(tree->put(k, "edge"));
  std::size_t attempts = 0;
  while (present.size() < n && attempts < 4 * n) {
    ++attempts;
    std::string k = gen();
    const bool is_new = present.insert(k).second;
    if (tree->put(k, small_value(rng)) != is_new) FAIL(name << ": put(" << hex(k) << ") wrong return");
  }
  REQUIRE(present.size() >= n * 9 / 10);
  INFO("height after growth " << tree->height());
  REQUIRE(tree->height() >= min_height);
  sweep_tree(*tree, present, rng, name + " (grown)", {}, 5'000);
  const std::vector<Hint> before_churn = record_hints(*tree, present, rng);
  const std::size_t nodes_before = Layout(*tree).node_count();

  // Churn: erase ~80% of the keys in random order, then put some new ones.
  std::vector<std::string> victims;
  for (const auto& k : present) {
    if (rng() % 10 < 8) victims.push_back(k);
  }
  std::shuffle(victims.begin(), victims.end(), rng);
  for (const auto& k : victims) {
    if (!tree->erase(k)) FAIL(name << ": erase(" << hex(k) << ") returned false");
    present.erase(k);
  }
  const std::size_t nodes_after_erase = Layout(*tree).node_count();
  INFO("nodes " << nodes_before << " -> " << nodes_after_erase << " after erasing " << victims.size());
  CHECK(nodes_after_erase * 4 < nodes_before * 3);  // merges happened
  sweep_tree(*tree, present, rng, name + " (after erases)", before_churn, 3'000);

  const std::vector<Hint> after_erase = record_hints(*tree, present, rng);
  for (std::size_t i = 0; i < n / 4; ++i) {
    std::string k = gen();
    const bool is_new = present.insert(k).second;
    if (tree->put(k, small_value(rng)) != is_new) FAIL(name << ": put(" << hex(k) << ") wrong return");
  }
  std::vector<Hint> stale = before_churn;
  stale.insert(stale.end(), after_erase.begin(), after_erase.end());
  sweep_tree(*tree, present, rng, name + " (after churn)", stale, 3'000);
}

}  // namespace

TEST_CASE("hint exactness: int64 keys, 4 KiB pages, height >= 3", "[hints]") {
  const std::uint64_t seed = forein::testing::test_seed("hint exactness int64/4K");
  grow_churn_sweep(KeyKind::kInt64, forein::kMinPageSize, 200'000, 3, seed);
}

TEST_CASE("hint exactness: byte keys sharing prefix words, 4 KiB pages", "[hints]") {
  const std::uint64_t seed = forein::testing::test_seed("hint exactness bytes/4K");
  grow_churn_sweep(KeyKind::kBytes, forein::kMinPageSize, 100'000, 3, seed);
}

TEST_CASE("hint exactness: other page sizes", "[hints]") {
  const std::uint64_t seed = forein::testing::test_seed("hint exactness page sizes");
  grow_churn_sweep(KeyKind::kInt64, forein::kDefaultPageSize, 50'000, 2, seed + 1);
  grow_churn_sweep(KeyKind::kBytes, 16384, 50'000, 2, seed + 2);
  grow_churn_sweep(KeyKind::kInt64, forein::kMaxPageSize, 30'000, 2, seed + 3);
}

TEST_CASE("hint exactness: tiny trees", "[hints]") {
  const std::uint64_t seed = forein::testing::test_seed("hint exactness tiny");
  std::mt19937_64 rng(seed);
  auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(forein::kMinPageSize));
  std::set<std::string> present;
  // Empty tree: the single root leaf, whatever the hints.
  {
    Exactness ex(*tree, rng, "empty tree");
    ex.sweep({}, absent_probes(present, tree->max_key_size(), rng, 0), {});
    CHECK(ex.comparisons() > 0);
  }
  REQUIRE(tree->height() == 1);
  // A handful of keys, then growth through the first splits, sweeping as we go.
  std::vector<Hint> stale;
  for (int round = 0; round < 6; ++round) {
    const int add = round == 0 ? 3 : 150 * round;
    for (int i = 0; i < add; ++i) {
      std::string k = forein::encode_int64(static_cast<std::int64_t>(rng() % 100'000) - 50'000);
      const bool is_new = present.insert(k).second;
      REQUIRE(tree->put(k, small_value(rng)) == is_new);
    }
    sweep_tree(*tree, present, rng, "tiny round " + std::to_string(round), stale, 200);
    const auto more = record_hints(*tree, present, rng);
    stale.insert(stale.end(), more.begin(), more.end());
  }
  // And back down to empty.
  std::vector<std::string> all(present.begin(), present.end());
  std::shuffle(all.begin(), all.end(), rng);
  for (std::size_t i = 0; i < all.size(); ++i) {
    REQUIRE(tree->erase(all[i]));
    present.erase(all[i]);
    if (i % 300 == 299 || i + 1 == all.size()) sweep_tree(*tree, present, rng, "tiny shrink", stale, 200);
  }
}

TEST_CASE("hint exactness: after bulk_load", "[hints]") {
  const std::uint64_t seed = forein::testing::test_seed("hint exactness bulk load");
  std::mt19937_64 rng(seed);
  for (std::uint8_t fill : {std::uint8_t{100}, std::uint8_t{60}}) {
    forein::TreeOptions opts;
    opts.bulk_fill_percent = fill;
    auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(forein::kMinPageSize), opts);
    std::set<std::string> present;
    while (present.size() < 100'000) {
      present.insert(forein::encode_int64(static_cast<std::int64_t>(rng() % 10'000'000) - 5'000'000));
    }
    std::vector<std::pair<std::string, std::string>> sorted;
    for (const auto& k : present) sorted.emplace_back(k, small_value(rng));
    tree->bulk_load(sorted);
    REQUIRE(tree->height() >= 3);
    sweep_tree(*tree, present, rng, "bulk load fill " + std::to_string(fill), {}, 2'000);
  }
}
