// Where each leaf's search will look, kept per page so that a lookup can
// fetch a leaf's search window together with the leaf's header.
//
// A leaf is usually out of cache, and its search waits for two misses in a
// row: the header (whose lo, hi and count place the window: word_search in
// node.h) and then the window. This table keeps, per page, what places the
// window: the leaf's lo word, its count, and its count per unit of word
// space. A lookup that knows a leaf's page id before touching the leaf (its
// parent's slot, or a hint) fetches the window while the header is fetched,
// so a cold leaf costs one memory round trip instead of two. 16 bytes per
// page (0.2 % of an 8 KiB page): a lookup's entry is usually cached where
// its leaf is not.
//
// Writers record a page when they release its exclusive latch (LatchedPage),
// so entries follow every insert, erase, split, merge, free and bulk load;
// opening a tree records every page of a store that holds its pages, and an
// on-demand store records each frame it reads from its source or
// overwrites (PageStore::set_frame_observer). Readers only read: they still
// write no shared memory (but for an on-demand store's frames, as before).
// An entry read while a writer changes it, or left from a page's previous
// life (an evicted frame until it is read again), fetches the wrong lines
// and nothing else: the search places its window from the header as
// before.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

#include "node.h"

namespace forein::detail {

class LeafWindows {
 public:
  LeafWindows() : chunks_(std::make_unique<std::atomic<Entry*>[]>(kMaxChunks)) {}
  ~LeafWindows();
  LeafWindows(const LeafWindows&) = delete;
  LeafWindows& operator=(const LeafWindows&) = delete;

  // Records page `id` (held exclusively, or not yet reachable) as it is now:
  // a live leaf whose search interpolates gets an entry, any other page none.
  void record(PageId id, const std::byte* page);
  // Drops every entry (a tree reopened over pages that changed).
  void clear();
  // Whether page `id`'s entry is what record() would make of it now (the
  // tree's invariant check).
  bool matches(PageId id, const std::byte* page) const;

  // The search window of leaf `id` for kw as the entry predicts it: the
  // first slot and the slot size (search_window() in node.h); stride 0
  // when there is no entry or the search will have no window.
  struct Window {
    std::size_t from = 0;
    std::size_t stride = 0;
  };
  [[gnu::always_inline]] Window window(PageId id, Word kw) const {
    const Entry* e = entry(id);
    if (e == nullptr) return {};
    const std::uint64_t shape = e->shape.load(std::memory_order_relaxed);
    const Word lo = e->lo.load(std::memory_order_relaxed);
    if (shape == 0 || kw <= lo) return {};
    // search_window's guess, dist / (span + 1) * n, as dist * (n / (span + 1)).
    const double guess =
        static_cast<double>(static_cast<std::int64_t>((kw - lo) >> 11)) *
        static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(shape)));
    const std::size_t n = (shape >> 32) & 0xffff;
    // A key at or past hi (the search will have no window) guesses past n.
    const double in_leaf = guess < static_cast<double>(n) ? guess : static_cast<double>(n);
    const auto g = static_cast<std::size_t>(static_cast<std::int64_t>(in_leaf));
    if (shape >> 48) return {window_around<Node::kFixedSearchWindow>(g, n), kFixedSlotSize};
    return {window_around<Node::kSearchWindow>(g, n), kLeafSlotSize};
  }

  // Fetches the lines of window(id, kw) in `leaf`, page id's frame.
  [[gnu::always_inline]] void prefetch(PageId id, const std::byte* leaf, Word kw) const {
    const Window w = window(id, kw);
    const std::byte* first = leaf + kHeaderSize + w.from * w.stride;
    if (w.stride == kFixedSlotSize) {
      prefetch_slots<kFixedSlotSize, Node::kFixedSearchWindow>(first);
    } else if (w.stride == kLeafSlotSize) {
      prefetch_slots<kLeafSlotSize, Node::kSearchWindow>(first);
    }
  }

 private:
  // shape: 0 for no entry, else bits 0-31 the count per unit of 2^11 of
  // word space (a float), 32-47 the count (at least the window), 48 set for
  // a fixed-shape leaf.
  struct Entry {
    std::atomic<Word> lo{0};
    std::atomic<std::uint64_t> shape{0};
  };
  static constexpr unsigned kChunkBits = 12;  // 4096 entries (64 KiB) per chunk
  static constexpr std::size_t kChunkMask = (std::size_t{1} << kChunkBits) - 1;
  // PageStore's limit of 2^24 pages.
  static constexpr std::size_t kMaxChunks = (std::size_t{1} << 24) >> kChunkBits;

  [[gnu::always_inline]] const Entry* entry(PageId id) const {
    const std::size_t c = id >> kChunkBits;
    if (c >= kMaxChunks) return nullptr;
    const Entry* chunk = chunks_[c].load(std::memory_order_acquire);
    return chunk == nullptr ? nullptr : &chunk[id & kChunkMask];
  }
  // What record() stores for `page`: its lo word and shape (0: no entry).
  static std::pair<Word, std::uint64_t> entry_of(const std::byte* page);

  std::unique_ptr<std::atomic<Entry*>[]> chunks_;
  std::mutex grow_mu_;  // serialises chunk allocation
};

}  // namespace forein::detail
