#include "forein/offload/tree_source.h"

#include <memory>
#include <span>
#include <utility>

#include "forein/offload/manager.h"
#include "forein/tree.h"

namespace forein::offload {

void TreeIndexSource::for_each_node(const std::function<void(const NodeInterval&)>& fn) const {
  tree_.for_each_node(fn);
}

void TreeIndexSource::for_each_word(const std::function<bool(Word)>& fn) const {
  std::lock_guard lock(mu_);
  std::unordered_map<PageId, Leaf> next;
  next.reserve(leaves_.size());
  std::vector<const Leaf*> order;  // the walk's leaves, left to right
  try {
    tree_.for_each_leaf_words(
        [&](PageId id, std::uint64_t change) {
          const auto it = leaves_.find(id);
          return it == leaves_.end() || it->second.change != change;
        },
        [&](PageId id, std::uint64_t change, std::span<const Word> words, bool read) {
          auto [it, inserted] = next.try_emplace(id);
          if (!inserted) return;  // not expected of a walk: its words are in already
          Leaf& leaf = it->second;
          leaf.change = change;
          if (read) {
            leaf.words.assign(words.begin(), words.end());
            ++leaves_read_;
          } else {
            leaf.words = std::move(leaves_.at(id).words);
            ++leaves_kept_;
          }
          order.push_back(&leaf);
        });
  } catch (...) {
    leaves_.clear();  // partly moved: read every leaf next time
    throw;
  }
  leaves_ = std::move(next);  // the elements (and `order`) stay where they are
  // Strictly ascending: a leaf split or merged during the walk may repeat
  // words of its neighbour, and neighbours may share a word.
  bool first = true;
  Word last = 0;
  for (const Leaf* leaf : order) {
    for (const Word w : leaf->words) {
      if (!first && w <= last) continue;
      first = false;
      last = w;
      if (!fn(w)) return;
    }
  }
}

std::uint64_t TreeIndexSource::key_generation() const { return tree_.key_generation(); }

std::uint64_t TreeIndexSource::leaves_read() const {
  std::lock_guard lock(mu_);
  return leaves_read_;
}

std::uint64_t TreeIndexSource::leaves_kept() const {
  std::lock_guard lock(mu_);
  return leaves_kept_;
}

void OffloadManager::attach(Tree& tree) {
  auto source = std::make_unique<TreeIndexSource>(tree);
  const IndexSource& ref = *source;
  attach(ref, std::move(source));
}

}  // namespace forein::offload
