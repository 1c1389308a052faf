// Node layouts across format versions: leaves written in format 1 (16-byte
// slots, every value in the heap) keep answering and accepting writes next
// to format-2 leaves (values of up to 8 bytes in a 24-byte slot), a
// format-1 file opens and is written back in the current format, and a
// newer format is refused with a clear error. Format 3's fixed-shape leaves
// (16-byte slots for leaves whose keys and values have one length each)
// are rewritten in the 24-byte layout when an entry of another shape
// arrives, and splits and merges pick the layout their entries allow.
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
constexpr std::uint32_t kCurrentFormat = 3;    // tree_impl.h, meta::kFormatVersion

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
  REQUIRE(cur.slot_size() != detail::kSlotSize);
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
  // Drop the layout flags: a view made now has 16-byte format-1 slots.
  const auto flags = detail::load<std::uint16_t>(buf.data(), detail::off::kFlags);
  detail::store<std::uint16_t>(
      buf.data(), detail::off::kFlags,
      static_cast<std::uint16_t>(flags & ~(detail::kFlagInlineValues | detail::kFlagFixed |
                                           detail::kFixedShapeBits)));
  detail::Node old(buf.data(), size);
  REQUIRE(old.slot_size() == detail::kSlotSize);
  REQUIRE(old.format1_leaf());
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

// The tree holds exactly `model`: every key's value by get, and a scan.
void require_contents(Tree& tree, const std::map<std::string, std::string>& model) {
  std::string got;
  for (const auto& [k, v] : model) {
    REQUIRE(tree.get(k, &got));
    REQUIRE(got == v);
  }
  auto it = model.begin();
  tree.scan({}, [&](std::string_view k, std::string_view v) {
    REQUIRE(it != model.end());
    CHECK(k == it->first);
    CHECK(v == it->second);
    ++it;
    return true;
  });
  CHECK(it == model.end());
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
    tree->reload();  // pages written behind the tree's back
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
    // with the current format, since it may create nodes a format-1 build
    // cannot read.
    CHECK(detail::load<std::uint32_t>(tree->store().page(0), kMetaFormatOffset) == 1);
    tree->put(forein::encode_word(3), "x");
    model[forein::encode_word(3)] = "x";
    CHECK(detail::load<std::uint32_t>(tree->store().page(0), kMetaFormatOffset) == kCurrentFormat);
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
    require_contents(*tree, model);
    tree->sync();
  }
  {
    auto store = forein::FilePageStore::open(path);
    CHECK(detail::load<std::uint32_t>(store->page(0), kMetaFormatOffset) == kCurrentFormat);
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
    detail::store<std::uint32_t>(store->page(0), kMetaFormatOffset, kCurrentFormat + 1);
    store->mark_dirty(0);
    store->sync();
  }
  CHECK_THROWS_WITH(Tree::open(forein::FilePageStore::open(path)),
                    Catch::Contains("unsupported tree format version " +
                                    std::to_string(kCurrentFormat + 1)));
  std::remove(path.c_str());
}

namespace {

// The leaves of `tree`: how many of each layout.
struct LeafLayouts {
  std::size_t fixed = 0, general = 0;
};
LeafLayouts leaf_layouts(Tree& tree) {
  LeafLayouts out;
  tree.for_each_node([&](const forein::NodeInterval& iv) {
    if (iv.level != 0) return;
    const detail::Node n(tree.store().page(static_cast<PageId>(iv.node)), tree.store().page_size());
    (n.fixed() ? out.fixed : out.general) += 1;
  });
  return out;
}

std::string bytes_of(std::size_t len, std::uint64_t seed) {
  std::string s(len, '\0');
  for (std::size_t i = 0; i < len; ++i) s[i] = static_cast<char>((seed >> (i % 8 * 8)) + i);
  return s;
}

// A 4 KiB page holding an empty leaf (fixed-shape, as every new leaf).
struct EmptyLeaf {
  static constexpr std::uint32_t kPage = 4096;
  std::vector<std::byte> buf = std::vector<std::byte>(kPage);
  detail::Node node{buf.data(), kPage};
  EmptyLeaf() { node.init(0, 1, "", std::nullopt, forein::kNoPage, forein::kNoPage); }
  EmptyLeaf(const EmptyLeaf&) = delete;
  EmptyLeaf& operator=(const EmptyLeaf&) = delete;
};

}  // namespace

