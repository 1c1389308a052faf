#include "dpa/dpa_batch.h"

#include <algorithm>
#include <utility>

namespace forein::offload::dpa {

ChangeBatch encode_batch(BatchKind kind, const std::vector<Stitch>& stitches) {
  ChangeBatch b;
  b.kind = kind;
  b.records = stitches.size();
  std::size_t bytes = 0;
  for (const Stitch& s : stitches) bytes += kStitchHeaderBytes + (s.kind == StitchKind::kCopy ? s.node.size() : 0);
  b.bytes.resize(bytes);
  std::byte* p = b.bytes.data();
  for (const Stitch& s : stitches) {
    store<std::uint8_t>(p, static_cast<std::uint8_t>(s.kind));
    if (s.kind == StitchKind::kCopy) store<std::uint32_t>(p + 4, static_cast<std::uint32_t>(s.node.size()));
    if (s.kind == StitchKind::kFree) store<std::uint32_t>(p + 4, s.bytes);
    store<std::uint64_t>(p + 8, s.address);
    p += kStitchHeaderBytes;
    if (s.kind == StitchKind::kCopy && !s.node.empty()) {
      std::copy(s.node.begin(), s.node.end(), p);
      p += s.node.size();
    }
  }
  return b;
}

std::optional<std::vector<Stitch>> decode_batch(const ChangeBatch& batch, std::string* why) {
  auto fail = [&](std::string w) -> std::optional<std::vector<Stitch>> {
    if (why != nullptr) *why = std::move(w);
    return std::nullopt;
  };
  // Every record takes at least its header: a count beyond that is off.
  if (batch.records > batch.bytes.size() / kStitchHeaderBytes) return fail("record count mismatch");
  std::vector<Stitch> out;
  out.reserve(batch.records);
  const std::byte* p = batch.bytes.data();
  const std::byte* end = p + batch.bytes.size();
  while (p < end) {
    const auto left = static_cast<std::size_t>(end - p);
    if (left < kStitchHeaderBytes) return fail("truncated record");
    if (out.size() >= batch.records) return fail("record count mismatch");
    Stitch s;
    const auto kind = load<std::uint8_t>(p);
    if (kind < 1 || kind > 3) return fail("unknown stitch kind");
    s.kind = static_cast<StitchKind>(kind);
    if (load<std::uint8_t>(p + 1) != 0 || load<std::uint16_t>(p + 2) != 0) return fail("reserved bytes in use");
    const auto size = load<std::uint32_t>(p + 4);
    s.address = load<std::uint64_t>(p + 8);
    if (s.address == kNoAddress || s.address % kPivotBytes != 0) return fail("address not a node address");
    std::size_t record = kStitchHeaderBytes;
    switch (s.kind) {
      case StitchKind::kCopy: {
        if (batch.kind != BatchKind::kInstall) return fail("COPY in a remove batch");
        if (size > left - kStitchHeaderBytes) return fail("truncated record");
        s.node.assign(p + kStitchHeaderBytes, p + kStitchHeaderBytes + size);
        if (std::string e = node_error(s.node); !e.empty()) return fail(e);
        record += size;
        break;
      }
      case StitchKind::kConnect:
        if (batch.kind != BatchKind::kInstall) return fail("CONNECT in a remove batch");
        if (size != 0) return fail("reserved bytes in use");
        break;
      case StitchKind::kFree:
        if (batch.kind != BatchKind::kRemove) return fail("FREE in an install batch");
        if (size < kMinNodeBytes || size % kPivotBytes != 0) return fail("FREE of a size no node has");
        s.bytes = size;
        break;
    }
    out.push_back(std::move(s));
    p += record;
  }
  if (out.size() != batch.records) return fail("record count mismatch");
  if (batch.kind == BatchKind::kInstall && !out.empty()) {
    // COPY records, then one CONNECT naming one of them.
    if (out.back().kind != StitchKind::kConnect) return fail("install batch without a final CONNECT");
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;  // [address, end)
    for (std::size_t i = 0; i + 1 < out.size(); ++i) {
      if (out[i].kind != StitchKind::kCopy) return fail("CONNECT before the last record");
      const std::uint64_t a = out[i].address;
      if (a > ~std::uint64_t{0} - out[i].node.size()) return fail("address past the address space");
      ranges.emplace_back(a, a + out[i].node.size());
    }
    std::sort(ranges.begin(), ranges.end());
    for (std::size_t i = 1; i < ranges.size(); ++i) {
      if (ranges[i].first < ranges[i - 1].second) return fail("COPY records overlap");
    }
    const std::uint64_t root = out.back().address;
    const bool copied = std::any_of(out.begin(), out.end() - 1, [&](const Stitch& s) { return s.address == root; });
    if (!copied) return fail("CONNECT to a node not copied");
  }
  return out;
}

}  // namespace forein::offload::dpa
