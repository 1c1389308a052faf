// switch_lpm as one flat, position-independent, immutable byte image: both
// LPM tables (upper = main + hot-leaf entries, bottom = bottom-line
// entries) and a pure lookup that any host runs on its hot path (in-process
// hints, PostgreSQL backends reading the image from shared memory under a
// seqlock, a DPDK data plane).
//
// Safety contract. lpm_image_hint() accepts ANY bytes: a torn copy (a
// seqlock reader racing a writer), a truncated one, garbage. It reads only
// inside the span it is given, loads every field with memcpy (no alignment
// requirement, no type punning), validates the header against the span on
// every call, clamps every index it takes from the data, and loops at most
// log2(segment count) + 1 times. Bad bytes give at worst a wrong or absent
// hint; hosts validate hints anyway. lpm_image_valid() is the full
// structural check (tests, diagnostics): it rebuilds the image from its
// own entry list and compares byte for byte.
//
// Semantics: lpm_image_hint(image, w) == SwitchLpmDevice::hint_for_word(w)
// for the same entries: primary = the upper table's longest match with
// secondary = the bottom table's match; with no upper match, primary = the
// bottom match. Hint::version is the entry version's low 16 bits
// (LpmAction::version_tag), as the backend reports it.
//
// Layout (format 1). Host byte order (little-endian on every supported
// host; the magic reads "FLPM" in memory order only there). All offsets are
// relative to the image start, every array starts 8-byte aligned, and the
// total length is a multiple of 8. Place the image at an 8-byte aligned
// address for speed; correctness does not depend on it.
//
//   offset 0   header, 80 bytes (LpmImageHeader below)
//   dir_offset       u32 dir[cells + 1], cells = 2^dir_bits (padded to 8)
//   segments_offset  Segment[segment_count], 24 bytes each:
//                      u64 start; u32 p_node; u16 p_level; u16 p_tag;
//                                 u32 s_node; u16 s_level; u16 s_tag
//   entries_offset   Entry[upper_count + bottom_count], 24 bytes each:
//                      u64 prefix; u64 version; u32 node; u16 level;
//                      u8 len; u8 layer   (upper table first, each table
//                      in prefix_less order)
//
// Both tables' step functions are merged into ONE sorted segment array:
// segment i covers words [start_i, start_{i+1}), start_0 = 0, starts
// strictly ascending, and carries both answers (the resolved primary and
// secondary hint; node 0 = none), adjacent equal segments merged. One
// lookup answers both tables: a DIR-style directory over the span of the
// non-zero starts (cell c = (w - dir_base) >> dir_shift, clamped to the last
// cell; 2^dir_bits cells with dir_bits = bit_width(segments) + 1 capped at
// 17, i.e. 2-4 cells per segment, at most 512 KiB of directory) gives
// dir[c] = the segment holding the cell's first word, so w's segment lies in [dir[c], dir[c + 1]]; a
// branch-free binary search over those few starts finds it, and the 24-byte
// record holds the start and both answers, so the search ends on the line
// that holds the answer: typically two dependent cache misses per lookup
// (directory, then segment) whatever the prefix lengths. The directory
// adapts to clustered keys (small integers sit just above 2^63) like
// LpmSnapshot's grid.
//
// Numbers (docs/lpm-image-benchmark.md: lpm_image_bench 73000 2000000 9,
// RelWithDebInfo, one core of a shared 2-vCPU AMD EPYC VM, thread CPU
// time, median of 9), uniformly random 64-bit words, independent lookups:
// 12.6-19 ns (random-key B+tree covers, 31k segments), 10.6-13 ns
// (clustered keys), 12.0-12.6 ns (long-prefix mix, 79k segments), against
// 27-42 ns for SwitchLpmDevice::hint_for_word in the same runs; a
// dependent chain of lookups (pure latency) 11-30 ns. Directory size, the
// random-key set: 1/2 cell per segment 19 ns, 1 cell 16 ns, 2 cells (the
// default) 12.6 ns, 4 cells 12.1 ns but a slower chain; past 2^17 cells
// (1 MiB) the long-prefix chain got slower (25.7 -> 30.2 ns), hence the
// cap. A poptrie/multibit layout was not chosen: FOREIN's prefixes run to
// 64 bits, so an 8- or 16-bit stride trie needs up to 4-8 dependent reads
// for long prefixes, while directory + short search is two misses for any
// prefix length.
//
// Size: 24 bytes per segment (0.4-1.1 segments per entry in these sets;
// at most 2 per entry + 1), 4 bytes per directory cell (2-4 per segment),
// plus the 24-byte diagnostic entry list, which the lookup never reads:
// 38-57 bytes per entry at 73,000 entries in all, of which the lookup's
// part (directory + segments) is 14-33 (random-key tree: 2.6 MiB image,
// 0.96 MiB of it directory + segments).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "forein/node_interval.h"
#include "switch_lpm/lpm_entry.h"
#include "switch_lpm/prefix_cover.h"

