// Reading nodes from page frames (forein/node_view.h), as a host that
// learns the tree from its cached pages does (the SQLite module's hint
// path): a page's interval is the one its node events and for_each_node
// report, an inner page's downlinks give its children's intervals, a
// leaf's words are its keys' words; PageStore::peek reads nothing.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "forein/key.h"
#include "forein/node_view.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "support/seed.h"

using namespace forein;

namespace {

bool same_range(const NodeInterval& a, const NodeInterval& b) {
  return a.node == b.node && a.level == b.level && a.lo == b.lo && a.hi_inf == b.hi_inf &&
         (a.hi_inf || a.hi == b.hi) && a.index == b.index;
}

// Byte-string keys from a small alphabet, so that many share a word, some
// end in a zero byte (not the smallest key of their word) and some are
// longer than a word.
std::string random_key(std::mt19937_64& rng) {
  static const char alphabet[] = {'\0', '\x01', 'a', 'b'};
  std::string k(1 + rng() % 14, '\0');
  for (char& c : k) c = alphabet[rng() % 4];
  return k;
}

void check_views(Tree& tree, std::uint64_t index_id) {
  PageStore& store = tree.store();
  std::map<PageId, NodeInterval> nodes;
  std::vector<PageId> leaves;
  tree.for_each_node([&](const NodeInterval& iv) {
    nodes[iv.node] = iv;
    if (iv.level == 0) leaves.push_back(iv.node);  // left to right
  });
  REQUIRE(nodes.size() > 20);
  std::size_t children = 0;
  for (const auto& [id, iv] : nodes) {
    const std::optional<NodeInterval> seen = page_node_interval(id, store.page(id), store.page_size(), index_id);
    REQUIRE(seen.has_value());
    CHECK(same_range(*seen, iv));
    CHECK(seen->version == iv.version);
    for_each_page_child(store.page(id), store.page_size(), index_id, [&](const NodeInterval& child) {
      ++children;
      INFO("parent " << id << " child " << child.node);
      REQUIRE(nodes.count(child.node) == 1);
      CHECK(same_range(child, nodes.at(child.node)));
      CHECK(child.level + 1 == iv.level);
    });
  }
  CHECK(children + 1 == nodes.size());  // every node but the root, once
  // The meta page and free pages hold no node.
  CHECK(!page_node_interval(0, store.page(0), store.page_size()).has_value());
  // The leaves' words, left to right, are the keys' distinct words.
  std::vector<Word> from_pages, from_scan;
  for (PageId id : leaves) append_page_words(store.page(id), store.page_size(), &from_pages);
  tree.scan(ScanSpec{}, [&](std::string_view k, std::string_view) {
    const Word w = word_of(k);
    if (from_scan.empty() || from_scan.back() != w) from_scan.push_back(w);
    return true;
  });
  CHECK(from_pages == from_scan);
}

}  // namespace

TEST_CASE("node view: intervals, downlinks and words from page frames", "[node_view]") {
  std::mt19937_64 rng(forein::testing::test_seed("node view"));
  TreeOptions opts;
  opts.index_id = 7;
  auto tree = Tree::create(std::make_unique<MemoryPageStore>(kMinPageSize), opts);
  std::vector<std::string> keys;
  for (int i = 0; i < 30000; ++i) {
    keys.push_back(random_key(rng));
    tree->put(keys.back(), std::string(rng() % 40, 'v'));
  }
  check_views(*tree, 7);
  // Merges: most keys erased, the tree shrinks and frees pages.
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i % 5 != 0) tree->erase(keys[i]);
  }
  check_views(*tree, 7);
  std::size_t free_seen = 0;
  for (PageId id = 1; id < tree->store().page_count(); ++id) {
    std::uint32_t magic;
    std::memcpy(&magic, tree->store().page(id) + kPageMagicOffset, sizeof magic);
    if (magic != 0) continue;
    ++free_seen;
    CHECK(!page_node_interval(id, tree->store().page(id), kMinPageSize).has_value());
  }
  CHECK(free_seen > 0);
}

namespace {

class CountingSource final : public PageSource {
 public:
  explicit CountingSource(const PageStore& from) : from_(from) {}
  void read_page(PageId id, std::byte* frame) override {
    ++reads;
    std::memcpy(frame, from_.page(id), from_.page_size());
    std::memset(frame, 0, kPageLatchBytes);
  }
  std::vector<PageId> stored_free_pages(PageId) override { return {}; }
  std::uint64_t reads = 0;

 private:
  const PageStore& from_;
};

class OnDemand final : public PageStore {
 public:
  OnDemand(PageSource* source, PageId count) : PageStore(kDefaultPageSize) { set_source(source, count); }
};

}  // namespace

TEST_CASE("node view: peek reads nothing", "[node_view]") {
  auto full = Tree::create(std::make_unique<MemoryPageStore>());
  for (int i = 0; i < 20000; ++i) full->put(encode_int64(i), "value");
  CountingSource source(full->store());
  auto tree = Tree::open(std::make_unique<OnDemand>(&source, full->store().page_count()));
  PageStore& store = tree->store();
  const std::uint64_t after_open = source.reads;
  CHECK(store.resident_pages() == after_open);
  std::size_t peeked = 0;
  for (PageId id = 0; id < store.page_count(); ++id) {
    const std::byte* f = store.peek(id);
    CHECK((f != nullptr) == store.resident(id));
    if (f != nullptr) ++peeked;
  }
  CHECK(peeked == after_open);
  CHECK(source.reads == after_open);
  CHECK(store.peek(store.page_count()) == nullptr);
  std::string v;
  CHECK(tree->get(encode_int64(12345), &v));
  CHECK(source.reads > after_open);
  // A fetched leaf, peeked: its words hold the key's.
  const Hint leaf = tree->leaf_for(encode_int64(12345));
  std::vector<Word> words;
  append_page_words(store.peek(leaf.node), store.page_size(), &words);
  CHECK(std::find(words.begin(), words.end(), word_of_int64(12345)) != words.end());
}
