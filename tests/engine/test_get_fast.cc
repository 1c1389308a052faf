// Point lookups through the fast path (tree_get.cc: keys of up to 8 bytes,
// from the root or a hint at any level) and the general path, checked against a
// std::map: keys that share a word (short keys whose bytes end in zeros,
// long keys with the same first 8 bytes), inline and heap values, right,
// wrong and stale hints at the leaves and above, get() and get_view(), and the counters each path
// adds (the same for the same walk).
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "forein/key.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "support/seed.h"

namespace {

using forein::StartHints;
using forein::Tree;

// Keys drawn from a small alphabet with zero bytes, so that many short keys
// share a word ("ab", "ab\0", "ab\0\0") and long keys share their first 8
// bytes with short ones.
std::string random_key(std::mt19937_64& rng) {
  static const char kAlphabet[] = {'\0', '\1', 'a', 'b', '\xff'};
  const std::size_t len = rng() % 4 == 0 ? 9 + rng() % 8 : rng() % 9;
  std::string k(len, '\0');
  for (auto& c : k) c = kAlphabet[rng() % sizeof kAlphabet];
  return k;
}

std::string random_value(std::mt19937_64& rng) {
  std::string v(rng() % 24, '\0');  // 0..23: inline (<= 8) and heap values
  for (auto& c : v) c = static_cast<char>('A' + rng() % 26);
  return v;
}

void check_all(Tree& tree, const std::map<std::string, std::string>& model, std::mt19937_64& rng) {
  std::string value;
  std::string_view view;
  std::vector<std::string> probes;
  for (const auto& [k, v] : model) probes.push_back(k);
  std::vector<forein::Hint> nodes;
  tree.for_each_node([&](const forein::NodeInterval& n) {
    nodes.push_back({n.node, n.level, n.version});
  });
  for (int i = 0; i < 2000; ++i) probes.push_back(random_key(rng));  // mostly absent
  for (const std::string& k : probes) {
    const auto it = model.find(k);
    const bool present = it != model.end();
    INFO("key of " << k.size() << " bytes, present " << present);
    value = "untouched";
    REQUIRE(tree.get(k, &value) == present);
    REQUIRE(value == (present ? it->second : "untouched"));
    REQUIRE(tree.get_view(k, &view) == present);
    if (present) REQUIRE(view == it->second);
    REQUIRE(tree.get(k, nullptr) == present);
    // From the right leaf, and from a leaf chosen at random (usually wrong:
    // the lookup must reject it and still answer).
    StartHints hints;
    hints.primary = tree.leaf_for(k);
    REQUIRE(tree.get(k, &value, &hints) == present);
    if (present) REQUIRE(value == it->second);
    hints.primary = tree.leaf_for(probes[rng() % probes.size()]);
    REQUIRE(tree.get(k, &value, &hints) == present);
    if (present) REQUIRE(value == it->second);
    REQUIRE(tree.get_view(k, &view, &hints) == present);
    if (present) REQUIRE(view == it->second);
    // From a node of any level, chosen at random.
    hints.primary = nodes[rng() % nodes.size()];
    REQUIRE(tree.get(k, &value, &hints) == present);
    if (present) REQUIRE(value == it->second);
  }
}

}  // namespace

