#include "none/none_backend.h"

#include <memory>

#include "forein/offload/empty_planner.h"

namespace forein::offload {

namespace {

// Accepts only empty batches: there is nothing to hold.
class NoneDevice final : public Device {
 public:
  BackendStatus apply(const ChangeBatch& batch) override {
    if (batch.records != 0 || !batch.bytes.empty()) {
      return batch.kind == BatchKind::kInstall ? BackendStatus::kCapacityExceeded
                                               : BackendStatus::kInvalidEntry;
    }
    return BackendStatus::kOk;
  }
  BackendUsage usage() const override { return BackendUsage{"entries", 0, 0, 0, 0}; }
  BackendModel model() const override {
    BackendModel m;
    m.source = "none: no hardware, no added latency";
    return m;
  }
};

StartHints none_hint(std::span<const std::byte>, Word) noexcept { return {}; }

std::size_t none_max_image_bytes(std::uint64_t) { return 0; }

std::vector<ImageRecord> none_records(std::span<const std::byte>) { return {}; }

}  // namespace

const BackendInfo kNoneBackend = {
    "none",
    "no offload hardware: every lookup starts at the root",
    0,
    "entries",
    0,
    1,
    none_hint,
    [](const BackendConfig&) { return make_empty_planner(); },
    [](const BackendConfig&) -> std::unique_ptr<Device> { return std::make_unique<NoneDevice>(); },
    none_max_image_bytes,
    none_records,
    nullptr,
};

}  // namespace forein::offload
