// The engine tree as an IndexSource: its live nodes and its keys' words.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "forein/offload/plan.h"

namespace forein {
class Tree;
}

namespace forein::offload {

class TreeIndexSource final : public IndexSource {
 public:
  explicit TreeIndexSource(Tree& tree) : tree_(tree) {}
  void for_each_node(const std::function<void(const NodeInterval&)>& fn) const override;
  // The words of the tree's keys; keys written meanwhile may or may not be
  // seen. Incremental: the source keeps each leaf's words with the leaf's
  // change count (Tree::for_each_leaf_words), and a later call reads again
  // only the leaves a write changed since; the others' words come from
  // memory. Calls are serialized (the manager's refresh makes them).
  void for_each_word(const std::function<bool(Word)>& fn) const override;
  // Tree::key_generation(): advances on every insert of a new key and
  // every erase.
  std::uint64_t key_generation() const override;

  // Leaves whose words for_each_word read from the tree, and those it
  // took from memory, over all calls (tests, diagnostics).
  std::uint64_t leaves_read() const;
  std::uint64_t leaves_kept() const;

 private:
  struct Leaf {
    std::uint64_t change = 0;  // the leaf's change count when its words were read
    std::vector<Word> words;
  };

  Tree& tree_;
  mutable std::mutex mu_;
  mutable std::unordered_map<PageId, Leaf> leaves_;  // guarded by mu_
  mutable std::uint64_t leaves_read_ = 0;            // guarded by mu_
  mutable std::uint64_t leaves_kept_ = 0;            // guarded by mu_
};

}  // namespace forein::offload
