// The hint map: a per-table range map from a leaf's low word to the leaf,
// kept current by the tree's node-interval events.
#include "forein_vtab.h"

namespace forein::sqlite {

void HintMap::on_node_event(const NodeEvent& ev) {
  const NodeInterval& iv = ev.interval;
  if (iv.level != 0) return;
  switch (ev.kind) {
    case NodeEventKind::kDeleted: {
      auto it = map_.find(iv.lo);
      if (it != map_.end() && it->second.node == iv.node) map_.erase(it);
      break;
    }
    case NodeEventKind::kCreated:
    case NodeEventKind::kSplit:
    case NodeEventKind::kRangeChanged:
      install(iv);
      break;
  }
}

void HintMap::install(const NodeInterval& iv) {
  if (iv.empty()) return;
  auto it = map_.find(iv.lo);
  if (it == map_.end() && map_.size() >= kHintCapacity) return;
  map_[iv.lo] = Hint{iv.node, 0, iv.version};
}

// mode 0: the map; 1: random garbage hints; 2: none.
StartHints HintMap::lookup(std::string_view key) {
  StartHints h;
  if (mode == 2) return h;
  if (mode == 1) {
    h.primary = Hint{static_cast<PageId>(rng() % 4096), static_cast<std::uint16_t>(rng() % 3),
                     rng() % 8};
    h.secondary = Hint{static_cast<PageId>(rng() % 4096), static_cast<std::uint16_t>(rng() % 3),
                       rng() % 8};
    return h;
  }
  const Word w = word_of(key);
  auto it = map_.upper_bound(w);
  if (it == map_.begin()) return h;
  --it;
  h.primary = it->second;
  return h;
}

}  // namespace forein::sqlite
