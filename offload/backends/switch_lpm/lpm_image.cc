#include "switch_lpm/lpm_image.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <utility>

#include "forein/error.h"
#include "forein/offload/bytes.h"

namespace forein::offload {

static_assert(std::endian::native == std::endian::little,
              "the LPM image is stored in host order and documented as little-endian");

namespace {

constexpr unsigned kAutoMaxDirBits = 17;  // a 512 KiB directory at most (half a 1 MiB L2)
constexpr std::size_t kHeaderBytes = sizeof(LpmImageHeader);

// The answer of one table over one segment; node 0 = no match.
struct Action {
  std::uint32_t node = 0;
  std::uint16_t level = 0;
  std::uint16_t tag = 0;
  friend bool operator==(const Action&, const Action&) = default;
};
constexpr Action kMiss{};

// Both answers of a merged segment, as the lookup returns them.
struct Resolved {
  Action primary, secondary;
  friend bool operator==(const Resolved&, const Resolved&) = default;
};

Action action_of_entry(const LpmEntry& e) {
  return Action{e.node, e.level, static_cast<std::uint16_t>(e.version)};
}


// Validated, sorted copy of one table (InvalidArgument on bad input).
std::vector<LpmEntry> checked_table(std::span<const LpmEntry> entries, const char* which) {
  if (entries.size() >= (std::size_t{1} << 31)) {
    throw InvalidArgument(std::string("build_lpm_image: too many ") + which + " entries");
  }
  std::vector<LpmEntry> sorted(entries.begin(), entries.end());
  for (const LpmEntry& e : sorted) {
    if (!prefix_valid(e.prefix) || e.node == kNoPage) {
      throw InvalidArgument(std::string("build_lpm_image: invalid ") + which +
                            " entry (malformed prefix or node 0)");
    }
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const LpmEntry& a, const LpmEntry& b) { return prefix_less(a.prefix, b.prefix); });
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i].prefix == sorted[i - 1].prefix) {
      throw InvalidArgument(std::string("build_lpm_image: duplicate prefix in the ") + which + " table");
    }
  }
  return sorted;
}

// One table's step function (LpmSnapshot's flattening): starts strictly
// ascending from 0, adjacent segments with one action merged.
std::vector<std::pair<Word, Action>> flatten(const std::vector<LpmEntry>& sorted) {
  std::vector<std::pair<Word, Action>> segs;
  segs.reserve(2 * sorted.size() + 1);
  segs.emplace_back(0, kMiss);
  auto begin_segment = [&](Word start, const Action& action) {
    if (segs.back().first == start) {  // an enclosing prefix and a nested one start together
      segs.back().second = action;
      if (segs.size() > 1 && segs[segs.size() - 2].second == action) segs.pop_back();
      return;
    }
    if (segs.back().second == action) return;
    segs.emplace_back(start, action);
  };
  std::vector<std::pair<Word, Action>> open;  // {last word, action}
  for (const LpmEntry& e : sorted) {
    const Word first = prefix_first(e.prefix);
    while (!open.empty() && open.back().first < first) {
      const Word closed_last = open.back().first;
      open.pop_back();
      begin_segment(closed_last + 1, open.empty() ? kMiss : open.back().second);
    }
    const Action action = action_of_entry(e);
    begin_segment(first, action);
    open.emplace_back(prefix_last(e.prefix), action);
  }
  while (!open.empty()) {
    const Word closed_last = open.back().first;
    open.pop_back();
    if (closed_last == ~Word{0}) break;  // everything still open ends here too
    begin_segment(closed_last + 1, open.empty() ? kMiss : open.back().second);
  }
  return segs;
}

