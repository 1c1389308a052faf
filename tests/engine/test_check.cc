// Tree::check(): passes on healthy trees, and throws CorruptionError naming
// the page when a page is damaged in memory. Pages are damaged through the
// node layout in engine/src/node.h; bytes [0, 8) (the latch word) are never
// written.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
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

std::unique_ptr<Tree> make_tree(std::uint32_t page_size) {
  return Tree::create(std::make_unique<forein::MemoryPageStore>(page_size));
}

// True if `text` holds `id` as a number on its own (not part of a longer
// run of digits).
bool names_page(const std::string& text, PageId id) {
  const std::string num = std::to_string(id);
  for (std::size_t pos = text.find(num); pos != std::string::npos; pos = text.find(num, pos + 1)) {
    const bool left_ok = pos == 0 || !std::isdigit(static_cast<unsigned char>(text[pos - 1]));
    const std::size_t end = pos + num.size();
    const bool right_ok = end == text.size() || !std::isdigit(static_cast<unsigned char>(text[end]));
    if (left_ok && right_ok) return true;
  }
  return false;
}

// check() throws CorruptionError whose message names `page`.
void require_corruption_naming(Tree& tree, PageId page) {
  bool threw = false;
  try {
    tree.check();
  } catch (const forein::CorruptionError& e) {
    threw = true;
    INFO("message: " << e.what() << "; expected page " << page);
    CHECK(names_page(e.what(), page));
  }
  CHECK(threw);
}

// Saves a page's bytes from offset 8 on, restores them on demand.
class PageBackup {
 public:
  PageBackup(Tree& tree, PageId id) : tree_(tree), id_(id) {
    const std::byte* p = tree.store().page(id);
    REQUIRE(p != nullptr);
    saved_.assign(p + forein::kPageLatchBytes, p + tree.store().page_size());
  }
  void restore() {
    std::byte* p = tree_.store().page(id_);
    std::memcpy(p + forein::kPageLatchBytes, saved_.data(), saved_.size());
  }

 private:
  Tree& tree_;
  PageId id_;
  std::vector<std::byte> saved_;
};

// Swaps two whole slots (16 bytes in inner nodes, 24 in leaves).
void swap_slots(std::byte* page, std::uint32_t page_size, std::size_t i, std::size_t j) {
  const std::size_t size = detail::Node(page, page_size).slot_size();
  std::byte a[detail::kLeafSlotSize];
  std::byte* si = page + detail::kHeaderSize + i * size;
  std::byte* sj = page + detail::kHeaderSize + j * size;
  std::memcpy(a, si, size);
  std::memcpy(si, sj, size);
  std::memcpy(sj, a, size);
}

// A healthy tree with `n` int keys (step 3) at 4 KiB pages, height >= 3.
std::unique_ptr<Tree> int_tree(std::int64_t n = 30000) {
  auto tree = make_tree(4096);
  for (std::int64_t i = 0; i < n; ++i) tree->put(forein::encode_int64(i * 3), "value-" + std::to_string(i));
  tree->check();
  return tree;
}

std::unique_ptr<Tree> string_tree() {
  auto tree = make_tree(4096);
  for (int i = 0; i < 20000; ++i) {
    // Long keys sharing a word, so key bytes live in the heap.
    tree->put("key:0000/" + std::to_string(1000000 + i) + std::string(i % 13, '~'),
              std::string(i % 40, 'v'));
  }
  tree->check();
  return tree;
}

// A leaf in the middle of the tree (not the leftmost or rightmost).
PageId middle_leaf(Tree& tree, const std::string& key) {
  const forein::Hint h = tree.leaf_for(key);
  REQUIRE(h.present());
  REQUIRE(h.level == 0);
  detail::Node node(tree.store().page(h.node), tree.store().page_size());
  REQUIRE(node.is_node());
  REQUIRE(node.is_leaf());
  REQUIRE(node.count() >= 4);
  REQUIRE(node.left() != forein::kNoPage);
  REQUIRE(node.right() != forein::kNoPage);
  return h.node;
}

PageId root_of(Tree& tree) {
  PageId root = forein::kNoPage;
  const auto top = static_cast<std::uint16_t>(tree.height() - 1);
  tree.for_each_node([&](const forein::NodeInterval& n) {
    if (n.level == top) root = n.node;
  });
  REQUIRE(root != forein::kNoPage);
  return root;
}

}  // namespace

