// Conformance 3: a batch the device cannot take changes nothing.
//
// For every backend of conformance_backends() (the registered ones, then any
// a test file adds):
//  * a real install batch planned for a big tree (large capacity), applied
//    to a device whose capacity is smaller and which already holds a real
//    small image, is refused with kCapacityExceeded; the image (bytes and
//    version) and usage().used are unchanged. A backend that plans nothing
//    from the tree ("none", switch_visibility) refuses every non-empty
//    install.
//  * garbage batches (random bytes with random record counts, a real batch
//    with a wrong record count, cut short, with bytes appended, with flipped
//    bytes, record counts at extremes), as installs and removes, to a fresh
//    device and to one holding a real image: each is either refused with
//    kInvalidEntry or kCapacityExceeded and changes nothing, or accepted
//    (random bytes can spell valid records) leaving usage within capacity.
//    Structurally malformed ones (record count not matching the bytes)
//    must be refused. Never a crash (ASan/UBSan via make check-asan).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "conformance_fixture.h"
#include "support/rng.h"
#include "support/seed.h"

namespace {

using forein::testing::Rng;
using namespace forein::offload;
using namespace forein::offload::conformance;

struct DeviceState {
  std::vector<std::byte> bytes;
  std::uint64_t version = 0;
  std::uint64_t used = 0;
  bool operator==(const DeviceState&) const = default;
};

DeviceState state_of(const Device& d) {
  const auto img = d.load_image();
  return DeviceState{img->bytes, img->version, d.usage().used};
}

// The planner's whole target for a bulk-loaded tree of `keys` keys.
ChangeBatch planned_batch(const BackendInfo& info, BackendConfig config, std::int64_t keys,
                          std::size_t* device_records) {
  ConformanceTree t(info, config);
  bulk_load_ints(*t.tree, keys, 3, 150);
  t.settle();
  REQUIRE(t.manager.stats().failed_installs == 0);
  *device_records = t.backend.usage().used;
  return t.backend.planner().full_target();
}

// A device of `config` holding the real image of a small tree.
std::unique_ptr<Device> device_with_image(const BackendInfo& info, BackendConfig config) {
  auto device = info.make_device(config);
  std::size_t records = 0;
  const ChangeBatch small = planned_batch(info, config, 400, &records);
  REQUIRE(device->apply(small) == BackendStatus::kOk);
  // Holding something (fpga's root sits in on-chip SRAM: records, no DRAM bytes).
  if (plans_records(info)) REQUIRE(!info.records(device->load_image()->bytes).empty());
  return device;
}

struct Tally {
  std::uint64_t refused = 0, accepted = 0;
};

// Applies `batch`; a refusal must leave the device as it was.
BackendStatus apply_checked(Device& device, const ChangeBatch& batch, Tally& tally, const char* what) {
  const DeviceState before = state_of(device);
  const BackendStatus status = device.apply(batch);
  INFO(what << ": kind " << (batch.kind == BatchKind::kInstall ? "install" : "remove") << ", "
            << batch.bytes.size() << " bytes, " << batch.records << " records -> " << to_string(status));
  if (status == BackendStatus::kOk) {
    ++tally.accepted;
    const BackendUsage u = device.usage();
    CHECK(u.used <= u.capacity);
  } else {
    ++tally.refused;
    CHECK((status == BackendStatus::kInvalidEntry || status == BackendStatus::kCapacityExceeded));
    CHECK(state_of(device) == before);
  }
  return status;
}

}  // namespace

TEST_CASE("conformance: an install batch over capacity changes nothing", "[conformance][batch]") {
  for (const BackendInfo* info : conformance_backends()) {
    DYNAMIC_SECTION(info->name) {
      BackendConfig big;
      big.capacity = plans_records(*info) ? std::max<std::uint64_t>(info->default_capacity, 100000) : 0;
      std::size_t big_records = 0;
      const ChangeBatch batch = planned_batch(*info, big, 20000, &big_records);
      std::cout << "  " << info->name << ": planned " << batch.records << " records (" << batch.bytes.size()
                << " bytes) for 20000 keys\n";
      if (!plans_records(*info)) {
        // Nothing planned from the tree ("none" holds nothing;
        // switch_visibility's slots are filled on the network path), and
        // any non-empty install refused, changing nothing.
        CHECK(batch.records == 0);
        auto device = info->make_device(BackendConfig{});
        ChangeBatch one;
        one.kind = BatchKind::kInstall;
        one.records = 1;
        one.bytes.assign(24, std::byte{1});
        const DeviceState before = state_of(*device);
        const BackendStatus status = device->apply(one);
        CHECK((status == BackendStatus::kCapacityExceeded || status == BackendStatus::kInvalidEntry));
        if (!holds_records(*info)) CHECK(status == BackendStatus::kCapacityExceeded);
        CHECK(state_of(*device) == before);
        continue;
      }
      // big_records: the device units the batch takes. A backend counting
      // records takes one a record; fpga caches interior nodes only (a few
      // for 20000 keys), 8 KB of DRAM each but the root; dpa's index nodes
      // take 80 bytes to about 2 KiB of DPA memory each.
      if (units_per_record(*info) == 1) {
        REQUIRE(batch.records >= 64);
        REQUIRE(big_records == batch.records);
      } else {
        REQUIRE(batch.records >= 2);
        REQUIRE(big_records >= units_per_record(*info));
      }
      // Devices a quarter, a half and just one unit too small for it,
      // each already holding a small tree's image.
      for (const std::uint64_t capacity :
           {std::uint64_t{big_records} / 4, std::uint64_t{big_records} / 2, std::uint64_t{big_records} - 1}) {
        BackendConfig small;
        small.capacity = capacity;
        auto device = device_with_image(*info, small);
        const DeviceState before = state_of(*device);
        INFO("capacity " << capacity << ", holding " << before.used);
        CHECK(device->apply(batch) == BackendStatus::kCapacityExceeded);
        CHECK(state_of(*device) == before);
        CHECK(device->usage().capacity == capacity);
        // The same batch fits a fresh device of its own size (a
        // set-associative cache, fpga's: of the size it was planned for,
        // whose sets the plan honours; dpa's: the DPA memory whose
        // addresses the plan chose).
        BackendConfig exact;
        exact.capacity = units_per_record(*info) == 1 ? big_records : big.capacity;
        auto roomy = info->make_device(exact);
        CHECK(roomy->apply(batch) == BackendStatus::kOk);
        CHECK(roomy->usage().used == big_records);
      }
    }
  }
}