namespace forein::offload {

inline constexpr std::uint32_t kLpmImageMagic = 0x4D504C46;  // "FLPM" in little-endian memory order
inline constexpr std::uint16_t kLpmImageFormat = 1;
inline constexpr unsigned kLpmImageMaxDirBits = 24;  // accepted by the lookup
inline constexpr std::size_t kLpmImageSegmentBytes = 24;
inline constexpr std::size_t kLpmImageEntryBytes = 24;

// The fixed header at offset 0 (read with memcpy; the image needs no
// particular alignment to be read safely).
struct LpmImageHeader {
  std::uint32_t magic;          // kLpmImageMagic
  std::uint16_t format;         // kLpmImageFormat
  std::uint16_t header_bytes;   // sizeof(LpmImageHeader)
  std::uint64_t total_bytes;    // the whole image, header included
  std::uint64_t version;        // the image version given to build_lpm_image
  std::uint32_t segment_count;  // >= 1
  std::uint32_t upper_count;    // entries of the upper table
  std::uint32_t bottom_count;   // entries of the bottom table
  std::uint8_t dir_bits;        // cells = 2^dir_bits, <= kLpmImageMaxDirBits
  std::uint8_t dir_shift;       // < 64
  std::uint16_t reserved0;      // 0
  std::uint64_t dir_base;       // first word of cell 0
  std::uint64_t dir_offset;     // u32[cells + 1]
  std::uint64_t segments_offset;
  std::uint64_t entries_offset;
  std::uint64_t reserved1;      // 0
};
static_assert(sizeof(LpmImageHeader) == 80, "the image header is 80 bytes");

// Directory sizing for build_lpm_image; 0 = automatic (bit_width(segments)
// + 1, at most 17). Benchmarks and tests may force other sizes.
struct LpmImageOptions {
  unsigned dir_bits = 0;  // 0 or 1..kLpmImageMaxDirBits
};

// Builds the image of the two tables. Entries must have valid 64-bit
// prefixes and node != 0, and prefixes must be distinct within a table
// (prefixes are always laminar): InvalidArgument otherwise, or when a table
// has 2^31 entries or more. Entry order within a span does not matter.
std::vector<std::byte> build_lpm_image(std::span<const LpmEntry> upper, std::span<const LpmEntry> bottom,
                                       std::uint64_t version, const LpmImageOptions& options = {});

// The start hints for w: SwitchLpmDevice::hint_for_word's semantics. Safe on
// any bytes (see the contract above); an invalid header gives no hints.
StartHints lpm_image_hint(std::span<const std::byte> image, Word w) noexcept;

// The full structural check: a sane header within the span, and the bytes
// [0, total_bytes) equal to the image rebuilt from the stored entries.
bool lpm_image_valid(std::span<const std::byte> image);

// Header facts for diagnostics; nullopt when the header fails the checks the
// lookup makes.
struct LpmImageInfo {
  std::uint64_t version = 0;
  std::uint64_t total_bytes = 0;
  std::size_t segments = 0;
  std::size_t upper_entries = 0;
  std::size_t bottom_entries = 0;
  unsigned dir_bits = 0;
  unsigned dir_shift = 0;
  Word dir_base = 0;
};
std::optional<LpmImageInfo> lpm_image_info(std::span<const std::byte> image) noexcept;

// The stored entries, upper table first (each in prefix_less order), as
// installed: prefix, node, level, layer and version. Entry i, or nullopt
// when i is out of range or the header is bad; no allocation, so a
// PostgreSQL set-returning function can walk a shared-memory image with it.
// Torn bytes give whatever the bytes say.
std::size_t lpm_image_entry_count(std::span<const std::byte> image) noexcept;
std::optional<LpmEntry> lpm_image_entry(std::span<const std::byte> image, std::size_t i) noexcept;
std::vector<LpmEntry> lpm_image_entries(std::span<const std::byte> image);

// The largest image of `entries` entries (both tables together) with the
// automatic directory: what a host reserves for one image up front.
std::size_t lpm_image_max_bytes(std::uint64_t entries);

}  // namespace forein::offload
