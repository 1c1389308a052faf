// The switch_lpm byte image: lpm_image_hint against the two LPM tables'
// hint_for_word on random and B+tree-shaped entry sets, edge words, the
// entry list, and safety on garbage, torn, truncated and misaligned bytes
// (this file also runs under ASan/UBSan: `make check-asan`).
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "forein/error.h"
#include "switch_lpm/layers.h"
#include "offload/synthetic_tree.h"
#include "support/rng.h"
#include "support/seed.h"
#include "switch_lpm/lpm_image.h"
#include "switch_lpm/lpm_table.h"
#include "offload/two_lpm_tables.h"
#include "switch_lpm/switch_lpm_device.h"

using forein::Hint;
using forein::StartHints;
using forein::Word;
using namespace forein::offload;
using forein::testing::Rng;

namespace {



using Bytes = std::vector<std::byte>;

bool same_hint(const Hint& a, const Hint& b) {
  return a.node == b.node && a.level == b.level && a.version == b.version;
}

// Entries split as the two LPM tables splits them (bottom line vs the rest),
// one per (table, prefix): the last one given wins, as in the backend.
struct Tables {
  std::vector<LpmEntry> upper, bottom;
};
Tables split(const std::vector<LpmEntry>& entries) {
  std::map<std::pair<bool, std::pair<Word, int>>, LpmEntry> by_key;
  for (const LpmEntry& e : entries) {
    by_key[{e.layer == Layer::kBottomLine, {e.prefix.value, e.prefix.len}}] = e;
  }
  Tables t;
  for (const auto& [key, e] : by_key) (key.first ? t.bottom : t.upper).push_back(e);
  return t;
}

Prefix random_prefix(Rng& rng, const std::vector<Word>& centres) {
  const Word centre = centres[rng.below(centres.size())];
  const Word w = centre + (rng.next() >> rng.below(64));
  std::uint8_t len;
  switch (rng.below(4)) {
    case 0: len = static_cast<std::uint8_t>(rng.below(65)); break;
    case 1: len = static_cast<std::uint8_t>(56 + rng.below(9)); break;
    default: len = static_cast<std::uint8_t>(30 + rng.below(35)); break;
  }
  return Prefix{w & prefix_mask(len), len};
}

LpmEntry random_entry(Rng& rng, const std::vector<Word>& centres) {
  LpmEntry e;
  e.prefix = random_prefix(rng, centres);
  e.node = static_cast<forein::PageId>(1 + rng.below(5000));
  e.level = static_cast<std::uint16_t>(rng.below(4));
  const std::uint64_t layer = rng.below(3);
  e.layer = layer == 0 ? Layer::kBottomLine : layer == 1 ? Layer::kMain : Layer::kHotLeaf;
  e.version = rng.next();
  return e;
}

std::vector<Word> probes_for(const std::vector<LpmEntry>& entries, Rng& rng, const std::vector<Word>& centres) {
  std::vector<Word> probes{0, 1, 2, ~Word{0}, ~Word{0} - 1, Word{1} << 63, (Word{1} << 63) - 1};
  for (const LpmEntry& e : entries) {
    for (Word w : {prefix_first(e.prefix), prefix_last(e.prefix)}) {
      probes.push_back(w);
      probes.push_back(w - 1);
      probes.push_back(w + 1);
    }
  }
  for (int i = 0; i < 300; ++i) probes.push_back(rng.next());
  for (int i = 0; i < 300; ++i) probes.push_back(centres[rng.below(centres.size())] + (rng.next() >> rng.below(64)));
  return probes;
}

// Builds both the backend and the image from `entries` and compares every
// probe (plus the image's own segment starts and their predecessors).
void check_against_backend(const std::vector<LpmEntry>& entries, const std::vector<Word>& probes,
                           std::uint64_t version, unsigned dir_bits = 0) {
  forein::offload::testing::TwoTables backend(1u << 20);
  REQUIRE(backend.install(entries) == BackendStatus::kOk);
  const Tables t = split(entries);
  const Bytes image = build_lpm_image(t.upper, t.bottom, version, LpmImageOptions{dir_bits});
  REQUIRE(lpm_image_valid(image));
  const auto info = lpm_image_info(image);
  REQUIRE(info.has_value());
  CHECK(info->version == version);
  CHECK(info->total_bytes == image.size());
  CHECK(info->upper_entries == t.upper.size());
  CHECK(info->bottom_entries == t.bottom.size());

  for (Word w : probes) {
    const StartHints want = backend.hint_for_word(w);
    const StartHints got = lpm_image_hint(image, w);
    INFO("word " << w << " entries " << entries.size() << " dir_bits " << info->dir_bits);
    REQUIRE(same_hint(got.primary, want.primary));
    REQUIRE(same_hint(got.secondary, want.secondary));
  }

  // The entry list round-trips: upper table first, each in prefix_less order.
  const std::vector<LpmEntry> listed = lpm_image_entries(image);
  REQUIRE(listed.size() == t.upper.size() + t.bottom.size());
  std::vector<LpmEntry> expected = t.upper;  // split() yields each table in prefix_less order
  expected.insert(expected.end(), t.bottom.begin(), t.bottom.end());
  CHECK(listed == expected);
}

std::vector<Bytes> sample_images(Rng& rng) {
  std::vector<Bytes> images;
  images.push_back(build_lpm_image({}, {}, 1));
  for (int k = 0; k < 4; ++k) {
    std::vector<Word> centres{rng.next(), (Word{1} << 63) + rng.below(100000)};
    std::vector<LpmEntry> entries(5 + rng.below(60));
    for (LpmEntry& e : entries) e = random_entry(rng, centres);
    const Tables t = split(entries);
    images.push_back(build_lpm_image(t.upper, t.bottom, rng.next()));
  }
  return images;
}

// Exercises every reader on `bytes` held in an allocation of exactly that
// size, so ASan reports any read past it. Returns a checksum so nothing is
// optimized away.
std::uint64_t poke(const Bytes& bytes, Rng& rng) {
  const std::unique_ptr<std::byte[]> exact(new std::byte[bytes.size() + 1]);
  std::byte* data = exact.get();
  if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
  const std::span<const std::byte> image(data, bytes.size());
  std::uint64_t sum = 0;
  for (Word w : {Word{0}, ~Word{0}, Word{1} << 63, rng.next(), rng.next(), rng.next()}) {
    const StartHints h = lpm_image_hint(image, w);
    sum += h.primary.node + h.secondary.node + h.primary.level;
  }
  if (const auto info = lpm_image_info(image)) sum += info->segments;
  const std::size_t n = lpm_image_entry_count(image);
  for (std::size_t i = 0; i < std::min<std::size_t>(n, 64); ++i) sum += lpm_image_entry(image, i)->node;
  CHECK_FALSE(lpm_image_entry(image, n).has_value());
  sum += lpm_image_valid(image) ? 1 : 0;
  return sum;
}

}  // namespace