TEST_CASE("check passes on healthy trees after random operations", "[tree][check]") {
  const auto seed = forein::testing::test_seed("check healthy trees");
  std::mt19937_64 rng(seed);
  const std::uint32_t page_size = GENERATE(4096u, 8192u, 32768u);
  INFO("page size " << page_size);

  SECTION("int keys") {
    auto tree = make_tree(page_size);
    tree->check();
    for (int round = 0; round < 5; ++round) {
      for (int i = 0; i < 20000; ++i) {
        const std::string k = forein::encode_int64(static_cast<std::int64_t>(rng() % 60000) - 30000);
        if (rng() % 100 < (round % 2 ? 70u : 25u))
          tree->erase(k);
        else
          tree->put(k, std::string(rng() % 100, 'i'));
      }
      tree->check();
    }
  }
  SECTION("byte-string keys") {
    auto tree = make_tree(page_size);
    const std::size_t max_key = tree->max_key_size();
    for (int round = 0; round < 5; ++round) {
      for (int i = 0; i < 15000; ++i) {
        std::string k;
        if (rng() % 2) k = "prefix--";
        const auto len = rng() % (rng() % 50 == 0 ? max_key - k.size() + 1 : 24);
        for (std::uint64_t j = 0; j < len; ++j) k.push_back(static_cast<char>("\0\1ab\xff"[rng() % 5]));
        if (rng() % 100 < (round % 2 ? 70u : 25u))
          tree->erase(k);
        else
          tree->put(k, std::string(rng() % 200, 's'));
      }
      tree->check();
    }
  }
  SECTION("bulk loaded then emptied") {
    auto tree = make_tree(page_size);
    std::vector<std::pair<std::string, std::string>> entries;
    for (std::int64_t i = 0; i < 50000; ++i) entries.emplace_back(forein::encode_int64(i), "b");
    tree->bulk_load(entries);
    tree->check();
    for (std::int64_t i = 0; i < 50000; i += 2) tree->erase(forein::encode_int64(i));
    tree->check();
    for (std::int64_t i = 1; i < 50000; i += 2) tree->erase(forein::encode_int64(i));
    tree->check();
    CHECK(tree->size() == 0);
  }
}

TEST_CASE("check detects swapped key slots in a leaf", "[tree][check]") {
  SECTION("int keys") {
    auto tree = int_tree();
    const PageId leaf = middle_leaf(*tree, forein::encode_int64(45000));
    PageBackup backup(*tree, leaf);
    std::byte* page = tree->store().page(leaf);
    const detail::Node node(page, tree->store().page_size());
    const std::size_t mid = node.count() / 2;
    swap_slots(page, tree->store().page_size(), mid, mid + 1);
    require_corruption_naming(*tree, leaf);
    backup.restore();
    tree->check();
  }
  SECTION("byte-string keys in the heap") {
    auto tree = string_tree();
    const PageId leaf = middle_leaf(*tree, "key:0000/1010000");
    PageBackup backup(*tree, leaf);
    std::byte* page = tree->store().page(leaf);
    const detail::Node node(page, tree->store().page_size());
    swap_slots(page, tree->store().page_size(), 1, node.count() - 2);
    require_corruption_naming(*tree, leaf);
    backup.restore();
    tree->check();
  }
}

TEST_CASE("check detects a key outside the leaf's range", "[tree][check]") {
  auto tree = int_tree();
  const PageId leaf = middle_leaf(*tree, forein::encode_int64(30000));
  PageBackup backup(*tree, leaf);
  std::byte* page = tree->store().page(leaf);
  const detail::Node node(page, tree->store().page_size());
  // The last slot's word (8-byte keys live wholly in the slot) becomes the
  // largest word: still sorted inside the node, but >= the node's hi.
  const std::size_t last = node.count() - 1;
  std::memset(page + detail::kHeaderSize + last * node.slot_size(), 0xFF, sizeof(forein::Word));
  require_corruption_naming(*tree, leaf);
  backup.restore();
  tree->check();
}

