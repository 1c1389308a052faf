// switch_lpm's change batches: LPM entries as 24-byte records, the form the
// control plane carries. Decoding checks every record, so a garbage batch
// is refused whole.
#pragma once

#include <span>
#include <vector>

#include "forein/offload/backend.h"
#include "switch_lpm/lpm_entry.h"

namespace forein::offload {

inline constexpr std::size_t kLpmBatchRecordBytes = 24;

ChangeBatch encode_lpm_batch(BatchKind kind, std::span<const LpmEntry> entries);

// False (and *out untouched) unless every record is a valid entry: a valid
// prefix, a known layer, and for installs a node other than kNoPage.
bool decode_lpm_batch(const ChangeBatch& batch, std::vector<LpmEntry>* out);

}  // namespace forein::offload
