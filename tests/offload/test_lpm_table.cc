// The switch_lpm table against a brute-force longest-prefix scan; batches,
// capacity and usage.
#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "forein/error.h"
#include "support/seed.h"
#include "switch_lpm/lpm_table.h"

using forein::Word;
using forein::offload::LpmAction;
using forein::offload::LpmStatus;
using forein::offload::LpmTable;
using forein::offload::Prefix;
using forein::offload::prefix_contains;
using forein::offload::prefix_first;
using forein::offload::prefix_last;
using forein::offload::prefix_less;
using forein::offload::prefix_mask;

namespace {

using Entry = std::pair<Prefix, LpmAction>;

struct PrefixOrder {
  bool operator()(const Prefix& a, const Prefix& b) const { return prefix_less(a, b); }
};
using Model = std::map<Prefix, LpmAction, PrefixOrder>;

std::optional<LpmAction> brute_lookup(const Model& model, Word w) {
  std::optional<LpmAction> best;
  int best_len = -1;
  for (const auto& [p, a] : model) {
    if (prefix_contains(p, w) && p.len > best_len) {
      best = a;
      best_len = p.len;
    }
  }
  return best;
}

// Random prefixes around a few centres, lengths spread over 0..64, so that
// nesting, shared first words and adjacent blocks all occur.
Prefix random_prefix(std::mt19937_64& rng, const std::vector<Word>& centres) {
  const Word centre = centres[rng() % centres.size()];
  const Word w = centre + (rng() >> (rng() % 64));
  std::uint8_t len;
  switch (rng() % 4) {
    case 0: len = static_cast<std::uint8_t>(rng() % 65); break;
    case 1: len = static_cast<std::uint8_t>(56 + rng() % 9); break;
    default: len = static_cast<std::uint8_t>(30 + rng() % 35); break;
  }
  return Prefix{w & prefix_mask(len), len};
}

LpmAction random_action(std::mt19937_64& rng) {
  return LpmAction{static_cast<std::uint32_t>(1 + rng() % 1000), static_cast<std::uint16_t>(rng() % 4),
                   static_cast<std::uint16_t>(rng())};
}

void check_against_model(const LpmTable& table, const Model& model, std::mt19937_64& rng,
                         const std::vector<Word>& centres) {
  const auto snapshot = table.snapshot();
  REQUIRE(snapshot->entry_count() == model.size());
  std::vector<Word> probes{0, 1, ~Word{0}, ~Word{0} - 1, Word{1} << 63};
  for (const auto& [p, a] : model) {
    for (Word w : {prefix_first(p), prefix_last(p)}) {
      probes.push_back(w);
      probes.push_back(w - 1);
      probes.push_back(w + 1);
    }
  }
  for (int i = 0; i < 500; ++i) probes.push_back(rng());
  for (int i = 0; i < 500; ++i) probes.push_back(centres[rng() % centres.size()] + (rng() >> (rng() % 64)));
  for (Word w : probes) {
    INFO("word " << w);
    const auto expected = brute_lookup(model, w);
    const auto got = snapshot->lookup(w);
    REQUIRE(got.has_value() == expected.has_value());
    if (got) REQUIRE(*got == *expected);
  }
}

}  // namespace

TEST_CASE("lpm table matches a brute-force longest-prefix scan", "[lpm]") {
  std::mt19937_64 rng(forein::testing::test_seed("lpm vs brute force"));
  for (int round = 0; round < 60; ++round) {
    std::vector<Word> centres;
    const std::size_t clusters = 1 + rng() % 4;
    for (std::size_t c = 0; c < clusters; ++c) {
      centres.push_back(round % 3 == 0 ? (Word{1} << 63) + rng() % 100000 : rng());
    }
    LpmTable table(5000);
    Model model;
    for (int step = 0; step < 6; ++step) {
      std::vector<Entry> batch(rng() % 200);
      for (Entry& e : batch) e = {random_prefix(rng, centres), random_action(rng)};
      REQUIRE(table.install(batch) == LpmStatus::kOk);
      for (const Entry& e : batch) model[e.first] = e.second;
      check_against_model(table, model, rng, centres);

      std::vector<Prefix> gone;
      for (const auto& [p, a] : model) {
        if (rng() % 3 == 0) gone.push_back(p);
      }
      gone.push_back(random_prefix(rng, centres));  // probably absent
      std::size_t expected_removed = 0;
      for (const Prefix& p : gone) expected_removed += model.erase(p);
      REQUIRE(table.remove(gone) == expected_removed);
      check_against_model(table, model, rng, centres);
    }
  }
}

