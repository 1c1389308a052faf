// PageStore: a chunked page directory with a free list and dirty marks.
//
// Chunks of 1024 pages come from anonymous mmap: zeroed, page-aligned and
// only backed by memory once touched. A chunk never moves, and its pointer
// is published (release) before page_count_ covers it, so page() needs no
// lock. Dirty marks are one atomic byte per page, allocated with the chunk,
// so mark_dirty() is a plain store on the write path.
//
// An on-demand store (set_source) starts with no page resident. page()
// reads a missing page from the source into its frame; evict() hands the
// frame's memory back (MADV_DONTNEED: the next touch maps a zero page), so
// frames still never move and resident memory is what the host keeps.
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <new>

#include "forein/error.h"
#include "forein/page_store.h"

namespace forein {
namespace {

std::uint32_t checked_page_size(std::uint32_t page_size) {
  const bool power_of_two = (page_size & (page_size - 1)) == 0;
  if (page_size < kMinPageSize || page_size > kMaxPageSize || !power_of_two) {
    throw InvalidArgument("page size " + std::to_string(page_size) +
                          " is not a power of two in [" + std::to_string(kMinPageSize) + ", " +
                          std::to_string(kMaxPageSize) + "]");
  }
  return page_size;
}

}  // namespace

struct PageStore::DirtyFlags {
  std::atomic<std::uint8_t> flag[std::size_t{1} << kChunkBits];
};

PageStore::PageStore(std::uint32_t page_size)
    : page_size_(checked_page_size(page_size)),
      chunks_(std::make_unique<std::atomic<std::byte*>[]>(kMaxChunks)),
      dirty_(std::make_unique<std::atomic<DirtyFlags*>[]>(kMaxChunks)) {}

PageStore::~PageStore() {
  // Chunks are mapped in index order, so the first gap ends the list.
  for (std::size_t i = 0; i < kMaxChunks; ++i) {
    std::byte* chunk = chunks_[i].load(std::memory_order_relaxed);
    if (chunk == nullptr) break;
    ::munmap(chunk, chunk_bytes());
    delete dirty_[i].load(std::memory_order_relaxed);
  }
}

void PageStore::map_chunk(std::size_t index) {
  if (chunks_[index].load(std::memory_order_relaxed) != nullptr) return;
  auto flags = std::make_unique<DirtyFlags>();
  void* frames = ::mmap(nullptr, chunk_bytes(), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (frames == MAP_FAILED) throw std::bad_alloc();
  // Lookups touch pages at random: huge pages spare a TLB miss per node, in
  // a store that holds its pages. Not in an on-demand store (set_source
  // maps its chunks) while it holds few: it reads pages one at a time into
  // mostly empty chunks, so a huge page would make each first read in a
  // 2 MiB region fault in (zero, and with THP defrag first compact) 2 MiB:
  // 4-33 ms per query for a SQLite connection reading a few pages after
  // another connection's commit (docs/sqlite-benchmark.md, "Many
  // connections"). Once it holds half its pages, touch() or allocate() ask for huge
  // pages after all (advise_huge_pages). Advisory; the kernel may decline,
  // which only costs speed.
  const bool huge = source_ == nullptr || huge_pages_;
  ::madvise(frames, chunk_bytes(), huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  dirty_[index].store(flags.release(), std::memory_order_release);
  chunks_[index].store(static_cast<std::byte*>(frames), std::memory_order_release);
}

void PageStore::raise_page_count(PageId count) {
  constexpr std::size_t kMaxPages = kMaxChunks << kChunkBits;
  if (count > kMaxPages) {
    throw Error("page store full: " + std::to_string(count) + " pages requested, at most " +
                std::to_string(kMaxPages));
  }
  const PageId old_count = page_count_.load(std::memory_order_relaxed);
  if (count <= old_count) return;
  for (std::size_t i = old_count >> kChunkBits; i <= (count - 1) >> kChunkBits; ++i) map_chunk(i);
  if (source_ != nullptr) residency_.resize(count, 0);
  page_count_.store(count, std::memory_order_release);
}

void PageStore::grow_to(PageId count) {
  std::lock_guard lock(alloc_mu_);
  raise_page_count(count);
}

PageId PageStore::allocate() {
  PageId id;
  {
    std::lock_guard lock(alloc_mu_);
    ensure_free_list();
    if (!free_list_.empty()) {
      id = free_list_.back();
      free_list_.pop_back();
      return id;
    }
    id = page_count_.load(std::memory_order_relaxed);
    raise_page_count(id + 1);
    if (source_ != nullptr) {
      // A new id is stored nowhere yet: its zeroed frame is the page.
      residency_[id] = kResident | kReferenced;
      ++resident_count_;
      if (!huge_pages_ && 2 * resident_count_ >= page_count()) advise_huge_pages();
    }
  }
  // A fresh page must reach a persistent store even if nobody writes it.
  mark_dirty(id);
  return id;
}

void PageStore::free(PageId id) {
  if (id == kNoPage || id >= page_count()) {
    throw InvalidArgument("free: page " + std::to_string(id) + " is not a freeable page");
  }
  {
    std::lock_guard lock(alloc_mu_);
    // A rebuilt list already holds `id`: its frame's magic is cleared.
    const bool known = free_list_known_;
    ensure_free_list();
    if (known) free_list_.push_back(id);
  }
  // The cleared magic must be persisted so reopening finds the page free.
  mark_dirty(id);
}

void PageStore::mark_dirty(PageId id) {
  if (!tracks_dirty_) return;
  if (id >= page_count()) {
    throw InvalidArgument("mark_dirty: page " + std::to_string(id) + " does not exist");
  }
  DirtyFlags* flags = dirty_[id >> kChunkBits].load(std::memory_order_acquire);
  std::atomic<std::uint8_t>& flag = flags->flag[id & kChunkMask];
  // Skip the store when already set, so hot pages do not bounce cache lines.
  if (flag.load(std::memory_order_relaxed) == 0) flag.store(1, std::memory_order_relaxed);
}

void PageStore::drain_dirty(const std::function<void(PageId)>& fn) {
  const PageId count = page_count();
  for (PageId first = 0; first < count; first += PageId{1} << kChunkBits) {
    DirtyFlags* flags = dirty_[first >> kChunkBits].load(std::memory_order_acquire);
    const PageId n = std::min<PageId>(count - first, PageId{1} << kChunkBits);
    for (PageId k = 0; k < n; ++k) {
      if (flags->flag[k].load(std::memory_order_relaxed) == 0) continue;
      fn(first + k);
      // Cleared only after fn succeeds, so a failed write stays marked.
      flags->flag[k].store(0, std::memory_order_relaxed);
    }
  }
}

void PageStore::rebuild_free_list() {
  std::lock_guard lock(alloc_mu_);
  free_list_.clear();
  // Descending, so allocate() hands out the lowest free ids first.
  for (PageId id = page_count_.load(std::memory_order_relaxed); id-- > 1;) {
    std::uint32_t magic;
    std::memcpy(&magic, page(id) + kPageMagicOffset, sizeof magic);
    if (magic == 0) free_list_.push_back(id);
  }
}

std::size_t PageStore::free_page_count() const {
  std::lock_guard lock(alloc_mu_);
  const_cast<PageStore*>(this)->ensure_free_list();
  return free_list_.size();
}

// ---------------------------------------------------------- on demand

void PageStore::set_source(PageSource* source, PageId count) {
  if (page_count() != 0 || source == nullptr) {
    throw InvalidArgument("set_source: needs an empty store and a source");
  }
  std::lock_guard lock(alloc_mu_);
  source_ = source;
  raise_page_count(count);
  free_list_known_ = false;
}

void PageStore::touch(PageId id, std::byte* frame) const {
  std::uint8_t& state = residency_[id];
  if ((state & kResident) == 0) {
    source_->read_page(id, frame);
    // The source wrote latch word 0; a fresh version makes optimistic
    // readers of an earlier frame of this page restart.
    std::memcpy(frame, &next_frame_version_, sizeof next_frame_version_);
    next_frame_version_ += std::uint64_t{1} << 32;
    ++resident_count_;
    ++fetched_;
    if (frame_observer_) frame_observer_(id, frame);
    if (!huge_pages_ && 2 * resident_count_ >= page_count()) advise_huge_pages();
  }
  state = kResident | kReferenced;
}

// A mostly resident on-demand store (a fully cached SQLite table) gets its
// TLB reach back: its 2 MiB regions are mostly populated by now, so the
// kernel collapses them in the background (khugepaged) rather than at a
// fault, and only a still empty region faults in a huge page, once.
void PageStore::advise_huge_pages() const {
  huge_pages_ = true;
  for (std::size_t i = 0; i < kMaxChunks; ++i) {
    std::byte* chunk = chunks_[i].load(std::memory_order_relaxed);
    if (chunk == nullptr) break;
    ::madvise(chunk, chunk_bytes(), MADV_HUGEPAGE);
  }
}

bool PageStore::resident(PageId id) const {
  if (id >= page_count()) return false;
  return source_ == nullptr || (residency_[id] & kResident) != 0;
}

bool PageStore::dirty(PageId id) const {
  if (!tracks_dirty_) return false;
  const DirtyFlags* flags = dirty_[id >> kChunkBits].load(std::memory_order_acquire);
  return flags->flag[id & kChunkMask].load(std::memory_order_relaxed) != 0;
}

void PageStore::evict(PageId id) {
  if (source_ == nullptr || !resident(id)) return;
  if (dirty(id)) throw InvalidArgument("evict: page " + std::to_string(id) + " is dirty");
  std::byte* frame = frame_of(id);
  // Frames are page_size-aligned and page_size is a multiple of 4 KiB.
  if (::madvise(frame, page_size_, MADV_DONTNEED) != 0) std::memset(frame, 0, page_size_);
  residency_[id] = 0;
  --resident_count_;
}

std::size_t PageStore::trim(std::size_t limit, const std::function<bool(PageId)>& keep) {
  if (source_ == nullptr || resident_count_ <= limit) return 0;
  const PageId count = page_count();
  std::size_t evicted = 0;
  // Two sweeps: the first may only clear reference bits.
  for (std::size_t seen = 0; seen < 2 * std::size_t{count} && resident_count_ > limit; ++seen) {
    const PageId id = clock_hand_;
    clock_hand_ = id + 1 < count ? id + 1 : 0;
    std::uint8_t& state = residency_[id];
    if ((state & kResident) == 0 || id == 0) continue;
    if ((state & kReferenced) != 0) {
      state &= static_cast<std::uint8_t>(~kReferenced);
      continue;
    }
    std::uint64_t latch;
    std::memcpy(&latch, frame_of(id), sizeof latch);
    if ((latch >> 63) != 0 || dirty(id) || keep(id)) continue;
    evict(id);
    ++evicted;
  }
  return evicted;
}

void PageStore::overwrite(PageId id, const std::byte* image) {
  if (source_ == nullptr || id >= page_count()) {
    throw InvalidArgument("overwrite: page " + std::to_string(id) + " of a store that is not on demand");
  }
  std::byte* frame = page(id);
  std::memcpy(frame + kPageLatchBytes, image + kPageLatchBytes, page_size_ - kPageLatchBytes);
  std::memcpy(frame, &next_frame_version_, sizeof next_frame_version_);
  next_frame_version_ += std::uint64_t{1} << 32;
  if (frame_observer_) frame_observer_(id, frame);
}

void PageStore::forget_free_list() {
  if (source_ == nullptr) return;
  std::lock_guard lock(alloc_mu_);
  free_list_.clear();
  free_list_known_ = false;
}

// A resident frame is the truth for its page (it may differ from the
// stored image inside a transaction); a missing one is as stored.
void PageStore::ensure_free_list() {
  if (free_list_known_) return;
  const PageId count = page_count_.load(std::memory_order_relaxed);
  std::vector<PageId> ids;
  for (PageId id : source_->stored_free_pages(count)) {
    if (id != kNoPage && id < count && (residency_[id] & kResident) == 0) ids.push_back(id);
  }
  for (PageId id = 1; id < count; ++id) {
    if ((residency_[id] & kResident) == 0) continue;
    std::uint32_t magic;
    std::memcpy(&magic, frame_of(id) + kPageMagicOffset, sizeof magic);
    if (magic == 0) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end(), std::greater<>());  // lowest ids handed out first
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  free_list_ = std::move(ids);
  free_list_known_ = true;
}

}  // namespace forein
