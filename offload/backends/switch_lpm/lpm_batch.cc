#include "switch_lpm/lpm_batch.h"

#include "forein/offload/bytes.h"

namespace forein::offload {

// Record: prefix value u64, node u32, level u16, prefix length u8, layer u8,
// version u64; host byte order.
ChangeBatch encode_lpm_batch(BatchKind kind, std::span<const LpmEntry> entries) {
  ChangeBatch b;
  b.kind = kind;
  b.records = entries.size();
  b.bytes.resize(entries.size() * kLpmBatchRecordBytes);
  std::byte* p = b.bytes.data();
  for (const LpmEntry& e : entries) {
    store<std::uint64_t>(p, e.prefix.value);
    store<std::uint32_t>(p + 8, e.node);
    store<std::uint16_t>(p + 12, e.level);
    store<std::uint8_t>(p + 14, e.prefix.len);
    store<std::uint8_t>(p + 15, static_cast<std::uint8_t>(e.layer));
    store<std::uint64_t>(p + 16, e.version);
    p += kLpmBatchRecordBytes;
  }
  return b;
}

bool decode_lpm_batch(const ChangeBatch& batch, std::vector<LpmEntry>* out) {
  if (batch.records > batch.bytes.size() / kLpmBatchRecordBytes ||
      batch.bytes.size() != batch.records * kLpmBatchRecordBytes) {
    return false;
  }
  std::vector<LpmEntry> entries;
  entries.reserve(batch.records);
  for (const std::byte* p = batch.bytes.data(); p != batch.bytes.data() + batch.bytes.size();
       p += kLpmBatchRecordBytes) {
    LpmEntry e;
    e.prefix.value = load<std::uint64_t>(p);
    e.node = load<std::uint32_t>(p + 8);
    e.level = load<std::uint16_t>(p + 12);
    e.prefix.len = load<std::uint8_t>(p + 14);
    const std::uint8_t layer = load<std::uint8_t>(p + 15);
    e.version = load<std::uint64_t>(p + 16);
    if (layer > static_cast<std::uint8_t>(Layer::kHotLeaf) || !prefix_valid(e.prefix)) return false;
    if (batch.kind == BatchKind::kInstall && e.node == kNoPage) return false;
    e.layer = static_cast<Layer>(layer);
    entries.push_back(e);
  }
  *out = std::move(entries);
  return true;
}

}  // namespace forein::offload
