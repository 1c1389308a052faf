#include "switch_visibility/switch_visibility_backend.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "forein/error.h"
#include "forein/offload/bytes.h"
#include "forein/offload/empty_planner.h"

namespace forein::offload {

namespace switch_visibility {

namespace {

template <typename T>
void append_le(std::vector<std::byte>& out, T v) {
  const std::size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

std::uint32_t slots_of(std::uint64_t capacity) {
  if (capacity > kPaperSlots) {
    throw InvalidArgument("switch_visibility: capacity is at most " + std::to_string(kPaperSlots) +
                          " slots (the paper's 16-bit index), got " + std::to_string(capacity));
  }
  return static_cast<std::uint32_t>(capacity);  // 0: the paper's 65,536; checked by the table
}

}  // namespace

std::vector<std::byte> encode_image(const VisibilityTable& table) {
  std::vector<std::byte> out;
  const std::uint64_t valid = table.valid_slots();
  if (valid == 0) return out;
  out.reserve(kImageHeaderBytes + valid * (kImageSlotFixedBytes + kPaperMetadataBytes));
  append_le<std::uint32_t>(out, kImageMagic);
  append_le<std::uint16_t>(out, kImageFormat);
  append_le<std::uint16_t>(out, 0);
  append_le<std::uint32_t>(out, table.slots());
  append_le<std::uint32_t>(out, 0);  // count, patched below
  std::uint32_t count = 0;
  for (std::uint32_t i = 0; i < table.slots(); ++i) {
    const SlotState s = table.slot(static_cast<std::uint16_t>(i));
    if (!s.valid) continue;
    append_le<std::uint16_t>(out, static_cast<std::uint16_t>(i));
    append_le<std::uint32_t>(out, s.fingerprint);
    append_le<std::uint32_t>(out, s.cur_ts);
    append_le<std::uint32_t>(out, s.max_ts);
    append_le<std::uint8_t>(out, static_cast<std::uint8_t>(s.metadata.size()));
    out.insert(out.end(), s.metadata.begin(), s.metadata.end());
    ++count;
  }
  std::memcpy(out.data() + 12, &count, sizeof count);
  return out;
}

std::optional<std::vector<ImageSlot>> decode_image(std::span<const std::byte> image) {
  std::vector<ImageSlot> slots;
  if (image.empty()) return slots;
  if (image.size() < kImageHeaderBytes) return std::nullopt;
  const std::byte* p = image.data();
  if (load<std::uint32_t>(p) != kImageMagic || load<std::uint16_t>(p + 4) != kImageFormat ||
      load<std::uint16_t>(p + 6) != 0) {
    return std::nullopt;
  }
  const std::uint32_t table_slots = load<std::uint32_t>(p + 8);
  const std::uint32_t count = load<std::uint32_t>(p + 12);
  if (table_slots == 0 || table_slots > kPaperSlots || (table_slots & (table_slots - 1)) != 0 ||
      count == 0 || count > table_slots) {
    return std::nullopt;
  }
  // Every record takes at least its fixed part: a count the bytes cannot
  // hold is refused before anything is reserved.
  if (count > (image.size() - kImageHeaderBytes) / kImageSlotFixedBytes) return std::nullopt;
  slots.reserve(count);
  std::size_t at = kImageHeaderBytes;
  for (std::uint32_t r = 0; r < count; ++r) {
    if (image.size() - at < kImageSlotFixedBytes) return std::nullopt;
    ImageSlot s;
    s.slot = load<std::uint16_t>(p + at);
    s.fingerprint = load<std::uint32_t>(p + at + 2);
    s.cur_ts = load<std::uint32_t>(p + at + 6);
    s.max_ts = load<std::uint32_t>(p + at + 10);
    const std::size_t len = load<std::uint8_t>(p + at + 14);
    at += kImageSlotFixedBytes;
    if (s.slot >= table_slots || len > kPaperMetadataBytes || s.cur_ts > s.max_ts || s.cur_ts == 0 ||
        image.size() - at < len || (!slots.empty() && s.slot <= slots.back().slot)) {
      return std::nullopt;
    }
    s.metadata.assign(p + at, p + at + len);
    at += len;
    slots.push_back(std::move(s));
  }
  if (at != image.size()) return std::nullopt;
  return slots;
}

std::size_t image_max_bytes(std::uint64_t capacity) {
  const std::uint64_t slots = std::min<std::uint64_t>(capacity, kPaperSlots);
  if (slots == 0) return 0;
  return kImageHeaderBytes + static_cast<std::size_t>(slots) * (kImageSlotFixedBytes + kPaperMetadataBytes);
}

std::vector<ImageRecord> image_records(std::span<const std::byte> image) {
  std::vector<ImageRecord> out;
  const auto slots = decode_image(image);
  if (!slots) return out;
  out.reserve(slots->size());
  for (const ImageSlot& s : *slots) {
    ImageRecord r;
    r.key = s.slot;
    r.key_bits = 16;
    r.kind = 0;
    r.level = 0;
    r.node = kNoPage;
    out.push_back(r);
  }
  return out;
}

StartHints image_hint(std::span<const std::byte>, Word) noexcept { return {}; }

SwitchVisibilityDevice::SwitchVisibilityDevice(std::uint64_t slots) : table_(slots_of(slots)) {}

BackendStatus SwitchVisibilityDevice::apply(const ChangeBatch& batch) {
  if (batch.records != 0 || !batch.bytes.empty()) return BackendStatus::kInvalidEntry;
  return BackendStatus::kOk;
}

BackendUsage SwitchVisibilityDevice::usage() const {
  BackendUsage u = table_.usage();
  u.host_bytes += sizeof(*this) - sizeof(table_);
  return u;
}

BackendModel SwitchVisibilityDevice::model() const { return table_.model(); }

void SwitchVisibilityDevice::publish_table() {
  auto next = std::make_shared<BackendImage>();
  next->bytes = encode_image(table_);
  next->version = ++version_;
  publish(std::move(next));
}

}  // namespace switch_visibility


const BackendInfo kSwitchVisibilityBackend = {
    "switch_visibility",
    "Switch-delta: a 65,536-slot table of in-flight writes' metadata in the ToR switch makes a write "
    "visible (and committed) after the data write; no start hints",
    kWriteVisibility,
    "slots",
    switch_visibility::kPaperSlots,
    1,  // a slot
    switch_visibility::image_hint,
    // Plans nothing: the slots are filled by packets on the network path
    // (data-write replies), not planned from the tree.
    [](const BackendConfig&) { return make_empty_planner(); },
    [](const BackendConfig& config) -> std::unique_ptr<Device> {
      return std::make_unique<switch_visibility::SwitchVisibilityDevice>(config.capacity);
    },
    switch_visibility::image_max_bytes,
    switch_visibility::image_records,
    nullptr,
};

}  // namespace forein::offload
