// FilePageStore: persistence round trips and corruption detection.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "forein/error.h"
#include "forein/page_store.h"
#include "support/seed.h"

using namespace forein;
namespace fs = std::filesystem;

namespace {

// Header field offsets, as documented in file_page_store.cc.
constexpr std::uint64_t kVersionField = 8;
constexpr std::uint64_t kPageSizeField = 12;
constexpr std::uint64_t kPageCountField = 16;
constexpr std::uint64_t kHeaderCrcField = 20;

// A fresh directory under the system temp dir, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    dir_ = fs::temp_directory_path() /
           ("forein-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(dir_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

 private:
  fs::path dir_;
};

std::uint64_t page_offset(PageId id, std::uint32_t page_size) {
  return (std::uint64_t{id} + 1) * page_size;
}

// Gives a page a nonzero magic and random contents after it.
void fill_page(PageStore& store, PageId id, std::mt19937_64& rng) {
  std::byte* p = store.page(id);
  const std::uint32_t magic = 0xF0E1D2C3;
  std::memcpy(p + kPageMagicOffset, &magic, sizeof magic);
  for (std::size_t i = kPageMagicOffset + 4; i < store.page_size(); ++i) {
    p[i] = static_cast<std::byte>(rng());
  }
  store.mark_dirty(id);
}

// The bytes the tree owns, from the magic on.
std::vector<std::byte> tree_bytes(const PageStore& store, PageId id) {
  const std::byte* p = store.page(id);
  return {p + kPageMagicOffset, p + store.page_size()};
}

bool latch_is_zero(const PageStore& store, PageId id) {
  for (std::size_t i = 0; i < kPageLatchBytes; ++i) {
    if (store.page(id)[i] != std::byte{0}) return false;
  }
  return true;
}

// Writes a file of `pages` filled pages and returns their contents.
std::vector<std::vector<std::byte>> make_file(const std::string& path, std::uint32_t page_size,
                                              PageId pages, std::mt19937_64& rng) {
  auto store = FilePageStore::create(path, page_size);
  std::vector<std::vector<std::byte>> contents;
  for (PageId id = 0; id < pages; ++id) {
    REQUIRE(store->allocate() == id);
    fill_page(*store, id, rng);
    contents.push_back(tree_bytes(*store, id));
  }
  store->sync();
  return contents;
}

void patch(const std::string& path, std::uint64_t offset, const void* data, std::size_t len) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(f);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(len));
  REQUIRE(f);
}

std::vector<unsigned char> read_bytes(const std::string& path, std::uint64_t offset,
                                      std::size_t len) {
  std::ifstream f(path, std::ios::binary);
  std::vector<unsigned char> out(len);
  f.seekg(static_cast<std::streamoff>(offset));
  f.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(len));
  REQUIRE(f);
  return out;
}

void flip_byte(const std::string& path, std::uint64_t offset) {
  unsigned char b = read_bytes(path, offset, 1)[0] ^ 0x20;
  patch(path, offset, &b, 1);
}

void write_le32(const std::string& path, std::uint64_t offset, std::uint32_t v) {
  const unsigned char b[4] = {static_cast<unsigned char>(v), static_cast<unsigned char>(v >> 8),
                              static_cast<unsigned char>(v >> 16),
                              static_cast<unsigned char>(v >> 24)};
  patch(path, offset, b, sizeof b);
}

// Makes the header checksum match edited header fields.
void fix_header_crc(const std::string& path) {
  const std::vector<unsigned char> fields = read_bytes(path, 0, kHeaderCrcField);
  write_le32(path, kHeaderCrcField, crc32c(fields.data(), fields.size()));
}

#define CHECK_CORRUPT(path, fragment)                                                     \
  CHECK_THROWS_MATCHES(FilePageStore::open(path), CorruptionError,                        \
                       Catch::Matchers::Predicate<std::exception>(                        \
                           [&](const std::exception& e) {                                 \
                             const std::string m = e.what();                              \
                             return m.find(path) != std::string::npos &&                  \
                                    m.find(fragment) != std::string::npos;                \
                           },                                                             \
                           std::string("message names the file and ") + (fragment)))

}  // namespace