TEST_CASE("lpm image matches the two LPM tables on random entry sets", "[lpm_image]") {
  Rng rng(forein::testing::test_seed("lpm image vs backend"));
  for (int round = 0; round < 80; ++round) {
    std::vector<Word> centres;
    const std::size_t clusters = 1 + rng.below(4);
    for (std::size_t c = 0; c < clusters; ++c) {
      centres.push_back(round % 3 == 0 ? (Word{1} << 63) + rng.below(100000) : rng.next());
    }
    std::vector<LpmEntry> entries(rng.below(round < 10 ? 8 : 400));
    for (LpmEntry& e : entries) e = random_entry(rng, centres);
    const unsigned dir_bits = round % 4 == 1 ? static_cast<unsigned>(1 + rng.below(kLpmImageMaxDirBits)) : 0;
    check_against_backend(entries, probes_for(entries, rng, centres), rng.next(), dir_bits);
  }
}

TEST_CASE("lpm image matches the two LPM tables on layered B+tree entries", "[lpm_image]") {
  Rng rng(forein::testing::test_seed("lpm image layered"));
  for (int round = 0; round < 6; ++round) {
    const bool clustered = round % 2 == 1;
    std::vector<Word> words(2000 + rng.below(20000));
    for (std::size_t i = 0; i < words.size(); ++i) {
      words[i] = clustered ? (Word{1} << 63) + i * (1 + rng.below(3)) + rng.below(2) : rng.next();
    }
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    const auto tree = forein::offload::testing::build_synthetic_tree(words, 16 + rng.below(48), 8 + rng.below(56));
    LayerOptions options;
    options.budget = 500 + rng.below(4000);
    options.hot_leaves = rng.below(50);
    const LayeredEntries layered = build_layered_entries(tree.table, words, options);
    REQUIRE(layered.has_bottom_line);
    std::vector<Word> centres{words.front(), words[words.size() / 2], words.back()};
    std::vector<Word> probes = probes_for(layered.entries, rng, centres);
    for (int i = 0; i < 2000; ++i) probes.push_back(words[rng.below(words.size())]);
    check_against_backend(layered.entries, probes, static_cast<std::uint64_t>(round));
  }
}

