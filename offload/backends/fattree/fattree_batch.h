// fattree's change batches: fat-root ranges and regular nodes as
// fixed-size little-endian records, the bytes a control plane carries.
//
//   range record, 40 bytes: u8 kind = 1; u8 0; u16 hint_level; u16 server;
//     u16 0; u64 lo; u64 hi; u64 target; u32 hint_node; u32 0
//   node record, 280 bytes: u8 kind = 2; u8 set; u8 children; u8 0;
//     u16 owner_level; u16 0; u32 owner; u32 0; u64 address;
//     u64 pivot[16]; u64 child[16]
//
// A range is identified by its lo word, a node by (set, address); a remove
// batch carries whole records and only their identities count.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "fattree/fattree_types.h"
#include "forein/offload/backend.h"

namespace forein::offload::fattree {

inline constexpr std::size_t kRangeRecordBytes = 40;
inline constexpr std::size_t kNodeRecordBytes = 280;

struct DecodedBatch {
  std::vector<RangeRecord> ranges;
  std::vector<NodeRecord> nodes;
};

ChangeBatch encode_batch(BatchKind kind, const std::vector<RangeRecord>& ranges,
                         const std::vector<NodeRecord>& nodes);

// Decodes and validates every record; nullopt (with *why set) if any
// record is malformed or the byte count is off.
std::optional<DecodedBatch> decode_batch(const ChangeBatch& batch, std::string* why);

// The checks a device applies to one record (also used by the planner's
// tests): empty when valid, else what is wrong.
std::string range_error(const RangeRecord& r);
std::string node_error(const NodeRecord& n);

}  // namespace forein::offload::fattree