// Both step functions merged; each segment resolved as hint_for_word does.
std::vector<std::pair<Word, Resolved>> merge(const std::vector<std::pair<Word, Action>>& upper,
                                             const std::vector<std::pair<Word, Action>>& bottom) {
  std::vector<std::pair<Word, Resolved>> out;
  out.reserve(upper.size() + bottom.size());
  std::size_t i = 0, j = 0;  // current segment of each; both start at word 0
  Word start = 0;
  for (;;) {
    const Action& u = upper[i].second;
    const Action& b = bottom[j].second;
    const Resolved r = u.node != 0 ? Resolved{u, b} : Resolved{b, kMiss};
    if (out.empty() || !(out.back().second == r)) out.emplace_back(start, r);
    const bool more_u = i + 1 < upper.size(), more_b = j + 1 < bottom.size();
    if (!more_u && !more_b) break;
    const Word next_u = more_u ? upper[i + 1].first : ~Word{0};
    const Word next_b = more_b ? bottom[j + 1].first : ~Word{0};
    if (more_u && (!more_b || next_u <= next_b)) {
      start = next_u;
      ++i;
      if (more_b && next_b == next_u) ++j;
    } else {
      start = next_b;
      ++j;
    }
  }
  return out;
}

// The header checks the lookup makes, against the span it was given.
inline bool header_ok(std::span<const std::byte> image, LpmImageHeader& h) noexcept {
  if (image.size() < kHeaderBytes) return false;
  std::memcpy(&h, image.data(), kHeaderBytes);
  const std::uint64_t total = h.total_bytes;
  if (h.magic != kLpmImageMagic || h.format != kLpmImageFormat || h.header_bytes != kHeaderBytes ||
      total > image.size() || total < kHeaderBytes || h.segment_count == 0 ||
      h.dir_bits > kLpmImageMaxDirBits || h.dir_shift > 63) {
    return false;
  }
  const std::uint64_t cells = std::uint64_t{1} << h.dir_bits;
  return h.dir_offset <= total && (cells + 1) <= (total - h.dir_offset) / 4 &&
         h.segments_offset <= total &&
         h.segment_count <= (total - h.segments_offset) / kLpmImageSegmentBytes;
}

inline bool entries_ok(const LpmImageHeader& h) noexcept {
  const std::uint64_t n = std::uint64_t{h.upper_count} + h.bottom_count;
  return h.entries_offset <= h.total_bytes && n <= (h.total_bytes - h.entries_offset) / kLpmImageEntryBytes;
}

}  // namespace

