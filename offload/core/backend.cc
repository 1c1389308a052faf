#include "forein/offload/backend.h"

#include <memory>

#include "forein/offload/empty_planner.h"

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