TEST_CASE("lpm image edge words and tables", "[lpm_image]") {
  const std::vector<Word> edges{0, 1, (Word{1} << 63) - 1, Word{1} << 63, ~Word{0} - 1, ~Word{0}};
  auto entry = [](Word value, std::uint8_t len, forein::PageId node, Layer layer, std::uint64_t version = 7) {
    LpmEntry e;
    e.prefix = Prefix{value, len};
    e.node = node;
    e.level = static_cast<std::uint16_t>(node % 3);
    e.layer = layer;
    e.version = version;
    return e;
  };

  SECTION("empty tables give no hints") {
    const Bytes image = build_lpm_image({}, {}, 0);
    REQUIRE(lpm_image_valid(image));
    for (Word w : edges) {
      const StartHints h = lpm_image_hint(image, w);
      CHECK_FALSE(h.primary.present());
      CHECK_FALSE(h.secondary.present());
    }
    CHECK(lpm_image_entries(image).empty());
  }
  SECTION("/0 and /64 prefixes in both tables") {
    const std::vector<std::vector<LpmEntry>> sets{
        {entry(0, 0, 1, Layer::kMain)},
        {entry(0, 0, 1, Layer::kBottomLine)},
        {entry(0, 0, 1, Layer::kBottomLine), entry(0, 0, 2, Layer::kMain)},
        {entry(0, 64, 3, Layer::kMain), entry(~Word{0}, 64, 4, Layer::kHotLeaf)},
        {entry(0, 64, 3, Layer::kBottomLine), entry(~Word{0}, 64, 4, Layer::kBottomLine)},
        {entry(0, 0, 1, Layer::kBottomLine), entry(0, 64, 3, Layer::kMain), entry(~Word{0}, 64, 4, Layer::kMain),
         entry(Word{1} << 63, 1, 5, Layer::kMain), entry(Word{1} << 63, 64, 6, Layer::kBottomLine)},
        {entry(0, 1, 1, Layer::kBottomLine), entry(Word{1} << 63, 1, 2, Layer::kBottomLine),
         entry((Word{1} << 63) - 1, 64, 9, Layer::kMain)},
        // The same prefix in both tables, and an entry whose 16-bit version tag wraps.
        {entry(Word{5} << 60, 4, 7, Layer::kBottomLine, 0x12345), entry(Word{5} << 60, 4, 8, Layer::kMain, 0xFFFF)},
    };
    Rng rng(1);
    for (const auto& set : sets) {
      std::vector<Word> probes = edges;
      const auto more = probes_for(set, rng, edges);
      probes.insert(probes.end(), more.begin(), more.end());
      check_against_backend(set, probes, 3);
    }
  }
  SECTION("bad input is refused") {
    const std::vector<LpmEntry> node0{entry(0, 0, 0, Layer::kMain)};
    const std::vector<LpmEntry> malformed{entry(1, 8, 1, Layer::kMain)};
    const std::vector<LpmEntry> duplicate{entry(0, 8, 1, Layer::kMain), entry(0, 8, 2, Layer::kMain)};
    const std::vector<LpmEntry> too_long{entry(0, 65, 1, Layer::kMain)};
    CHECK_THROWS_AS(build_lpm_image(node0, {}, 0), forein::InvalidArgument);
    CHECK_THROWS_AS(build_lpm_image({}, malformed, 0), forein::InvalidArgument);
    CHECK_THROWS_AS(build_lpm_image(duplicate, {}, 0), forein::InvalidArgument);
    CHECK_THROWS_AS(build_lpm_image(too_long, {}, 0), forein::InvalidArgument);
    CHECK_THROWS_AS(build_lpm_image({}, {}, 0, LpmImageOptions{kLpmImageMaxDirBits + 1}), forein::InvalidArgument);
    // The same prefix in the two tables is fine.
    CHECK_NOTHROW(build_lpm_image(std::vector<LpmEntry>{entry(0, 8, 1, Layer::kMain)},
                                  std::vector<LpmEntry>{entry(0, 8, 2, Layer::kBottomLine)}, 0));
  }
}

