// A tree file written by an earlier build keeps opening and reading.
//
// tests/data/engine/format2-a0672c2.forein was written by main at commit
// a0672c2 (2026-12-06, tree format 2, before the lookup fast path of
// tree_get.cc): write_format_fixture() of format_fixture.h, compiled
// against that commit's engine (later builds run the same code with
// engine_tree_tests '[.write-fixture]' and FOREIN_FIXTURE_OUT=<path>).
// Its entries are fixture_entries():
// short and long keys, keys that share a word ("a", "a\0", "a\0\0" and
// longer ones with the same first 8 bytes), values inline (<= 8 bytes) and
// in the heap, in a tree two levels high. Whatever the node format or
// the lookup code becomes, this file must open, answer every lookup (both
// get() and get_view(), from the root and from hints), scan in order, pass
// check(), and accept writes. Never regenerate it with a newer build: that
// would test nothing.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "engine/format_fixture.h"
#include "forein/key.h"
#include "forein/page_store.h"
#include "forein/tree.h"

#ifndef FOREIN_TEST_DATA_DIR
#error "FOREIN_TEST_DATA_DIR must name tests/data"
#endif

namespace {

using forein::Tree;
using forein::testing::fixture_entries;

std::string fixture_path() {
  return std::string(FOREIN_TEST_DATA_DIR) + "/engine/format2-a0672c2.forein";
}

}  // namespace

TEST_CASE("a tree file written by main at a0672c2 opens, reads and takes writes",
          "[tree][layout][fixture]") {
  // Work on a copy: the test writes to it.
  const std::string copy = (std::filesystem::temp_directory_path() /
                            ("forein-fixture-" + std::to_string(::getpid()) + ".forein"))
                               .string();
  std::filesystem::copy_file(fixture_path(), copy,
                             std::filesystem::copy_options::overwrite_existing);
  struct Cleanup {
    std::string path;
    ~Cleanup() { std::filesystem::remove(path); }
  } cleanup{copy};

  const auto expected = fixture_entries();
  {
    auto tree = Tree::open(forein::FilePageStore::open(copy));
    REQUIRE(tree->size() == expected.size());
    REQUIRE(tree->height() >= 2);
    tree->check();
    std::string value;
    std::string_view view;
    for (const auto& [k, v] : expected) {
      INFO("key of " << k.size() << " bytes");
      REQUIRE(tree->get(k, &value));
      REQUIRE(value == v);
      REQUIRE(tree->get_view(k, &view));
      REQUIRE(view == v);
      forein::StartHints hints;
      hints.primary = tree->leaf_for(k);
      REQUIRE(tree->get(k, &value, &hints));
      REQUIRE(value == v);
      // A key just above each one (absent unless it is the next key).
      const std::string above = k + std::string(1, '\0');
      REQUIRE(tree->get(above, &value) == (expected.count(above) == 1));
    }
    // Scan order.
    std::size_t n = 0;
    auto it = expected.begin();
    auto c = tree->scan(forein::ScanSpec{});
    for (; c.next(); ++it, ++n) {
      REQUIRE(it != expected.end());
      REQUIRE(c.key() == it->first);
      REQUIRE(c.value() == it->second);
    }
    REQUIRE(n == expected.size());
    // Writes (in this build's format), then reopen.
    REQUIRE(tree->put("zz-new", "written after the change"));
    REQUIRE(tree->erase(forein::encode_word(0)));
    tree->sync();
  }
  auto tree = Tree::open(forein::FilePageStore::open(copy));
  tree->check();
  std::string value;
  REQUIRE(tree->get("zz-new", &value));
  REQUIRE(value == "written after the change");
  REQUIRE_FALSE(tree->get(forein::encode_word(0), &value));
  REQUIRE(tree->size() == expected.size());
}

// Writes the fixture (see the top of this file); hidden, run by hand only.
TEST_CASE("write the format fixture", "[.write-fixture]") {
  const char* out = std::getenv("FOREIN_FIXTURE_OUT");
  REQUIRE(out != nullptr);
  forein::testing::write_format_fixture(out);
}
