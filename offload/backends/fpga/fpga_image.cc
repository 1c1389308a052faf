#include "fpga/fpga_image.h"

#include <algorithm>
#include <unordered_map>

#include "forein/offload/image_header.h"

namespace forein::offload::fpga {

namespace {

constexpr std::uint32_t kMagic = 0x31435046;  // "FPC1" in memory order
constexpr std::uint16_t kFormat = 1;
constexpr std::uint8_t kRootFlag = 1;
constexpr std::uint8_t kHiInfFlag = 2;

static_assert(kImageIndexBytes == kImageIndexEntryBytes);

// The header checked against the span (image_header.h: entries are the DRAM
// nodes' index), and the root record's offset (0: none); ok = false for
// anything else.
struct View : ImageView {
  std::uint64_t root_at = 0;
};

View view_of(std::span<const std::byte> image) noexcept {
  View v{view_image(image, kMagic, kFormat, kImageHeaderBytes, kImageIndexBytes)};
  if (v.ok) v.root_at = load<std::uint64_t>(v.base + 24);
  return v;
}

// One record checked against the image; ok = false if it does not fit.
struct Rec {
  bool ok = false;
  const std::byte* at = nullptr;
  PageId node = kNoPage;
  std::uint16_t level = 0;
  std::uint8_t flags = 0;
  std::uint32_t children = 0;
  std::uint32_t occupancy = 0;
  Word lo = 0;
  Word hi = 0;
};

Rec record_at(const View& v, std::uint64_t offset) noexcept {
  Rec r;
  const std::uint64_t index_end = kImageHeaderBytes + std::uint64_t{v.entries} * kImageIndexBytes;
  if (offset < index_end || offset > v.length || v.length - offset < kRecordHeaderBytes) return r;
  const std::byte* p = v.base + offset;
  r.children = load<std::uint32_t>(p + 8);
  if (r.children > kMaxChildren || v.length - offset < record_data_bytes(r.children)) return r;
  r.node = load<std::uint32_t>(p);
  r.level = load<std::uint16_t>(p + 4);
  r.flags = load<std::uint8_t>(p + 6);
  r.occupancy = load<std::uint32_t>(p + 12);
  r.lo = load<std::uint64_t>(p + 16);
  r.hi = load<std::uint64_t>(p + 24);
  r.at = p;
  r.ok = true;
  return r;
}

Word child_lo(const Rec& r, std::size_t i) noexcept {
  return load<std::uint64_t>(r.at + kRecordHeaderBytes + i * kChildBytes);
}
PageId child_node(const Rec& r, std::size_t i) noexcept {
  return load<std::uint32_t>(r.at + kRecordHeaderBytes + i * kChildBytes + 8);
}

// The DRAM record of node id, or a record with ok = false.
Rec find_dram(const View& v, PageId node) noexcept {
  const auto offset = find_index_entry(v, kImageHeaderBytes, 4, node);
  return offset ? record_at(v, *offset) : Rec{};
}

void put_record(std::byte* p, const CacheRecord& r) {
  store<std::uint32_t>(p, r.node);
  store<std::uint16_t>(p + 4, r.level);
  store<std::uint8_t>(p + 6, static_cast<std::uint8_t>((r.root ? kRootFlag : 0) | (r.hi_inf ? kHiInfFlag : 0)));
  store<std::uint32_t>(p + 8, static_cast<std::uint32_t>(r.children.size()));
  store<std::uint32_t>(p + 12, occupancy_of(r.children.size()));
  store<std::uint64_t>(p + 16, r.lo);
  store<std::uint64_t>(p + 24, r.hi);
  std::byte* c = p + kRecordHeaderBytes;
  for (const CacheChild& child : r.children) {
    store<std::uint64_t>(c, child.lo);
    store<std::uint32_t>(c + 8, child.node);
    c += kChildBytes;
  }
}

Hint hint_of(const Rec& r) noexcept { return r.node == kNoPage ? Hint{} : Hint{r.node, r.level, 0}; }

}  // namespace

std::vector<std::byte> build_image(const CacheRecord* root, const std::vector<const CacheRecord*>& dram,
                                   std::uint64_t capacity) {
  std::vector<const CacheRecord*> sorted = dram;
  std::sort(sorted.begin(), sorted.end(),
            [](const CacheRecord* a, const CacheRecord* b) { return a->node < b->node; });
  std::size_t length = kImageHeaderBytes + sorted.size() * kImageIndexBytes;
  const std::size_t records_at = length;
  if (root != nullptr) length += record_data_bytes(root->children.size());
  for (const CacheRecord* r : sorted) length += record_data_bytes(r->children.size());
  std::vector<std::byte> out(length);
  std::byte* p = out.data();
  write_image_head(p, kMagic, kFormat, length, static_cast<std::uint32_t>(sorted.size()));
  store<std::uint32_t>(p + 20, root != nullptr ? root->node : kNoPage);
  store<std::uint64_t>(p + 24, root != nullptr ? records_at : 0);
  store<std::uint64_t>(p + 32, capacity);
  std::size_t at = records_at;
  if (root != nullptr) {
    put_record(p + at, *root);
    at += record_data_bytes(root->children.size());
  }
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    std::byte* e = p + kImageHeaderBytes + i * kImageIndexBytes;
    store<std::uint32_t>(e, sorted[i]->node);
    store<std::uint64_t>(e + 8, at);
    put_record(p + at, *sorted[i]);
    at += record_data_bytes(sorted[i]->children.size());
  }
  return out;
}

