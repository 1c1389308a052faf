#include "fpga/fpga_batch.h"

namespace forein::offload::fpga {

namespace {

constexpr std::uint8_t kRecordKind = 1;
constexpr std::uint8_t kRootFlag = 1;
constexpr std::uint8_t kHiInfFlag = 2;

}  // namespace

ChangeBatch encode_batch(BatchKind kind, const std::vector<CacheRecord>& records) {
  ChangeBatch b;
  b.kind = kind;
  b.records = records.size();
  std::size_t bytes = 0;
  for (const CacheRecord& r : records) bytes += record_data_bytes(r.children.size());
  b.bytes.resize(bytes);
  std::byte* p = b.bytes.data();
  for (const CacheRecord& r : records) {
    store<std::uint8_t>(p, kRecordKind);
    store<std::uint8_t>(p + 1, static_cast<std::uint8_t>((r.root ? kRootFlag : 0) | (r.hi_inf ? kHiInfFlag : 0)));
    store<std::uint16_t>(p + 2, r.level);
    store<std::uint32_t>(p + 4, r.node);
    store<std::uint32_t>(p + 8, static_cast<std::uint32_t>(r.children.size()));
    store<std::uint64_t>(p + 16, r.lo);
    store<std::uint64_t>(p + 24, r.hi);
    p += kRecordHeaderBytes;
    for (const CacheChild& c : r.children) {
      store<std::uint64_t>(p, c.lo);
      store<std::uint32_t>(p + 8, c.node);
      p += kChildBytes;
    }
  }
  return b;
}

std::string record_error(const CacheRecord& r) {
  if (r.level < 1 || r.level > kMaxLevel) return "record level not an interior level";
  if (r.node == kNoPage && !r.root) return "record without a node";
  if (r.children.empty() || r.children.size() > kMaxChildren) return "record with 0 or more than 510 children";
  if (!r.hi_inf && r.hi <= r.lo) return "record with an empty interval";
  for (std::size_t i = 0; i < r.children.size(); ++i) {
    if (r.children[i].node == kNoPage) return "child is no page";
    if (i > 0 && r.children[i].lo <= r.children[i - 1].lo) return "children not ascending";
  }
  return {};
}

std::optional<std::vector<CacheRecord>> decode_batch(const ChangeBatch& batch, std::string* why) {
  auto fail = [&](std::string w) -> std::optional<std::vector<CacheRecord>> {
    if (why != nullptr) *why = std::move(w);
    return std::nullopt;
  };
  // Every record takes at least its header: a count beyond that is off.
  if (batch.records > batch.bytes.size() / kRecordHeaderBytes) return fail("record count mismatch");
  std::vector<CacheRecord> out;
  out.reserve(batch.records);
  const std::byte* p = batch.bytes.data();
  const std::byte* end = p + batch.bytes.size();
  while (p < end) {
    const std::size_t left = static_cast<std::size_t>(end - p);
    if (left < kRecordHeaderBytes) return fail("truncated record");
    const auto kind = load<std::uint8_t>(p);
    const auto flags = load<std::uint8_t>(p + 1);
    const auto children = load<std::uint32_t>(p + 8);
    if (kind != kRecordKind) return fail("unknown record kind");
    if ((flags & ~(kRootFlag | kHiInfFlag)) != 0) return fail("unknown record flags");
    if (load<std::uint32_t>(p + 12) != 0) return fail("reserved bytes in use");
    if (children > kMaxChildren) return fail("record with more than 510 children");
    if (left < record_data_bytes(children)) return fail("truncated record");
    CacheRecord r;
    r.root = (flags & kRootFlag) != 0;
    r.hi_inf = (flags & kHiInfFlag) != 0;
    r.level = load<std::uint16_t>(p + 2);
    r.node = load<std::uint32_t>(p + 4);
    r.lo = load<std::uint64_t>(p + 16);
    r.hi = load<std::uint64_t>(p + 24);
    r.children.resize(children);
    const std::byte* c = p + kRecordHeaderBytes;
    for (CacheChild& child : r.children) {
      child.lo = load<std::uint64_t>(c);
      child.node = load<std::uint32_t>(c + 8);
      if (load<std::uint32_t>(c + 12) != 0) return fail("reserved bytes in use");
      c += kChildBytes;
    }
    if (std::string e = record_error(r); !e.empty()) return fail(e);
    out.push_back(std::move(r));
    if (out.size() > batch.records) return fail("record count mismatch");
    p += record_data_bytes(children);
  }
  if (out.size() != batch.records) return fail("record count mismatch");
  return out;
}

}  // namespace forein::offload::fpga
