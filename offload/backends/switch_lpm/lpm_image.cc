#include "switch_lpm/lpm_image.h"

#include <algorithm>
#include <cstring>

#include "forein/error.h"
#include "switch_lpm/lpm_table.h"

namespace forein::offload {

namespace {

constexpr std::uint32_t kMagic = 0x4d504c46;  // "FLPM" little-endian
constexpr std::uint32_t kFormat = 1;

// Header: magic, format, total length, version, segments, entries.
constexpr std::size_t kHeaderBytes = 40;
// Segment: start, then two actions (node u32, level u16, tag u16).
constexpr std::size_t kSegmentBytes = 24;
// Entry: value, node u32, level u16, len u8, layer u8, version.
constexpr std::size_t kEntryBytes = 24;

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename T>
void store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

struct Header {
  std::uint64_t length, version, segments, entries;
};

// The header if the bytes can hold what it claims.
bool read_header(std::span<const std::byte> image, Header* h) {
  if (image.size() < kHeaderBytes) return false;
  if (load<std::uint32_t>(image.data()) != kMagic || load<std::uint32_t>(image.data() + 4) != kFormat) return false;
  h->length = load<std::uint64_t>(image.data() + 8);
  h->version = load<std::uint64_t>(image.data() + 16);
  h->segments = load<std::uint64_t>(image.data() + 24);
  h->entries = load<std::uint64_t>(image.data() + 32);
  const std::uint64_t room = (image.size() - kHeaderBytes);
  if (h->length != image.size() || h->segments > room / kSegmentBytes ||
      h->entries > (room - h->segments * kSegmentBytes) / kEntryBytes) {
    return false;
  }
  return true;
}

void put_action(std::byte* p, const std::optional<LpmAction>& a) {
  store<std::uint32_t>(p, a ? a->node : 0);
  store<std::uint16_t>(p + 4, a ? a->level : 0);
  store<std::uint16_t>(p + 6, a ? a->version_tag : 0);
}

Hint get_action(const std::byte* p) {
  return Hint{load<std::uint32_t>(p), load<std::uint16_t>(p + 4), load<std::uint16_t>(p + 6)};
}

std::shared_ptr<const LpmSnapshot> snapshot_of(std::span<const LpmEntry> entries) {
  LpmTable table(std::max<std::size_t>(entries.size(), 1));
  if (!entries.empty() && table.install(entries) != LpmStatus::kOk) {
    throw InvalidArgument("switch_lpm image: invalid entry");
  }
  return table.snapshot();
}

}  // namespace

std::vector<std::byte> build_lpm_image(std::span<const LpmEntry> upper,
                                       std::span<const LpmEntry> bottom, std::uint64_t version) {
  const auto up = snapshot_of(upper), down = snapshot_of(bottom);
  // The step function changes only where a prefix starts or just past
  // where one ends.
  std::vector<Word> starts{0};
  for (const auto* set : {&upper, &bottom}) {
    for (const LpmEntry& e : *set) {
      starts.push_back(e.prefix.value);
      const Word last = prefix_last(e.prefix);
      if (last != ~Word{0}) starts.push_back(last + 1);
    }
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());

  const std::size_t nentries = upper.size() + bottom.size();
  std::vector<std::byte> out(kHeaderBytes + starts.size() * kSegmentBytes + nentries * kEntryBytes);
  store<std::uint32_t>(out.data(), kMagic);
  store<std::uint32_t>(out.data() + 4, kFormat);
  store<std::uint64_t>(out.data() + 8, out.size());
  store<std::uint64_t>(out.data() + 16, version);
  store<std::uint64_t>(out.data() + 24, starts.size());
  store<std::uint64_t>(out.data() + 32, nentries);
  std::byte* p = out.data() + kHeaderBytes;
  for (const Word s : starts) {
    store<std::uint64_t>(p, s);
    put_action(p + 8, up->lookup(s));
    put_action(p + 16, down->lookup(s));
    p += kSegmentBytes;
  }
  for (const auto* set : {&upper, &bottom}) {
    for (const LpmEntry& e : *set) {
      store<std::uint64_t>(p, e.prefix.value);
      store<std::uint32_t>(p + 8, e.node);
      store<std::uint16_t>(p + 12, e.level);
      store<std::uint8_t>(p + 14, e.prefix.len);
      store<std::uint8_t>(p + 15, static_cast<std::uint8_t>(e.layer));
      store<std::uint64_t>(p + 16, e.version);
      p += kEntryBytes;
    }
  }
  return out;
}

StartHints lpm_image_hint(std::span<const std::byte> image, Word w) noexcept {
  Header h;
  if (!read_header(image, &h) || h.segments == 0) return {};
  const std::byte* segs = image.data() + kHeaderBytes;
  // The last segment whose start is <= w (garbage starts: some segment).
  std::size_t lo = 0, len = h.segments;
  while (len > 1) {
    const std::size_t half = len / 2;
    if (load<std::uint64_t>(segs + (lo + half) * kSegmentBytes) <= w) lo += half;
    len -= half;
  }
  const std::byte* seg = segs + lo * kSegmentBytes;
  const Hint upper = get_action(seg + 8), bottom = get_action(seg + 16);
  StartHints hints;
  if (upper.present()) {
    hints.primary = upper;
    hints.secondary = bottom;
  } else {
    hints.primary = bottom;
  }
  return hints;
}

bool lpm_image_valid(std::span<const std::byte> image) {
  Header h;
  if (!read_header(image, &h)) return false;
  if (h.length != kHeaderBytes + h.segments * kSegmentBytes + h.entries * kEntryBytes) return false;
  const std::byte* segs = image.data() + kHeaderBytes;
  for (std::uint64_t i = 0; i < h.segments; ++i) {
    const Word s = load<std::uint64_t>(segs + i * kSegmentBytes);
    if (i == 0 ? s != 0 : s <= load<std::uint64_t>(segs + (i - 1) * kSegmentBytes)) return false;
  }
  for (const LpmEntry& e : lpm_image_entries(image)) {
    if (!prefix_valid(e.prefix) || e.node == kNoPage || static_cast<unsigned>(e.layer) > 2) return false;
  }
  return true;
}

std::vector<LpmEntry> lpm_image_entries(std::span<const std::byte> image) {
  Header h;
  std::vector<LpmEntry> out;
  if (!read_header(image, &h)) return out;
  const std::byte* p = image.data() + kHeaderBytes + h.segments * kSegmentBytes;
  out.reserve(h.entries);
  for (std::uint64_t i = 0; i < h.entries; ++i, p += kEntryBytes) {
    LpmEntry e;
    e.prefix.value = load<std::uint64_t>(p);
    e.node = load<std::uint32_t>(p + 8);
    e.level = load<std::uint16_t>(p + 12);
    e.prefix.len = load<std::uint8_t>(p + 14);
    e.layer = static_cast<Layer>(std::min<std::uint8_t>(load<std::uint8_t>(p + 15), 2));
    e.version = load<std::uint64_t>(p + 16);
    out.push_back(e);
  }
  return out;
}

std::size_t lpm_image_max_bytes(std::uint64_t entries) {
  return kHeaderBytes + (2 * entries + 1) * kSegmentBytes + entries * kEntryBytes;
}

}  // namespace forein::offload
