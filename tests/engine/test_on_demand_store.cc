// A page store with pages on demand (PageStore::set_source): a tree opened
// on it reads only the pages its operations reach, keeps working while the
// host trims the cache to a few pages between operations, and its writes
// (written back by the host, as the SQLite module does) survive eviction.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "forein/key.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "support/seed.h"

using namespace forein;

namespace {

using Image = std::vector<std::byte>;

// Page images standing in for a host's storage.
class MapSource final : public PageSource {
 public:
  std::map<PageId, Image> images;
  std::uint64_t reads = 0;

  void read_page(PageId id, std::byte* frame) override {
    ++reads;
    const auto it = images.find(id);
    if (it == images.end()) {
      std::memset(frame, 0, page_size);
    } else {
      std::memcpy(frame, it->second.data(), page_size);
    }
  }
  std::vector<PageId> stored_free_pages(PageId count) override {
    std::vector<PageId> ids;
    for (PageId id = 1; id < count; ++id) {
      const auto it = images.find(id);
      std::uint32_t magic = 0;
      if (it != images.end()) std::memcpy(&magic, it->second.data() + kPageMagicOffset, sizeof magic);
      if (magic == 0) ids.push_back(id);
    }
    return ids;
  }
  void store(PageId id, const std::byte* page) {
    Image img(page, page + page_size);
    std::memset(img.data(), 0, kPageLatchBytes);
    images[id] = std::move(img);
  }
  std::uint32_t page_size = kDefaultPageSize;
};

class OnDemandStore final : public PageStore {
 public:
  OnDemandStore(PageSource* source, PageId count) : PageStore(kDefaultPageSize) {
    tracks_dirty_ = true;
    set_source(source, count);
  }
  // The host's write-back: every dirty page into the source.
  void write_back(MapSource& source) {
    drain_dirty([&](PageId id) { source.store(id, frame(id)); });
  }

 private:
  std::byte* frame(PageId id) { return page(id); }
};

std::string key_of(std::uint64_t k) { return encode_int64(static_cast<std::int64_t>(k)); }

}  // namespace

TEST_CASE("on-demand store: a tree works through a cache of a few pages", "[page_store]") {
  std::mt19937_64 rng(forein::testing::test_seed("on-demand store"));
  constexpr std::uint64_t kKeys = 20000;
  constexpr std::size_t kCache = 8;
  std::map<std::string, std::string> model;

  MapSource source;
  {
    auto built = Tree::create(std::make_unique<MemoryPageStore>());
    for (std::uint64_t i = 0; i < kKeys; ++i) {
      const std::uint64_t k = rng() % (kKeys * 4);
      model[key_of(k)] = "v" + std::to_string(k);
      built->put(key_of(k), model[key_of(k)]);
    }
    built->sync();
    for (PageId id = 0; id < built->store().page_count(); ++id) source.store(id, built->store().page(id));
  }
  const PageId count = static_cast<PageId>(source.images.size());
  REQUIRE(count > 4 * kCache);  // a tree many times the cache (about 50-70 pages)

  auto tree = Tree::open(std::make_unique<OnDemandStore>(&source, count));
  auto& store = static_cast<OnDemandStore&>(tree->store());
  CHECK(source.reads == 2);  // the meta page and the root
  auto between_ops = [&] {
    tree->sync();
    store.write_back(source);
    store.trim(kCache, [](PageId) { return false; });
    CHECK(store.resident_pages() <= kCache);
  };

  for (int op = 0; op < 4000; ++op) {
    const std::uint64_t k = rng() % (kKeys * 4);
    const std::string key = key_of(k);
    switch (rng() % 3) {
      case 0: {
        std::string v;
        const bool found = tree->get(key, &v);
        REQUIRE(found == (model.count(key) != 0));
        if (found) REQUIRE(v == model[key]);
        break;
      }
      case 1:
        model[key] = "w" + std::to_string(op);
        tree->put(key, model[key]);
        break;
      default:
        REQUIRE(tree->erase(key) == (model.erase(key) != 0));
    }
    between_ops();
  }

  // A scan, trimmed between steps: the cursor re-finds its place.
  Cursor c = tree->scan(ScanSpec{});
  auto expected = model.begin();
  while (c.next()) {
    REQUIRE(expected != model.end());
    REQUIRE(c.key() == expected->first);
    REQUIRE(c.value() == expected->second);
    ++expected;
    store.trim(kCache, [](PageId) { return false; });
  }
  CHECK(expected == model.end());
  CHECK(store.pages_fetched() == source.reads);
  tree->check();
  CHECK(tree->size() == model.size());

  // An in-place cursor, with the cache trimmed and pages restored between
  // steps (as a host's rollback does through overwrite()): an evicted or
  // overwritten leaf has a new version, so the cursor finds its place
  // again instead of reading the frame it remembered.
  ScanSpec in_place;
  in_place.in_place = true;
  Cursor ip = tree->scan(in_place);
  expected = model.begin();
  std::size_t step = 0;
  while (ip.next()) {
    REQUIRE(expected != model.end());
    REQUIRE(ip.key() == expected->first);
    REQUIRE(ip.value() == expected->second);
    ++expected;
    if (++step % 3 == 0) {
      // Restore the current leaf's page from its stored (identical) image.
      const Hint leaf = tree->leaf_for(std::string(ip.key()));
      store.overwrite(leaf.node, source.images.at(leaf.node).data());
    } else {
      store.trim(kCache, [](PageId) { return false; });
    }
  }
  CHECK(expected == model.end());
  tree->check();
}

TEST_CASE("on-demand store: eviction refuses dirty pages", "[page_store]") {
  MapSource source;
  auto tree = Tree::create(std::make_unique<OnDemandStore>(&source, 0));
  tree->put(key_of(1), "one");
  auto& store = static_cast<OnDemandStore&>(tree->store());
  CHECK(store.trim(0, [](PageId) { return false; }) == 0);  // all dirty
  CHECK_THROWS_AS(store.evict(1), InvalidArgument);
  tree->sync();
  store.write_back(source);
  CHECK(store.trim(0, [](PageId) { return false; }) == 1);  // the leaf; page 0 stays
  std::string v;
  CHECK(tree->get(key_of(1), &v));
  CHECK(v == "one");
}
