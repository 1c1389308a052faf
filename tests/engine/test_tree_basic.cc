// Basic tree behaviour: point operations on int64 and byte-string keys,
// size/height, key and value limits, page sizes, stats, and persistence on a
// FilePageStore.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "forein/error.h"
#include "forein/key.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "support/model.h"
#include "support/seed.h"

namespace {

using forein::Tree;
using forein::testing::scan_entries;
using Map = std::map<std::string, std::string>;

std::unique_ptr<Tree> make_tree(std::uint32_t page_size = forein::kDefaultPageSize) {
  return Tree::create(std::make_unique<forein::MemoryPageStore>(page_size));
}

std::string value_for(const std::string& key, std::uint64_t salt) {
  std::string v = "v" + std::to_string(salt) + ":";
  v += key;
  v.append(salt % 37, static_cast<char>('a' + salt % 26));
  return v;
}

// The tree matches the oracle: size, every get, and a full scan.
void require_equal(Tree& tree, const Map& oracle) {
  REQUIRE(tree.size() == oracle.size());
  std::size_t mismatches = 0;
  for (const auto& [k, v] : oracle) {
    std::string got;
    if (!tree.get(k, &got) || got != v) ++mismatches;
  }
  REQUIRE(mismatches == 0);
  auto all = scan_entries(tree);
  const std::vector<std::pair<std::string, std::string>> expected(oracle.begin(), oracle.end());
  REQUIRE(all.size() == expected.size());
  REQUIRE(all == expected);
}

class TempPath {
 public:
  TempPath() {
    static std::atomic<int> counter{0};
    path_ = (std::filesystem::temp_directory_path() /
             ("forein_tree_basic_" + std::to_string(::getpid()) + "_" +
              std::to_string(counter.fetch_add(1)) + ".db"))
                .string();
    std::filesystem::remove(path_);
  }
  ~TempPath() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  const std::string& str() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

TEST_CASE("empty tree: get, erase and scan find nothing", "[tree][basic]") {
  auto tree = make_tree();
  CHECK(tree->size() == 0);
  CHECK(tree->height() == 1);
  std::string v = "untouched";
  CHECK_FALSE(tree->get(forein::encode_int64(0), &v));
  CHECK_FALSE(tree->get("", nullptr));
  CHECK_FALSE(tree->erase(forein::encode_int64(42)));
  CHECK_FALSE(tree->erase(""));
  for (auto dir : {forein::Direction::kForward, forein::Direction::kBackward}) {
    forein::ScanSpec spec;
    spec.direction = dir;
    int calls = 0;
    tree->scan(spec, [&](std::string_view, std::string_view) {
      ++calls;
      return true;
    });
    CHECK(calls == 0);
    auto cursor = tree->scan(spec);
    CHECK_FALSE(cursor.next());
  }
  CHECK(tree->size() == 0);
  tree->check();
}

TEST_CASE("single key: put, get, replace, erase", "[tree][basic]") {
  auto tree = make_tree();
  const std::string k = forein::encode_int64(-7);
  CHECK(tree->put(k, "one"));
  CHECK(tree->size() == 1);
  std::string v;
  REQUIRE(tree->get(k, &v));
  CHECK(v == "one");
  CHECK(tree->get(k, nullptr));

  CHECK_FALSE(tree->put(k, "two-and-longer"));  // replace: not new
  CHECK(tree->size() == 1);
  REQUIRE(tree->get(k, &v));
  CHECK(v == "two-and-longer");

  CHECK_FALSE(tree->put(k, ""));  // replace with an empty value
  REQUIRE(tree->get(k, &v));
  CHECK(v.empty());

  // Neighbouring keys are not found.
  CHECK_FALSE(tree->get(forein::encode_int64(-8), &v));
  CHECK_FALSE(tree->get(forein::encode_int64(-6), &v));

  CHECK(tree->erase(k));
  CHECK_FALSE(tree->erase(k));
  CHECK_FALSE(tree->get(k, &v));
  CHECK(tree->size() == 0);
  tree->check();

  CHECK(tree->put(k, "again"));
  REQUIRE(tree->get(k, &v));
  CHECK(v == "again");
  tree->check();
}

TEST_CASE("insert: adds absent keys, leaves present ones unchanged", "[tree][basic]") {
  const auto seed = forein::testing::test_seed("insert unless present");
  std::mt19937_64 rng(seed);
  auto tree = make_tree(4096);
  Map oracle;
  for (std::uint64_t i = 0; i < 20000; ++i) {
    const std::string k = forein::encode_int64(static_cast<std::int64_t>(rng() % 8000));
    const std::string v = value_for(k, i);
    const bool absent = oracle.count(k) == 0;
    REQUIRE(tree->insert(k, v) == absent);  // splits included: values up to 45 bytes
    if (absent) oracle[k] = v;
  }
  require_equal(*tree, oracle);
  tree->check();
}

TEST_CASE("many int64 keys match a std::map", "[tree][basic]") {
  const auto seed = forein::testing::test_seed("many int64 keys");
  std::mt19937_64 rng(seed);
  const std::uint32_t page_size = GENERATE(4096u, 8192u, 32768u);
  INFO("page size " << page_size);
  auto tree = make_tree(page_size);
  Map oracle;

  std::vector<std::int64_t> ints = {0,
                                    -1,
                                    1,
                                    std::numeric_limits<std::int64_t>::min(),
                                    std::numeric_limits<std::int64_t>::max(),
                                    std::numeric_limits<std::int64_t>::min() + 1,
                                    std::numeric_limits<std::int64_t>::max() - 1};
  std::uniform_int_distribution<std::int64_t> any;
  std::uniform_int_distribution<std::int64_t> narrow(-50000, 50000);
  while (ints.size() < 30000) ints.push_back(ints.size() % 2 ? any(rng) : narrow(rng));

  std::uint16_t last_height = tree->height();
  std::uint64_t salt = 0;
  for (auto i : ints) {
    const std::string k = forein::encode_int64(i);
    const std::string v = value_for(k, salt++);
    const bool is_new = oracle.find(k) == oracle.end();
    REQUIRE(tree->put(k, v) == is_new);
    oracle[k] = v;
    REQUIRE(tree->height() >= last_height);  // height never shrinks on inserts
    last_height = tree->height();
  }
  require_equal(*tree, oracle);
  CHECK(tree->height() > 1);
  tree->check();

  // Forward order is integer order.
  {
    std::int64_t prev = 0;
    bool first = true;
    bool ordered = true;
    tree->scan(forein::ScanSpec{}, [&](std::string_view k, std::string_view) {
      const auto x = forein::decode_int64(k);
      if (!first && !(prev < x)) ordered = false;
      prev = x;
      first = false;
      return true;
    });
    CHECK(ordered);
  }

  // Replace a third, erase half, look up absent keys.
  std::vector<std::string> keys;
  for (const auto& kv : oracle) keys.push_back(kv.first);
  std::shuffle(keys.begin(), keys.end(), rng);
  for (std::size_t i = 0; i < keys.size() / 3; ++i) {
    const std::string v = value_for(keys[i], salt++);
    REQUIRE_FALSE(tree->put(keys[i], v));
    oracle[keys[i]] = v;
  }
  std::shuffle(keys.begin(), keys.end(), rng);
  for (std::size_t i = 0; i < keys.size() / 2; ++i) {
    REQUIRE(tree->erase(keys[i]));
    REQUIRE_FALSE(tree->erase(keys[i]));
    oracle.erase(keys[i]);
  }
  require_equal(*tree, oracle);
  tree->check();
  for (std::size_t i = 0; i < keys.size() / 2; i += 97) REQUIRE_FALSE(tree->get(keys[i], nullptr));

  // Erase everything: the tree is empty and still works.
  for (const auto& kv : oracle) REQUIRE(tree->erase(kv.first));
  oracle.clear();
  require_equal(*tree, oracle);
  tree->check();
  CHECK(tree->put(forein::encode_int64(5), "five"));
  CHECK(tree->size() == 1);
  tree->check();
}

TEST_CASE("byte-string keys: empty, shared prefix word, trailing zeros, max size",
          "[tree][basic]") {
  auto tree = make_tree();
  const std::size_t max_key = tree->max_key_size();
  std::vector<std::string> keys = {
      std::string(),
      std::string(1, '\0'),
      std::string(2, '\0'),
      std::string(8, '\0'),
      std::string(9, '\0'),
      "a",
      "abc",
      std::string("abc\0", 4),
      std::string("abc\0\0", 5),
      std::string("abc\0\0\0\0\0", 8),
      std::string("abc\0\0\0\0\0\0", 9),
      std::string("abc\0\0\0\0\0x", 9),
      "abd",
      // Keys sharing the 8-byte prefix word "prefix00".
      "prefix00",
      "prefix00a",
      "prefix00b",
      "prefix00aa",
      std::string("prefix00\0", 9),
      "prefix00" + std::string(100, 'z'),
      "prefix01",
      std::string(max_key, 'z'),
      std::string(max_key, '\0'),
      std::string(max_key, '\xff'),
      std::string(max_key - 1, '\xff'),
      "prefix00" + std::string(max_key - 8, 'q'),
      std::string(1, '\xff'),
      std::string("\x80\x00", 2),
      std::string(1, '\x7f'),
  };
  Map oracle;
  std::uint64_t salt = 0;
  for (const auto& k : keys) {
    REQUIRE(oracle.count(k) == 0);  // the list has no duplicates
    const std::string v = value_for(k, salt++);
    REQUIRE(tree->put(k, v));
    oracle[k] = v;
  }
  require_equal(*tree, oracle);
  tree->check();

  // Each key is told apart from its neighbours that share its word.
  std::string v;
  CHECK_FALSE(tree->get("ab", &v));
  CHECK_FALSE(tree->get(std::string("abc\0\0\0", 6), &v));
  CHECK_FALSE(tree->get("prefix00c", &v));
  CHECK_FALSE(tree->get(std::string(3, '\0'), &v));
  CHECK_FALSE(tree->get(std::string(max_key - 2, '\xff'), &v));

  // Erasing "abc\0" leaves "abc" and "abc\0\0".
  REQUIRE(tree->erase(std::string("abc\0", 4)));
  oracle.erase(std::string("abc\0", 4));
  REQUIRE(tree->erase(std::string()));
  oracle.erase(std::string());
  REQUIRE_FALSE(tree->erase(std::string()));
  require_equal(*tree, oracle);
  tree->check();
  REQUIRE(tree->put(std::string(), "empty key back"));
  oracle[std::string()] = "empty key back";
  require_equal(*tree, oracle);
}

TEST_CASE("many random byte-string keys with shared prefixes", "[tree][basic]") {
  const auto seed = forein::testing::test_seed("random byte-string keys");
  std::mt19937_64 rng(seed);
  const std::uint32_t page_size = GENERATE(4096u, 8192u);
  INFO("page size " << page_size);
  auto tree = make_tree(page_size);
  const char alphabet[] = {'\0', '\x01', 'a', 'b', '\x7f', '\x80', '\xff'};
  std::uniform_int_distribution<int> pick(0, sizeof(alphabet) - 1);
  std::uniform_int_distribution<int> len(0, 40);
  Map oracle;
  std::uint64_t salt = 0;
  for (int op = 0; op < 40000; ++op) {
    std::string k;
    // Most keys share a long prefix, so many share the same word.
    if (op % 3 != 0) k = "common/";
    const int n = len(rng);
    for (int i = 0; i < n; ++i) k.push_back(alphabet[pick(rng)]);
    if (op % 5 == 4 && !oracle.empty()) {
      auto it = oracle.lower_bound(k);
      if (it == oracle.end()) it = oracle.begin();
      const std::string victim = it->first;
      REQUIRE(tree->erase(victim));
      oracle.erase(victim);
      continue;
    }
    const std::string v = value_for(k, salt++);
    const bool is_new = oracle.count(k) == 0;
    REQUIRE(tree->put(k, v) == is_new);
    oracle[k] = v;
  }
  require_equal(*tree, oracle);
  tree->check();
}

TEST_CASE("size and height grow with the tree", "[tree][basic]") {
  auto tree = make_tree(4096);
  CHECK(tree->height() == 1);
  std::uint16_t h = 1;
  std::int64_t i = 0;
  for (; i < 100000 && tree->height() < 3; ++i) {
    REQUIRE(tree->put(forein::encode_int64(i), std::string(16, 'x')));
    REQUIRE(tree->size() == static_cast<std::uint64_t>(i + 1));
    REQUIRE(tree->height() >= h);
    REQUIRE(tree->height() <= h + 1);  // one level at a time
    h = tree->height();
  }
  CHECK(tree->height() == 3);
  tree->check();

  // Count nodes per level: the root is alone at the top, leaves at level 0.
  std::map<std::uint16_t, std::size_t> per_level;
  tree->for_each_node([&](const forein::NodeInterval& n) { ++per_level[n.level]; });
  CHECK(per_level.size() == 3);
  CHECK(per_level[2] == 1);
  CHECK(per_level[0] > per_level[1]);
}

TEST_CASE("key_generation advances on every key-set change and on nothing else",
          "[tree][basic]") {
  const std::uint64_t seed = forein::testing::test_seed("key_generation");
  std::mt19937_64 rng(seed);
  auto tree = make_tree(4096);
  std::uint64_t g = tree->key_generation();
  std::vector<std::pair<std::string, std::string>> rows;
  for (std::int64_t i = 0; i < 5000; i += 2) rows.emplace_back(forein::encode_int64(i), "v");
  tree->bulk_load(rows);
  CHECK(tree->key_generation() > g);
  g = tree->key_generation();
  Map model;
  for (const auto& [k, v] : rows) model[k] = v;
  // Random puts, inserts and erases (splits and merges among them): the
  // generation moves exactly when the set of keys does.
  for (int op = 0; op < 20000; ++op) {
    const std::string key = forein::encode_int64(static_cast<std::int64_t>(rng() % 6000));
    const bool present = model.contains(key);
    switch (rng() % 3) {
      case 0:
        REQUIRE(tree->put(key, "p") == !present);
        model[key] = "p";
        break;
      case 1:
        REQUIRE(tree->insert(key, "i") == !present);
        model.emplace(key, "i");
        break;
      default:
        REQUIRE(tree->erase(key) == present);
        model.erase(key);
        break;
    }
    const bool changed = present != model.contains(key);
    const std::uint64_t now = tree->key_generation();
    if (changed) {
      REQUIRE(now > g);
    } else {
      REQUIRE(now == g);
    }
    g = now;
  }
  CHECK(tree->size() == model.size());
}

TEST_CASE("for_each_leaf_words: every leaf's words, change counts that move only with writes",
          "[tree][basic]") {
  const std::uint64_t seed = forein::testing::test_seed("for_each_leaf_words");
  std::mt19937_64 rng(seed);
  auto tree = make_tree(4096);
  Map model;
  // The words of a walk that reads every leaf, and each leaf's change count.
  struct Walk {
    std::vector<forein::Word> words;  // in walk order
    std::map<forein::PageId, std::uint64_t> changes;
    std::size_t read = 0;
  };
  auto walk = [&](const std::map<forein::PageId, std::uint64_t>* known) {
    Walk w;
    tree->for_each_leaf_words(
        [&](forein::PageId id, std::uint64_t change) {
          if (known == nullptr) return true;
          const auto it = known->find(id);
          return it == known->end() || it->second != change;
        },
        [&](forein::PageId id, std::uint64_t change, std::span<const forein::Word> words, bool read) {
          REQUIRE(w.changes.emplace(id, change).second);  // each leaf once
          REQUIRE(std::is_sorted(words.begin(), words.end()));
          if (read) ++w.read;
          w.words.insert(w.words.end(), words.begin(), words.end());
        });
    return w;
  };
  auto model_words = [&] {
    std::vector<forein::Word> words;
    for (const auto& [k, v] : model) words.push_back(forein::word_of(k));
    return words;
  };
  for (int round = 0; round < 30; ++round) {
    const int ops = 1 + static_cast<int>(rng() % 400);
    for (int op = 0; op < ops; ++op) {
      // Long and short keys, some sharing a word.
      std::string key = forein::encode_int64(static_cast<std::int64_t>(rng() % 3000));
      if (rng() % 3 == 0) key += std::string(1 + rng() % 20, 'x');
      if (rng() % 3 == 0) {
        tree->erase(key);
        model.erase(key);
      } else {
        tree->put(key, "v");
        model[key] = "v";
      }
    }
    const Walk all = walk(nullptr);
    CHECK(all.words == model_words());  // one walk, no writer: exact, in order
    CHECK(all.read == all.changes.size());
    // Nothing changed: a walk that keeps what it knows reads no leaf.
    const Walk again = walk(&all.changes);
    CHECK(again.read == 0);
    CHECK(again.changes == all.changes);
    // One new key changes its leaf only (a split: the new leaf and the
    // right neighbour, whose left link moves, too).
    std::string key;
    do {
      key = forein::encode_int64(static_cast<std::int64_t>(rng() % 3000)) + "new";
    } while (model.contains(key));
    tree->put(key, "v");
    model[key] = "v";
    const Walk after = walk(&all.changes);
    CHECK(after.read >= 1);
    CHECK(after.read <= 3);  // a split also relinks the right neighbour
  }
}

TEST_CASE("limits: max key and value sizes", "[tree][basic][limits]") {
  const std::uint32_t page_size = GENERATE(4096u, 8192u, 32768u);
  INFO("page size " << page_size);
  auto tree = make_tree(page_size);
  const std::size_t max_key = tree->max_key_size();
  const std::size_t max_value = tree->max_value_size();
  CHECK(max_key == page_size / 16);
  CHECK(max_value == page_size / 8);
  CHECK(tree->store().page_size() == page_size);

  Map oracle;
  for (int i = 0; i < 50; ++i) {
    const std::string k = forein::encode_int64(i * 10);
    oracle[k] = value_for(k, static_cast<std::uint64_t>(i));
    REQUIRE(tree->put(k, oracle[k]));
  }
  const auto before = scan_entries(*tree);

  // Oversized key: rejected, nothing changes.
  const std::string big_key(max_key + 1, 'k');
  CHECK_THROWS_AS(tree->put(big_key, "v"), forein::InvalidArgument);
  CHECK_THROWS_AS(tree->put(std::string(max_key + 1000, '\0'), ""), forein::InvalidArgument);
  // Oversized value, for a new key and for an existing key.
  const std::string big_value(max_value + 1, 'v');
  const std::string existing = forein::encode_int64(100);
  CHECK_THROWS_AS(tree->put(forein::encode_int64(5), big_value), forein::InvalidArgument);
  CHECK_THROWS_AS(tree->put(existing, big_value), forein::InvalidArgument);
  CHECK_THROWS_AS(tree->put(big_key, big_value), forein::InvalidArgument);
  CHECK(tree->size() == oracle.size());
  CHECK(scan_entries(*tree) == before);
  CHECK_FALSE(tree->get(forein::encode_int64(5), nullptr));
  std::string v;
  REQUIRE(tree->get(existing, &v));
  CHECK(v == oracle[existing]);
  tree->check();

  // Exactly max-size keys and values, and empty values, are accepted.
  const std::string max_k(max_key, 'm');
  const std::string max_v(max_value, 'V');
  REQUIRE(tree->put(max_k, max_v));
  oracle[max_k] = max_v;
  REQUIRE(tree->put("empty-value", ""));
  oracle["empty-value"] = "";
  REQUIRE_FALSE(tree->put(existing, max_v));
  oracle[existing] = max_v;
  REQUIRE(tree->get(max_k, &v));
  CHECK(v == max_v);
  REQUIRE(tree->get("empty-value", &v));
  CHECK(v.empty());
  require_equal(*tree, oracle);

  // Many max-size entries force splits with only a few entries per leaf.
  for (int i = 0; i < 300; ++i) {
    std::string k(max_key, static_cast<char>('A' + i % 26));
    const std::string num = std::to_string(i);
    std::memcpy(k.data() + max_key - num.size(), num.data(), num.size());
    std::string val(max_value, static_cast<char>('a' + i % 26));
    const bool is_new = oracle.count(k) == 0;
    REQUIRE(tree->put(k, val) == is_new);
    oracle[k] = val;
  }
  require_equal(*tree, oracle);
  tree->check();
  CHECK(tree->height() > 1);
  // And shrink back.
  int n = 0;
  for (auto it = oracle.begin(); it != oracle.end();) {
    if (n++ % 4 != 0) {
      REQUIRE(tree->erase(it->first));
      it = oracle.erase(it);
    } else {
      ++it;
    }
  }
  require_equal(*tree, oracle);
  tree->check();
}

TEST_CASE("page sizes: valid ones work, invalid ones throw", "[tree][basic]") {
  for (std::uint32_t bad : {0u, 1000u, 2048u, 4095u, 5000u, 12288u, 65536u}) {
    INFO("page size " << bad);
    CHECK_THROWS_AS(std::make_unique<forein::MemoryPageStore>(bad), forein::InvalidArgument);
  }
  for (std::uint32_t good : {4096u, 8192u, 16384u, 32768u}) {
    INFO("page size " << good);
    auto tree = make_tree(good);
    Map oracle;
    for (std::int64_t i = 0; i < 5000; ++i) {
      const std::string k = forein::encode_int64(i * 7919 % 5003);
      oracle[k] = value_for(k, static_cast<std::uint64_t>(i));
      tree->put(k, oracle[k]);
    }
    require_equal(*tree, oracle);
    tree->check();
  }
}

TEST_CASE("stats count operations and nodes visited", "[tree][basic][stats]") {
  auto tree = make_tree(4096);
  for (std::int64_t i = 0; i < 200000 && tree->height() < 3; ++i)
    tree->put(forein::encode_int64(i), "value");
  REQUIRE(tree->height() >= 3);
  const auto h = tree->height();

  tree->reset_stats();
  auto s = tree->stats();
  CHECK(s.operations == 0);
  CHECK(s.hinted == 0);
  CHECK(s.hint_hits == 0);
  CHECK(s.secondary_hits == 0);
  CHECK(s.fallbacks == 0);
  CHECK(s.move_rights == 0);
  CHECK(s.nodes_visited == 0);

  for (std::int64_t i = 0; i < 100; ++i) REQUIRE(tree->get(forein::encode_int64(i * 100), nullptr));
  s = tree->stats();
  CHECK(s.operations == 100);
  CHECK(s.nodes_visited >= 100u * h);  // a root descent latches every level
  CHECK(s.hinted == 0);

  for (std::int64_t i = 0; i < 10; ++i) tree->put(forein::encode_int64(-i - 1), "new");
  for (std::int64_t i = 0; i < 10; ++i) tree->erase(forein::encode_int64(-i - 1));
  const auto s2 = tree->stats();
  CHECK(s2.operations == 120);
  CHECK(s2.nodes_visited >= s.nodes_visited + 20u * h);

  forein::ScanSpec spec;
  spec.lower = forein::KeyBound{forein::encode_int64(10), true};
  spec.upper = forein::KeyBound{forein::encode_int64(20), true};
  int seen = 0;
  tree->scan(spec, [&](std::string_view, std::string_view) {
    ++seen;
    return true;
  });
  CHECK(seen == 11);
  const auto s3 = tree->stats();
  CHECK(s3.operations > s2.operations);
  CHECK(s3.nodes_visited > s2.nodes_visited);

  // A correct hint from leaf_for() is accepted and visits a single node.
  const std::string k = forein::encode_int64(1234);
  forein::StartHints hints;
  hints.primary = tree->leaf_for(k);
  REQUIRE(hints.primary.present());
  CHECK(hints.primary.level == 0);
  tree->reset_stats();
  std::string v;
  REQUIRE(tree->get(k, &v, &hints));
  CHECK(v == "value");
  s = tree->stats();
  CHECK(s.operations == 1);
  CHECK(s.hinted == 1);
  CHECK(s.hint_hits == 1);
  CHECK(s.fallbacks == 0);
  CHECK(s.move_rights == 0);
  CHECK(s.nodes_visited == 1);

  tree->reset_stats();
  s = tree->stats();
  CHECK(s.operations == 0);
  CHECK(s.hinted == 0);
  CHECK(s.hint_hits == 0);
  CHECK(s.nodes_visited == 0);
}

TEST_CASE("persistence: a FilePageStore tree survives close and reopen", "[tree][basic][file]") {
  const auto seed = forein::testing::test_seed("file persistence");
  std::mt19937_64 rng(seed);
  TempPath path;
  Map oracle;
  std::uint64_t salt = 0;
  {
    auto tree = Tree::create(forein::FilePageStore::create(path.str(), 8192));
    std::vector<std::int64_t> ints(50000);
    for (std::size_t i = 0; i < ints.size(); ++i) ints[i] = static_cast<std::int64_t>(i) * 3 - 60000;
    std::shuffle(ints.begin(), ints.end(), rng);
    for (auto i : ints) {
      const std::string k = forein::encode_int64(i);
      const std::string v = value_for(k, salt++);
      REQUIRE(tree->put(k, v));
      oracle[k] = v;
    }
    // Erase a random fifth, and a contiguous run so that some leaves empty out.
    for (std::size_t i = 0; i < ints.size() / 5; ++i) {
      const std::string k = forein::encode_int64(ints[i]);
      if (oracle.erase(k) == 1) REQUIRE(tree->erase(k));
    }
    for (std::int64_t i = 0; i < 9000; i += 3) {
      const std::string k = forein::encode_int64(i);
      if (oracle.erase(k) == 1) REQUIRE(tree->erase(k));
    }
    tree->sync();
  }
  {
    auto tree = Tree::open(forein::FilePageStore::open(path.str()));
    CHECK(tree->store().page_size() == 8192);
    require_equal(*tree, oracle);
    tree->check();
    // Keep working on the reopened tree (reuses freed pages), then reopen again.
    for (int i = 0; i < 20000; ++i) {
      const std::string k = forein::encode_int64(static_cast<std::int64_t>(rng() % 200000) - 100000);
      if (i % 3 == 0) {
        const bool present = oracle.erase(k) == 1;
        REQUIRE(tree->erase(k) == present);
      } else {
        const std::string v = value_for(k, salt++);
        const bool is_new = oracle.count(k) == 0;
        REQUIRE(tree->put(k, v) == is_new);
        oracle[k] = v;
      }
    }
    tree->check();
    tree->sync();
  }
  {
    auto tree = Tree::open(forein::FilePageStore::open(path.str()));
    require_equal(*tree, oracle);
    tree->check();
  }
}

TEST_CASE("Tree::open rejects a store without a tree", "[tree][basic][file]") {
  SECTION("empty memory store") {
    auto store = std::make_unique<forein::MemoryPageStore>();
    CHECK_THROWS_AS(Tree::open(std::move(store)), forein::CorruptionError);
  }
  SECTION("zeroed meta page") {
    auto store = std::make_unique<forein::MemoryPageStore>();
    while (store->page_count() < 2) store->allocate();
    CHECK_THROWS_AS(Tree::open(std::move(store)), forein::CorruptionError);
  }
  SECTION("garbage meta page") {
    auto store = std::make_unique<forein::MemoryPageStore>();
    while (store->page_count() < 4) store->allocate();
    for (forein::PageId id = 0; id < 4; ++id) {
      std::byte* p = store->page(id);
      for (std::size_t i = forein::kPageMagicOffset; i < store->page_size(); ++i)
        p[i] = static_cast<std::byte>((i * 131 + id) & 0xFF);
    }
    CHECK_THROWS_AS(Tree::open(std::move(store)), forein::CorruptionError);
  }
  SECTION("file whose meta page is not a tree") {
    TempPath path;
    {
      auto store = forein::FilePageStore::create(path.str(), 4096);
      while (store->page_count() < 3) store->allocate();
      for (forein::PageId id = 0; id < 3; ++id) {
        std::byte* p = store->page(id);
        const char magic[4] = {'J', 'U', 'N', 'K'};
        std::memcpy(p + forein::kPageMagicOffset, magic, 4);
        std::memset(p + forein::kPageMagicOffset + 4, 0x5A,
                    store->page_size() - forein::kPageMagicOffset - 4);
        store->mark_dirty(id);
      }
      store->sync();
    }
    auto store = forein::FilePageStore::open(path.str());
    CHECK_THROWS_AS(Tree::open(std::move(store)), forein::CorruptionError);
  }
  SECTION("control: a file holding a tree reopens") {
    // Tree::open of a store that does hold a tree succeeds.
    TempPath path;
    {
      auto tree = Tree::create(forein::FilePageStore::create(path.str(), 4096));
      tree->put("k", "v");
      tree->sync();
    }
    auto tree = Tree::open(forein::FilePageStore::open(path.str()));
    std::string v;
    REQUIRE(tree->get("k", &v));
    CHECK(v == "v");
  }
}

TEST_CASE("empty values fill a leaf whose heap has holes", "[tree][basic][limits]") {
  // Entries with 8-byte keys and empty values need no heap bytes, only a
  // slot; the slot array must still not grow into the heap when erased
  // entries left garbage there (the leaf has to compact first).
  auto tree = make_tree(4096);
  Map oracle;
  for (std::int64_t i = 0; i < 61; ++i) {
    const std::string k = forein::encode_int64(i);
    oracle[k] = std::string(50, static_cast<char>('A' + i % 26));
    REQUIRE(tree->put(k, oracle[k]));
  }
  for (std::int64_t i = 0; i < 5; ++i) {
    REQUIRE(tree->erase(forein::encode_int64(i)));
    oracle.erase(forein::encode_int64(i));
  }
  for (std::int64_t i = 100; i < 140; ++i) {
    const std::string k = forein::encode_int64(i);
    REQUIRE(tree->put(k, ""));
    oracle[k] = "";
    require_equal(*tree, oracle);
  }
  tree->check();
  // Short byte-string keys with empty values, same situation.
  for (int i = 0; i < 400; ++i) {
    const std::string k = "s" + std::to_string(i);
    if (i % 3 == 0) {
      oracle[k] = std::string(i % 90, 'x');
    } else {
      oracle[k] = "";
    }
    tree->put(k, oracle[k]);
    if (i % 5 == 4) {
      const std::string gone = "s" + std::to_string(i - 2);
      tree->erase(gone);
      oracle.erase(gone);
    }
  }
  require_equal(*tree, oracle);
  tree->check();
}

namespace {

// Nodes per level (0: leaves).
std::map<std::uint16_t, std::size_t> nodes_per_level(Tree& tree) {
  std::map<std::uint16_t, std::size_t> per_level;
  tree.for_each_node([&](const forein::NodeInterval& n) { ++per_level[n.level]; });
  return per_level;
}

}  // namespace

TEST_CASE("ascending inserts leave full nodes; other orders still split in half",
          "[tree][basic][split]") {
  constexpr std::int64_t kKeys = 60000;
  const std::string value(20, 'v');  // out of the slot: 24 + 20 bytes an entry
  constexpr std::size_t kCapacity = 4096 - 64;
  // Full leaves: as many entries as fit a page's capacity less lo and hi.
  constexpr std::size_t kPerLeaf = (kCapacity - 16) / 44;
  const std::size_t min_leaves = (kKeys + kPerLeaf - 1) / kPerLeaf;

  auto asc = make_tree(4096);
  Map oracle;
  for (std::int64_t i = 0; i < kKeys; ++i) {
    const std::string k = forein::encode_int64(i * 3);
    REQUIRE(asc->put(k, value));
    oracle[k] = value;
  }
  asc->check();
  require_equal(*asc, oracle);
  auto levels = nodes_per_level(*asc);
  INFO("ascending: " << levels[0] << " leaves, " << levels[1] << " at level 1; minimum " << min_leaves);
  CHECK(levels[0] <= min_leaves + 1);
  // Inner nodes fill too (16-byte slots, separators of at most 8 bytes).
  CHECK(levels[1] <= levels[0] / 240 + 1);

  // Descending and random orders keep the half-and-half split: about
  // twice the leaves (and room for later inserts between their keys).
  auto desc = make_tree(4096);
  for (std::int64_t i = kKeys - 1; i >= 0; --i) REQUIRE(desc->put(forein::encode_int64(i * 3), value));
  desc->check();
  require_equal(*desc, oracle);
  CHECK(nodes_per_level(*desc)[0] > min_leaves * 3 / 2);

  // Inserting between an ascending load's keys afterwards works as ever.
  for (std::int64_t i = 0; i < kKeys; i += 7) {
    const std::string k = forein::encode_int64(i * 3 + 1);
    REQUIRE(asc->put(k, "between"));
    oracle[k] = "between";
  }
  asc->check();
  require_equal(*asc, oracle);

  // Values near the size limit: the last entries still fit the left node.
  auto big = make_tree(4096);
  Map big_oracle;
  for (std::int64_t i = 0; i < 3000; ++i) {
    const std::string k = forein::encode_int64(i);
    const std::string v(big->max_value_size() - static_cast<std::size_t>(i % 50), static_cast<char>('a' + i % 26));
    REQUIRE(big->put(k, v));
    big_oracle[k] = v;
  }
  big->check();
  require_equal(*big, big_oracle);
}

TEST_CASE("append fast path: writes without a hint skip the descent, results unchanged",
          "[tree][basic][append]") {
  const auto seed = forein::testing::test_seed("append fast path");
  std::mt19937_64 rng(seed);
  forein::TreeOptions options;
  options.append_fast_path = true;
  auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(4096), options);
  auto plain = make_tree(4096);
  Map oracle;
  std::int64_t next = 0;
  auto append = [&](Tree& t, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i, ++next) {
      const std::string k = forein::encode_int64(next * 2);
      const std::string v = value_for(k, static_cast<std::uint64_t>(next));
      REQUIRE(t.insert(k, v));
      oracle[k] = v;
    }
  };
  append(*tree, 50000);
  REQUIRE(tree->height() >= 3);
  require_equal(*tree, oracle);

