#include "forein/offload/tree_source.h"

#include <memory>
#include <string_view>

#include "forein/offload/manager.h"
#include "forein/tree.h"

namespace forein::offload {

void TreeIndexSource::for_each_node(const std::function<void(const NodeInterval&)>& fn) const {
  tree_.for_each_node(fn);
}

void TreeIndexSource::for_each_word(const std::function<bool(Word)>& fn) const {
  bool first = true;
  Word last = 0;
  tree_.scan(ScanSpec{}, [&](std::string_view key, std::string_view) {
    const Word w = word_of(key);
    if (!first && w == last) return true;
    first = false;
    last = w;
    return fn(w);
  });
}

std::uint64_t TreeIndexSource::key_generation() const { return tree_.key_generation(); }

void OffloadManager::attach(Tree& tree) {
  auto source = std::make_unique<TreeIndexSource>(tree);
  const IndexSource& ref = *source;
  attach(ref, std::move(source));
}

}  // namespace forein::offload