CacheWalk fpga_walk(std::span<const std::byte> image, Word w) noexcept {
  CacheWalk walk;
  const View v = view_of(image);
  if (!v.ok || v.root_at == 0) return walk;
  Rec rec = record_at(v, v.root_at);
  Hint above;  // the cached node walked before rec
  for (std::size_t step = 0; rec.ok && step <= kMaxLevel; ++step) {
    ++walk.cached_nodes;
    if (rec.level < 1 || rec.children == 0) break;
    // The last child whose lo <= w.
    std::size_t lo = 0, hi = rec.children;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (child_lo(rec, mid) <= w) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo == 0) {  // below every child: the record's own node
      walk.hints.primary = hint_of(rec);
      walk.hints.secondary = above;
      return walk;
    }
    const PageId child = child_node(rec, lo - 1);
    if (child == kNoPage) break;
    const Rec next = find_dram(v, child);
    if (next.ok && next.level < rec.level) {
      above = hint_of(rec);
      rec = next;
      continue;
    }
    walk.hints.primary = Hint{child, static_cast<std::uint16_t>(rec.level - 1), 0};
    walk.hints.secondary = hint_of(rec);
    return walk;
  }
  // Garbage on the way (a record that does not fit, a level out of step):
  // the deepest cached node walked, if any.
  walk.hints.primary = rec.ok ? hint_of(rec) : above;
  walk.hints.secondary = rec.ok ? above : Hint{};
  return walk;
}

StartHints fpga_image_hint(std::span<const std::byte> image, Word w) noexcept { return fpga_walk(image, w).hints; }

std::size_t fpga_image_max_bytes(std::uint64_t capacity) {
  const std::uint64_t records = 1 + std::min<std::uint64_t>(cache_slots(capacity), kMaxImageBytes / kImageIndexBytes);
  const std::uint64_t full = kImageHeaderBytes + records * (kImageIndexBytes + record_data_bytes(kMaxChildren));
  return static_cast<std::size_t>(std::min<std::uint64_t>(full, kMaxImageBytes));
}

std::vector<ImageRecord> fpga_image_records(std::span<const std::byte> image) {
  std::vector<ImageRecord> out;
  const View v = view_of(image);
  if (!v.ok) return out;
  if (v.root_at != 0) {
    const Rec r = record_at(v, v.root_at);
    if (r.ok) out.push_back(ImageRecord{r.lo, 0, 0, r.level, r.node});
  }
  for (std::size_t i = 0; i < v.entries; ++i) {
    const Rec r = record_at(v, index_entry_offset(v, kImageHeaderBytes, i));
    if (r.ok) out.push_back(ImageRecord{r.lo, 0, 1, r.level, r.node});
  }
  return out;
}

std::vector<UsageRow> fpga_image_usage(std::span<const std::byte> image, std::uint64_t capacity) {
  if (capacity == 0) capacity = kBoardDramBytes;
  const View v = view_of(image);
  std::uint64_t root = 0, dram = 0, occupied = 0, fullest = 0;
  if (v.ok) {
    root = v.root_at != 0 && record_at(v, v.root_at).ok ? 1 : 0;
    const std::uint64_t sets = cache_sets(capacity);
    std::unordered_map<std::uint64_t, std::uint64_t> ways;
    for (std::size_t i = 0; i < v.entries; ++i) {
      const Rec r = record_at(v, index_entry_offset(v, kImageHeaderBytes, i));
      if (!r.ok) continue;
      ++dram;
      occupied += occupied_bytes(r.occupancy);
      fullest = std::max(fullest, ++ways[cache_set_of(r.node, sets)]);
    }
  }
  std::vector<UsageRow> rows;
  rows.push_back({"fpga card", "on-chip SRAM: root node", "nodes", root, 1});
  rows.push_back({"fpga card", "on-board DRAM: interior-node cache", "cache bytes", dram * kNodeBytes, capacity});
  rows.push_back({"fpga card", "on-board DRAM: 8 KB slots", "slots", dram, cache_slots(capacity)});
  rows.push_back({"fpga card", "on-board DRAM: occupied 256-byte chunks", "bytes", occupied, dram * kNodeBytes});
  rows.push_back({"fpga card", "on-board DRAM: ways of the fullest set", "ways", fullest, kCacheWays});
  return rows;
}

}  // namespace forein::offload::fpga
