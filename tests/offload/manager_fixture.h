// Shared pieces of the offload manager tests: a tree wired to a manager and
// a switch_lpm backend under a manual clock, a device that records call
// order, and a backend whose image lookup answers garbage.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "forein/key.h"
#include "forein/offload/backend.h"
#include "forein/offload/manager.h"
#include "forein/offload/manager_clock.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "switch_lpm/lpm_batch.h"
#include "switch_lpm/switch_lpm_backend.h"
#include "switch_lpm/switch_lpm_device.h"
#include "switch_lpm/switch_lpm_planner.h"

namespace forein::offload::testing {

inline std::string int_key(std::int64_t i) { return encode_int64(i); }

// Live nodes by id, with their level.
inline std::map<PageId, std::uint16_t> live_nodes(Tree& tree) {
  std::map<PageId, std::uint16_t> live;
  tree.for_each_node([&](const NodeInterval& n) { live[n.node] = n.level; });
  return live;
}

// A switch_lpm device that logs every batch it is given (decoded).
class RecordingDevice final : public Device {
 public:
  struct Call {
    bool install;
    std::vector<LpmEntry> entries;
  };

  explicit RecordingDevice(SwitchLpmOptions options = {}) : inner_(options) {
    publish(inner_.load_image());
  }

  BackendStatus apply(const ChangeBatch& batch) override {
    std::vector<LpmEntry> entries;
    if (decode_lpm_batch(batch, &entries)) {
      std::lock_guard lock(mu_);
      calls_.push_back(Call{batch.kind == BatchKind::kInstall, std::move(entries)});
    }
    const BackendStatus status = inner_.apply(batch);
    publish(inner_.load_image());
    return status;
  }
  BackendUsage usage() const override { return inner_.usage(); }
  BackendModel model() const override { return inner_.model(); }

  std::vector<LpmEntry> entries() const { return inner_.entries(); }
  StartHints hint(std::string_view key) const { return inner_.hint(key); }
  std::vector<Call> calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  SwitchLpmDevice& inner() { return inner_; }

 private:
  SwitchLpmDevice inner_;
  mutable std::mutex mu_;
  std::vector<Call> calls_;
};

// switch_lpm's planner and image with a device of type DeviceT.
template <typename DeviceT>
const BackendInfo& switch_lpm_with() {
  static const BackendInfo info = [] {
    BackendInfo i = kSwitchLpmBackend;
    i.make_device = [](const BackendConfig& c) -> std::unique_ptr<Device> {
      SwitchLpmOptions o;
      if (c.capacity != 0) o.capacity = c.capacity;
      return std::make_unique<DeviceT>(o);
    };
    return i;
  }();
  return info;
}

// A backend whose image lookup answers random pages and levels (some of
// them real nodes of a small tree, most not), whatever it holds.
inline std::atomic<std::uint64_t> garbage_seed{1};
inline StartHints garbage_hint(std::span<const std::byte>, Word) noexcept {
  thread_local std::mt19937_64 rng(garbage_seed.load());
  auto random_hint = [&] {
    Hint h;
    switch (rng() % 4) {
      case 0: break;  // absent
      case 1: h.node = static_cast<PageId>(rng()); break;  // far out of range
      default: h.node = static_cast<PageId>(rng() % 512); break;
    }
    h.level = static_cast<std::uint16_t>(rng() % 4);
    h.version = rng();
    return h;
  };
  return StartHints{random_hint(), random_hint()};
}
inline const BackendInfo& garbage_backend_info() {
  static const BackendInfo info = [] {
    BackendInfo i = kSwitchLpmBackend;
    i.name = "garbage";
    i.hint = garbage_hint;
    return i;
  }();
  return info;
}

// A tree whose events feed a manager over a switch_lpm-like backend.
// `backend` is the device (tests inspect it); the manager is detached
// before the tree is destroyed.
template <typename DeviceT = SwitchLpmDevice>
struct ManagedTree {
  explicit ManagedTree(ManagerOptions options = {}, BackendConfig config = {},
                       std::uint32_t page_size = 4096)
      : offload(switch_lpm_with<DeviceT>(), config),
        backend(static_cast<DeviceT&>(offload.device())),
        manager(offload, with_clock(options, &clock)) {
    TreeOptions tree_options;
    tree_options.observer = &manager;
    tree_options.index_id = options.index_id;
    tree = Tree::create(std::make_unique<MemoryPageStore>(page_size), tree_options);
    manager.attach(*tree);
  }
  ~ManagedTree() { manager.detach(); }

  static ManagerOptions with_clock(ManagerOptions o, const ManagerClock* c) {
    if (o.clock == nullptr) o.clock = c;
    return o;
  }
  // The entries the planner wants the device to hold.
  const std::vector<LpmEntry>& target_entries() {
    return static_cast<SwitchLpmPlanner&>(offload.planner()).target();
  }

  ManualClock clock;
  Backend offload;
  DeviceT& backend;
  OffloadManager manager;
  std::unique_ptr<Tree> tree;
};

}  // namespace forein::offload::testing
