// fpga's change batches: cached-node records as little-endian bytes, what
// a control plane carries to the card (a page-table/cache update over PCIe).
//
//   record: u8 kind = 1; u8 flags (bit 0 root, bit 1 hi_inf); u16 level;
//     u32 node; u32 children; u32 0; u64 lo; u64 hi;            (32 bytes)
//     then [children] x 16 bytes: u64 lo; u32 node; u32 0
//
// A record is identified by its node id; a remove batch carries whole
// records and only their ids count (a remove is the paper's invalidation).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fpga/fpga_types.h"
#include "forein/offload/backend.h"

namespace forein::offload::fpga {

ChangeBatch encode_batch(BatchKind kind, const std::vector<CacheRecord>& records);

// Decodes and validates every record; nullopt (with *why set) if any
// record is malformed, truncated, or the record count is off.
std::optional<std::vector<CacheRecord>> decode_batch(const ChangeBatch& batch, std::string* why);

// The checks a device applies to one record: empty when valid, else what
// is wrong.
std::string record_error(const CacheRecord& r);

}  // namespace forein::offload::fpga