  // An append now visits one node; without the option, every level.
  tree->reset_stats();
  append(*tree, 1000);
  CHECK(tree->stats().operations == 1000);
  CHECK(tree->stats().nodes_visited <= 1000 + 20);
  next = 0;
  Map saved = std::move(oracle);
  oracle.clear();
  append(*plain, 51000);
  plain->reset_stats();
  append(*plain, 1000);
  CHECK(plain->stats().nodes_visited >= 1000u * plain->height());
  oracle = std::move(saved);

  // Mixed rounds: random writes anywhere (merges included), erasing the
  // tail (the rightmost leaf shrinks and absorbs its left neighbour),
  // replacing and re-inserting near the end, appends, hinted appends,
  // a reload. The tree stays the map.
  for (int round = 0; round < 40; ++round) {
    INFO("seed " << seed << ", round " << round);
    for (int i = 0; i < 500; ++i) {
      const std::string k = forein::encode_int64(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(next * 2)));
      if (rng() % 3 == 0) {
        REQUIRE(tree->erase(k) == (oracle.erase(k) == 1));
      } else {
        const std::string v = value_for(k, rng());
        REQUIRE(tree->put(k, v) == (oracle.count(k) == 0));
        oracle[k] = v;
      }
    }
    const int tail = static_cast<int>(rng() % 3000);
    for (int i = 0; i < tail && !oracle.empty(); ++i) {
      const auto last = std::prev(oracle.end());
      REQUIRE(tree->erase(last->first));
      oracle.erase(last);
    }
    // Keys just above the remaining maximum: inside the rightmost leaf's
    // range though below keys it held before.
    if (!oracle.empty()) {
      const std::int64_t top = forein::decode_int64(std::prev(oracle.end())->first);
      for (std::int64_t k = top + 1; k < top + 40; k += 3) {
        const std::string key = forein::encode_int64(k);
        REQUIRE(tree->insert(key, "near-end"));
        oracle[key] = "near-end";
        REQUIRE_FALSE(tree->insert(key, "ignored"));  // present: left as it is
        REQUIRE_FALSE(tree->put(key, "replaced"));
        oracle[key] = "replaced";
      }
      next = std::max(next, top / 2 + 21);
    }
    append(*tree, static_cast<std::int64_t>(rng() % 4000));
    if (round % 5 == 0) {
      // A hinted append takes the hint, not the remembered leaf.
      const forein::Hint h = tree->leaf_for(forein::encode_int64(next * 2));
      const forein::StartHints hints{h, forein::Hint{}};
      const auto before = tree->stats();
      const std::string k = forein::encode_int64(next++ * 2);
      REQUIRE(tree->put(k, "hinted", &hints));
      oracle[k] = "hinted";
      CHECK(tree->stats().hinted == before.hinted + 1);
    }
    if (round % 10 == 9) {
      tree->sync();
      tree->reload();
    }
    tree->check();
  }
  require_equal(*tree, oracle);
}