TEST_CASE("lpm table: empty table, whole space, nested prefixes", "[lpm]") {
  LpmTable table;
  CHECK_FALSE(table.lookup(0).has_value());
  CHECK_FALSE(table.lookup(~Word{0}).has_value());
  const LpmAction everywhere{1, 2, 0};
  const LpmAction top_half{2, 1, 0};
  const LpmAction one_word{3, 0, 0};
  const std::vector<Entry> entries{{Prefix{0, 0}, everywhere},
                                   {Prefix{Word{1} << 63, 1}, top_half},
                                   {Prefix{~Word{0}, 64}, one_word}};
  REQUIRE(table.install(entries) == LpmStatus::kOk);
  CHECK(table.lookup(0) == everywhere);
  CHECK(table.lookup((Word{1} << 63) - 1) == everywhere);
  CHECK(table.lookup(Word{1} << 63) == top_half);
  CHECK(table.lookup(~Word{0} - 1) == top_half);
  CHECK(table.lookup(~Word{0}) == one_word);
  const std::vector<Prefix> top{Prefix{Word{1} << 63, 1}};
  CHECK(table.remove(top) == 1);
  CHECK(table.lookup(~Word{0} - 1) == everywhere);
  table.clear();
  CHECK_FALSE(table.lookup(5).has_value());
  CHECK(table.usage().entries == 0);
}

TEST_CASE("lpm table: capacity is enforced per batch, all or nothing", "[lpm]") {
  LpmTable table(10);
  std::vector<Entry> first;
  for (Word i = 0; i < 8; ++i) first.push_back({Prefix{i << 8, 56}, LpmAction{static_cast<std::uint32_t>(i + 1), 0, 0}});
  REQUIRE(table.install(first) == LpmStatus::kOk);
  CHECK(table.usage().entries == 8);
  CHECK(table.usage().capacity == 10);
  CHECK(table.usage().fraction() == Approx(0.8));
  const auto version = table.snapshot()->version();

  std::vector<Entry> too_many;
  for (Word i = 100; i < 103; ++i) too_many.push_back({Prefix{i << 8, 56}, LpmAction{7, 0, 0}});
  CHECK(table.install(too_many) == LpmStatus::kCapacityExceeded);
  CHECK(table.usage().entries == 8);
  CHECK(table.snapshot()->version() == version);  // nothing published
  CHECK_FALSE(table.lookup(100 << 8).has_value());

  // Re-installing existing prefixes takes no room; duplicates in a batch count once.
  std::vector<Entry> update = first;
  for (Entry& e : update) e.second.node += 100;
  update.push_back({Prefix{200 << 8, 56}, LpmAction{9, 0, 0}});
  update.push_back({Prefix{200 << 8, 56}, LpmAction{10, 0, 0}});
  update.push_back({Prefix{201 << 8, 56}, LpmAction{11, 0, 0}});
  REQUIRE(table.install(update) == LpmStatus::kOk);
  CHECK(table.usage().entries == 10);
  CHECK(table.lookup(0)->node == 101);
  CHECK(table.lookup(200 << 8)->node == 10);  // last in the batch wins
  CHECK(table.snapshot()->version() == version + 1);
}

TEST_CASE("lpm table: malformed entries are refused", "[lpm]") {
  LpmTable table;
  const std::vector<Entry> bad_bits{{Prefix{0}, LpmAction{1, 0, 0}}, {Prefix{5, 62}, LpmAction{2, 0, 0}}};
  CHECK(table.install(bad_bits) == LpmStatus::kInvalidEntry);
  const std::vector<Entry> bad_len{{Prefix{0, 65}, LpmAction{1, 0, 0}}};
  CHECK(table.install(bad_len) == LpmStatus::kInvalidEntry);
  const std::vector<Entry> no_node{{Prefix{0, 8}, LpmAction{0, 0, 0}}};
  CHECK(table.install(no_node) == LpmStatus::kInvalidEntry);
  CHECK(table.usage().entries == 0);
  CHECK_THROWS_AS(LpmTable(0), forein::InvalidArgument);
}

TEST_CASE("lpm table installs layered entries with their version tag", "[lpm]") {
  forein::offload::LpmEntry entry;
  entry.prefix = Prefix{Word{0xAB} << 56, 8};
  entry.node = 42;
  entry.level = 1;
  entry.version = 0x12345;
  LpmTable table;
  REQUIRE(table.install(std::vector<forein::offload::LpmEntry>{entry}) == LpmStatus::kOk);
  const auto action = table.lookup((Word{0xAB} << 56) + 77);
  REQUIRE(action.has_value());
  CHECK(action->node == 42);
  CHECK(action->level == 1);
  CHECK(action->version_tag == 0x2345);
}
