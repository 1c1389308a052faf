// The engine tree as an IndexSource: its live nodes and its keys' words.
#pragma once

#include <functional>

#include "forein/offload/plan.h"

namespace forein {
class Tree;
}

namespace forein::offload {

class TreeIndexSource final : public IndexSource {
 public:
  explicit TreeIndexSource(Tree& tree) : tree_(tree) {}
  void for_each_node(const std::function<void(const NodeInterval&)>& fn) const override;
  // The words of the tree's keys by an ordered scan; keys written meanwhile
  // may or may not be seen.
  void for_each_word(const std::function<bool(Word)>& fn) const override;
  // Tree::key_generation(): advances on every insert of a new key and
  // every erase.
  std::uint64_t key_generation() const override;

 private:
  Tree& tree_;
};

}  // namespace forein::offload
