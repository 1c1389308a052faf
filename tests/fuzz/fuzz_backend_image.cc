// libFuzzer target: every backend's hint(image, word) on any bytes, the
// registered ones and those a conformance extra file adds
// (docs/offload-conformance.md). hint() must return: no crash, no read
// outside the span (ASan), no undefined behaviour (UBSan).
//
// Input: byte 0 picks the backend (low 7 bits, modulo the registry) and the
// mode (bit 7):
//   raw:   the rest of the input is the image;
//   patch: the rest patches a real image (the device's image after planning
//          a small tree at start-up): pairs of (offset u16 little-endian,
//          byte), so mutations reach past the header checks.
// Words tried: the last 8 input bytes, 0, ~0, and every 8-byte chunk of the
// image's first 512 bytes (with neighbours), so words land on table
// boundaries.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "forein/key.h"
#include "forein/offload/backend.h"
#include "forein/offload/manager.h"
#include "forein/offload/registry.h"
#include "offload/conformance/conformance_backends.h"
#include "forein/page_store.h"
#include "forein/tree.h"

namespace {

using namespace forein;
using namespace forein::offload;

// The image of Backend(info) after planning a small bulk-loaded tree.
std::vector<std::byte> real_image(const BackendInfo& info) {
  Backend backend(info);
  OffloadManager manager(backend);
  TreeOptions options;
  options.observer = &manager;
  auto tree = Tree::create(std::make_unique<MemoryPageStore>(4096), options);
  manager.attach(*tree);
  std::vector<std::pair<std::string, std::string>> items;
  for (std::int64_t i = 0; i < 2000; ++i) items.emplace_back(encode_int64(i * 17), std::string(150, 'v'));
  tree->bulk_load(items);
  manager.refresh();
  manager.flush();
  manager.detach();
  return backend.device().load_image()->bytes;
}

const std::vector<std::vector<std::byte>>& real_images() {
  static const std::vector<std::vector<std::byte>> images = [] {
    std::vector<std::vector<std::byte>> out;
    for (const BackendInfo* info : conformance::conformance_backends()) out.push_back(real_image(*info));
    return out;
  }();
  return images;
}

std::uint64_t load_u64(const std::byte* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  real_images();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const auto backends = conformance::conformance_backends();
  const std::size_t which = (data[0] & 0x7f) % backends.size();
  const BackendInfo& info = *backends[which];
  const bool patch = (data[0] & 0x80) != 0;
  const auto* rest = reinterpret_cast<const std::byte*>(data + 1);
  const std::size_t rest_size = size - 1;

  std::vector<std::byte> image;
  if (patch) {
    image = real_images()[which];
    for (std::size_t i = 0; i + 3 <= rest_size && !image.empty(); i += 3) {
      const std::size_t at = (static_cast<std::size_t>(data[1 + i]) | static_cast<std::size_t>(data[2 + i]) << 8) %
                             image.size();
      image[at] = rest[i + 2];
    }
  } else {
    image.assign(rest, rest + rest_size);
  }
  // An exactly sized heap copy at an odd address: ASan sees a read past the
  // end, UBSan a misaligned access.
  const std::size_t misalign = data[0] & 7;
  std::unique_ptr<std::byte[]> storage(new std::byte[image.size() + misalign]);
  if (!image.empty()) std::memcpy(storage.get() + misalign, image.data(), image.size());
  const std::span<const std::byte> bytes(storage.get() + misalign, image.size());

  std::vector<Word> words = {0, ~Word{0}};
  if (rest_size >= 8) words.push_back(load_u64(rest + rest_size - 8));
  for (std::size_t at = 0; at + 8 <= image.size() && at < 512; at += 8) {
    const Word w = load_u64(image.data() + at);
    words.push_back(w);
    words.push_back(w - 1);
    words.push_back(w + 1);
  }
  std::uint64_t sink = 0;
  for (const Word w : words) {
    const StartHints h = info.hint(bytes, w);
    sink += h.primary.node ^ h.secondary.node ^ h.primary.level ^ h.secondary.version;
  }
  // The same answer for the same bytes and word: hint() is pure.
  if (rest_size >= 8) {
    const Word w = words[2];
    const StartHints a = info.hint(bytes, w), b = info.hint(bytes, w);
    if (a.primary.node != b.primary.node || a.secondary.node != b.secondary.node ||
        a.primary.level != b.primary.level || a.secondary.level != b.secondary.level) {
      __builtin_trap();
    }
  }
  asm volatile("" : : "r"(sink));
  return 0;
}
