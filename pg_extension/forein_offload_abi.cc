// pg_extension/forein_offload_abi.cc: the C ABI over the offload layer
// (forein_offload_abi.h) for the PostgreSQL access method.
//
// Selection is offload::build_layered_entries; flattening uses
// offload::LpmSnapshot, the switch_lpm data plane's own structure, so the
// table PostgreSQL publishes answers exactly what the modelled switch would.
// The snapshot keeps its segments private; longest-prefix match is constant
// between consecutive prefix boundaries (a prefix's first word and the word
// after its last), so one lookup per boundary recovers the segments.

#include "forein_offload_abi.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <span>
#include <unordered_set>
#include <utility>
#include <vector>

#include "switch_lpm/layers.h"
#include "switch_lpm/lpm_entry.h"
#include "switch_lpm/prefix_cover.h"
#include "switch_lpm/lpm_snapshot.h"

namespace off = forein::offload;

struct ForeinAbiResult {
  std::vector<ForeinAbiEntry> entries;
  std::vector<ForeinAbiSegment> main_segments;
  std::vector<ForeinAbiSegment> bottom_segments;
  ForeinAbiSummary summary{};
};

namespace {

constexpr forein::Word kMaxWord = std::numeric_limits<forein::Word>::max();

std::uint8_t layer_code(off::Layer layer) {
  switch (layer) {
    case off::Layer::kBottomLine: return FOREIN_ABI_LAYER_BOTTOM_LINE;
    case off::Layer::kMain: return FOREIN_ABI_LAYER_MAIN;
    case off::Layer::kHotLeaf: return FOREIN_ABI_LAYER_HOT_LEAF;
  }
  return FOREIN_ABI_LAYER_MAIN;
}

// The segments of the longest-prefix-match function of `entries` (sorted by
// prefix_less, distinct, no node 0), adjacent equal answers merged.
std::vector<ForeinAbiSegment> flatten(const std::vector<std::pair<off::Prefix, off::LpmAction>>& entries) {
  const off::LpmSnapshot snapshot(entries, 1);
  std::vector<forein::Word> bounds;
  bounds.reserve(2 * entries.size() + 1);
  bounds.push_back(0);
  for (const auto& [prefix, action] : entries) {
    bounds.push_back(off::prefix_first(prefix));
    const forein::Word last = off::prefix_last(prefix);
    if (last != kMaxWord) bounds.push_back(last + 1);
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());

  std::vector<ForeinAbiSegment> segments;
  segments.reserve(bounds.size());
  for (forein::Word start : bounds) {
    const off::LpmAction action = snapshot.lookup(start).value_or(off::LpmAction{});
    if (!segments.empty() && segments.back().block == action.node &&
        segments.back().level == action.level && segments.back().version_tag == action.version_tag) {
      continue;
    }
    segments.push_back(ForeinAbiSegment{start, action.node, action.level, action.version_tag});
  }
  return segments;
}

void set_error(char* errbuf, std::size_t errlen, const char* message) {
  if (errbuf == nullptr || errlen == 0) return;
  std::strncpy(errbuf, message, errlen - 1);
  errbuf[errlen - 1] = '\0';
}

std::unique_ptr<ForeinAbiResult> build(const ForeinAbiNode* nodes, std::size_t nnodes,
                                       std::uint64_t* words, std::size_t nwords,
                                       const ForeinAbiOptions& options) {
  std::vector<off::OffloadNode> table(nnodes);
  for (std::size_t i = 0; i < nnodes; ++i) {
    const ForeinAbiNode& n = nodes[i];
    off::OffloadNode& node = table[i];
    node.interval.node = n.block;
    node.interval.level = n.level;
    node.interval.lo = n.lo;
    node.interval.hi = n.hi;
    node.interval.hi_inf = n.hi_inf != 0;
    node.interval.version = n.version;
    node.parent = n.parent;
    node.weight = n.weight;
  }
  std::sort(words, words + nwords);

  off::LayerOptions layer_options;
  layer_options.budget = options.budget;
  layer_options.bottom_line_level = options.bottom_line_level;
  layer_options.hot_leaves = options.hot_leaves;
  const off::LayeredEntries layered = off::build_layered_entries(
      table, std::span<const forein::Word>(words, nwords), layer_options);

  auto result = std::make_unique<ForeinAbiResult>();
  std::vector<std::pair<off::Prefix, off::LpmAction>> all, bottom;
  std::unordered_set<std::uint32_t> nodes_used;
  for (const off::LpmEntry& e : layered.entries) {
    if (e.node == forein::kNoPage) continue;  // a virtual root is the fallback, not an entry
    const off::LpmAction action{e.node, e.level, static_cast<std::uint16_t>(e.version)};
    result->entries.push_back(
        ForeinAbiEntry{e.prefix.value, e.node, e.level, e.prefix.len, layer_code(e.layer)});
    all.emplace_back(e.prefix, action);
    if (e.layer == off::Layer::kBottomLine) bottom.emplace_back(e.prefix, action);
    nodes_used.insert(e.node);
  }
  result->main_segments = flatten(all);
  result->bottom_segments = flatten(bottom);

  ForeinAbiSummary& s = result->summary;
  s.entries = result->entries.size();
  s.main_segments = result->main_segments.size();
  s.bottom_segments = result->bottom_segments.size();
  s.nodes = nodes_used.size();
  s.bottom_line_entries = layered.bottom_line_entries;
  s.main_entries = layered.main_entries;
  s.hot_leaf_entries = layered.hot_leaf_entries;
  s.bottom_line_level = layered.bottom_line_level;
  s.modelled_ama = layered.selection.ama;
  return result;
}

}  // namespace

extern "C" ForeinAbiResult* forein_abi_build(const ForeinAbiNode* nodes, std::size_t nnodes,
                                             std::uint64_t* words, std::size_t nwords,
                                             const ForeinAbiOptions* options, char* errbuf,
                                             std::size_t errlen) {
  try {
    if (options == nullptr || (nnodes > 0 && nodes == nullptr) || (nwords > 0 && words == nullptr)) {
      set_error(errbuf, errlen, "forein_abi_build: null argument");
      return nullptr;
    }
    return build(nodes, nnodes, words, nwords, *options).release();
  } catch (const std::exception& e) {
    set_error(errbuf, errlen, e.what());
  } catch (...) {
    set_error(errbuf, errlen, "unknown C++ exception");
  }
  return nullptr;
}

extern "C" void forein_abi_summary(const ForeinAbiResult* result, ForeinAbiSummary* summary) {
  *summary = result->summary;
}

extern "C" const ForeinAbiEntry* forein_abi_entries(const ForeinAbiResult* result) {
  return result->entries.data();
}

extern "C" const ForeinAbiSegment* forein_abi_main_segments(const ForeinAbiResult* result) {
  return result->main_segments.data();
}

extern "C" const ForeinAbiSegment* forein_abi_bottom_segments(const ForeinAbiResult* result) {
  return result->bottom_segments.data();
}

extern "C" void forein_abi_free(ForeinAbiResult* result) { delete result; }
