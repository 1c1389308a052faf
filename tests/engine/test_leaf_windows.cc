// LeafWindows (engine/src/leaf_windows.h): the table from which a lookup
// fetches a leaf's search window before it has read the leaf's header.
// Its prediction must be the window the leaf's own search then places
// (search_window() in node.h), for fixed-shape and format-2 leaves, leaves
// of bulk loads and of random inserts, the rightmost leaf (hi = +inf); and
// the tree must keep it in step with every write (Tree::check() compares
// each leaf's entry with its header).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "forein/key.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "leaf_windows.h"
#include "node.h"
#include "support/seed.h"

namespace {

using forein::PageId;
using forein::Tree;
using forein::Word;
namespace detail = forein::detail;

std::string key_of(std::uint64_t k) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(k >> (56 - 8 * i));
  return s;
}

struct Agreement {
  std::size_t leaves = 0, probes = 0, exact = 0, off_by_one = 0;
};

// Records every leaf of `store` into a fresh table (as opening a tree does)
// and compares its windows with the leaves' own for keys inside each leaf.
Agreement compare_windows(forein::PageStore& store, std::mt19937_64& rng) {
  detail::LeafWindows table;
  Agreement a;
  for (PageId id = 1; id < store.page_count(); ++id) {
    const std::byte* page = store.page(id);
    table.record(id, page);
    const detail::Node n(const_cast<std::byte*>(page), store.page_size());
    if (!n.is_node() || n.level() != 0 || n.dead() || n.count() == 0) continue;
    ++a.leaves;
    const Word lo = detail::load<Word>(page, detail::off::kLoWord);
    const Word hi = n.hi_inf() ? ~Word{0} : detail::load<Word>(page, detail::off::kHiWord);
    for (int i = 0; i < 64; ++i) {
      // Keys the leaf holds and keys between them.
      const Word kw = i % 2 == 0 ? n.key_at(rng() % n.count()).word : lo + rng() % (hi - lo);
      const bool fixed = n.flags() & detail::kFlagFixed;
      const std::size_t own = fixed
                                  ? detail::search_window<detail::kFixedSlotSize, true>(page, n.count(), kw)
                                  : detail::search_window<detail::kLeafSlotSize, true>(page, n.count(), kw);
      const detail::LeafWindows::Window w = table.window(id, kw);
      if (own == n.count()) {  // the leaf's search has no window: none predicted
        if (kw > lo) REQUIRE(w.stride == 0);
        continue;
      }
      ++a.probes;
      REQUIRE(w.stride == (fixed ? detail::kFixedSlotSize : detail::kLeafSlotSize));
      // The table keeps count per word unit as a float: a guess may round
      // to the next slot.
      const std::size_t diff = w.from > own ? w.from - own : own - w.from;
      INFO("leaf " << id << " key word " << kw << ": own window at " << own << ", predicted "
                   << w.from);
      REQUIRE(diff <= 1);
      (diff == 0 ? a.exact : a.off_by_one)++;
    }
  }
  return a;
}

}  // namespace

TEST_CASE("the table predicts each leaf's search window", "[tree][get][leaf_windows]") {
  const std::uint64_t seed = forein::testing::test_seed("leaf windows");
  std::mt19937_64 rng(seed);
  SECTION("fixed-shape leaves of a bulk load") {
    auto store = std::make_unique<forein::MemoryPageStore>(8192);
    forein::PageStore& pages = *store;
    auto tree = Tree::create(std::move(store));
    std::vector<std::uint64_t> keys(200000);
    for (auto& k : keys) k = rng();
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    std::vector<std::pair<std::string, std::string>> sorted;
    for (const auto k : keys) sorted.emplace_back(key_of(k), key_of(k * 3));
    tree->bulk_load(sorted);
    tree->check();
    const Agreement a = compare_windows(pages, rng);
    REQUIRE(a.leaves > 300);
    REQUIRE(a.exact >= a.probes * 99 / 100);
  }
  SECTION("format-2 leaves grown by random inserts") {
    auto store = std::make_unique<forein::MemoryPageStore>(8192);
    forein::PageStore& pages = *store;
    auto tree = Tree::create(std::move(store));
    for (int i = 0; i < 100000; ++i) {
      // Values of two lengths: leaves of one shape only are fixed-shape.
      tree->put(key_of(rng()), std::string(1 + i % 2, 'v'));
    }
    tree->check();
    const Agreement a = compare_windows(pages, rng);
    REQUIRE(a.leaves > 200);
    REQUIRE(a.exact >= a.probes * 99 / 100);
  }
}

TEST_CASE("every write keeps the tree's window table in step", "[tree][leaf_windows]") {
  const std::uint64_t seed = forein::testing::test_seed("leaf windows kept");
  std::mt19937_64 rng(seed);
  auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(4096));
  std::vector<std::string> keys;
  // Inserts (splits), updates that change a leaf's shape, erases (merges,
  // freed pages reused by later splits): check() compares every leaf's
  // entry with its header after each phase.
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 20000; ++i) {
      keys.push_back(key_of(rng() % 1000000));
      tree->put(keys.back(), round % 2 == 0 ? std::string(8, 'v') : std::string(20, 'w'));
    }
    tree->check();
    std::shuffle(keys.begin(), keys.end(), rng);
    for (std::size_t i = 0; i < keys.size() * 3 / 4; ++i) tree->erase(keys[i]);
    keys.erase(keys.begin(), keys.begin() + static_cast<long>(keys.size() * 3 / 4));
    tree->check();
  }
}