TEST_CASE("lpm image layout: header, alignment, misaligned spans", "[lpm_image]") {
  Rng rng(forein::testing::test_seed("lpm image layout"));
  for (const Bytes& image : sample_images(rng)) {
    LpmImageHeader h;
    std::memcpy(&h, image.data(), sizeof h);
    CHECK(std::memcmp(image.data(), "FLPM", 4) == 0);
    CHECK(h.format == kLpmImageFormat);
    CHECK(h.total_bytes == image.size());
    CHECK(image.size() % 8 == 0);
    CHECK(h.dir_offset % 8 == 0);
    CHECK(h.segments_offset % 8 == 0);
    CHECK(h.entries_offset % 8 == 0);
    // The same answers from every misalignment (memcpy loads: no UB).
    for (std::size_t shift = 1; shift < 8; ++shift) {
      Bytes moved(image.size() + shift);
      std::memcpy(moved.data() + shift, image.data(), image.size());
      const std::span<const std::byte> view(moved.data() + shift, image.size());
      CHECK(lpm_image_valid(view));
      for (int i = 0; i < 200; ++i) {
        const Word w = rng.next();
        const StartHints a = lpm_image_hint(image, w), b = lpm_image_hint(view, w);
        REQUIRE(same_hint(a.primary, b.primary));
        REQUIRE(same_hint(a.secondary, b.secondary));
      }
    }
    // A longer span than the image is fine; the image is what the header says.
    Bytes longer = image;
    longer.resize(image.size() + 16, std::byte{0xAB});
    CHECK(lpm_image_valid(longer));
  }
}