TEST_CASE("point lookups agree with a map for keys that share words", "[tree][get]") {
  const std::uint64_t seed = forein::testing::test_seed("get fast path");
  std::mt19937_64 rng(seed);
  auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(4096));
  std::map<std::string, std::string> model;
  // Hints taken now go stale as the tree splits below.
  std::vector<std::pair<std::string, forein::Hint>> old_hints;
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 15000; ++i) {
      const std::string k = random_key(rng);
      if (rng() % 5 == 0) {
        REQUIRE(tree->erase(k) == (model.erase(k) == 1));
      } else {
        const std::string v = random_value(rng);
        REQUIRE(tree->put(k, v) == model.insert_or_assign(k, v).second);
      }
    }
    for (int i = 0; i < 200 && !model.empty(); ++i) {
      auto it = model.begin();
      std::advance(it, static_cast<long>(rng() % model.size()));
      old_hints.emplace_back(it->first, tree->leaf_for(it->first));
    }
    check_all(*tree, model, rng);
    std::string value;
    for (const auto& [k, h] : old_hints) {
      StartHints hints;
      hints.primary = h;
      const auto it = model.find(k);
      REQUIRE(tree->get(k, &value, &hints) == (it != model.end()));
      if (it != model.end()) REQUIRE(value == it->second);
    }
  }
  REQUIRE(tree->height() >= 3);
  tree->check();
}

TEST_CASE("fast and general lookups count the same walk", "[tree][get]") {
  // Key i of a kind: 8 bytes (the fast path) or 12 (the general path),
  // interleaved in key order.
  auto key_of = [](bool long_keys, std::uint64_t i) {
    return long_keys ? forein::encode_word(i * 2 + 1) + "long" : forein::encode_word(i * 2);
  };
  auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(4096));
  std::vector<std::pair<std::string, std::string>> sorted;
  for (std::uint64_t i = 0; i < 50000; ++i) {
    sorted.emplace_back(key_of(false, i), "v");
    sorted.emplace_back(key_of(true, i), std::string(20, 'x'));
  }
  tree->bulk_load(sorted);
  const std::uint64_t height = tree->height();
  REQUIRE(height >= 3);
  std::string value;
  for (const bool long_keys : {false, true}) {
    INFO((long_keys ? "12-byte keys" : "8-byte keys"));
    tree->reset_stats();
    for (std::uint64_t i = 0; i < 1000; ++i) {
      const std::string k = key_of(long_keys, i);
      REQUIRE(tree->get(k, &value));
    }
    forein::TreeStats s = tree->stats();
    CHECK(s.operations == 1000);
    CHECK(s.nodes_visited == 1000 * height);
    CHECK(s.hinted == 0);
    // Hints with nothing in them (a backend with no answer): the root.
    tree->reset_stats();
    for (std::uint64_t i = 0; i < 1000; ++i) {
      const std::string k = key_of(long_keys, i);
      const StartHints empty;
      REQUIRE(tree->get(k, &value, &empty));
    }
    s = tree->stats();
    CHECK(s.operations == 1000);
    CHECK(s.nodes_visited == 1000 * height);
    CHECK(s.hinted == 0);
    CHECK(s.fallbacks == 0);
    tree->reset_stats();
    for (std::uint64_t i = 0; i < 1000; ++i) {
      const std::string k = key_of(long_keys, i);
      StartHints hints;
      hints.primary = tree->leaf_for(k);
      REQUIRE(tree->get(k, &value, &hints));
    }
    s = tree->stats();
    CHECK(s.operations == 1000);
    CHECK(s.nodes_visited == 1000);
    CHECK(s.hinted == 1000);
    CHECK(s.hint_hits == 1000);
    CHECK(s.fallbacks == 0);
    // From the level-1 node covering the key: two nodes.
    std::vector<forein::NodeInterval> level1;
    tree->for_each_node([&](const forein::NodeInterval& n) {
      if (n.level == 1) level1.push_back(n);
    });
    tree->reset_stats();
    for (std::uint64_t i = 0; i < 1000; ++i) {
      const std::string k = key_of(long_keys, i);
      StartHints hints;
      for (const auto& n : level1) {
        if (n.contains(forein::word_of(k))) hints.primary = {n.node, n.level, n.version};
      }
      REQUIRE(hints.primary.present());
      REQUIRE(tree->get(k, &value, &hints));
    }
    s = tree->stats();
    CHECK(s.nodes_visited == 2000);
    CHECK(s.hint_hits == 1000);
    CHECK(s.fallbacks == 0);
  }
}
