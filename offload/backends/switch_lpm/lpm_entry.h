// One entry of an LPM offload table: a prefix and the node it points at.
#pragma once

#include <cstdint>

#include "switch_lpm/prefix_cover.h"
#include "forein/page_store.h"

namespace forein::offload {

// Which layer of FOREIN's layered policy (section V-C) produced an entry.
enum class Layer : std::uint8_t {
  kBottomLine,  // every node of one upper level, gaps merged: full coverage
  kMain,        // greedy-selected nodes, hollow prefixes omitted
  kHotLeaf,     // the most accessed leaves, installed directly
};

const char* to_string(Layer layer);

struct LpmEntry {
  Prefix prefix;
  PageId node = kNoPage;
  std::uint16_t level = 0;
  Layer layer = Layer::kMain;
  std::uint64_t version = 0;  // NodeInterval::version the entry was computed from

  friend bool operator==(const LpmEntry&, const LpmEntry&) = default;
};

}  // namespace forein::offload
