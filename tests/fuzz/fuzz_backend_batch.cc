// libFuzzer target: every backend's device (the registered ones and those a
// conformance extra file adds) given any change batch
// (docs/offload-conformance.md). A device applies a batch all or nothing:
// a refused batch (kCapacityExceeded, kInvalidEntry) must leave the image
// (bytes and version) and usage().used exactly as they were; an accepted
// one must keep usage().used within capacity; nothing may crash.
//
// Input: byte 0 picks the kind (bit 0: install or remove) and the backend
// (the other bits, modulo the registry); byte 1 picks how the record count
// is derived (low 2 bits):
//   0  the bytes' size over the backend's record size (taken from a real
//      batch at start-up; 24 if it planned none);
//   1  that count plus a small signed delta (byte 1's high bits, -32..31);
//   2  eight input bytes as the count, raw (extremes, overflow);
//   3  a real batch (planned for a small tree at start-up) with the rest of
//      the input copied over its first bytes, its own record count.
// The batch goes to a fresh device and to one holding a real image; each
// with a small capacity so that capacity checks are reachable.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "forein/key.h"
#include "forein/offload/backend.h"
#include "forein/offload/manager.h"
#include "forein/offload/registry.h"
#include "offload/conformance/conformance_backends.h"
#include "forein/page_store.h"
#include "forein/tree.h"

namespace {

using namespace forein;
using namespace forein::offload;

constexpr std::uint64_t kCapacity = 512;

// The planner's whole target for a small bulk-loaded tree.
ChangeBatch real_batch(const BackendInfo& info, std::int64_t keys) {
  BackendConfig config;
  config.capacity = kCapacity;
  Backend backend(info, config);
  OffloadManager manager(backend);
  TreeOptions options;
  options.observer = &manager;
  auto tree = Tree::create(std::make_unique<MemoryPageStore>(4096), options);
  manager.attach(*tree);
  std::vector<std::pair<std::string, std::string>> items;
  for (std::int64_t i = 0; i < keys; ++i) items.emplace_back(encode_int64(i * 11), std::string(150, 'v'));
  tree->bulk_load(items);
  manager.refresh();
  manager.flush();
  manager.detach();
  return backend.planner().full_target();
}

struct Known {
  ChangeBatch small;   // installed on the "holding" device
  ChangeBatch other;   // patched by mode 3
  std::size_t record_bytes = 24;
};

const std::vector<Known>& known() {
  static const std::vector<Known> all = [] {
    std::vector<Known> out;
    for (const BackendInfo* info : conformance::conformance_backends()) {
      Known k;
      k.small = real_batch(*info, 300);
      k.other = real_batch(*info, 1500);
      if (k.other.records > 0) k.record_bytes = std::max<std::size_t>(1, k.other.bytes.size() / k.other.records);
      out.push_back(std::move(k));
    }
    return out;
  }();
  return all;
}

struct State {
  std::vector<std::byte> bytes;
  std::uint64_t version;
  std::uint64_t used;
  bool operator==(const State&) const = default;
};

State state_of(const Device& d) {
  const auto img = d.load_image();
  return State{img->bytes, img->version, d.usage().used};
}

void apply_checked(const BackendInfo& info, Device& device, const ChangeBatch& batch) {
  const State before = state_of(device);
  const BackendStatus status = device.apply(batch);
  switch (status) {
    case BackendStatus::kOk: {
      const BackendUsage u = device.usage();
      if (u.used > u.capacity) __builtin_trap();
      break;
    }
    case BackendStatus::kCapacityExceeded:
    case BackendStatus::kInvalidEntry:
      if (!(state_of(device) == before)) __builtin_trap();  // a refused batch changed the device
      break;
    default:
      __builtin_trap();
  }
  // Whatever it holds now, its image answers lookups.
  const auto img = device.load_image();
  volatile std::uint64_t sink = info.hint(img->bytes, 0).primary.node;
  sink = sink + info.hint(img->bytes, ~Word{0}).primary.node;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  known();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  static const auto backends = conformance::conformance_backends();
  const std::size_t which = (data[0] >> 1) % backends.size();
  const BackendInfo& info = *backends[which];
  const Known& k = known()[which];

  ChangeBatch batch;
  batch.kind = (data[0] & 1) ? BatchKind::kRemove : BatchKind::kInstall;
  const std::uint8_t mode = data[1] & 3;
  const auto* rest = reinterpret_cast<const std::byte*>(data + 2);
  std::size_t rest_size = size - 2;
  std::size_t records = 0;
  if (mode == 2 && rest_size >= 8) {
    std::uint64_t raw;
    std::memcpy(&raw, rest, sizeof raw);
    records = static_cast<std::size_t>(raw);
    rest += 8;
    rest_size -= 8;
  }
  if (mode == 3) {
    batch.bytes = k.other.bytes;
    std::copy_n(rest, std::min(rest_size, batch.bytes.size()), batch.bytes.begin());
    batch.records = k.other.records;
  } else {
    batch.bytes.assign(rest, rest + rest_size);
    batch.records = rest_size / k.record_bytes;
    if (mode == 1) {
      const int delta = static_cast<int>(data[1] >> 2) - 32;
      batch.records = delta < 0 && static_cast<std::size_t>(-delta) > batch.records
                          ? 0
                          : static_cast<std::size_t>(static_cast<std::int64_t>(batch.records) + delta);
    } else if (mode == 2) {
      batch.records = records;
    }
  }

  BackendConfig config;
  config.capacity = kCapacity;
  auto fresh = info.make_device(config);
  apply_checked(info, *fresh, batch);

  auto holding = info.make_device(config);
  if (holding->apply(k.small) != BackendStatus::kOk) __builtin_trap();
  apply_checked(info, *holding, batch);
  return 0;
}