TEST_CASE("check detects broken sibling links, levels and counts", "[tree][check]") {
  auto tree = int_tree();
  const PageId leaf = middle_leaf(*tree, forein::encode_int64(60000));
  PageBackup backup(*tree, leaf);
  std::byte* page = tree->store().page(leaf);
  detail::Node node(page, tree->store().page_size());
  const PageId right = node.right();
  const PageId left = node.left();

  SECTION("right link skips a node") {
    detail::Node right_node(tree->store().page(right), tree->store().page_size());
    const PageId skipped_to = right_node.right();
    REQUIRE(skipped_to != forein::kNoPage);
    node.set_right(skipped_to);
    bool threw = false;
    try {
      tree->check();
    } catch (const forein::CorruptionError& e) {
      threw = true;
      INFO("message: " << e.what());
      // The fault can be reported at the leaf, at the node it skipped, or at
      // the node it now points to (whose left link disagrees).
      CHECK((names_page(e.what(), leaf) || names_page(e.what(), right) ||
             names_page(e.what(), skipped_to)));
    }
    CHECK(threw);
  }
  SECTION("right link points to itself") {
    node.set_right(leaf);
    require_corruption_naming(*tree, leaf);
  }
  SECTION("left link points to the wrong node") {
    node.set_left(right);
    require_corruption_naming(*tree, leaf);
  }
  SECTION("left link cleared") {
    REQUIRE(left != forein::kNoPage);
    node.set_left(forein::kNoPage);
    require_corruption_naming(*tree, leaf);
  }
  SECTION("level changed") {
    detail::store<std::uint16_t>(page, detail::off::kLevel, 1);
    require_corruption_naming(*tree, leaf);
  }
  SECTION("count exceeds the page") {
    detail::store<std::uint16_t>(page, detail::off::kCount, 0xFFFF);
    require_corruption_naming(*tree, leaf);
  }
  SECTION("node marked dead while still linked") {
    node.mark_dead();
    require_corruption_naming(*tree, leaf);
  }
  backup.restore();
  tree->check();
}

TEST_CASE("check detects garbage over a whole page", "[tree][check]") {
  auto tree = int_tree();
  const PageId leaf = middle_leaf(*tree, forein::encode_int64(12000));
  const std::uint32_t page_size = tree->store().page_size();
  PageBackup backup(*tree, leaf);
  std::byte* page = tree->store().page(leaf);
  for (int pattern : {0xFF, 0x00, 0xA5}) {
    INFO("pattern " << pattern);
    std::memset(page + 16, pattern, page_size - 16);
    require_corruption_naming(*tree, leaf);
    backup.restore();
    tree->check();
  }
  // A leaf whose magic is gone (looks like a free page).
  std::memset(page + forein::kPageMagicOffset, 0, 4);
  require_corruption_naming(*tree, leaf);
  backup.restore();
  tree->check();
}

TEST_CASE("check detects corruption in inner nodes", "[tree][check]") {
  auto tree = int_tree(60000);
  REQUIRE(tree->height() >= 3);
  const PageId root = root_of(*tree);
  const std::uint32_t page_size = tree->store().page_size();
  PageBackup backup(*tree, root);
  std::byte* page = tree->store().page(root);
  detail::Node node(page, page_size);
  REQUIRE(node.level() == tree->height() - 1);
  REQUIRE(node.count() >= 3);

  SECTION("swapped child slots") {
    swap_slots(page, page_size, 1, 2);
    require_corruption_naming(*tree, root);
  }
  SECTION("child pointer to a leaf") {
    const PageId some_leaf = tree->leaf_for(forein::encode_int64(3)).node;
    const PageId old_child = node.child_at(1);
    node.set_child_at(1, some_leaf);
    bool threw = false;
    try {
      tree->check();
    } catch (const forein::CorruptionError& e) {
      threw = true;
      INFO("message: " << e.what());
      // Reported at the root, at the leaf it now points to, or at the child
      // it lost (still in the sibling chain, no longer a downlink).
      CHECK((names_page(e.what(), root) || names_page(e.what(), some_leaf) ||
             names_page(e.what(), old_child)));
    }
    CHECK(threw);
  }
  SECTION("garbage") {
    std::memset(page + 16, 0xFF, page_size - 16);
    require_corruption_naming(*tree, root);
  }
  backup.restore();
  tree->check();
}

TEST_CASE("check detects a slot word that disagrees with the key bytes", "[tree][check]") {
  auto tree = string_tree();
  const PageId leaf = middle_leaf(*tree, "key:0000/1005000");
  PageBackup backup(*tree, leaf);
  std::byte* page = tree->store().page(leaf);
  const detail::Node node(page, tree->store().page_size());
  const std::size_t i = node.count() / 2;
  const detail::StoredKey key = node.key_at(i);
  REQUIRE(key.len > forein::kWordBytes);
  REQUIRE(key.long_bytes != nullptr);
  // The heap copy's first byte changes ('k' -> 'K'); the slot word does not.
  const auto heap_at = static_cast<std::size_t>(key.long_bytes - page);
  REQUIRE(page[heap_at] == static_cast<std::byte>('k'));
  page[heap_at] = static_cast<std::byte>('K');
  require_corruption_naming(*tree, leaf);
  backup.restore();
  tree->check();
}