TEST_CASE("conformance: garbage batches are refused and change nothing", "[conformance][batch]") {
  const std::uint64_t seed = forein::testing::test_seed("conformance garbage batches");
  std::uint64_t index = 0;
  for (const BackendInfo* info : conformance_backends()) {
    DYNAMIC_SECTION(info->name) {
      Rng rng(seed + index);
      BackendConfig config;
      config.capacity = holds_records(*info) ? 4096 * units_per_record(*info) : 0;
      std::size_t records = 0;
      ChangeBatch real = planned_batch(*info, config, 2000, &records);
      if (real.records == 0) {  // "none": a non-empty stand-in of 24-byte records
        real.records = 8;
        real.bytes.assign(8 * 24, std::byte{0x5a});
      }
      const std::size_t record_bytes = real.bytes.size() / std::max<std::size_t>(real.records, 1);

      std::vector<std::unique_ptr<Device>> devices;
      devices.push_back(info->make_device(config));
      devices.push_back(device_with_image(*info, config));
      Tally tally;
      std::uint64_t malformed = 0;
      for (auto& device : devices) {
        for (const BatchKind kind : {BatchKind::kInstall, BatchKind::kRemove}) {
          // Record counts that do not match the bytes: always refused.
          auto must_refuse = [&](ChangeBatch b, const char* what) {
            b.kind = kind;
            ++malformed;
            CHECK(apply_checked(*device, b, tally, what) != BackendStatus::kOk);
          };
          for (const std::size_t delta : {std::size_t{1}, std::size_t{2}, real.records / 2 + 1}) {
            ChangeBatch b = real;
            b.records = real.records + delta;
            must_refuse(b, "more records than bytes");
            b.records = real.records - std::min(real.records, delta);
            if (b.records != real.records) must_refuse(b, "fewer records than bytes");
          }
          for (const std::size_t n :
               {std::numeric_limits<std::size_t>::max(), std::numeric_limits<std::size_t>::max() / record_bytes + 1,
                std::numeric_limits<std::size_t>::max() / 2, std::size_t{1} << 32}) {
            ChangeBatch b = real;
            b.records = n;
            must_refuse(b, "extreme record count");
          }
          {
            ChangeBatch b;
            b.records = 1 + rng.below(100);
            must_refuse(b, "records without bytes");
          }
          for (int i = 0; i < 40; ++i) {  // cut short, or bytes appended, count unchanged
            ChangeBatch b = real;
            if (i % 2) {
              b.bytes.resize(rng.below(b.bytes.size()));
            } else {
              b.bytes.resize(b.bytes.size() + 1 + rng.below(2 * record_bytes));
            }
            if (b.bytes.size() % record_bytes == 0 && b.bytes.size() / record_bytes == b.records) continue;
            must_refuse(b, i % 2 ? "cut short" : "bytes appended");
          }
          // Random bytes, flipped bytes: refused, or accepted as valid records.
          for (int i = 0; i < 200; ++i) {
            ChangeBatch b;
            b.kind = kind;
            if (i % 2) {
              b = real;
              b.kind = kind;
              const std::uint64_t flips = 1 + rng.below(8);
              for (std::uint64_t f = 0; f < flips; ++f) {
                b.bytes[rng.below(b.bytes.size())] = static_cast<std::byte>(rng.below(256));
              }
            } else {
              const std::size_t n = rng.below(16);
              b.bytes.resize(rng.chance(3, 4) ? n * record_bytes : rng.below(16 * record_bytes));
              for (auto& x : b.bytes) x = static_cast<std::byte>(rng.below(256));
              b.records = rng.chance(3, 4) ? n : rng.below(32);
            }
            apply_checked(*device, b, tally, i % 2 ? "flipped" : "random bytes");
          }
        }
      }
      std::cout << "  " << info->name << ": " << tally.refused << " garbage batches refused, "
                << tally.accepted << " accepted as valid records; " << malformed
                << " malformed, all refused\n";
      CHECK(tally.refused >= malformed);
    }
    ++index;
  }
}
