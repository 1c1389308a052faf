// FilePageStore: pages in a file, loaded whole at open, written at sync().
//
// File layout. A header block of page_size bytes (fields little-endian, the
// rest zero):
//   [0, 8)   magic "FOREINPG"
//   [8, 12)  format version (1)
//   [12, 16) page size
//   [16, 20) page count
//   [20, 24) CRC32C of bytes [0, 20)
// then page i at offset (i + 1) * page_size. A page's bytes [0, 8) (its
// latch) are written as zero; bytes [8, 12) hold its CRC32C, little-endian,
// computed over the whole page with bytes [0, 12) taken as zero.
//
// Free-page rule: a page whose bytes are all zero (checksum field included)
// is accepted without a checksum match, as a page that was never written;
// its magic is 0, so it lands on the free list. sync() gives every page it
// writes a real checksum (the CRC of a zero page is not 0), so the rule only
// covers holes, and a damaged page that is not entirely zero is never taken
// for a free one.
//
// sync() writes the dirty pages, then the header, then fsyncs once. The
// file is a checkpoint, not a log: a crash during sync() can leave torn
// pages, which open() reports; hosts own durability. The destructor closes
// the file without syncing, so changes since the last sync() are dropped.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "forein/error.h"
#include "forein/page_store.h"

namespace forein {
namespace {

constexpr char kMagic[8] = {'F', 'O', 'R', 'E', 'I', 'N', 'P', 'G'};
constexpr std::uint32_t kFormatVersion = 1;
constexpr std::size_t kVersionOffset = 8;
constexpr std::size_t kPageSizeOffset = 12;
constexpr std::size_t kPageCountOffset = 16;
constexpr std::size_t kHeaderCrcOffset = 20;
constexpr std::size_t kHeaderFieldBytes = 24;
constexpr std::size_t kWriteRunPages = 64;  // pages per pwrite at most

struct Header {
  std::uint32_t page_size;
  PageId page_count;
};

void store_le32(std::byte* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}

std::uint32_t load_le32(const std::byte* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint32_t>(p[i]);
  return v;
}

[[noreturn]] void throw_io(const std::string& path, const char* op) {
  throw IoError(path + ": " + op + ": " + std::strerror(errno));
}

// `where` is "header" or "page N", so every message names file and page.
[[noreturn]] void throw_corrupt(const std::string& path, const std::string& where,
                                const std::string& what) {
  throw CorruptionError(path + ": " + where + ": " + what);
}

std::string page_name(PageId id) { return "page " + std::to_string(id); }

off_t page_offset(PageId id, std::uint32_t page_size) {
  return static_cast<off_t>(id + std::uint64_t{1}) * page_size;
}

// Closes the descriptor unless released.
class UniqueFd {
 public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Reads up to `len` bytes; fewer only at end of file.
std::size_t pread_full(int fd, void* buf, std::size_t len, off_t offset, const std::string& path) {
  std::size_t done = 0;
  while (done < len) {
    const ssize_t n = ::pread(fd, static_cast<char*>(buf) + done, len - done,
                              offset + static_cast<off_t>(done));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_io(path, "read");
    }
    done += static_cast<std::size_t>(n);
  }
  return done;
}

void pwrite_full(int fd, const void* buf, std::size_t len, off_t offset, const std::string& path) {
  std::size_t done = 0;
  while (done < len) {
    const ssize_t n = ::pwrite(fd, static_cast<const char*>(buf) + done, len - done,
                               offset + static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_io(path, "write");
    }
    done += static_cast<std::size_t>(n);
  }
}

// CRC32C of a page with bytes [0, 12) taken as zero; never reads the latch.
std::uint32_t page_checksum(const std::byte* page, std::uint32_t page_size) {
  constexpr std::byte kZeros[kPageMagicOffset] = {};
  return crc32c(page + kPageMagicOffset, page_size - kPageMagicOffset,
                crc32c(kZeros, sizeof kZeros));
}

bool all_zero(const std::byte* p, std::size_t len) {
  for (std::size_t i = 0; i < len; ++i) {
    if (p[i] != std::byte{0}) return false;
  }
  return true;
}

bool valid_page_size(std::uint32_t page_size) {
  return page_size >= kMinPageSize && page_size <= kMaxPageSize &&
         (page_size & (page_size - 1)) == 0;
}

std::vector<std::byte> encode_header(std::uint32_t page_size, PageId page_count) {
  std::vector<std::byte> block(page_size);
  std::memcpy(block.data(), kMagic, sizeof kMagic);
  store_le32(&block[kVersionOffset], kFormatVersion);
  store_le32(&block[kPageSizeOffset], page_size);
  store_le32(&block[kPageCountOffset], page_count);
  store_le32(&block[kHeaderCrcOffset], crc32c(block.data(), kHeaderCrcOffset));
  return block;
}

// Version is checked before the checksum so a newer format is reported as
// such rather than as damage.
Header read_header(int fd, const std::string& path, std::uint64_t file_size) {
  std::byte f[kHeaderFieldBytes];
  if (file_size < sizeof f || pread_full(fd, f, sizeof f, 0, path) != sizeof f) {
    throw_corrupt(path, "header", "truncated: file has " + std::to_string(file_size) + " bytes");
  }
  if (std::memcmp(f, kMagic, sizeof kMagic) != 0) {
    throw_corrupt(path, "header", "bad magic: not a forein page file");
  }
  if (const std::uint32_t version = load_le32(f + kVersionOffset); version != kFormatVersion) {
    throw_corrupt(path, "header", "unsupported format version " + std::to_string(version) +
                                      " (expected " + std::to_string(kFormatVersion) + ")");
  }
  const Header h{load_le32(f + kPageSizeOffset), load_le32(f + kPageCountOffset)};
  if (!valid_page_size(h.page_size)) {
    throw_corrupt(path, "header", "bad page size " + std::to_string(h.page_size));
  }
  if (load_le32(f + kHeaderCrcOffset) != crc32c(f, kHeaderCrcOffset)) {
    throw_corrupt(path, "header", "checksum mismatch");
  }
  if (file_size < h.page_size) {
    throw_corrupt(path, "header", "truncated: file has " + std::to_string(file_size) +
                                      " bytes, header block is " + std::to_string(h.page_size));
  }
  return h;
}

// Names the first page that is cut short, or the first page past the end.
void check_file_size(const std::string& path, const Header& h, std::uint64_t file_size) {
  const std::uint64_t expected = (std::uint64_t{h.page_count} + 1) * h.page_size;
  if (file_size == expected) return;
  const std::string sizes = "file has " + std::to_string(file_size) + " bytes, " +
                            std::to_string(h.page_count) + " pages need " +
                            std::to_string(expected);
  if (file_size < expected) {
    throw_corrupt(path, page_name(static_cast<PageId>(file_size / h.page_size - 1)),
                  "truncated: " + sizes);
  }
  throw_corrupt(path, page_name(h.page_count),
                "size mismatch, header page count truncated or trailing data: " + sizes);
}

void verify_page(const std::string& path, PageId id, const std::byte* page,
                 std::uint32_t page_size) {
  const std::uint32_t stored = load_le32(page + kPageChecksumOffset);
  const std::uint32_t computed = page_checksum(page, page_size);
  if (stored == computed || (stored == 0 && all_zero(page, page_size))) return;
  throw_corrupt(path, page_name(id),
                "checksum mismatch (stored " + std::to_string(stored) + ", computed " +
                    std::to_string(computed) + ")");
}

// Reads pages [0, page_count) straight into their frames, one pread per run
// of frames that are contiguous in memory, then verifies each page.
void load_pages(const PageStore& store, int fd, const std::string& path) {
  const std::uint32_t ps = store.page_size();
  const PageId count = store.page_count();
  for (PageId first = 0; first < count;) {
    std::byte* frames = store.page(first);
    PageId n = 1;
    while (first + n < count && store.page(first + n) == frames + std::size_t{n} * ps) ++n;
    const std::size_t want = std::size_t{n} * ps;
    const std::size_t got = pread_full(fd, frames, want, page_offset(first, ps), path);
    if (got < want) {
      throw_corrupt(path, page_name(first + static_cast<PageId>(got / ps)),
                    "truncated while reading");
    }
    for (PageId id = first; id < first + n; ++id) {
      std::byte* page = store.page(id);
      verify_page(path, id, page, ps);
      std::memset(page, 0, kPageLatchBytes);  // no latch survives a reopen
    }
    first += n;
  }
}

// The on-disk image of a page: zero latch, fresh checksum.
void image_for_disk(const std::byte* page, std::uint32_t page_size, std::byte* out) {
  std::memset(out, 0, kPageMagicOffset);
  std::memcpy(out + kPageMagicOffset, page + kPageMagicOffset, page_size - kPageMagicOffset);
  store_le32(out + kPageChecksumOffset, page_checksum(page, page_size));
}

// Writes pages `ids` (ascending), one pwrite per run of consecutive ids.
void write_pages(const PageStore& store, int fd, const std::string& path,
                 const std::vector<PageId>& ids) {
  const std::uint32_t ps = store.page_size();
  std::vector<std::byte> buf;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t n = 1;
    while (i + n < ids.size() && n < kWriteRunPages && ids[i + n] == ids[i] + n) ++n;
    buf.resize(n * ps);
    for (std::size_t k = 0; k < n; ++k) image_for_disk(store.page(ids[i + k]), ps, &buf[k * ps]);
    pwrite_full(fd, buf.data(), buf.size(), page_offset(ids[i], ps), path);
    i += n;
  }
}

}  // namespace

