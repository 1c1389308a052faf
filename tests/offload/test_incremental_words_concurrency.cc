// TreeIndexSource's incremental words (Tree::for_each_leaf_words) beside
// two writers splitting and merging leaves: every walk's words are strictly
// ascending, and once the writers stop the words are exactly the tree's.
// Label concurrent: also run under ThreadSanitizer (make check-tsan).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "forein/key.h"
#include "forein/offload/tree_source.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "support/seed.h"

namespace {

using forein::Tree;
using forein::Word;
using forein::word_of;
using forein::offload::KeySource;
using forein::offload::TreeIndexSource;

std::string int_key(std::int64_t i) { return forein::encode_int64(i); }

std::vector<Word> scanned_words(Tree& tree) {
  std::vector<Word> words;
  tree.scan(forein::ScanSpec{}, [&](std::string_view key, std::string_view) {
    const Word w = word_of(key);
    if (words.empty() || words.back() != w) words.push_back(w);
    return true;
  });
  return words;
}

std::vector<Word> source_words(const KeySource& source) {
  std::vector<Word> words;
  source.for_each_word([&](Word w) {
    words.push_back(w);
    return true;
  });
  return words;
}

}  // namespace

TEST_CASE("incremental words beside concurrent writers", "[manager][idle][concurrent]") {
  const std::uint64_t seed = forein::testing::test_seed("incremental words, concurrent");
  auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(4096));
  std::vector<std::pair<std::string, std::string>> rows;
  for (std::int64_t i = 0; i < 20000; ++i) rows.emplace_back(int_key(i), "v");
  tree->bulk_load(rows);
  TreeIndexSource source(*tree);
  std::atomic<int> running{2};
  auto writer = [&](std::uint64_t s) {
    std::mt19937_64 rng(s);
    for (int i = 0; i < 40000; ++i) {
      const std::string key = int_key(static_cast<std::int64_t>(rng() % 30000));
      if (rng() % 2 == 0) {
        tree->erase(key);
      } else {
        tree->put(key, "w");
      }
    }
    running.fetch_sub(1);
  };
  std::thread a(writer, seed), b(writer, seed ^ 0x9e3779b97f4a7c15ULL);
  int walks = 0, unordered = 0;
  std::string first_bad, error;
  while (running.load() > 0 || walks == 0) {
    std::vector<Word> words;
    try {
      words = source_words(source);
    } catch (const std::exception& e) {
      if (error.empty()) error = e.what();
    }
    const auto bad = std::adjacent_find(words.begin(), words.end(),
                                        [](Word x, Word y) { return x >= y; });
    if (bad != words.end() && unordered++ == 0) {
      first_bad = "walk " + std::to_string(walks) + ": word " + std::to_string(*bad) +
                  " at " + std::to_string(bad - words.begin()) + " then " +
                  std::to_string(*(bad + 1));
    }
    ++walks;
  }
  a.join();
  b.join();
  INFO(first_bad);
  CHECK(unordered == 0);
  CHECK(error == "");  // no walk threw
  // Quiet again: exactly the tree's words, whatever the walks kept.
  CHECK(source_words(source) == scanned_words(*tree));
  CHECK(walks > 0);
}
