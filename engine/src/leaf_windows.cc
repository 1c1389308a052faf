// LeafWindows: the writers' side (leaf_windows.h).
#include "leaf_windows.h"

namespace forein::detail {

std::pair<Word, std::uint64_t> LeafWindows::entry_of(const std::byte* page) {
  const std::uint16_t flags = load<std::uint16_t>(page, off::kFlags);
  const bool fixed = (flags & kFlagFixed) != 0;
  const std::size_t window = fixed ? Node::kFixedSearchWindow : Node::kSearchWindow;
  const std::size_t n = load<std::uint16_t>(page, off::kCount);
  const auto [lo, hi] = interpolation_bounds(page);
  // What search_window() interpolates in: a live leaf of format 2 or fixed
  // shape with at least a window of slots and lo below hi.
  const bool searchable = load<std::uint32_t>(page, off::kMagic) == kNodeMagic &&
                          load<std::uint16_t>(page, off::kLevel) == 0 &&
                          (flags & kFlagDead) == 0 &&
                          (flags & (kFlagFixed | kFlagInlineValues)) != 0 && n >= window &&
                          lo < hi;
  if (!searchable) return {0, 0};
  const double span = static_cast<double>(static_cast<std::int64_t>((hi - lo) >> 11));
  const auto per_unit = static_cast<float>(static_cast<double>(n) / (span + 1.0));
  return {lo, std::uint64_t{std::bit_cast<std::uint32_t>(per_unit)} | (std::uint64_t{n} << 32) |
                  (std::uint64_t{fixed} << 48)};
}

void LeafWindows::record(PageId id, const std::byte* page) {
  const std::size_t c = id >> kChunkBits;
  if (c >= kMaxChunks) return;
  const auto [lo, shape] = entry_of(page);
  Entry* chunk = chunks_[c].load(std::memory_order_acquire);
  if (chunk == nullptr) {
    if (shape == 0) return;
    std::lock_guard<std::mutex> lock(grow_mu_);
    chunk = chunks_[c].load(std::memory_order_relaxed);
    if (chunk == nullptr) {
      chunk = new Entry[kChunkMask + 1];
      chunks_[c].store(chunk, std::memory_order_release);
    }
  }
  Entry& e = chunk[id & kChunkMask];
  e.lo.store(lo, std::memory_order_relaxed);
  e.shape.store(shape, std::memory_order_relaxed);
}

bool LeafWindows::matches(PageId id, const std::byte* page) const {
  const auto [lo, shape] = entry_of(page);
  const Entry* e = entry(id);
  const std::uint64_t have = e == nullptr ? 0 : e->shape.load(std::memory_order_relaxed);
  return have == shape && (shape == 0 || e->lo.load(std::memory_order_relaxed) == lo);
}

void LeafWindows::clear() {
  for (std::size_t c = 0; c < kMaxChunks; ++c) {
    Entry* chunk = chunks_[c].load(std::memory_order_acquire);
    if (chunk == nullptr) continue;
    for (std::size_t i = 0; i <= kChunkMask; ++i) chunk[i].shape.store(0, std::memory_order_relaxed);
  }
}

LeafWindows::~LeafWindows() {
  for (std::size_t c = 0; c < kMaxChunks; ++c) delete[] chunks_[c].load(std::memory_order_relaxed);
}

}  // namespace forein::detail
