// A node table shaped like the engine's B+tree over a sorted set of words,
// without the engine: leaves of `leaf_size` keys, inner nodes of `fanout`
// children, word intervals that partition word space at every level.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "switch_lpm/layers.h"

namespace forein::offload::testing {

struct SyntheticTree {
  std::vector<OffloadNode> table;        // leaves first, then each level up; root last
  std::vector<Word> words;               // sorted, distinct
  std::vector<std::size_t> leaf_of_key;  // table index of each word's leaf
};

// n distinct random words from rng, ascending.
inline std::vector<Word> random_words(std::mt19937_64& rng, std::size_t n) {
  std::set<Word> s;
  while (s.size() < n) s.insert(rng());
  return {s.begin(), s.end()};
}

inline SyntheticTree build_synthetic_tree(std::vector<Word> sorted_words, std::size_t leaf_size,
                                          std::size_t fanout) {
  SyntheticTree t;
  t.words = std::move(sorted_words);
  PageId next_id = 1;
  auto add = [&](std::uint16_t level, Word lo) {
    OffloadNode n;
    n.interval.node = next_id++;
    n.interval.level = level;
    n.interval.lo = lo;
    n.interval.version = 100 + n.interval.node;
    t.table.push_back(n);
    return t.table.size() - 1;
  };
  // Leaves: the first owns everything below its keys; each ends where the next begins.
  std::vector<std::size_t> level_nodes;
  for (std::size_t k = 0; k < t.words.size() || k == 0; k += leaf_size) {
    level_nodes.push_back(add(0, k == 0 ? 0 : t.words[k]));
    for (std::size_t j = k; j < std::min(k + leaf_size, t.words.size()); ++j) {
      t.leaf_of_key.push_back(level_nodes.back());
    }
  }
  std::uint16_t level = 0;
  for (;;) {
    for (std::size_t i = 0; i + 1 < level_nodes.size(); ++i) {
      t.table[level_nodes[i]].interval.hi = t.table[level_nodes[i + 1]].interval.lo;
    }
    t.table[level_nodes.back()].interval.hi_inf = true;
    if (level_nodes.size() == 1) break;
    ++level;
    std::vector<std::size_t> parents;
    for (std::size_t i = 0; i < level_nodes.size(); i += fanout) {
      parents.push_back(add(level, t.table[level_nodes[i]].interval.lo));
      for (std::size_t j = i; j < std::min(i + fanout, level_nodes.size()); ++j) {
        t.table[level_nodes[j]].parent = static_cast<std::int32_t>(parents.back());
      }
    }
    level_nodes = parents;
  }
  return t;
}

}  // namespace forein::offload::testing
