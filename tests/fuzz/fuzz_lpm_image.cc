// libFuzzer target for the switch_lpm byte image: every reader of
// lpm_image.h on arbitrary bytes must stay inside the span, terminate, and
// raise no sanitizer report (built with -fsanitize=fuzzer,address,undefined
// by tests/fuzz/run.sh; clang only).
//
// The input is the image itself; its last 8 bytes (when there are that
// many) also give one probe word, so the fuzzer steers lookups too.
//
// Built with -DFOREIN_LPM_IMAGE_SEED_MAIN instead, the same file is a tiny
// generator that writes valid images as a seed corpus:
//   fuzz_lpm_image_seeds <dir>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "switch_lpm/lpm_image.h"

using forein::Word;
using namespace forein::offload;

namespace {

std::uint64_t exercise(std::span<const std::byte> image) {
  std::uint64_t sum = 0;
  std::vector<Word> words{0, 1, ~Word{0}, Word{1} << 63, 0x0123456789abcdefULL};
  if (image.size() >= 8) {
    Word w;
    std::memcpy(&w, image.data() + image.size() - 8, 8);
    words.push_back(w);
    words.push_back(w + 1);
    words.push_back(w - 1);
  }
  if (const auto info = lpm_image_info(image)) {
    words.push_back(info->dir_base);
    words.push_back(info->dir_base - 1);
    sum += info->segments;
  }
  for (Word w : words) {
    const forein::StartHints h = lpm_image_hint(image, w);
    sum += h.primary.node + h.primary.level + h.primary.version + h.secondary.node;
  }
  const std::size_t n = lpm_image_entry_count(image);
  for (std::size_t i = 0; i < n && i < 16; ++i) sum += lpm_image_entry(image, i)->node;
  sum += lpm_image_entry(image, n).has_value();
  sum += lpm_image_valid(image);
  return sum;
}

}  // namespace

#ifndef FOREIN_LPM_IMAGE_SEED_MAIN

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  volatile std::uint64_t sink = exercise(std::span(reinterpret_cast<const std::byte*>(data), size));
  (void)sink;
  return 0;
}

#else

#include <cstdio>
#include <random>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  std::mt19937_64 rng(7);
  auto entry = [&](Word centre, Layer layer) {
    const auto len = static_cast<std::uint8_t>(rng() % 65);
    LpmEntry e;
    e.prefix = Prefix{(centre + (rng() >> (rng() % 64))) & prefix_mask(len), len};
    e.node = static_cast<forein::PageId>(1 + rng() % 1000);
    e.level = static_cast<std::uint16_t>(rng() % 3);
    e.layer = layer;
    e.version = rng();
    return e;
  };
  for (int k = 0; k < 8; ++k) {
    const Word centre = k % 2 == 0 ? rng() : (Word{1} << 63) + rng() % 100000;
    std::vector<LpmEntry> upper, bottom;
    const int n = k == 0 ? 0 : 1 << k;
    for (int i = 0; i < n; ++i) upper.push_back(entry(centre, i % 2 ? Layer::kMain : Layer::kHotLeaf));
    for (int i = 0; i < n / 2; ++i) bottom.push_back(entry(centre, Layer::kBottomLine));
    auto dedup = [](std::vector<LpmEntry>& v) {
      std::sort(v.begin(), v.end(), [](const LpmEntry& a, const LpmEntry& b) { return prefix_less(a.prefix, b.prefix); });
      v.erase(std::unique(v.begin(), v.end(), [](const LpmEntry& a, const LpmEntry& b) { return a.prefix == b.prefix; }),
              v.end());
    };
    dedup(upper);
    dedup(bottom);
    const std::vector<std::byte> image = build_lpm_image(upper, bottom, static_cast<std::uint64_t>(k));
    exercise(image);
    const std::string path = std::string(argv[1]) + "/seed-" + std::to_string(k) + ".flpm";
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr || std::fwrite(image.data(), 1, image.size(), f) != image.size() || std::fclose(f) != 0) {
      std::perror(path.c_str());
      return 1;
    }
  }
  return 0;
}

#endif
