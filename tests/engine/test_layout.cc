// Node layouts across format versions: leaves written in format 1 (16-byte
// slots, every value in the heap) keep answering and accepting writes next
// to format-2 leaves (values of up to 8 bytes in a 24-byte slot), a
// format-1 file opens and is written back as format 2, and a newer format
// is refused with a clear error.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include "forein/error.h"
#include "forein/key.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "node.h"
#include "support/seed.h"

namespace {

using forein::PageId;
using forein::Tree;
namespace detail = forein::detail;

constexpr std::size_t kMetaFormatOffset = 16;  // tree_impl.h, meta::kFormat

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("forein-layout-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

// Rewrites leaf `id` in the format-1 layout, entries unchanged.
void rewrite_as_format1(forein::PageStore& store, PageId id) {
  const std::uint32_t size = store.page_size();
  std::byte* page = store.page(id);
  const detail::Node cur(page, size);
  REQUIRE(cur.is_leaf());
  REQUIRE(cur.slot_size() == detail::kLeafSlotSize);
  std::vector<std::pair<std::string, std::string>> entries;
  for (std::size_t i = 0; i < cur.count(); ++i) {
    entries.emplace_back(cur.key_at(i).to_string(), std::string(cur.value_at(i)));
  }
  std::optional<std::string> hi;
  if (!cur.hi_inf()) hi = std::string(cur.hi());
  const std::string lo(cur.lo());

  std::vector<std::byte> buf(size);
  detail::Node fresh(buf.data(), size);
  fresh.init(0, cur.version(), lo, hi ? std::optional<std::string_view>(*hi) : std::nullopt,
             cur.left(), cur.right());
  // Drop the inline-values flag: a view made now has 16-byte slots.
  const auto flags = detail::load<std::uint16_t>(buf.data(), detail::off::kFlags);
  detail::store<std::uint16_t>(buf.data(), detail::off::kFlags,
                               static_cast<std::uint16_t>(flags & ~detail::kFlagInlineValues));
  detail::Node old(buf.data(), size);
  REQUIRE(old.slot_size() == detail::kSlotSize);
  for (const auto& [k, v] : entries) old.append_leaf(k, v);
  REQUIRE(old.layout_error().empty());
  std::memcpy(page + forein::kPageLatchBytes, buf.data() + forein::kPageLatchBytes,
              size - forein::kPageLatchBytes);
  store.mark_dirty(id);
}

std::string value_for(std::mt19937_64& rng, std::uint64_t k) {
  // Lengths 0..40: inline (<= 8) and heap values, so replacements cross
  // between the two places in both layouts.
  const std::size_t len = rng() % 41;
  std::string v(len, '\0');
  for (std::size_t i = 0; i < len; ++i) v[i] = static_cast<char>('a' + (k + i) % 26);
  return v;
}

}  // namespace

TEST_CASE("format-1 leaves keep working beside format-2 ones, and reopen", "[tree][layout]") {
  const std::uint64_t seed = forein::testing::test_seed("format-1 leaves keep working");
  std::mt19937_64 rng(seed);
  const std::string path = temp_path("f1");
  std::map<std::string, std::string> model;
  {
    auto tree = Tree::create(forein::FilePageStore::create(path, 4096));
    std::vector<std::pair<std::string, std::string>> sorted;
    for (std::uint64_t k = 0; k < 20000; ++k) {
      sorted.emplace_back(forein::encode_word(k * 7), value_for(rng, k));
      model[sorted.back().first] = sorted.back().second;
    }
    tree->bulk_load(sorted);
    // Every other leaf goes back to the format-1 layout.
    std::vector<PageId> leaves;
    tree->for_each_node([&](const forein::NodeInterval& iv) {
      if (iv.level == 0) leaves.push_back(static_cast<PageId>(iv.node));
    });
    REQUIRE(leaves.size() > 10);
    for (std::size_t i = 0; i < leaves.size(); i += 2) rewrite_as_format1(tree->store(), leaves[i]);
    tree->check();
    tree->sync();
  }
  // Mark the file as written by a format-1 build.
  {
    auto store = forein::FilePageStore::open(path);
    detail::store<std::uint32_t>(store->page(0), kMetaFormatOffset, 1);
    store->mark_dirty(0);
    store->sync();
  }
  {
    auto tree = Tree::open(forein::FilePageStore::open(path));
    for (const auto& [k, v] : model) {
      std::string got;
      REQUIRE(tree->get(k, &got));
      REQUIRE(got == v);
    }
    // Reading leaves the format as it was; the first write marks the tree
    // format 2, since it may create nodes a format-1 build cannot read.
    CHECK(detail::load<std::uint32_t>(tree->store().page(0), kMetaFormatOffset) == 1);
    tree->put(forein::encode_word(3), "x");
    model[forein::encode_word(3)] = "x";
    CHECK(detail::load<std::uint32_t>(tree->store().page(0), kMetaFormatOffset) == 2);
    // Mixed writes: replacements that move values in and out of slots,
    // inserts that split format-1 leaves, erases that merge them.
    for (int op = 0; op < 60000; ++op) {
      const std::uint64_t k = rng() % 160000;
      const std::string key = forein::encode_word(k);
      if (rng() % 3 == 0) {
        CHECK(tree->erase(key) == (model.erase(key) == 1));
      } else {
        const std::string v = value_for(rng, k);
        CHECK(tree->put(key, v) == (model.count(key) == 0));
        model[key] = v;
      }
    }
    tree->check();
    auto it = model.begin();
    tree->scan({}, [&](std::string_view k, std::string_view v) {
      REQUIRE(it != model.end());
      CHECK(k == it->first);
      CHECK(v == it->second);
      ++it;
      return true;
    });
    CHECK(it == model.end());
    tree->sync();
  }
  {
    auto store = forein::FilePageStore::open(path);
    CHECK(detail::load<std::uint32_t>(store->page(0), kMetaFormatOffset) == 2);
  }
  std::remove(path.c_str());
}

TEST_CASE("a tree of a newer format is refused with a clear error", "[tree][layout]") {
  const std::string path = temp_path("newer");
  {
    auto tree = Tree::create(forein::FilePageStore::create(path, 4096));
    tree->put("k", "v");
    tree->sync();
  }
  {
    auto store = forein::FilePageStore::open(path);
    detail::store<std::uint32_t>(store->page(0), kMetaFormatOffset, 3);
    store->mark_dirty(0);
    store->sync();
  }
  CHECK_THROWS_WITH(Tree::open(forein::FilePageStore::open(path)),
                    Catch::Contains("unsupported tree format version 3"));
  std::remove(path.c_str());
}
