#include "forein/node_view.h"

#include <string>

#include "node.h"

namespace forein {

using detail::Node;
using detail::StoredKey;

namespace {

// Read-only use of Node's readers (they take a mutable page).
Node view(const std::byte* page, std::uint32_t page_size) {
  return Node(const_cast<std::byte*>(page), page_size);
}

bool live(const Node& n) { return n.is_node() && !n.dead(); }

// A stored key's word and whether it is its word's smallest key (see
// forein_word_bytes_own_word): a key of up to 8 bytes sits in its word.
struct Bound {
  Word word = 0;
  bool owns = false;
};
Bound bound_of(const StoredKey& k) {
  if (k.len > kWordBytes) return {k.word, false};
  const bool owns = k.len == 0 || ((k.word >> (8 * (kWordBytes - k.len))) & 0xff) != 0;
  return {k.word, owns};
}
Bound bound_of(const std::string& key) {
  return {word_of(key), forein_word_bytes_own_word(key.data(), key.size())};
}

NodeInterval make_interval(std::uint64_t index_id, PageId id, std::uint16_t level, std::uint64_t version,
                           const Bound& lo, const std::optional<Bound>& hi) {
  NodeInterval iv;
  iv.index = index_id;
  iv.node = id;
  iv.level = level;
  iv.version = version;
  const ForeinWordInterval w = forein_word_interval(true, lo.word, lo.owns, hi.has_value(),
                                                    hi ? hi->word : 0, hi ? hi->owns : false);
  iv.lo = w.lo;
  iv.hi = w.hi;
  iv.hi_inf = w.hi_inf;
  return iv;
}

std::optional<Bound> hi_of(const Node& n) {
  if (n.hi_inf()) return std::nullopt;
  return bound_of(n.hi_copy());
}

}  // namespace

std::optional<NodeInterval> page_node_interval(PageId id, const std::byte* page, std::uint32_t page_size,
                                               std::uint64_t index_id) {
  if (page == nullptr) return std::nullopt;
  const Node n = view(page, page_size);
  if (!live(n)) return std::nullopt;
  // Same rule as the tree's node events (Tree::Impl::interval_of).
  return make_interval(index_id, id, n.level(), n.version(), bound_of(n.lo_copy()), hi_of(n));
}

void for_each_page_child(const std::byte* page, std::uint32_t page_size, std::uint64_t index_id,
                         const std::function<void(const NodeInterval&)>& fn) {
  if (page == nullptr) return;
  const Node n = view(page, page_size);
  if (!live(n) || n.is_leaf()) return;
  const std::size_t count = n.count();
  if (count == 0) return;
  const auto level = static_cast<std::uint16_t>(n.level() - 1);
  const std::optional<Bound> node_hi = hi_of(n);
  // Slot 0's key is the node's lo.
  Bound lo = bound_of(n.lo_copy());
  for (std::size_t i = 0; i < count; ++i) {
    std::optional<Bound> hi = node_hi;
    if (i + 1 < count) hi = bound_of(n.key_at(i + 1));
    fn(make_interval(index_id, n.child_at(i), level, 0, lo, hi));
    if (hi) lo = *hi;
  }
}

void append_page_words(const std::byte* page, std::uint32_t page_size, std::vector<Word>* out) {
  if (page == nullptr) return;
  const Node n = view(page, page_size);
  if (!live(n) || !n.is_leaf()) return;
  const std::size_t count = n.count();
  for (std::size_t i = 0; i < count; ++i) {
    const Word w = n.key_at(i).word;
    if (out->empty() || out->back() != w) out->push_back(w);
  }
}

}  // namespace forein