TEST_CASE("file store round-trips pages across close and reopen", "[file_store]") {
  TempDir dir;
  const std::string path = dir.file("pages.db");
  const std::uint32_t page_size = GENERATE(kMinPageSize, kMaxPageSize);
  std::mt19937_64 rng(testing::test_seed("file round trip"));
  const PageId pages = page_size == kMinPageSize ? 2500 : 300;  // the former spans 3 chunks
  std::vector<std::vector<std::byte>> contents;
  std::set<PageId> free_ids;
  {
    auto store = FilePageStore::create(path, page_size);
    CHECK(fs::file_size(path) == page_size);
    CHECK(store->path() == path);
    for (PageId id = 0; id < pages; ++id) {
      REQUIRE(store->allocate() == id);
      if (id > 0 && rng() % 5 == 0) {
        free_ids.insert(id);  // never written: magic stays 0
      } else {
        fill_page(*store, id, rng);
      }
      contents.push_back(tree_bytes(*store, id));
    }
    // Held latches must neither reach the file nor be disturbed by sync().
    std::memset(store->page(1), 0x5A, kPageLatchBytes);
    store->sync();
    CHECK(store->page(1)[0] == std::byte{0x5A});
  }
  CHECK(fs::file_size(path) == page_offset(pages, page_size));
  const std::vector<unsigned char> magic = read_bytes(path, 0, 8);
  CHECK(std::string(magic.begin(), magic.end()) == "FOREINPG");

  auto store = FilePageStore::open(path);
  CHECK(store->page_size() == page_size);
  REQUIRE(store->page_count() == pages);
  for (PageId id = 0; id < pages; ++id) {
    REQUIRE(tree_bytes(*store, id) == contents[id]);
    REQUIRE(latch_is_zero(*store, id));
  }
  CHECK(store->free_page_count() == free_ids.size());
}

TEST_CASE("reopen keeps the free list", "[file_store]") {
  TempDir dir;
  const std::string path = dir.file("free.db");
  std::mt19937_64 rng(testing::test_seed("file free list"));
  make_file(path, kMinPageSize, 10, rng);
  {
    auto store = FilePageStore::open(path);
    CHECK(store->free_page_count() == 0);
    for (PageId id : {3u, 5u, 7u}) {
      std::memset(store->page(id) + kPageMagicOffset, 0, 4);  // the caller clears the magic
      store->free(id);
    }
    store->sync();
  }
  auto store = FilePageStore::open(path);
  CHECK(store->free_page_count() == 3);
  std::set<PageId> reused;
  for (int i = 0; i < 3; ++i) reused.insert(store->allocate());
  CHECK(reused == std::set<PageId>{3, 5, 7});
  CHECK(store->allocate() == 10);
}

TEST_CASE("sync writes changed and new pages, close without sync drops changes",
          "[file_store]") {
  TempDir dir;
  const std::string path = dir.file("incremental.db");
  std::mt19937_64 rng(testing::test_seed("file incremental sync"));
  auto contents = make_file(path, kMinPageSize, 3, rng);
  {
    auto store = FilePageStore::open(path);
    fill_page(*store, 1, rng);
    contents[1] = tree_bytes(*store, 1);
    REQUIRE(store->allocate() == 3);
    fill_page(*store, 3, rng);
    contents.push_back(tree_bytes(*store, 3));
    REQUIRE(store->allocate() == 4);  // allocated, never written: still persisted
    contents.push_back(tree_bytes(*store, 4));
    store->sync();
  }
  {
    auto store = FilePageStore::open(path);
    REQUIRE(store->page_count() == 5);
    for (PageId id = 0; id < 5; ++id) REQUIRE(tree_bytes(*store, id) == contents[id]);
    CHECK(store->free_page_count() == 1);
    // Dropped by the destructor: no sync.
    fill_page(*store, 2, rng);
    store->allocate();
    store->allocate();
  }
  auto store = FilePageStore::open(path);
  REQUIRE(store->page_count() == 5);
  CHECK(tree_bytes(*store, 2) == contents[2]);
}

TEST_CASE("latch bytes on disk are not checksummed and are cleared at open", "[file_store]") {
  TempDir dir;
  const std::string path = dir.file("latch.db");
  std::mt19937_64 rng(testing::test_seed("file latch bytes"));
  make_file(path, kMinPageSize, 3, rng);
  const unsigned char junk[kPageLatchBytes] = {1, 2, 3, 4, 5, 6, 7, 8};
  patch(path, page_offset(1, kMinPageSize), junk, sizeof junk);
  auto store = FilePageStore::open(path);
  CHECK(latch_is_zero(*store, 1));
}

TEST_CASE("an all-zero page is a never-written free page", "[file_store]") {
  TempDir dir;
  const std::string path = dir.file("zero.db");
  std::mt19937_64 rng(testing::test_seed("file zero page"));
  make_file(path, kMinPageSize, 4, rng);
  const std::vector<char> zeros(kMinPageSize, 0);
  patch(path, page_offset(2, kMinPageSize), zeros.data(), zeros.size());
  {
    auto store = FilePageStore::open(path);
    CHECK(store->free_page_count() == 1);
    CHECK(store->allocate() == 2);
  }
  // A zero checksum does not excuse a page with content.
  const unsigned char one = 1;
  patch(path, page_offset(2, kMinPageSize) + 100, &one, 1);
  CHECK_CORRUPT(path, "page 2");
}