std::vector<std::byte> build_lpm_image(std::span<const LpmEntry> upper, std::span<const LpmEntry> bottom,
                                       std::uint64_t version, const LpmImageOptions& options) {
  if (options.dir_bits > kLpmImageMaxDirBits) {
    throw InvalidArgument("build_lpm_image: dir_bits must be 0 (automatic) or 1.." +
                          std::to_string(kLpmImageMaxDirBits));
  }
  const std::vector<LpmEntry> up = checked_table(upper, "upper");
  const std::vector<LpmEntry> bot = checked_table(bottom, "bottom");
  const auto segs = merge(flatten(up), flatten(bot));
  const std::size_t n = segs.size();
  if (n >= (std::size_t{1} << 32)) throw InvalidArgument("build_lpm_image: too many segments");

  // Directory over the span of the non-zero starts (as LpmSnapshot's grid).
  const Word base = n > 1 ? segs[1].first : 0;
  const Word span = segs.back().first - base;
  const unsigned dir_bits =
      options.dir_bits != 0 ? options.dir_bits
                            : std::clamp<unsigned>(static_cast<unsigned>(std::bit_width(n)) + 1, 1, kAutoMaxDirBits);
  const std::size_t cells = std::size_t{1} << dir_bits;
  const unsigned span_bits = static_cast<unsigned>(std::bit_width(span));
  const unsigned shift = span_bits > dir_bits ? span_bits - dir_bits : 0;  // (span >> shift) < cells

  const std::size_t dir_bytes = ((cells + 1) * 4 + 7) / 8 * 8;
  const std::size_t dir_offset = kHeaderBytes;
  const std::size_t segments_offset = dir_offset + dir_bytes;
  const std::size_t entries_offset = segments_offset + n * kLpmImageSegmentBytes;
  const std::size_t total = entries_offset + (up.size() + bot.size()) * kLpmImageEntryBytes;

  std::vector<std::byte> image(total);  // zero-filled: padding and reserved fields are 0
  std::byte* out = image.data();

  LpmImageHeader h{};
  h.magic = kLpmImageMagic;
  h.format = kLpmImageFormat;
  h.header_bytes = static_cast<std::uint16_t>(kHeaderBytes);
  h.total_bytes = total;
  h.version = version;
  h.segment_count = static_cast<std::uint32_t>(n);
  h.upper_count = static_cast<std::uint32_t>(up.size());
  h.bottom_count = static_cast<std::uint32_t>(bot.size());
  h.dir_bits = static_cast<std::uint8_t>(dir_bits);
  h.dir_shift = static_cast<std::uint8_t>(shift);
  h.dir_base = base;
  h.dir_offset = dir_offset;
  h.segments_offset = segments_offset;
  h.entries_offset = entries_offset;
  store(out, h);

  // dir[c]: the segment holding cell c's first word; dir[cells] = n - 1.
  std::size_t segment = 0;
  for (std::size_t c = 0; c <= cells; ++c) {
    std::uint32_t value = static_cast<std::uint32_t>(n - 1);
    if (c < cells) {
      const Word offset = static_cast<Word>(c) << shift;
      if (offset <= span && (shift == 0 || (offset >> shift) == c)) {
        const Word cell_first = base + offset;
        while (segment + 1 < n && segs[segment + 1].first <= cell_first) ++segment;
        value = static_cast<std::uint32_t>(segment);
      }
    }
    store(out + dir_offset + 4 * c, value);
  }

  for (std::size_t i = 0; i < n; ++i) {
    std::byte* rec = out + segments_offset + i * kLpmImageSegmentBytes;
    const auto& [start, r] = segs[i];
    store(rec, start);
    store(rec + 8, r.primary.node);
    store(rec + 12, r.primary.level);
    store(rec + 14, r.primary.tag);
    store(rec + 16, r.secondary.node);
    store(rec + 20, r.secondary.level);
    store(rec + 22, r.secondary.tag);
  }

  std::size_t k = 0;
  for (const auto* table : {&up, &bot}) {
    for (const LpmEntry& e : *table) {
      std::byte* rec = out + entries_offset + (k++) * kLpmImageEntryBytes;
      store(rec, e.prefix.value);
      store(rec + 8, e.version);
      store(rec + 16, e.node);
      store(rec + 20, e.level);
      store(rec + 22, e.prefix.len);
      store(rec + 23, static_cast<std::uint8_t>(e.layer));
    }
  }
  return image;
}

StartHints lpm_image_hint(std::span<const std::byte> image, Word w) noexcept {
  StartHints hints;
  LpmImageHeader h;
  if (!header_ok(image, h)) return hints;
  const std::byte* const p = image.data();
  const std::uint32_t last = h.segment_count - 1;
  std::uint32_t i = 0;
  if (w >= h.dir_base) {
    const std::uint64_t last_cell = (std::uint64_t{1} << h.dir_bits) - 1;
    const std::uint64_t cell = std::min<std::uint64_t>((w - h.dir_base) >> h.dir_shift, last_cell);
    const std::byte* const d = p + h.dir_offset + 4 * cell;
    // Clamped: torn directory values still index inside the segment array.
    const std::uint32_t lo = std::min(load<std::uint32_t>(d), last);
    const std::uint32_t hi = std::max(lo, std::min(load<std::uint32_t>(d + 4), last));
    // The last segment in [lo, hi] whose start is <= w (lo if none is):
    // at most log2(hi - lo + 1) + 1 steps.
    const std::byte* const segs = p + h.segments_offset;
    i = lo;
    std::uint32_t len = hi - lo + 1;
    while (len > 1) {
      const std::uint32_t half = len / 2;
      i = load<Word>(segs + std::size_t{i + half} * kLpmImageSegmentBytes) <= w ? i + half : i;
      len -= half;
    }
  }
  const std::byte* const rec = p + h.segments_offset + std::size_t{i} * kLpmImageSegmentBytes;
  hints.primary = Hint{load<std::uint32_t>(rec + 8), load<std::uint16_t>(rec + 12), load<std::uint16_t>(rec + 14)};
  hints.secondary = Hint{load<std::uint32_t>(rec + 16), load<std::uint16_t>(rec + 20), load<std::uint16_t>(rec + 22)};
  return hints;
}

