// PageStore base behaviour, exercised through MemoryPageStore and a probe
// subclass that turns on dirty tracking.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "forein/error.h"
#include "forein/page_store.h"
#include "support/seed.h"

using namespace forein;

namespace {

constexpr PageId kChunkPages = 1024;

// Exposes the protected dirty-tracking and free-list hooks.
class ProbeStore final : public PageStore {
 public:
  explicit ProbeStore(std::uint32_t page_size = kMinPageSize) : PageStore(page_size) {
    tracks_dirty_ = true;
  }
  std::vector<PageId> drain() {
    std::vector<PageId> ids;
    drain_dirty([&ids](PageId id) { ids.push_back(id); });
    return ids;
  }
  using PageStore::grow_to;
  using PageStore::rebuild_free_list;
};

void set_magic(PageStore& store, PageId id, std::uint32_t magic) {
  std::memcpy(store.page(id) + kPageMagicOffset, &magic, sizeof magic);
}

bool all_zero(const std::byte* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != std::byte{0}) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("page size must be a power of two in range", "[page_store]") {
  for (std::uint32_t bad : {0u, 1u, 1000u, 2048u, 4095u, 5000u, 12288u, 65536u, 0x80000000u}) {
    INFO("page size " << bad);
    CHECK_THROWS_AS(MemoryPageStore(bad), InvalidArgument);
    CHECK_THROWS_WITH(MemoryPageStore(bad),
                      Catch::Contains("4096") && Catch::Contains("32768"));
  }
  for (std::uint32_t good : {4096u, 8192u, 16384u, 32768u}) {
    MemoryPageStore store(good);
    CHECK(store.page_size() == good);
  }
  CHECK(MemoryPageStore().page_size() == kDefaultPageSize);
}

TEST_CASE("memory store allocates zeroed pages in order", "[page_store]") {
  MemoryPageStore store;
  CHECK(store.page_count() == 0);
  CHECK(store.page(0) == nullptr);
  for (PageId want = 0; want < 5; ++want) {
    const PageId id = store.allocate();
    CHECK(id == want);
    REQUIRE(store.page(id) != nullptr);
    CHECK(all_zero(store.page(id), store.page_size()));
  }
  CHECK(store.page_count() == 5);
  CHECK(store.page(5) == nullptr);
  CHECK(store.free_page_count() == 0);
}

TEST_CASE("freed pages are reused without touching their bytes", "[page_store]") {
  MemoryPageStore store;
  for (int i = 0; i < 8; ++i) store.allocate();
  std::memset(store.page(3), 0xAB, store.page_size());
  store.free(3);
  store.free(6);
  CHECK(store.free_page_count() == 2);
  const PageId a = store.allocate();
  const PageId b = store.allocate();
  CHECK(std::set<PageId>{a, b} == std::set<PageId>{3, 6});
  CHECK(store.free_page_count() == 0);
  CHECK(store.page_count() == 8);
  // A stale reader may still hold page 3's latch: allocate() left it alone.
  CHECK(store.page(3)[0] == std::byte{0xAB});
  CHECK(store.page(3)[store.page_size() - 1] == std::byte{0xAB});
  CHECK(store.allocate() == 8);
}

TEST_CASE("free rejects the meta page and unknown ids", "[page_store]") {
  MemoryPageStore store;
  store.allocate();
  store.allocate();
  CHECK_THROWS_AS(store.free(kNoPage), InvalidArgument);
  CHECK_THROWS_AS(store.free(2), InvalidArgument);
  CHECK(store.free_page_count() == 0);
}

TEST_CASE("page pointers stay put while the store grows past several chunks", "[page_store]") {
  MemoryPageStore store(kMinPageSize);
  const PageId n = 4 * kChunkPages + 17;
  std::vector<std::byte*> frames;
  for (PageId i = 0; i < n; ++i) {
    REQUIRE(store.allocate() == i);
    std::byte* p = store.page(i);
    REQUIRE(reinterpret_cast<std::uintptr_t>(p) % 64 == 0);
    std::memcpy(p + kPageMagicOffset, &i, sizeof i);
    frames.push_back(p);
  }
  for (PageId i = 0; i < n; ++i) {
    REQUIRE(store.page(i) == frames[i]);
    PageId stamp;
    std::memcpy(&stamp, frames[i] + kPageMagicOffset, sizeof stamp);
    REQUIRE(stamp == i);
  }
}

TEST_CASE("concurrent allocation hands out unique ids while readers look up pages",
          "[page_store]") {
  MemoryPageStore store(kMinPageSize);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 1500;
  std::vector<std::vector<PageId>> got(kThreads);
  std::atomic<bool> done{false};
  std::atomic<int> missing{0};  // Catch2 assertions are not thread-safe
  std::thread reader([&] {
    while (!done.load()) {
      const PageId count = store.page_count();
      if (count > 0 && store.page(count - 1) == nullptr) ++missing;
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&store, &got, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const PageId id = store.allocate();
        store.page(id)[kPageMagicOffset] = std::byte{1};  // frames are writable at once
        got[t].push_back(id);
      }
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  std::set<PageId> ids;
  for (const auto& v : got) ids.insert(v.begin(), v.end());
  CHECK(missing == 0);
  CHECK(ids.size() == kThreads * kPerThread);
  CHECK(store.page_count() == kThreads * kPerThread);
}

TEST_CASE("dirty marks are drained in page order and cleared", "[page_store]") {
  ProbeStore store;
  for (int i = 0; i < 3 * static_cast<int>(kChunkPages); ++i) store.allocate();
  // Fresh pages start dirty, so a persistent store writes them.
  CHECK(store.drain().size() == 3 * kChunkPages);
  CHECK(store.drain().empty());

  for (PageId id : {2500u, 7u, 1024u, 7u, 1023u}) store.mark_dirty(id);
  CHECK(store.drain() == std::vector<PageId>{7, 1023, 1024, 2500});
  CHECK(store.drain().empty());

  store.free(9);  // a freed page's cleared magic must be persisted too
  CHECK(store.drain() == std::vector<PageId>{9});
  CHECK_THROWS_AS(store.mark_dirty(store.page_count()), InvalidArgument);
}

TEST_CASE("dirty marks from many threads are all seen", "[page_store]") {
  ProbeStore store;
  store.grow_to(2 * kChunkPages);
  CHECK(store.drain().empty());  // grow_to loads existing pages: not dirty
  std::mt19937_64 rng(testing::test_seed("concurrent mark_dirty"));
  std::vector<std::vector<PageId>> marks(4);
  std::set<PageId> expected;
  for (auto& m : marks) {
    for (int i = 0; i < 500; ++i) {
      m.push_back(static_cast<PageId>(rng() % store.page_count()));
      expected.insert(m.back());
    }
  }
  std::vector<std::thread> threads;
  for (const auto& m : marks) {
    threads.emplace_back([&store, &m] {
      for (PageId id : m) store.mark_dirty(id);
    });
  }
  for (auto& t : threads) t.join();
  const std::vector<PageId> drained = store.drain();
  CHECK(std::set<PageId>(drained.begin(), drained.end()) == expected);
  CHECK(drained.size() == expected.size());
}

TEST_CASE("memory store ignores dirty marks", "[page_store]") {
  MemoryPageStore store;
  store.allocate();
  store.mark_dirty(0);
  store.mark_dirty(12345);  // no tracking, no check: a no-op
  store.sync();
  CHECK(store.page_count() == 1);
}

TEST_CASE("rebuild_free_list collects zero-magic pages except page 0", "[page_store]") {
  ProbeStore store;
  store.grow_to(10);
  for (PageId id : {1u, 2u, 4u, 8u}) set_magic(store, id, 0x1234);
  store.rebuild_free_list();
  CHECK(store.free_page_count() == 5);  // 3, 5, 6, 7, 9
  std::set<PageId> reused;
  for (int i = 0; i < 5; ++i) reused.insert(store.allocate());
  CHECK(reused == std::set<PageId>{3, 5, 6, 7, 9});
  CHECK(store.allocate() == 10);
}

TEST_CASE("page frames are zero-filled in every chunk", "[page_store]") {
  std::mt19937_64 rng(testing::test_seed("zeroed frames"));
  ProbeStore store(kMaxPageSize);
  store.grow_to(3 * kChunkPages);
  for (int i = 0; i < 50; ++i) {
    const auto id = static_cast<PageId>(rng() % store.page_count());
    REQUIRE(all_zero(store.page(id), store.page_size()));
  }
}
