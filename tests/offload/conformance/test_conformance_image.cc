// Conformance 2: hint(image, word) is pure and safe on any bytes.
//
// For every backend of conformance_backends() (the registered ones, then any
// a test file adds), the image of a real device after planning a real tree
// (bulk-loaded, then split and merged by writes, then planned again) is cut
// at every length (a dense sample for a large image), given random byte
// flips, replaced by random bytes, given a real prefix and a random rest,
// given header-like fields at extreme values (every u8, u16, u32 and u64
// position of the first 64 bytes), and copied to odd addresses. Each form
// lives in a buffer whose bytes past the span are poisoned under
// AddressSanitizer, so a read outside the span fails the run: CTest's
// offload_conformance_asan in the default build, and `make check-asan`;
// UBSan catches misaligned loads. hint() must return.
//
// And a valid image's hints name only nodes the device was told about: an
// empty device hints nothing, and every hint of a planned device is a node
// of the tree the planner was given.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "conformance_fixture.h"
#include "support/rng.h"
#include "support/seed.h"

namespace {

using forein::Hint;
using forein::PageId;
using forein::StartHints;
using forein::Word;
using forein::word_of;
using forein::testing::Rng;
using namespace forein::offload;
using namespace forein::offload::conformance;

// Words a lookup is asked for: extremes, the tree's keys' words and their
// neighbours, random words.
std::vector<Word> probe_words(Rng& rng, const std::vector<Word>& key_words, std::size_t n) {
  std::vector<Word> w = {0, 1, ~Word{0}, ~Word{0} - 1, Word{1} << 63, (Word{1} << 63) - 1};
  while (w.size() < n) {
    switch (rng.below(3)) {
      case 0: w.push_back(rng.next()); break;
      default: {
        const Word k = key_words.empty() ? rng.next() : key_words[rng.below(key_words.size())];
        w.push_back(k + rng.below(3) - 1);
        break;
      }
    }
  }
  return w;
}

// Every probe word on these bytes; a sum of the answers so the calls are
// not optimized away. Checks only that hint() returns.
std::uint64_t probe(const BackendInfo& info, std::span<const std::byte> bytes, const std::vector<Word>& words) {
  std::uint64_t sum = 0;
  for (const Word w : words) {
    const StartHints h = info.hint(bytes, w);
    sum += h.primary.node + h.secondary.node + h.primary.level + h.secondary.level;
  }
  return sum;
}

struct RealImage {
  std::vector<std::byte> bytes;
  std::vector<Word> key_words;
  std::set<PageId> nodes;  // the live nodes the planner was given
};

// A device's image after planning a tree that has seen splits and merges.
RealImage real_image(const BackendInfo& info, Rng& rng, std::int64_t keys, BackendConfig config = {}) {
  ConformanceTree t(info, config);
  bulk_load_ints(*t.tree, keys, 10, 200);
  t.settle();
  for (std::int64_t i = 0; i < keys; ++i) {  // splits in the first half, merges in the second
    const std::int64_t k = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(keys)));
    if (k < keys / 2) {
      t.tree->put(int_key(k * 10 + 1 + static_cast<std::int64_t>(rng.below(9))), std::string(200, 'x'));
    } else {
      t.tree->erase(int_key(k * 10));
    }
  }
  t.settle();
  RealImage r;
  r.bytes = t.image_bytes();
  r.nodes = t.live_node_ids();
  t.tree->scan(forein::ScanSpec{}, [&](std::string_view k, std::string_view) {
    r.key_words.push_back(word_of(k));
    return true;
  });
  return r;
}

// Lengths to cut the image at: all of them for an image up to 64 KiB, else
// every length of the first and last 4 KiB and a stride between them.
std::vector<std::size_t> cut_lengths(Rng& rng, std::size_t size) {
  std::vector<std::size_t> out;
  if (size <= (std::size_t{64} << 10)) {
    for (std::size_t n = 0; n <= size; ++n) out.push_back(n);
    return out;
  }
  for (std::size_t n = 0; n <= 4096; ++n) out.push_back(n);
  for (std::size_t n = 4096; n < size - 4096; n += 61 + rng.below(8)) out.push_back(n);
  for (std::size_t n = size - 4096; n <= size; ++n) out.push_back(n);
  return out;
}

}  // namespace

TEST_CASE("conformance: an empty device hints nothing; a planned one only its tree's nodes",
          "[conformance][image]") {
  const std::uint64_t seed = forein::testing::test_seed("conformance image nodes");
  std::uint64_t index = 0;
  for (const BackendInfo* info : conformance_backends()) {
    DYNAMIC_SECTION(info->name) {
      Rng rng(seed + index);
      // A fresh device was told about nothing.
      Backend fresh(*info);
      const auto empty = fresh.device().load_image();
      CHECK(empty->version == 0);
      std::size_t empty_hints = 0;
      for (const Word w : probe_words(rng, {}, 2000)) {
        const StartHints h = info->hint(empty->bytes, w);
        empty_hints += h.primary.present() + h.secondary.present();
      }
      CHECK(empty_hints == 0);

      const RealImage img = real_image(*info, rng, 6000);
      std::size_t hints = 0, foreign = 0;
      for (const Word w : probe_words(rng, img.key_words, 20000)) {
        const StartHints h = info->hint(img.bytes, w);
        for (const Hint& x : {h.primary, h.secondary}) {
          if (!x.present()) continue;
          ++hints;
          foreign += img.nodes.count(x.node) == 0;
        }
      }
      std::cout << "  " << info->name << ": image " << img.bytes.size() << " bytes, " << img.nodes.size()
                << " live nodes, " << hints << " hints over 20000 words\n";
      CHECK(foreign == 0);
      // A backend that declares start hints gives some; one that does not, none.
      if ((info->capabilities & kStartHints) != 0) {
        CHECK(hints > 0);
      } else {
        CHECK(hints == 0);
      }
    }
    ++index;
  }
}