TEST_CASE("lpm image survives garbage, torn and truncated bytes", "[lpm_image]") {
  Rng rng(forein::testing::test_seed("lpm image garbage"));
  const std::vector<Bytes> images = sample_images(rng);
  std::uint64_t sum = 0;

  SECTION("random bytes") {
    for (int i = 0; i < 2000; ++i) {
      Bytes bytes(rng.below(600));
      for (std::byte& b : bytes) b = static_cast<std::byte>(rng.below(256));
      CHECK_FALSE(lpm_image_valid(bytes));
      sum += poke(bytes, rng);
    }
    // A valid header over random data.
    for (int i = 0; i < 2000; ++i) {
      Bytes bytes = images[rng.below(images.size())];
      for (std::size_t k = sizeof(LpmImageHeader); k < bytes.size(); ++k) {
        bytes[k] = static_cast<std::byte>(rng.below(256));
      }
      sum += poke(bytes, rng);
    }
  }
  SECTION("byte flips") {
    for (int i = 0; i < 4000; ++i) {
      Bytes bytes = images[rng.below(images.size())];
      const std::size_t flips = 1 + rng.below(8);
      for (std::size_t f = 0; f < flips; ++f) {
        // Half the flips in the header, where they hurt most.
        const std::size_t at = rng.chance(1, 2) ? rng.below(sizeof(LpmImageHeader)) : rng.below(bytes.size());
        bytes[at] ^= static_cast<std::byte>(1 + rng.below(255));
      }
      sum += poke(bytes, rng);
    }
  }
  SECTION("truncation at every length") {
    for (const Bytes& image : images) {
      for (std::size_t len = 0; len <= image.size(); ++len) {
        const Bytes cut(image.begin(), image.begin() + static_cast<std::ptrdiff_t>(len));
        if (len < image.size()) CHECK_FALSE(lpm_image_valid(cut));
        sum += poke(cut, rng);
      }
    }
  }
  SECTION("torn: two versions mixed") {
    for (int i = 0; i < 3000; ++i) {
      const Bytes& a = images[rng.below(images.size())];
      const Bytes& b = images[rng.below(images.size())];
      Bytes torn = a;
      // A writer copying b over a, caught part-way, in chunks of 8 bytes.
      const std::size_t cut = rng.below(b.size() + 1);
      torn.resize(std::max(a.size(), cut));
      std::memcpy(torn.data(), b.data(), cut);
      if (rng.chance(1, 2)) torn.resize(rng.below(torn.size() + 1));
      sum += poke(torn, rng);
    }
  }
  SECTION("header fields at extremes") {
    struct Field {
      std::size_t offset, size;
    };
    const std::vector<Field> fields{{0, 4},  {4, 2},  {6, 2},  {8, 8},  {16, 8}, {24, 4}, {28, 4},
                                    {32, 4}, {36, 1}, {37, 1}, {38, 2}, {40, 8}, {48, 8}, {56, 8},
                                    {64, 8}, {72, 8}};
    for (const Bytes& image : images) {
      for (const Field& f : fields) {
        for (std::uint64_t v : {std::uint64_t{0}, std::uint64_t{1}, ~std::uint64_t{0}, ~std::uint64_t{0} >> 1,
                                std::uint64_t{63}, std::uint64_t{64}, std::uint64_t{24}, std::uint64_t{25},
                                std::uint64_t{image.size()}, std::uint64_t{image.size() - 1},
                                std::uint64_t{image.size() + 1}, rng.next()}) {
          Bytes bytes = image;
          std::memcpy(bytes.data() + f.offset, &v, f.size);  // little-endian: the low bytes
          sum += poke(bytes, rng);
        }
      }
      // A huge directory made to look in bounds: counts past the span.
      Bytes bytes = image;
      LpmImageHeader h;
      std::memcpy(&h, bytes.data(), sizeof h);
      h.segment_count = ~std::uint32_t{0};
      h.dir_bits = kLpmImageMaxDirBits;
      h.upper_count = ~std::uint32_t{0};
      std::memcpy(bytes.data(), &h, sizeof h);
      CHECK_FALSE(lpm_image_info(bytes).has_value());
      sum += poke(bytes, rng);
    }
  }
  SECTION("directory and segments scrambled under a valid header") {
    for (const Bytes& image : images) {
      LpmImageHeader h;
      std::memcpy(&h, image.data(), sizeof h);
      for (int i = 0; i < 300; ++i) {
        Bytes bytes = image;
        // Directory values anywhere in u32, starts in any order.
        for (std::size_t k = h.dir_offset; k < h.segments_offset; k += 4) {
          const std::uint32_t v = rng.chance(1, 2) ? static_cast<std::uint32_t>(rng.next()) : static_cast<std::uint32_t>(rng.below(h.segment_count + 2));
          std::memcpy(bytes.data() + k, &v, 4);
        }
        for (std::size_t s = 0; s < h.segment_count; ++s) {
          const Word start = rng.next();
          std::memcpy(bytes.data() + h.segments_offset + s * kLpmImageSegmentBytes, &start, 8);
        }
        sum += poke(bytes, rng);
      }
    }
  }
  CHECK(sum != 1);  // keeps the readers' results alive
}
