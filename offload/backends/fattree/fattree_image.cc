#include "fattree/fattree_image.h"

#include <algorithm>
#include <string>

#include "fattree/compare64.h"
#include "forein/offload/bytes.h"
#include "forein/offload/image_header.h"

namespace forein::offload::fattree {

namespace {

constexpr std::uint32_t kMagic = 0x31425446;  // "FTB1" in memory order
constexpr std::uint16_t kFormat = 1;

// Offsets inside one node entry of the image.
constexpr std::size_t kNodeOwner = 8, kNodeLevel = 12, kNodeChildren = 14, kNodeSet = 15,
                      kNodePivots = 16, kNodeChild = 144;

// The header checked against the span; ok = false for anything else.
struct View {
  bool ok = false;
  const std::byte* base = nullptr;
  std::uint32_t ranges = 0;
  std::array<std::uint32_t, kRangeStages> stage_entries{};
  std::array<std::uint32_t, kNodeSets> set_nodes{};
  std::size_t ranges_at = 0;
  std::array<std::size_t, kRangeStages> stage_at{};
  std::array<std::size_t, kNodeSets> set_at{};
};

View view_of(std::span<const std::byte> image) noexcept {
  View v;
  const ImageView head = view_image(image, kMagic, kFormat, kImageHeaderBytes, kImageRangeBytes);
  if (!head.ok) return v;
  const std::byte* p = head.base;
  const std::uint64_t length = head.length;
  if (load<std::uint32_t>(p + 20) != kNodeSets) return v;
  v.ranges = head.entries;
  // Counts are 32-bit, so every sum below fits in 64 bits.
  std::uint64_t at = kImageHeaderBytes;
  v.ranges_at = static_cast<std::size_t>(at);
  at += std::uint64_t{v.ranges} * kImageRangeBytes;
  for (std::size_t s = 0; s < kRangeStages; ++s) {
    v.stage_entries[s] = load<std::uint32_t>(p + 24 + 4 * s);
    v.stage_at[s] = static_cast<std::size_t>(std::min<std::uint64_t>(at, length));
    at += std::uint64_t{v.stage_entries[s]} * kImageStageEntryBytes;
  }
  for (std::size_t s = 0; s < kNodeSets; ++s) {
    v.set_nodes[s] = load<std::uint32_t>(p + 40 + 4 * s);
    v.set_at[s] = static_cast<std::size_t>(std::min<std::uint64_t>(at, length));
    at += std::uint64_t{v.set_nodes[s]} * kImageNodeBytes;
  }
  if (at != length) return v;
  v.base = p;
  v.ok = true;
  return v;
}

// The fat root's range for w, or ranges (none): the pipeline's four stages.
std::uint32_t match_fat_root(const View& v, Word w) noexcept {
  std::uint32_t table = 0;
  for (std::size_t s = 0; s < kRangeStages; ++s) {
    const auto slice = static_cast<std::uint32_t>((w >> (48 - kSliceBits * s)) & 0xFFFF);
    const std::byte* e = v.base + v.stage_at[s];
    // The last entry at or before (table, slice).
    std::size_t lo = 0, hi = v.stage_entries[s];
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      const auto t = load<std::uint32_t>(e + mid * kImageStageEntryBytes);
      const auto l = load<std::uint32_t>(e + mid * kImageStageEntryBytes + 4);
      if (t < table || (t == table && l <= slice)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo == 0) return v.ranges;
    const std::byte* hit = e + (lo - 1) * kImageStageEntryBytes;
    if (load<std::uint32_t>(hit) != table || load<std::uint32_t>(hit + 8) < slice) {
      return v.ranges;
    }
    const auto result = load<std::uint32_t>(hit + 12);
    if (result < v.ranges) return result;
    table = result;
  }
  return v.ranges;  // four stages without a range: not an image Algorithm 1 built
}

// The node of set s at address a, or nullptr.
const std::byte* find_node(const View& v, std::size_t s, Address a) noexcept {
  const std::byte* nodes = v.base + v.set_at[s];
  std::size_t lo = 0, hi = v.set_nodes[s];
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const auto at = load<std::uint64_t>(nodes + mid * kImageNodeBytes);
    if (at == a) return nodes + mid * kImageNodeBytes;
    if (at < a) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return nullptr;
}

void put_u32(std::vector<std::byte>& out, std::size_t at, std::uint32_t v) {
  store<std::uint32_t>(out.data() + at, v);
}

}  // namespace

std::vector<RangeRecord> effective_ranges(const std::vector<RangeRecord>& ranges) {
  std::vector<RangeRecord> out = ranges;
  std::sort(out.begin(), out.end(),
            [](const RangeRecord& a, const RangeRecord& b) { return a.lo < b.lo; });
  for (std::size_t i = 0; i + 1 < out.size(); ++i) {
    if (out[i].hi >= out[i + 1].lo) out[i].hi = out[i + 1].lo - 1;
  }
  return out;
}

std::vector<std::byte> build_image(const std::vector<RangeRecord>& ranges,
                                   const RangeTables& tables,
                                   const std::array<std::vector<NodeRecord>, kNodeSets>& sets) {
  std::size_t length = kImageHeaderBytes + ranges.size() * kImageRangeBytes;
  for (std::size_t s = 0; s < kRangeStages; ++s) {
    length += (s < tables.stages.size() ? tables.stages[s].size() : 0) * kImageStageEntryBytes;
  }
  for (const auto& set : sets) length += set.size() * kImageNodeBytes;
  std::vector<std::byte> out(length);
  std::byte* p = out.data();
  write_image_head(p, kMagic, kFormat, length, static_cast<std::uint32_t>(ranges.size()));
  put_u32(out, 20, kNodeSets);
  std::size_t at = kImageHeaderBytes;
  for (const RangeRecord& r : ranges) {
    store<std::uint64_t>(p + at, r.lo);
    store<std::uint64_t>(p + at + 8, r.hi);
    store<std::uint64_t>(p + at + 16, r.target);
    store<std::uint32_t>(p + at + 24, r.hint_node);
    store<std::uint16_t>(p + at + 28, r.hint_level);
    store<std::uint16_t>(p + at + 30, r.server);
    at += kImageRangeBytes;
  }
  for (std::size_t s = 0; s < kRangeStages; ++s) {
    const std::size_t n = s < tables.stages.size() ? tables.stages[s].size() : 0;
    put_u32(out, 24 + 4 * s, static_cast<std::uint32_t>(n));
    for (std::size_t i = 0; i < n; ++i) {
      const RangeTableEntry& e = tables.stages[s][i];
      put_u32(out, at, e.table);
      put_u32(out, at + 4, e.lo);
      put_u32(out, at + 8, e.hi);
      put_u32(out, at + 12, e.result);
      at += kImageStageEntryBytes;
    }
  }
  for (std::size_t s = 0; s < kNodeSets; ++s) {
    put_u32(out, 40 + 4 * s, static_cast<std::uint32_t>(sets[s].size()));
    for (const NodeRecord& n : sets[s]) {
      store<std::uint64_t>(p + at, n.address);
      store<std::uint32_t>(p + at + kNodeOwner, n.owner);
      store<std::uint16_t>(p + at + kNodeLevel, n.owner_level);
      store<std::uint8_t>(p + at + kNodeChildren, n.children);
      store<std::uint8_t>(p + at + kNodeSet, n.set);
      for (std::size_t i = 0; i < kBranches; ++i) {
        store<std::uint64_t>(p + at + kNodePivots + 8 * i, n.pivot[i]);
        store<std::uint64_t>(p + at + kNodeChild + 8 * i, n.child[i]);
      }
      at += kImageNodeBytes;
    }
  }
  return out;
}

namespace {

// One switch's part of the walk over a checked view (fattree_walk_switch).
void walk_switch(const View& v, Word w, std::size_t sw, Walk* walk) noexcept {
  if (!v.ok || sw >= kSwitchNames.size()) return;
  if (sw == 0) {
    const std::uint32_t r = match_fat_root(v, w);
    if (r >= v.ranges) return;
    const std::byte* range = v.base + v.ranges_at + std::size_t{r} * kImageRangeBytes;
    walk->matched = true;
    walk->server = load<std::uint16_t>(range + 30);
    walk->address = load<std::uint64_t>(range + 16);
    const Hint fat{load<std::uint32_t>(range + 24), load<std::uint16_t>(range + 28), 0};
    walk->hints.primary = fat;
    walk->hints.secondary = fat;
  }
  if (!walk->matched) return;  // a packet the fat root missed carries no address
  for (std::size_t s = 0; s < kNodeSets; ++s) {
    if (switch_of_set(s) != sw) continue;
    const std::byte* node = find_node(v, s, walk->address);
    if (node == nullptr) continue;
    ++walk->nodes_visited;
    // get_pivot_i + cal_result_i: a thermometer code, ones first.
    std::size_t ones = 0;
    while (ones < kBranches &&
           key_greater(w, load<std::uint64_t>(node + kNodePivots + 8 * ones))) {
      ++ones;
    }
    const std::size_t children = std::min<std::size_t>(load<std::uint8_t>(node + kNodeChildren),
                                                       kBranches);
    if (ones == 0 || ones > children) continue;  // no get_child_address entry
    walk->address = load<std::uint64_t>(node + kNodeChild + 8 * (ones - 1));
    if (is_real(walk->address) && walk->address != real_address(kNoPage)) {
      const auto level = load<std::uint16_t>(node + kNodeLevel);
      walk->hints.primary =
          Hint{static_cast<PageId>(walk->address), static_cast<std::uint16_t>(level == 0 ? 0 : level - 1), 0};
    }
  }
}

}  // namespace

void fattree_walk_switch(std::span<const std::byte> image, Word w, std::size_t sw, Walk* walk) noexcept {
  walk_switch(view_of(image), w, sw, walk);
}

Walk fattree_walk(std::span<const std::byte> image, Word w) noexcept {
  // The header is checked once for the three switches (a hint per request
  // on the switch's data path).
  const View v = view_of(image);
  Walk walk;
  for (std::size_t sw = 0; sw < kSwitchNames.size(); ++sw) walk_switch(v, w, sw, &walk);
  return walk;
}

StartHints fattree_image_hint(std::span<const std::byte> image, Word w) noexcept {
  return fattree_walk(image, w).hints;
}

std::size_t fattree_image_max_bytes(std::uint64_t capacity) {
  const std::uint64_t ranges = std::min<std::uint64_t>(capacity, kFatRootRangeLimit);
  const std::uint64_t nodes = std::min<std::uint64_t>(capacity, kNodeSets * kNodeSetLimit);
  // Algorithm 1 makes at most 3n entries a stage for n ranges without gaps
  // (the paper's 2n holds for the first stage only: range_tables.h) and at
  // most 6n with gaps, which a plan replaced removals first can leave.
  return static_cast<std::size_t>(kImageHeaderBytes + ranges * kImageRangeBytes +
                                  kRangeStages * (6 * ranges + 2) * kImageStageEntryBytes +
                                  nodes * kImageNodeBytes);
}

std::vector<ImageRecord> fattree_image_records(std::span<const std::byte> image) {
  std::vector<ImageRecord> out;
  const View v = view_of(image);
  if (!v.ok) return out;
  for (std::size_t r = 0; r < v.ranges; ++r) {
    const std::byte* e = v.base + v.ranges_at + r * kImageRangeBytes;
    out.push_back(ImageRecord{load<std::uint64_t>(e), 0, 0, load<std::uint16_t>(e + 28),
                              load<std::uint32_t>(e + 24)});
  }
  for (std::size_t s = 0; s < kNodeSets; ++s) {
    for (std::size_t i = 0; i < v.set_nodes[s]; ++i) {
      const std::byte* n = v.base + v.set_at[s] + i * kImageNodeBytes;
      const auto sentinel = load<std::uint64_t>(n + kNodePivots);
      out.push_back(ImageRecord{sentinel == 0 ? 0 : sentinel + 1, 0,
                                static_cast<std::uint8_t>(1 + s), load<std::uint16_t>(n + kNodeLevel),
                                load<std::uint32_t>(n + kNodeOwner)});
    }
  }
  return out;
}

std::vector<UsageRow> fattree_image_usage(std::span<const std::byte> image, std::uint64_t capacity) {
  const View v = view_of(image);
  std::uint64_t nodes_total = 0;
  std::array<std::uint64_t, kNodeSets> child_entries{};
  for (std::size_t s = 0; s < kNodeSets && v.ok; ++s) {
    nodes_total += v.set_nodes[s];
    for (std::size_t i = 0; i < v.set_nodes[s]; ++i) {
      child_entries[s] += load<std::uint8_t>(v.base + v.set_at[s] + i * kImageNodeBytes + kNodeChildren);
    }
  }
  const std::uint64_t ranges = v.ok ? v.ranges : 0;
  std::vector<UsageRow> rows;
  rows.push_back({"all switches", "in-switch nodes (fat-root ranges + regular nodes)", "nodes",
                  ranges + nodes_total, capacity});
  std::array<std::uint64_t, 3> stages{};
  const std::string core = kSwitchNames[0];
  rows.push_back({core, "fat root", "ranges", ranges, kFatRootRangeLimit});
  for (std::size_t s = 0; s < kRangeStages; ++s) {
    rows.push_back({core, "fat root range table, key[" + std::to_string(63 - 16 * s) + ":" +
                              std::to_string(48 - 16 * s) + "]",
                    "TCAM entries", v.ok ? v.stage_entries[s] : 0, 3 * kFatRootRangeLimit});
  }
  if (ranges > 0) stages[0] += kStagesPerPart;
  for (std::size_t s = 0; s < kNodeSets; ++s) {
    const std::uint64_t n = v.ok ? v.set_nodes[s] : 0;
    const std::string sw = kSwitchNames[switch_of_set(s)];
    const std::string set = "node set " + std::to_string(s + 1);
    rows.push_back({sw, set, "nodes", n, kNodeSetLimit});
    rows.push_back({sw, set + " get_pivot_1..16", "entries", kBranches * n, kBranches * kNodeSetLimit});
    rows.push_back({sw, set + " cal_result_1..16", "entries", n > 0 ? kBranches * kCalResultEntries : 0,
                    kBranches * kCalResultEntries});
    rows.push_back({sw, set + " get_child_address", "entries", child_entries[s],
                    kBranches * kNodeSetLimit});
    if (n > 0) stages[switch_of_set(s)] += kStagesPerPart;
  }
  for (std::size_t sw = 0; sw < kSwitchNames.size(); ++sw) {
    rows.push_back({kSwitchNames[sw], "pipeline", "stages", stages[sw], kStagesPerSwitch});
  }
  return rows;
}

}  // namespace forein::offload::fattree