TEST_CASE("damaged pages are reported by page number", "[file_store]") {
  TempDir dir;
  const std::string path = dir.file("damaged.db");
  std::mt19937_64 rng(testing::test_seed("file damaged page"));
  make_file(path, kMinPageSize, 5, rng);

  SECTION("flipped content byte") {
    flip_byte(path, page_offset(3, kMinPageSize) + 100);
    CHECK_CORRUPT(path, "page 3: checksum");
  }
  SECTION("flipped magic byte") {
    flip_byte(path, page_offset(4, kMinPageSize) + kPageMagicOffset);
    CHECK_CORRUPT(path, "page 4: checksum");
  }
  SECTION("flipped checksum byte") {
    flip_byte(path, page_offset(0, kMinPageSize) + kPageChecksumOffset + 2);
    CHECK_CORRUPT(path, "page 0: checksum");
  }
  SECTION("flipped last byte") {
    flip_byte(path, page_offset(1, kMinPageSize) + kMinPageSize - 1);
    CHECK_CORRUPT(path, "page 1: checksum");
  }
}

TEST_CASE("damaged headers are reported", "[file_store]") {
  TempDir dir;
  const std::string path = dir.file("header.db");
  std::mt19937_64 rng(testing::test_seed("file damaged header"));
  make_file(path, kMinPageSize, 3, rng);

  SECTION("bad magic") {
    flip_byte(path, 2);
    CHECK_CORRUPT(path, "header: bad magic");
  }
  SECTION("unsupported version") {
    write_le32(path, kVersionField, 2);
    CHECK_CORRUPT(path, "header: unsupported format version 2");
    fix_header_crc(path);
    CHECK_CORRUPT(path, "header: unsupported format version 2");
  }
  SECTION("bad page size") {
    write_le32(path, kPageSizeField, 1000);
    fix_header_crc(path);
    CHECK_CORRUPT(path, "header: bad page size 1000");
  }
  SECTION("bad header checksum") {
    flip_byte(path, kPageCountField);
    CHECK_CORRUPT(path, "header: checksum");
  }
  SECTION("page count beyond the file") {
    write_le32(path, kPageCountField, 4);
    fix_header_crc(path);
    CHECK_CORRUPT(path, "page 3: truncated");
  }
  SECTION("trailing bytes past the last page") {
    fs::resize_file(path, page_offset(3, kMinPageSize) + 10);
    CHECK_CORRUPT(path, "page 3: size mismatch");
  }
}

TEST_CASE("truncated files are reported", "[file_store]") {
  TempDir dir;
  const std::string path = dir.file("short.db");
  std::mt19937_64 rng(testing::test_seed("file truncated"));
  make_file(path, kMinPageSize, 4, rng);

  SECTION("cut mid-page") {
    fs::resize_file(path, page_offset(2, kMinPageSize) + kMinPageSize / 2);
    CHECK_CORRUPT(path, "page 2: truncated");
  }
  SECTION("last page missing") {
    fs::resize_file(path, page_offset(3, kMinPageSize));
    CHECK_CORRUPT(path, "page 3: truncated");
  }
  SECTION("only the header block") {
    fs::resize_file(path, kMinPageSize);
    CHECK_CORRUPT(path, "page 0: truncated");
  }
  SECTION("cut inside the header block") {
    fs::resize_file(path, 100);
    CHECK_CORRUPT(path, "header: truncated");
  }
  SECTION("cut inside the header fields") {
    fs::resize_file(path, 10);
    CHECK_CORRUPT(path, "header: truncated");
  }
  SECTION("zero-length file") {
    fs::resize_file(path, 0);
    CHECK_CORRUPT(path, "header: truncated");
  }
}

TEST_CASE("file store I/O errors and bad arguments", "[file_store]") {
  TempDir dir;
  const std::string missing = dir.file("missing.db");
  CHECK_THROWS_AS(FilePageStore::open(missing), IoError);
  CHECK_THROWS_WITH(FilePageStore::open(missing), Catch::Contains(missing));
  CHECK_THROWS_AS(FilePageStore::create(dir.file("no/such/dir.db")), IoError);

  const std::string bad_size = dir.file("bad_size.db");
  CHECK_THROWS_AS(FilePageStore::create(bad_size, 1000), InvalidArgument);
  CHECK_FALSE(fs::exists(bad_size));
}
