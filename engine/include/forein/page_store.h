// Page stores: fixed-size pages addressed by PageId.
//
// Layout convention shared by every store and the tree:
//   bytes [0, 8)   a latch word that lives only in memory (persisted as 0);
//   bytes [8, 12)  CRC32C of the page, computed with bytes [0, 12) as zero;
//   bytes [12, 16) page magic; 0 means "free page".
// The store owns the checksum; the tree owns everything from byte 12 on.
//
// Page frames never move once allocated, so a pointer from page() stays
// valid for the store's lifetime, and readers reach it without locks.
// Page 0 is reserved for the tree's meta page.
//
// A store may also hold its pages on demand (set_source): page() then
// reads a page from its PageSource the first time it is asked for, and the
// host evicts clean pages (trim) to bound memory. See PageSource.
#pragma once

#include <atomic>
#include <functional>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace forein {

using PageId = std::uint32_t;
inline constexpr PageId kNoPage = 0;  // page 0 is the meta page, never a node

inline constexpr std::uint32_t kMinPageSize = 4096;
inline constexpr std::uint32_t kMaxPageSize = 32768;
inline constexpr std::uint32_t kDefaultPageSize = 8192;
inline constexpr std::size_t kPageLatchBytes = 8;
inline constexpr std::size_t kPageChecksumOffset = 8;
inline constexpr std::size_t kPageMagicOffset = 12;

// Where an on-demand store's pages come from (a host's storage, e.g. the
// SQLite shadow table). An on-demand store is for one thread at a time:
// page() fills frames without synchronisation.
class PageSource {
 public:
  virtual ~PageSource() = default;
  // Fills `frame` (page_size bytes) with page `id` as stored, or with zeros
  // when it is not stored (a free page). Throws on a damaged page.
  virtual void read_page(PageId id, std::byte* frame) = 0;
  // The ids below `count` whose stored image is free (magic 0) or which
  // are not stored at all. Called before the first allocation after
  // open or forget_free_list(), so opening reads no page to find them.
  virtual std::vector<PageId> stored_free_pages(PageId count) = 0;
};

class PageStore {
 public:
  // page_size: a power of two in [kMinPageSize, kMaxPageSize], else
  // InvalidArgument.
  explicit PageStore(std::uint32_t page_size);
  virtual ~PageStore();
  PageStore(const PageStore&) = delete;
  PageStore& operator=(const PageStore&) = delete;

  std::uint32_t page_size() const { return page_size_; }

  // Number of page ids handed out so far (free ones included).
  PageId page_count() const { return page_count_.load(std::memory_order_acquire); }

  // The frame of page `id`, or nullptr when id >= page_count(). Lock-free
  // (an on-demand store reads a missing page from its source first).
  std::byte* page(PageId id) const {
    if (id >= page_count()) return nullptr;
    std::byte* frame = frame_of(id);
    if (source_ != nullptr) [[unlikely]] touch(id, frame);
    return frame;
  }

  // A page id for a new page: a freed one if any, else a fresh zeroed one.
  // The bytes of a reused page are left as they were: the caller
  // initialises them under the page latch, since a reader holding a stale
  // id may still be looking at it.
  PageId allocate();

  // Returns `id` to the free list. The caller guarantees nothing can reach
  // the page any more, and has already cleared its magic.
  void free(PageId id);

  // Records that `id` changed and must be written by the next sync().
  void mark_dirty(PageId id);

  // Makes every change since the last sync durable. Callers must not modify
  // pages concurrently with sync().
  virtual void sync() {}

  // Pages on the free list (for tests and stats).
  std::size_t free_page_count() const;

  // ---- on-demand stores (set_source); no-ops or trivial otherwise ----
  bool on_demand() const { return source_ != nullptr; }
  bool resident(PageId id) const;
  // The frame of page `id` if it is in memory, else nullptr; unlike
  // page(), it reads nothing from the source and does not mark the page
  // recently used (for a host that inspects its cache between operations).
  const std::byte* peek(PageId id) const {
    return resident(id) ? frame_of(id) : nullptr;
  }
  std::size_t resident_pages() const { return resident_count_; }
  // Pages read from the source so far.
  std::uint64_t pages_fetched() const { return fetched_; }
  // Drops page `id`'s frame (its memory goes back to the system); the next
  // page(id) reads it from the source again, with a new latch version, so
  // an optimistic reader of the old frame restarts. The caller guarantees
  // the page is clean (as stored) and that no operation is running.
  void evict(PageId id);
  // Evicts clean, unlatched pages least recently asked for (CLOCK) until
  // at most `limit` are resident; pages for which keep(id) holds, pages
  // marked dirty and page 0 stay. Call it between operations only: a
  // running operation holds pointers into frames. Returns pages evicted.
  std::size_t trim(std::size_t limit, const std::function<bool(PageId)>& keep);
  // Replaces page `id`'s bytes after the latch word with `image`
  // (page_size bytes) and gives the frame a fresh latch version, so a
  // reader that remembered the old version (an in-place cursor, see
  // ScanSpec::in_place) looks again. On-demand stores only (else
  // InvalidArgument), between operations.
  void overwrite(PageId id, const std::byte* image);
  // The free list is rebuilt from the source before the next allocation
  // (after the host replaced pages underneath).
  void forget_free_list();
  // Called with each frame an on-demand store fills from its source or
  // overwrites, for an owner that keeps facts about pages' contents (the
  // tree's search-window table). One call at a time, like the rest of the
  // on-demand state.
  void set_frame_observer(std::function<void(PageId, const std::byte*)> observer) {
    frame_observer_ = std::move(observer);
  }

