// The switch_lpm image: both LPM tables flattened into one array of word
// segments, each carrying the upper table's and the bottom line's answer,
// behind a header that a lookup checks against the bytes it is given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "forein/node_interval.h"
#include "switch_lpm/lpm_entry.h"

namespace forein::offload {

// Builds the image of the two tables (upper: main and hot-leaf entries;
// bottom: bottom-line entries). Throws InvalidArgument on an invalid entry.
std::vector<std::byte> build_lpm_image(std::span<const LpmEntry> upper,
                                       std::span<const LpmEntry> bottom, std::uint64_t version);

// Primary = the upper table's longest match (secondary: the bottom line's),
// else the bottom line's. Safe on any bytes.
StartHints lpm_image_hint(std::span<const std::byte> image, Word w) noexcept;

// Full structural check (tests, diagnostics).
bool lpm_image_valid(std::span<const std::byte> image);

// The entries the image was built from (diagnostics: PostgreSQL's
// forein_offload_entries); empty if the image is not valid.
std::vector<LpmEntry> lpm_image_entries(std::span<const std::byte> image);

// Bytes of an image of n entries at most.
std::size_t lpm_image_max_bytes(std::uint64_t entries);

}  // namespace forein::offload