std::optional<LpmImageInfo> lpm_image_info(std::span<const std::byte> image) noexcept {
  LpmImageHeader h;
  if (!header_ok(image, h)) return std::nullopt;
  LpmImageInfo info;
  info.version = h.version;
  info.total_bytes = h.total_bytes;
  info.segments = h.segment_count;
  info.upper_entries = h.upper_count;
  info.bottom_entries = h.bottom_count;
  info.dir_bits = h.dir_bits;
  info.dir_shift = h.dir_shift;
  info.dir_base = h.dir_base;
  return info;
}

std::size_t lpm_image_entry_count(std::span<const std::byte> image) noexcept {
  LpmImageHeader h;
  if (!header_ok(image, h) || !entries_ok(h)) return 0;
  return std::size_t{h.upper_count} + h.bottom_count;
}

std::optional<LpmEntry> lpm_image_entry(std::span<const std::byte> image, std::size_t i) noexcept {
  LpmImageHeader h;
  if (!header_ok(image, h) || !entries_ok(h) || i >= std::size_t{h.upper_count} + h.bottom_count) {
    return std::nullopt;
  }
  const std::byte* rec = image.data() + h.entries_offset + i * kLpmImageEntryBytes;
  LpmEntry e;
  e.prefix.value = load<Word>(rec);
  e.version = load<std::uint64_t>(rec + 8);
  e.node = load<std::uint32_t>(rec + 16);
  e.level = load<std::uint16_t>(rec + 20);
  e.prefix.len = load<std::uint8_t>(rec + 22);
  e.layer = static_cast<Layer>(load<std::uint8_t>(rec + 23));
  return e;
}

std::vector<LpmEntry> lpm_image_entries(std::span<const std::byte> image) {
  std::vector<LpmEntry> out;
  const std::size_t n = lpm_image_entry_count(image);
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(*lpm_image_entry(image, i));
  return out;
}

bool lpm_image_valid(std::span<const std::byte> image) {
  LpmImageHeader h;
  if (!header_ok(image, h) || !entries_ok(h) || h.dir_bits == 0) return false;
  const std::vector<LpmEntry> all = lpm_image_entries(image);
  for (const LpmEntry& e : all) {
    if (static_cast<std::uint8_t>(e.layer) > static_cast<std::uint8_t>(Layer::kHotLeaf)) return false;
  }
  const std::span<const LpmEntry> entries(all);
  std::vector<std::byte> rebuilt;
  try {
    rebuilt = build_lpm_image(entries.first(h.upper_count), entries.subspan(h.upper_count), h.version,
                              LpmImageOptions{h.dir_bits});
  } catch (const InvalidArgument&) {
    return false;
  }
  return rebuilt.size() == h.total_bytes &&
         std::memcmp(rebuilt.data(), image.data(), rebuilt.size()) == 0;
}

}  // namespace forein::offload

namespace forein::offload {

// Laminar prefixes make the longest-match function a step function with at
// most two steps per prefix, so both tables merged have at most 2n + 1
// segments; the automatic directory grows with the segment count.
std::size_t lpm_image_max_bytes(std::uint64_t entries) {
  const std::uint64_t segments = 2 * entries + 1;
  const unsigned dir_bits =
      std::clamp<unsigned>(static_cast<unsigned>(std::bit_width(segments)) + 1, 1, kAutoMaxDirBits);
  const std::size_t cells = std::size_t{1} << dir_bits;
  const std::size_t dir_bytes = ((cells + 1) * 4 + 7) / 8 * 8;
  return kHeaderBytes + dir_bytes + segments * kLpmImageSegmentBytes + entries * kLpmImageEntryBytes;
}

}  // namespace forein::offload