FilePageStore::FilePageStore(std::string path, int fd, std::uint32_t page_size)
    : PageStore(page_size), path_(std::move(path)), fd_(fd) {
  tracks_dirty_ = true;
}

FilePageStore::~FilePageStore() {
  if (fd_ >= 0) ::close(fd_);
}

std::unique_ptr<FilePageStore> FilePageStore::create(const std::string& path,
                                                     std::uint32_t page_size) {
  // Constructed first so a bad page size is rejected before the file is touched.
  std::unique_ptr<FilePageStore> store(new FilePageStore(path, -1, page_size));
  store->fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (store->fd_ < 0) throw_io(path, "create");
  store->write_header();
  return store;
}

std::unique_ptr<FilePageStore> FilePageStore::open(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (fd.get() < 0) throw_io(path, "open");
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) throw_io(path, "stat");
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  const Header h = read_header(fd.get(), path, file_size);
  if (h.page_count > (kMaxChunks << kChunkBits)) {
    throw_corrupt(path, "header", "page count " + std::to_string(h.page_count) + " too large");
  }
  check_file_size(path, h, file_size);
  std::unique_ptr<FilePageStore> store(new FilePageStore(path, fd.release(), h.page_size));
  store->grow_to(h.page_count);
  load_pages(*store, store->fd_, path);
  store->rebuild_free_list();
  return store;
}

void FilePageStore::write_header() {
  const std::vector<std::byte> block = encode_header(page_size(), page_count());
  pwrite_full(fd_, block.data(), block.size(), 0, path_);
}

void FilePageStore::sync() {
  std::vector<PageId> ids;
  drain_dirty([&ids](PageId id) { ids.push_back(id); });
  try {
    write_pages(*this, fd_, path_, ids);
    write_header();
    if (::fsync(fd_) != 0) throw_io(path_, "fsync");
  } catch (...) {
    for (PageId id : ids) mark_dirty(id);  // the next sync() retries them
    throw;
  }
}

}  // namespace forein
