// The head most backend images start with (dpa, fpga, fattree), checked and
// written in one place, and the sorted index of records two of them keep
// (dpa, fpga):
//
//   u32 magic; u16 format; u16 0; u64 length; u32 count   (little-endian,
//   from offset 0; length: the image's bytes, header included)
//
// then the backend's own header fields up to its header size, then the
// image's first table: `count` entries of a fixed size from the header's
// end (dpa, fpga: the index; fattree: the fat root's ranges).
//
// Safety: every function here reads only inside the span (or the image a
// checked ImageView describes), on any bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace forein::offload {

// The head's bytes (magic, format, 0, length, count).
inline constexpr std::size_t kImageHeadBytes = 20;

// An image whose head was checked against its span.
struct ImageView {
  bool ok = false;                // false: not an image of that magic and format
  const std::byte* base = nullptr;
  std::uint64_t length = 0;       // header_bytes <= length <= the span's size
  std::uint32_t entries = 0;      // the first table's entries, all inside length
};

// The head of `image` checked: ok only when the span holds at least
// header_bytes (>= kImageHeadBytes), the magic and format match,
// header_bytes <= length <= image.size(), and the first table (`count`
// entries of entry_bytes from header_bytes) ends within length.
ImageView view_image(std::span<const std::byte> image, std::uint32_t magic, std::uint16_t format,
                     std::size_t header_bytes, std::size_t entry_bytes) noexcept;

// Writes the head at p (kImageHeadBytes bytes): magic, format, 0, length,
// count.
void write_image_head(std::byte* p, std::uint32_t magic, std::uint16_t format, std::uint64_t length,
                      std::uint32_t count) noexcept;

// An index as the first table: entries of kImageIndexEntryBytes, each a key
// (its first key_bytes, 4 or 8, little-endian) and at +8 a u64 record
// offset, ascending by key.
inline constexpr std::size_t kImageIndexEntryBytes = 16;

// The record offset the index gives for `key` (binary search over the
// entries the head vouches for), or none. view.ok must hold.
std::optional<std::uint64_t> find_index_entry(const ImageView& view, std::size_t header_bytes,
                                              std::size_t key_bytes, std::uint64_t key) noexcept;

// The offset of entry i's record (i < view.entries). view.ok must hold.
std::uint64_t index_entry_offset(const ImageView& view, std::size_t header_bytes, std::size_t i) noexcept;

}  // namespace forein::offload
