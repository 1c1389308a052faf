// Tree::bulk_load_stream: bulk_load from a generator. The leaves are
// planned exactly as build_level plans them (a node closes when the next
// pair would pass the fill limit or, with its lo and the next key's length
// as the bounds, the page), with one pair of lookahead for that length,
// and each leaf is written once the next one starts (its hi separator and
// right link are known then). Only one leaf's pairs are held, and a
// (separator, page) per leaf for the levels above, which build_level
// builds as bulk_load does.
#include "tree_impl.h"

namespace forein {

using detail::LatchedPage;
using detail::Node;

void Tree::bulk_load_stream(const std::function<bool(std::string* key, std::string* value)>& next) {
  Impl& t = *impl_;
  std::lock_guard<std::mutex> lock(t.root_mu_);
  if (t.size_.load() != 0 || t.height_.load() != 1) {
    throw InvalidArgument("forein: bulk_load needs an empty tree");
  }
  struct Pair {
    std::string key, value;
  };
  Pair a, b;  // the pair being placed, and the one after it
  bool have_a = next(&a.key, &a.value);
  if (!have_a) return;
  t.check_sizes(a.key, a.value);
  detail::EpochManager::Guard guard;

  const std::size_t cap = t.page_size_ - detail::kHeaderSize;
  const std::size_t fill_limit = cap * t.options_.bulk_fill_percent / 100;
  std::vector<NodeInterval> created;
  std::vector<std::pair<std::string, PageId>> up;  // each leaf's lo and page
  std::vector<Pair> leaf;                          // the current leaf's pairs: the first n
  std::size_t n = 0;
  detail::LeafBytes used;  // the current leaf's entry bytes
  std::uint64_t total = 0;
  std::string lo;  // the current leaf's (empty for the first)
  PageId left = kNoPage;
  LatchedPage page;
  PageId id = t.allocate_node(&page);

  const auto write_leaf = [&](std::optional<std::string_view> hi, PageId right) {
    Node node = page.node();
    node.init(0, node.version() + 1, lo, hi, left, right);
    for (std::size_t i = 0; i < n; ++i) node.append_leaf(leaf[i].key, leaf[i].value);
    created.push_back(t.interval_of(node, id));
    up.emplace_back(lo, id);
    page.release();
  };

  while (have_a) {
    const bool have_b = next(&b.key, &b.value);
    if (have_b) {
      t.check_sizes(b.key, b.value);
      if (compare_keys(a.key, b.key) >= 0) {
        throw InvalidArgument("forein: bulk_load input is not strictly ascending at entry " +
                              std::to_string(total + 1));
      }
    }
    const std::size_t bytes = used.bytes_with(a.key.size(), a.value.size());
    const std::size_t lo_len = up.empty() ? 0 : leaf[0].key.size();
    const std::size_t hi_len = have_b ? b.key.size() : 0;
    const bool room = bytes + lo_len + hi_len <= cap && bytes <= fill_limit;
    if (n > 0 && !room) {
      std::string hi = shortest_separator(leaf[n - 1].key, a.key);
      LatchedPage next_page;
      const PageId next_id = t.allocate_node(&next_page);
      write_leaf(std::string_view(hi), next_id);
      left = id;
      id = next_id;
      page = std::move(next_page);
      lo = std::move(hi);
      n = 0;
      used = {};
    }
    if (leaf.size() <= n) leaf.emplace_back();
    std::swap(leaf[n++], a);  // (a gets a spent pair's buffers back)
    used.add(leaf[n - 1].key.size(), leaf[n - 1].value.size());
    ++total;
    std::swap(a, b);
    have_a = have_b;
  }
  write_leaf(std::nullopt, kNoPage);

  std::uint16_t level = 0;
  std::vector<Impl::BuildItem> items;
  while (up.size() > 1) {
    items.clear();
    items.reserve(up.size());
    for (const auto& [key, child] : up) items.push_back({key, {}, child});
    auto above = t.build_level(++level, items, created);
    up = std::move(above);
  }

  const PageId old_root = t.root_.load();
  NodeInterval old_iv;
  {
    LatchedPage old = t.latch(old_root);
    old.node().mark_dead();
    old.node().bump_version();
    old_iv = t.interval_of(old.node(), old_root);
  }
  t.root_.store(up.front().second, std::memory_order_release);
  t.height_.store(level + 1, std::memory_order_release);
  t.size_.store(total);
  t.write_meta();
  t.keys_changed();
  t.retire(old_root);
  t.emit(NodeEventKind::kDeleted, old_iv);
  for (const NodeInterval& iv : created) t.emit(NodeEventKind::kCreated, iv);
}

}  // namespace forein