TEST_CASE("conformance: torn, flipped, random and misaligned images never crash hint()",
          "[conformance][image]") {
  const std::uint64_t seed = forein::testing::test_seed("conformance image garbage");
  std::uint64_t index = 0;
  for (const BackendInfo* info : conformance_backends()) {
    DYNAMIC_SECTION(info->name) {
      Rng rng(seed + index);
      std::vector<RealImage> images;
      images.push_back(real_image(*info, rng, 300));   // small: every cut
      images.push_back(real_image(*info, rng, 6000));  // large: a dense sample
      std::uint64_t sink = 0, calls = 0;
      for (const RealImage& img : images) {
        const std::vector<Word> words = probe_words(rng, img.key_words, 8);
        const std::vector<std::byte>& real = img.bytes;
        INFO(info->name << ": image of " << real.size() << " bytes");

        // Every cut (or a dense sample), one buffer with a moving poisoned tail.
        {
          ExactBuffer buf(real);
          for (const std::size_t n : cut_lengths(rng, real.size())) {
            buf.truncate(n);
            sink += probe(*info, buf.span(), words);
            calls += words.size();
          }
        }
        // Misaligned copies, whole and cut.
        for (std::size_t misalign = 1; misalign < 16; ++misalign) {
          ExactBuffer buf(real, misalign);
          sink += probe(*info, buf.span(), words);
          for (int i = 0; i < 8; ++i) {
            buf.truncate(real.empty() ? 0 : rng.below(real.size() + 1));
            sink += probe(*info, buf.span(), words);
          }
          calls += 9 * words.size();
        }
        // Random byte flips.
        for (int trial = 0; trial < 300 && !real.empty(); ++trial) {
          std::vector<std::byte> bytes = real;
          const std::uint64_t flips = 1 + rng.below(trial % 2 ? 64 : 4);
          for (std::uint64_t i = 0; i < flips; ++i) {
            // Half the flips in the first 64 bytes, where headers live.
            const std::size_t at = rng.chance(1, 2) ? rng.below(std::min<std::size_t>(64, bytes.size()))
                                                    : rng.below(bytes.size());
            bytes[at] = static_cast<std::byte>(rng.below(256));
          }
          ExactBuffer buf(bytes, rng.below(8));
          sink += probe(*info, buf.span(), words);
          calls += words.size();
        }
        // Random bytes; and the real first bytes with a random rest.
        for (int trial = 0; trial < 300; ++trial) {
          std::vector<std::byte> bytes(rng.below(real.size() + 512));
          for (auto& b : bytes) b = static_cast<std::byte>(rng.below(256));
          if (trial % 2) std::copy_n(real.begin(), std::min(real.size(), bytes.size()), bytes.begin());
          if (trial % 2 && !bytes.empty() && !real.empty()) {
            const std::size_t keep = std::min<std::size_t>(bytes.size(), 8 + rng.below(64));
            std::copy_n(real.begin(), std::min(keep, real.size()), bytes.begin());
            for (std::size_t i = keep; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(rng.below(256));
          }
          ExactBuffer buf(bytes, rng.below(8));
          sink += probe(*info, buf.span(), words);
          calls += words.size();
        }
        // Header-like fields at extremes: each u8/u16/u32/u64 position of
        // the first 64 bytes set to 0, 1, max, max - 1, the top bit, and
        // values near the image's size and its size in 8/16/24/32-byte units.
        const std::uint64_t size = real.size();
        const std::vector<std::uint64_t> extremes = {
            0, 1, 2, ~std::uint64_t{0}, ~std::uint64_t{0} - 1, std::uint64_t{1} << 63,
            std::uint64_t{1} << 31, std::uint64_t{1} << 32, size, size + 1, size - 1,
            size / 8, size / 16, size / 24, size / 32, size / 24 + 1, size / 16 + 1};
        for (const std::size_t width : {1, 2, 4, 8}) {
          for (std::size_t at = 0; at + width <= std::min<std::size_t>(64, real.size()); ++at) {
            for (const std::uint64_t v : extremes) {
              std::vector<std::byte> bytes = real;
              std::memcpy(bytes.data() + at, &v, width);  // little-endian low bytes
              ExactBuffer buf(bytes, at % 8);
              sink += probe(*info, buf.span(), words);
              calls += words.size();
            }
          }
        }
      }
      std::cout << "  " << info->name << ": " << calls << " hint() calls on garbage images (sink "
                << (sink & 0xff) << ")\n";
      CHECK(calls > 0);
      // No start hints declared: no hint (node, level) on any bytes.
      if ((info->capabilities & kStartHints) == 0) CHECK(sink == 0);
    }
    ++index;
  }
}
