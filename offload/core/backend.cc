#include "forein/offload/backend.h"

#include <memory>

#include "forein/offload/bytes.h"
#include "forein/offload/empty_planner.h"
#include "forein/offload/image_header.h"

namespace forein::offload {

const char* to_string(BackendStatus status) {
  switch (status) {
    case BackendStatus::kOk: return "ok";
    case BackendStatus::kCapacityExceeded: return "capacity exceeded";
    case BackendStatus::kInvalidEntry: return "invalid entry";
  }
  return "?";
}

}  // namespace forein::offload

namespace forein::offload {

Device::Device() : image_(std::make_shared<const BackendImage>()) {}

Backend::Backend(const BackendInfo& info, BackendConfig config) : info_(info), config_(config) {
  check_settings(info, config_);
  if (config_.capacity == 0) config_.capacity = info.default_capacity;
  planner_ = info.make_planner(config_);
  device_ = info.make_device(config_);
}

}  // namespace forein::offload

namespace forein::offload {

std::vector<UsageRow> image_usage(const BackendInfo& info, std::span<const std::byte> image,
                                  std::uint64_t capacity) {
  if (capacity == 0) capacity = info.default_capacity;
  if (info.image_usage != nullptr) return info.image_usage(image, capacity);
  return {UsageRow{"device", info.unit, info.unit, info.records(image).size(), capacity}};
}

}  // namespace forein::offload

namespace forein::offload {

namespace {

class EmptyPlanner final : public Planner {
 public:
  PlanDiff plan(const PlanInput&) override {
    PlanDiff d;
    d.remove.kind = BatchKind::kRemove;
    return d;
  }
  ChangeBatch full_target() const override { return {}; }
  void reset() override {}
};

}  // namespace

std::unique_ptr<Planner> make_empty_planner() { return std::make_unique<EmptyPlanner>(); }

}  // namespace forein::offload

namespace forein::offload {

ImageView view_image(std::span<const std::byte> image, std::uint32_t magic, std::uint16_t format,
                     std::size_t header_bytes, std::size_t entry_bytes) noexcept {
  ImageView v;
  if (header_bytes < kImageHeadBytes || image.size() < header_bytes) return v;
  const std::byte* p = image.data();
  if (load<std::uint32_t>(p) != magic || load<std::uint16_t>(p + 4) != format) return v;
  const auto length = load<std::uint64_t>(p + 8);
  if (length > image.size() || length < header_bytes) return v;
  const auto entries = load<std::uint32_t>(p + 16);
  // A 32-bit count of entries of a few bytes: the sum fits in 64 bits.
  if (header_bytes + std::uint64_t{entries} * entry_bytes > length) return v;
  v.base = p;
  v.length = length;
  v.entries = entries;
  v.ok = true;
  return v;
}

void write_image_head(std::byte* p, std::uint32_t magic, std::uint16_t format, std::uint64_t length,
                      std::uint32_t count) noexcept {
  store<std::uint32_t>(p, magic);
  store<std::uint16_t>(p + 4, format);
  store<std::uint16_t>(p + 6, 0);
  store<std::uint64_t>(p + 8, length);
  store<std::uint32_t>(p + 16, count);
}

std::optional<std::uint64_t> find_index_entry(const ImageView& view, std::size_t header_bytes,
                                              std::size_t key_bytes, std::uint64_t key) noexcept {
  std::size_t lo = 0, hi = view.entries;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const std::byte* e = view.base + header_bytes + mid * kImageIndexEntryBytes;
    const std::uint64_t at = key_bytes == 4 ? load<std::uint32_t>(e) : load<std::uint64_t>(e);
    if (at == key) return load<std::uint64_t>(e + 8);
    if (at < key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return std::nullopt;
}

std::uint64_t index_entry_offset(const ImageView& view, std::size_t header_bytes, std::size_t i) noexcept {
  return load<std::uint64_t>(view.base + header_bytes + i * kImageIndexEntryBytes + 8);
}

}  // namespace forein::offload