 protected:
  static constexpr unsigned kChunkBits = 10;  // 1024 pages per chunk
  static constexpr PageId kChunkMask = (PageId{1} << kChunkBits) - 1;
  static constexpr std::size_t kMaxChunks = std::size_t{1} << 14;  // 16M pages

  // Grows the store to hold `count` page ids (used when loading a file).
  void grow_to(PageId count);
  // Calls fn(id) for every page marked dirty since the last call, and
  // clears the marks.
  void drain_dirty(const std::function<void(PageId)>& fn);
  // Rebuilds the free list from page magics (used when loading a file).
  void rebuild_free_list();
  // Makes the store on demand: its `count` pages are read from `source`
  // (not owned) when first asked for. Call once, on an empty store.
  void set_source(PageSource* source, PageId count);
  // Raises page_count() to `count` (an on-demand store's pages beyond the
  // old count are not resident).
  void extend_to(PageId count) { grow_to(count); }
  bool tracks_dirty_ = false;

 private:
  struct DirtyFlags;  // one flag per page of a chunk
  std::size_t chunk_bytes() const { return std::size_t{page_size_} << kChunkBits; }
  // Maps chunk `index` unless already mapped. Caller holds alloc_mu_.
  void map_chunk(std::size_t index);
  // Raises page_count_ to `count`, mapping chunks first. Caller holds alloc_mu_.
  void raise_page_count(PageId count);

  std::byte* frame_of(PageId id) const {
    std::byte* chunk = chunks_[id >> kChunkBits].load(std::memory_order_acquire);
    return chunk + static_cast<std::size_t>(id & kChunkMask) * page_size_;
  }
  // page()'s slow path for on-demand stores: fills a missing frame from
  // the source and marks the page recently used.
  void touch(PageId id, std::byte* frame) const;
  void advise_huge_pages() const;
  bool dirty(PageId id) const;
  // Loads the free list from the source if forgotten. Caller holds alloc_mu_.
  void ensure_free_list();

  const std::uint32_t page_size_;
  std::atomic<PageId> page_count_{0};
  // On-demand state (unsynchronised: one thread at a time, see PageSource).
  PageSource* source_ = nullptr;
  static constexpr std::uint8_t kResident = 1, kReferenced = 2;
  mutable std::vector<std::uint8_t> residency_;  // per page id
  mutable std::size_t resident_count_ = 0;
  mutable std::uint64_t fetched_ = 0;
  // An on-demand store's chunks ask for huge pages once half its pages are
  // resident (map_chunk, touch).
  mutable bool huge_pages_ = false;
  // Latch word of a freshly read frame: above any version the page had in
  // an earlier frame (versions advance by 1 per write).
  mutable std::uint64_t next_frame_version_ = std::uint64_t{1} << 32;
  PageId clock_hand_ = 0;
  bool free_list_known_ = true;
  std::function<void(PageId, const std::byte*)> frame_observer_;
  // chunks_[i] holds pages [i << kChunkBits, (i + 1) << kChunkBits).
  std::unique_ptr<std::atomic<std::byte*>[]> chunks_;
  std::unique_ptr<std::atomic<DirtyFlags*>[]> dirty_;  // parallel to chunks_
  mutable std::mutex alloc_mu_;
  std::vector<PageId> free_list_;  // popped from the back
};

// Pages in process memory; gone when the store is destroyed.
class MemoryPageStore final : public PageStore {
 public:
  explicit MemoryPageStore(std::uint32_t page_size = kDefaultPageSize) : PageStore(page_size) {}
};

// Pages in a file. The whole file is read (and every checksum verified) at
// open; sync() writes the dirty pages and then the file header. The file is
// a checkpoint, not a log: hosts own durability (PostgreSQL WAL, SQLite
// journal). File layout: a header block of page_size bytes (magic
// "FOREINPG", format version, page size, page count, header CRC32C), then
// page i at offset (i + 1) * page_size.
class FilePageStore final : public PageStore {
 public:
  // Creates (or truncates) `path`. Throws IoError.
  static std::unique_ptr<FilePageStore> create(const std::string& path,
                                               std::uint32_t page_size = kDefaultPageSize);
  // Opens an existing file, verifying header and every page's checksum.
  // Throws CorruptionError naming the page, or IoError.
  static std::unique_ptr<FilePageStore> open(const std::string& path);

  ~FilePageStore() override;
  void sync() override;
  const std::string& path() const { return path_; }

 private:
  FilePageStore(std::string path, int fd, std::uint32_t page_size);
  void write_header();

  std::string path_;
  int fd_ = -1;
};

// CRC32C (Castagnoli) of `len` bytes, continuing from `crc`.
std::uint32_t crc32c(const void* data, std::size_t len, std::uint32_t crc = 0);

}  // namespace forein