TEST_CASE("a fixed-shape leaf takes its shape, and is rewritten for another", "[tree][layout]") {
  EmptyLeaf leaf;
  constexpr std::uint32_t kPage = EmptyLeaf::kPage;
  std::vector<std::byte>& buf = leaf.buf;
  detail::Node& n = leaf.node;
  REQUIRE(n.fixed());
  REQUIRE(n.slot_size() == detail::kFixedSlotSize);
  // The first entry sets the shape (8-byte key, 3-byte value).
  std::map<std::string, std::string> model;
  auto put = [&](const std::string& k, const std::string& v) {
    const detail::SearchKey sk(k);
    const std::size_t i = n.lower_bound(sk);
    REQUIRE(n.fits(k.size(), v.size()));
    n.insert_leaf(i, k, v);
    model[k] = v;
  };
  auto same = [&]() {
    REQUIRE(n.count() == model.size());
    std::size_t i = 0;
    for (const auto& [k, v] : model) {
      CHECK(n.key_at(i).to_string() == k);
      CHECK(n.value_at(i) == v);
      std::string copied;
      n.copy_value(i, &copied);
      CHECK(copied == v);
      CHECK(n.key_equals(i, detail::SearchKey(k)));
      ++i;
    }
    CHECK(n.layout_error().empty());
  };
  for (std::uint64_t k = 0; k < 100; ++k) put(forein::encode_word(k * 5), bytes_of(3, k));
  CHECK(n.fixed());
  CHECK(n.fixed_key_len() == 8);
  CHECK(n.fixed_value_len() == 3);
  CHECK(n.used_bytes() == 100 * detail::kFixedSlotSize);
  same();
  // Values of the shape's length replace in place; another length rewrites.
  REQUIRE(n.replace_value(10, "xyz"));
  model[forein::encode_word(50)] = "xyz";
  CHECK(n.fixed());
  same();
  // An entry of another shape costs the rewrite in fits() and converts.
  CHECK(n.entry_size(4, 3) == 100 * (detail::kLeafSlotSize - detail::kFixedSlotSize) +
                                  detail::entry_bytes(true, 4, 3));
  put("abcd", "v12");
  CHECK_FALSE(n.fixed());
  CHECK(n.slot_size() == detail::kLeafSlotSize);
  same();
  // Emptied and reinitialised, a leaf takes a new shape.
  detail::Node m(buf.data(), kPage);
  m.init(0, 2, "", std::nullopt, forein::kNoPage, forein::kNoPage);
  m.insert_leaf(0, "k", "");
  CHECK(m.fixed());
  CHECK(m.fixed_key_len() == 1);
  CHECK(m.fixed_value_len() == 0);
  m.remove_at(0);
  m.insert_leaf(0, "0123456789", "long key");  // no short shape: 24-byte layout
  CHECK_FALSE(m.fixed());
  CHECK(m.key_at(0).to_string() == "0123456789");
  CHECK(m.layout_error().empty());
}

TEST_CASE("a fixed-shape leaf refuses a replacement whose rewrite does not fit", "[tree][layout]") {
  EmptyLeaf leaf;
  detail::Node& n = leaf.node;
  // Full in 16-byte slots: more entries than the 24-byte layout holds.
  std::size_t count = 0;
  while (n.fits(8, 8)) {
    n.insert_leaf(count, forein::encode_word(count), bytes_of(8, count));
    ++count;
  }
  REQUIRE(count * detail::kLeafSlotSize > n.capacity());
  CHECK_FALSE(n.fits(8, 7));
  CHECK_FALSE(n.replace_value(0, "short"));
  // Nothing changed.
  CHECK(n.fixed());
  CHECK(n.count() == count);
  for (std::size_t i = 0; i < count; ++i) CHECK(n.value_at(i) == bytes_of(8, i));
  CHECK(n.layout_error().empty());
}

