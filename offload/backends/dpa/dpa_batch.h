// dpa's change batches: DPA-Store's stitch commands (section 3.2.1-3.2.3)
// as little-endian bytes, what the host's stitch queues carry to the DPA.
//
//   COPY    (install): u8 kind = 1; 3 bytes 0; u32 node bytes; u64 DPA
//           address; then the node's bytes (dpa_layout.h) -- "the host has
//           pre-calculated every destination address" (3.2.2)
//   CONNECT (install): u8 kind = 2; 7 bytes 0; u64 DPA address: the root
//           pointer swap that makes the batch's COPY stitches effective
//   FREE    (remove):  u8 kind = 3; 3 bytes 0; u32 node bytes; u64 DPA
//           address: an obsolete node's memory, reclaimed (the paper frees
//           it once the traversers' epoch has passed, 3.2.3)
//
// An install batch is COPY records followed by exactly one CONNECT naming
// one of them; a remove batch is FREE records only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dpa/dpa_layout.h"
#include "forein/offload/backend.h"

namespace forein::offload::dpa {

inline constexpr std::size_t kStitchHeaderBytes = 16;

enum class StitchKind : std::uint8_t { kCopy = 1, kConnect = 2, kFree = 3 };

struct Stitch {
  StitchKind kind = StitchKind::kCopy;
  std::uint64_t address = 0;
  std::vector<std::byte> node;  // COPY: the node's bytes
  std::uint32_t bytes = 0;      // FREE: the node's size

  bool operator==(const Stitch&) const = default;
};

ChangeBatch encode_batch(BatchKind kind, const std::vector<Stitch>& stitches);

// Decodes and validates every record (node bytes by node_error(), the
// grammar above, COPY ranges that do not overlap one another); nullopt,
// with *why set, if anything is off.
std::optional<std::vector<Stitch>> decode_batch(const ChangeBatch& batch, std::string* why);

}  // namespace forein::offload::dpa