TEST_CASE("layout_error names a corrupt fixed shape", "[tree][layout]") {
  EmptyLeaf leaf;
  constexpr std::uint32_t kPage = EmptyLeaf::kPage;
  std::vector<std::byte>& buf = leaf.buf;
  detail::Node& n = leaf.node;
  n.insert_leaf(0, "12345678", "v");
  const auto flags = detail::load<std::uint16_t>(buf.data(), detail::off::kFlags);
  detail::store<std::uint16_t>(buf.data(), detail::off::kFlags,
                               static_cast<std::uint16_t>(flags | (0xF << detail::kFixedKeyLenShift)));
  const detail::Node torn(buf.data(), kPage);
  CHECK(torn.fixed_key_len() == 8);  // clamped: reads stay in the slot
  CHECK_THAT(torn.layout_error(), Catch::Contains("longer than 8 bytes"));
  detail::store<std::uint16_t>(buf.data(), detail::off::kFlags,
                               static_cast<std::uint16_t>(flags | detail::kFlagInlineValues));
  CHECK_THAT(detail::Node(buf.data(), kPage).layout_error(), Catch::Contains("two layouts"));
}

TEST_CASE("fixed-shape and 24-byte leaves side by side under random writes", "[tree][layout]") {
  // Keys and values of one shape mostly (8-byte keys, 8-byte values), and a
  // few of other shapes: inserts and replacements that rewrite fixed-shape
  // leaves, splits of mixed leaves, merges of leaves of different shapes.
  const std::uint64_t seed = forein::testing::test_seed("fixed-shape leaves");
  std::mt19937_64 rng(seed);
  auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(4096), forein::TreeOptions{});
  std::map<std::string, std::string> model;
  std::vector<std::pair<std::string, std::string>> sorted;
  for (std::uint64_t k = 0; k < 30000; ++k) {
    sorted.emplace_back(forein::encode_word(k * 11), bytes_of(8, k));
    model[sorted.back().first] = sorted.back().second;
  }
  tree->bulk_load(sorted);
  const LeafLayouts loaded = leaf_layouts(*tree);
  CHECK(loaded.general == 0);
  // 90% fill at 16 bytes an entry: more entries per leaf than 24 bytes allow.
  CHECK(sorted.size() / loaded.fixed > (4096 - detail::kHeaderSize) / detail::kLeafSlotSize);

  // A shorter key with a stored key's word (its trailing zero bytes cut)
  // is not in a leaf whose keys are all 8 bytes long.
  std::size_t same_word_probes = 0;
  for (const auto& [k, v] : sorted) {
    if (k.back() != '\0') continue;
    const std::string shorter = k.substr(0, k.find_last_not_of('\0') + 1);
    REQUIRE(forein::word_of(shorter) == forein::word_of(k));
    std::string out;
    CHECK_FALSE(tree->get(shorter, &out));
    ++same_word_probes;
  }
  CHECK(same_word_probes > 100);

  auto random_key = [&]() {
    if (rng() % 20 != 0) return forein::encode_word((rng() % 400000) * 3);
    return bytes_of(1 + rng() % 16, rng());  // other lengths, some long
  };
  auto random_value = [&](std::uint64_t k) {
    return rng() % 20 != 0 ? bytes_of(8, k) : bytes_of(rng() % 30, k);
  };
  std::string got;
  std::string_view view;
  for (int op = 0; op < 80000; ++op) {
    const std::string key = random_key();
    const auto r = rng() % 10;
    if (r < 3) {
      CHECK(tree->erase(key) == (model.erase(key) == 1));
    } else if (r < 7) {
      const std::string v = random_value(op);
      CHECK(tree->put(key, v) == (model.count(key) == 0));
      model[key] = v;
    } else {
      const auto it = model.find(key);
      CHECK(tree->get(key, &got) == (it != model.end()));
      if (it != model.end()) CHECK(got == it->second);
      CHECK(tree->get_view(key, &view) == (it != model.end()));
      if (it != model.end()) CHECK(view == it->second);
    }
    if (op % 20000 == 0) tree->check();
  }
  tree->check();
  const LeafLayouts mixed = leaf_layouts(*tree);
  INFO("fixed " << mixed.fixed << ", 24-byte " << mixed.general);
  CHECK(mixed.fixed > 0);    // both layouts exercised
  CHECK(mixed.general > 0);
  require_contents(*tree, model);
  // Erase most: merges of leaves of both layouts.
  for (auto i = model.begin(); i != model.end();) {
    if (rng() % 8 != 0) {
      REQUIRE(tree->erase(i->first));
      i = model.erase(i);
    } else {
      ++i;
    }
  }
  tree->check();
  require_contents(*tree, model);
}
