// switch_visibility's VisibilityTable (Switch-delta, paper 002, III-B and
// IV-B): every register rule and its counter, usage in slots, kTooLarge,
// the slot index taken modulo the table size, constructor errors, reset;
// the backend's registration (kWriteVisibility only, no hints, empty
// plans, only empty batches), its image and records; the hosts' refusal
// (backend_for_lookups); and counters read from another thread while the
// writer runs (label `concurrent`: run under ThreadSanitizer).
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "forein/error.h"
#include "forein/offload/backend.h"
#include "forein/offload/registry.h"
#include "support/backend_names.h"
#include "support/seed.h"
#include "switch_visibility/switch_visibility_backend.h"
#include "forein/switch_visibility/visibility_table.h"

namespace {

using forein::InvalidArgument;
using namespace forein::offload;
using namespace forein::offload::switch_visibility;

std::vector<std::byte> meta(std::size_t n, std::uint8_t fill) { return std::vector<std::byte>(n, std::byte{fill}); }

bool same_counters(const VisibilityCounters& a, const VisibilityCounters& b) {
  return a.stored == b.stored && a.slot_busy == b.slot_busy && a.stale == b.stale && a.too_large == b.too_large &&
         a.cleared == b.cleared && a.clear_ignored == b.clear_ignored && a.read_hits == b.read_hits &&
         a.read_misses == b.read_misses && a.held == b.held && a.released == b.released &&
         a.partial_stored == b.partial_stored && a.partial_reads == b.partial_reads;
}

}  // namespace

TEST_CASE("switch_visibility table: constructor defaults and argument errors", "[switch_visibility]") {
  VisibilityTable paper;
  CHECK(paper.slots() == kPaperSlots);
  CHECK(paper.slots() == 65536);
  CHECK(paper.max_metadata() == kPaperMetadataBytes);
  CHECK(paper.max_metadata() == 96);
  CHECK(kSlotRegisterBytes == 108);
  CHECK(paper.valid_slots() == 0);

  for (const std::uint32_t slots : {1u, 2u, 4u, 1024u, 32768u, 65536u}) {
    VisibilityTable t(slots, 8);
    CHECK(t.slots() == slots);
    CHECK(t.max_metadata() == 8);
  }
  for (const std::uint32_t bad : {3u, 6u, 1000u, 65535u, 65537u, 131072u, 0xffffffffu}) {
    INFO("slots " << bad);
    CHECK_THROWS_AS(VisibilityTable(bad, 0), InvalidArgument);
  }
  CHECK_THROWS_AS(VisibilityTable(16, 97), InvalidArgument);
  CHECK_THROWS_AS(VisibilityTable(16, 1000), InvalidArgument);
  CHECK(VisibilityTable(16, 96).max_metadata() == 96);
  CHECK(VisibilityTable(16, 1).max_metadata() == 1);
}

TEST_CASE("switch_visibility table: a data-write reply is stored iff the slot is empty and ts > MaxTs",
          "[switch_visibility]") {
  VisibilityTable t(16, 0);
  const auto m1 = meta(8, 0x11), m2 = meta(96, 0x22), m3 = meta(3, 0x33);

  // Empty slot, ts > MaxTs (0): stored; CurTs = MaxTs = ts; metadata copied.
  CHECK(t.on_write_reply(5, 0xAAAA, 10, m1) == WriteOutcome::kStored);
  SlotState s = t.slot(5);
  CHECK(s.valid);
  CHECK(s.fingerprint == 0xAAAA);
  CHECK(s.cur_ts == 10);
  CHECK(s.max_ts == 10);
  CHECK(s.metadata == m1);
  CHECK(t.valid_slots() == 1);
  CHECK(t.counters().stored == 1);

  // Valid slot, newer ts: never overwritten; MaxTs raised; kSlotBusy.
  CHECK(t.on_write_reply(5, 0xBBBB, 12, m2) == WriteOutcome::kSlotBusy);
  s = t.slot(5);
  CHECK(s.valid);
  CHECK(s.fingerprint == 0xAAAA);
  CHECK(s.cur_ts == 10);
  CHECK(s.max_ts == 12);
  CHECK(s.metadata == m1);
  CHECK(t.counters().slot_busy == 1);

  // Valid slot, ts <= MaxTs (reordered or duplicated reply): kStale, MaxTs unchanged.
  CHECK(t.on_write_reply(5, 0xAAAA, 11, m3) == WriteOutcome::kStale);
  CHECK(t.on_write_reply(5, 0xAAAA, 12, m3) == WriteOutcome::kStale);
  CHECK(t.on_write_reply(5, 0xAAAA, 10, m1) == WriteOutcome::kStale);  // the stored reply, duplicated
  s = t.slot(5);
  CHECK(s.cur_ts == 10);
  CHECK(s.max_ts == 12);
  CHECK(s.metadata == m1);
  CHECK(t.counters().stale == 3);

  // Cleared: MaxTs stays, so an older reply can never take the slot again.
  CHECK(t.on_clear(5, 10));
  s = t.slot(5);
  CHECK_FALSE(s.valid);
  CHECK(s.max_ts == 12);
  CHECK(t.valid_slots() == 0);
  CHECK(t.on_write_reply(5, 0xBBBB, 12, m2) == WriteOutcome::kStale);
  CHECK(t.on_write_reply(5, 0xBBBB, 11, m2) == WriteOutcome::kStale);
  CHECK_FALSE(t.slot(5).valid);
  // Empty slot and ts > MaxTs: stored again, another key's fingerprint.
  CHECK(t.on_write_reply(5, 0xBBBB, 13, m2) == WriteOutcome::kStored);
  s = t.slot(5);
  CHECK(s.valid);
  CHECK(s.fingerprint == 0xBBBB);
  CHECK(s.cur_ts == 13);
  CHECK(s.max_ts == 13);
  CHECK(s.metadata == m2);

  // Empty metadata is fine.
  CHECK(t.on_write_reply(6, 1, 1, {}) == WriteOutcome::kStored);
  CHECK(t.slot(6).metadata.empty());
  CHECK(t.slot(6).valid);

  // ts 0 is never stored (MaxTs starts at 0).
  CHECK(t.on_write_reply(7, 1, 0, m1) == WriteOutcome::kStale);
  CHECK_FALSE(t.slot(7).valid);

  const VisibilityCounters c = t.counters();
  CHECK(c.stored == 3);
  CHECK(c.slot_busy == 1);
  CHECK(c.stale == 6);
  CHECK(c.too_large == 0);
  CHECK(c.cleared == 1);
  CHECK(c.clear_ignored == 0);
}

TEST_CASE("switch_visibility table: metadata over max_metadata is kTooLarge, not stored, MaxTs raised",
          "[switch_visibility]") {
  VisibilityTable t(8, 16);
  CHECK(t.on_write_reply(1, 7, 5, meta(17, 1)) == WriteOutcome::kTooLarge);
  SlotState s = t.slot(1);
  CHECK_FALSE(s.valid);
  CHECK(s.max_ts == 5);  // it used the slot: an older reply may not be stored after it
  CHECK(t.valid_slots() == 0);
  CHECK(t.on_write_reply(1, 7, 4, meta(16, 1)) == WriteOutcome::kStale);
  CHECK(t.on_write_reply(1, 7, 6, meta(16, 1)) == WriteOutcome::kStored);  // exactly the limit fits
  CHECK(t.on_write_reply(1, 7, 9, meta(200, 1)) == WriteOutcome::kTooLarge);
  s = t.slot(1);
  CHECK(s.valid);
  CHECK(s.cur_ts == 6);
  CHECK(s.max_ts == 9);
  CHECK(s.metadata == meta(16, 1));
  CHECK(t.counters().too_large == 2);
  CHECK(t.counters().stored == 1);
  CHECK(t.counters().slot_busy == 0);
  CHECK(t.counters().stale == 1);

  VisibilityTable paper;
  CHECK(paper.on_write_reply(0, 1, 1, meta(96, 9)) == WriteOutcome::kStored);
  CHECK(paper.on_write_reply(1, 1, 1, meta(97, 9)) == WriteOutcome::kTooLarge);
  CHECK(paper.slot(0).metadata.size() == 96);
}

// Switch-crash recovery, hazard 2 (docs/network.md, "Switch-crash
// recovery"): a restarted switch's table has MaxTs 0, so a data-write reply
// delayed across the restart (old ts) would be stored and served although
// the metadata node holds a newer write of the key. The plane never stores
// a reply whose echoed epoch is not its own, nor any while recovering: it
// calls note_unstored_reply, which stores nothing and raises MaxTs, so a
// still older reply arriving after it is stale too.
TEST_CASE("switch_visibility table: a reply the switch may not store (other epoch, recovering) only raises MaxTs",
          "[switch_visibility]") {
  VisibilityTable t(8);
  t.reset();  // the restarted switch: MaxTs 0
  // Without the epoch check the delayed pre-crash reply (ts 5) would be
  // stored: the hazard.
  {
    VisibilityTable naive(8);
    CHECK(naive.on_write_reply(3, 7, 5, meta(6, 1)) == WriteOutcome::kStored);
  }
  // With it: a reply of another epoch (ts 8: the write the metadata node
  // applied in phase 2) and then the delayed older one (ts 5, also of the
  // old epoch) are not stored; a reply of this epoch stores only above them.
  t.note_unstored_reply(3, 8);
  t.note_unstored_reply(3, 5);
  SlotState s = t.slot(3);
  CHECK_FALSE(s.valid);
  CHECK(s.max_ts == 8);
  CHECK(t.valid_slots() == 0);
  CHECK(t.on_write_reply(3, 7, 6, meta(6, 2)) == WriteOutcome::kStale);  // older than what committed
  CHECK(t.on_write_reply(3, 7, 9, meta(6, 3)) == WriteOutcome::kStored);
  // Uncounted by the table (the plane counts why): only the two calls above.
  CHECK(t.counters().stale == 1);
  CHECK(t.counters().stored == 1);
  CHECK(t.counters().slot_busy == 0);
  // The slot index is taken modulo slots() as everywhere.
  t.note_unstored_reply(3 + 8, 20);
  CHECK(t.slot(3).max_ts == 20);
  CHECK(t.slot(3).cur_ts == 9);
}

TEST_CASE("switch_visibility table: CLEAR clears iff valid and CurTs == ts", "[switch_visibility]") {
  VisibilityTable t(4, 0);
  CHECK_FALSE(t.on_clear(0, 0));  // empty slot
  CHECK_FALSE(t.on_clear(0, 3));
  CHECK(t.counters().clear_ignored == 2);
  CHECK(t.on_write_reply(0, 9, 3, meta(1, 3)) == WriteOutcome::kStored);
  CHECK(t.on_write_reply(0, 9, 8, meta(1, 8)) == WriteOutcome::kSlotBusy);  // MaxTs 8, CurTs 3
  CHECK_FALSE(t.on_clear(0, 8));  // MaxTs is not CurTs
  CHECK_FALSE(t.on_clear(0, 2));
  CHECK_FALSE(t.on_clear(0, 4));
  CHECK(t.slot(0).valid);
  CHECK(t.on_clear(0, 3));
  CHECK_FALSE(t.slot(0).valid);
  CHECK(t.slot(0).max_ts == 8);
  CHECK(t.slot(0).cur_ts == 3);  // CurTs is not reset; it is meaningless while the slot is empty
  CHECK_FALSE(t.on_clear(0, 3));  // a duplicated CLEAR
  const VisibilityCounters c = t.counters();
  CHECK(c.cleared == 1);
  CHECK(c.clear_ignored == 6);
}

TEST_CASE("switch_visibility table: a read hits iff the slot is valid and the fingerprint matches",
          "[switch_visibility]") {
  VisibilityTable t(4, 0);
  CHECK_FALSE(t.on_read(2, 0x1234).has_value());  // empty
  CHECK(t.on_write_reply(2, 0x1234, 1, meta(5, 0x5a)) == WriteOutcome::kStored);
  const auto hit = t.on_read(2, 0x1234);
  REQUIRE(hit.has_value());
  CHECK(hit->size() == 5);
  CHECK(std::vector<std::byte>(hit->begin(), hit->end()) == meta(5, 0x5a));
  CHECK_FALSE(t.on_read(2, 0x1235).has_value());  // another key's fingerprint
  CHECK_FALSE(t.on_read(3, 0x1234).has_value());  // another slot
  CHECK(t.on_clear(2, 1));
  CHECK_FALSE(t.on_read(2, 0x1234).has_value());  // cleared
  const VisibilityCounters c = t.counters();
  CHECK(c.read_hits == 1);
  CHECK(c.read_misses == 4);
}

TEST_CASE("switch_visibility table: a partial write is stored by the same rule and never answers on_read",
          "[switch_visibility]") {
  VisibilityTable t(16, 32);
  const auto part = meta(20, 0x5A);
  REQUIRE(t.on_write_reply(3, 0xF00D, 10, part, true) == WriteOutcome::kStored);
  const SlotState s = t.slot(3);
  CHECK(s.valid);
  CHECK(s.partial);
  CHECK(s.cur_ts == 10);
  CHECK(t.counters().stored == 1);
  CHECK(t.counters().partial_stored == 1);

  // A META_GET never gets a partial entry: it is only part of the entry.
  CHECK_FALSE(t.on_read(3, 0xF00D).has_value());
  CHECK(t.counters().read_misses == 1);
  CHECK(t.counters().read_hits == 0);

  // The read that may carry it: the entry and its CurTs, for the matching
  // fingerprint only.
  const auto hit = t.on_partial_read(3, 0xF00D);
  REQUIRE(hit.has_value());
  CHECK(hit->ts == 10);
  CHECK(std::vector<std::byte>(hit->metadata.begin(), hit->metadata.end()) == part);
  CHECK_FALSE(t.on_partial_read(3, 0xBEEF).has_value());
  CHECK_FALSE(t.on_partial_read(4, 0xF00D).has_value());
  CHECK(t.counters().partial_reads == 1);
  CHECK(t.counters().read_misses == 3);

  // A second partial write of the same entry while the first is in the
  // slot: busy (the slot holds one part only), MaxTs raised; a held
  // phase-2 reply of it waits for the CLEAR as for full writes.
  CHECK(t.on_write_reply(3, 0xF00D, 11, meta(20, 0x11), true) == WriteOutcome::kSlotBusy);
  CHECK(t.slot(3).max_ts == 11);
  CHECK_FALSE(t.release_fallback(3, 11));
  CHECK(t.on_clear(3, 10));
  CHECK_FALSE(t.slot(3).valid);
  CHECK_FALSE(t.slot(3).partial);
  CHECK_FALSE(t.on_partial_read(3, 0xF00D).has_value());
  CHECK(t.release_fallback(3, 11));
  // An older partial reply arriving late is stale, never stored.
  CHECK(t.on_write_reply(3, 0xF00D, 9, part, true) == WriteOutcome::kStale);

  // A full write in a partial slot's place is read by on_read only.
  REQUIRE(t.on_write_reply(5, 0xAA, 1, meta(6, 1)) == WriteOutcome::kStored);
  CHECK_FALSE(t.slot(5).partial);
  CHECK(t.on_read(5, 0xAA).has_value());
  CHECK_FALSE(t.on_partial_read(5, 0xAA).has_value());
  // reset() empties partial slots too.
  REQUIRE(t.on_write_reply(7, 0xAB, 1, part, true) == WriteOutcome::kStored);
  t.reset();
  CHECK_FALSE(t.slot(7).valid);
  CHECK(t.valid_slots() == 0);
}

TEST_CASE("switch_visibility table: a fallback reply is held iff the slot is valid and ts > CurTs",
          "[switch_visibility]") {
  VisibilityTable t(4, 0);
  CHECK(t.release_fallback(1, 5));  // empty slot: released
  CHECK(t.on_write_reply(1, 1, 4, meta(1, 4)) == WriteOutcome::kStored);
  CHECK_FALSE(t.release_fallback(1, 5));  // newer than the stored write: held
  CHECK_FALSE(t.release_fallback(1, 100));
  CHECK(t.release_fallback(1, 4));  // not newer: released
  CHECK(t.release_fallback(1, 3));
  CHECK(t.release_fallback(0, 100));  // another slot, empty
  CHECK(t.on_clear(1, 4));
  CHECK(t.release_fallback(1, 5));  // cleared: released
  const VisibilityCounters c = t.counters();
  CHECK(c.held == 2);
  CHECK(c.released == 5);
  // Holding and releasing change no slot.
  CHECK_FALSE(t.slot(1).valid);
  CHECK(t.slot(1).max_ts == 4);
}

TEST_CASE("switch_visibility table: the slot index is taken modulo slots()", "[switch_visibility]") {
  VisibilityTable t(8, 0);
  CHECK(t.on_write_reply(3, 0xF, 1, meta(1, 1)) == WriteOutcome::kStored);
  // 11, 19, 65531 are slot 3 of an 8-slot table.
  CHECK(t.on_write_reply(11, 0xF, 2, meta(1, 2)) == WriteOutcome::kSlotBusy);
  CHECK(t.slot(19).max_ts == 2);
  CHECK(t.on_read(65531, 0xF).has_value());
  CHECK_FALSE(t.release_fallback(11, 2));
  CHECK(t.on_clear(19, 1));
  CHECK_FALSE(t.slot(3).valid);
  CHECK(t.valid_slots() == 0);

  VisibilityTable one(1, 0);  // every index is slot 0
  CHECK(one.on_write_reply(12345, 1, 1, {}) == WriteOutcome::kStored);
  CHECK(one.on_write_reply(54321, 2, 2, {}) == WriteOutcome::kSlotBusy);
  CHECK(one.slot(65535).valid);
  CHECK(one.slot(7).max_ts == 2);
}

TEST_CASE("switch_visibility table: usage in slots, model figures with sources, reset",
          "[switch_visibility]") {
  VisibilityTable t(1024, 0);
  BackendUsage u = t.usage();
  CHECK(u.unit == "slots");
  CHECK(u.used == 0);
  CHECK(u.capacity == 1024);
  CHECK(u.hardware_bytes == 0);
  // The model's arrays: 3 u32 registers, a valid bit and a length byte per
  // slot, and 96 metadata bytes per slot.
  CHECK(u.host_bytes >= 1024 * (3 * 4 + 2 + 96));
  CHECK(u.host_bytes < 1024 * (3 * 4 + 2 + 96) + 4096);
  for (std::uint16_t i = 0; i < 100; ++i) CHECK(t.on_write_reply(i, i, 1, meta(i % 97, 1)) == WriteOutcome::kStored);
  u = t.usage();
  CHECK(u.used == 100);
  CHECK(t.valid_slots() == 100);
  CHECK(u.hardware_bytes == 100 * kSlotRegisterBytes);
  CHECK(u.fraction() == Approx(100.0 / 1024));
  CHECK(t.on_clear(7, 1));
  CHECK(t.usage().used == 99);

  const BackendModel m = t.model();
  CHECK(m.hint_latency_ns == 0);
  CHECK(m.hints_per_second == 0);
  CHECK(m.install_latency_us == 0);
  CHECK(m.entries_per_second == 0);
  CHECK(m.source.find("Switch-delta") != std::string::npos);
  CHECK(m.source.find("line rate") != std::string::npos);
  CHECK(m.source.find("register writes") != std::string::npos);
  CHECK(m.source.find("IV-B") != std::string::npos);

  // reset(): every slot and MaxTs cleared (a switch reboot); counters kept.
  const VisibilityCounters before = t.counters();
  t.reset();
  CHECK(t.valid_slots() == 0);
  CHECK(t.usage().used == 0);
  for (std::uint16_t i = 0; i < 100; ++i) {
    CHECK_FALSE(t.slot(i).valid);
    CHECK(t.slot(i).max_ts == 0);
  }
  CHECK(same_counters(t.counters(), before));
  CHECK(t.on_write_reply(7, 7, 1, {}) == WriteOutcome::kStored);  // ts 1 again: MaxTs is 0
}

TEST_CASE("switch_visibility table: counters and usage read from another thread while the writer runs",
          "[switch_visibility][concurrent]") {
  VisibilityTable t(256, 8);
  std::atomic<bool> done{false};
  std::uint64_t reads = 0, last_stored = 0;
  bool monotonic = true, within = true;
  std::thread reader([&] {
    while (!done.load(std::memory_order_acquire)) {
      const VisibilityCounters c = t.counters();
      monotonic = monotonic && c.stored >= last_stored;
      last_stored = c.stored;
      const BackendUsage u = t.usage();
      within = within && u.used <= u.capacity && t.valid_slots() <= 256;
      ++reads;
    }
  });
  std::mt19937 rng(7);
  std::array<std::uint32_t, 256> ts{};
  const auto m = meta(8, 1);
  std::uint64_t ops = 0;
  for (int round = 0; round < 200000; ++round) {
    const auto slot = static_cast<std::uint16_t>(rng() % 256);
    switch (rng() % 4) {
      case 0: t.on_write_reply(slot, slot, ++ts[slot], m); break;
      case 1: t.on_clear(slot, t.slot(slot).cur_ts); break;
      case 2: (void)t.on_read(slot, slot); break;
      default: (void)t.release_fallback(slot, ts[slot]); break;
    }
    ++ops;
  }
  done.store(true, std::memory_order_release);
  reader.join();
  CHECK(monotonic);
  CHECK(within);
  const VisibilityCounters c = t.counters();
  CHECK(c.stored + c.slot_busy + c.stale + c.too_large + c.cleared + c.clear_ignored + c.read_hits +
            c.read_misses + c.held + c.released ==
        ops);
  std::uint64_t valid = 0;
  for (std::uint16_t i = 0; i < 256; ++i) valid += t.slot(i).valid;
  CHECK(t.valid_slots() == valid);
  CHECK(c.stored - c.cleared == valid);
  INFO("reader passes: " << reads);
}

TEST_CASE("switch_visibility backend: registered with write visibility only, no hints, no plans",
          "[switch_visibility]") {
  const BackendInfo* info = find_backend("switch_visibility");
  REQUIRE(info != nullptr);
  CHECK(info == &kSwitchVisibilityBackend);
  CHECK(info->capabilities == kWriteVisibility);
  CHECK((info->capabilities & kStartHints) == 0);
  CHECK(std::string(info->unit) == "slots");
  CHECK(info->default_capacity == 65536);
  CHECK(std::string(info->summary).find("Switch-delta") != std::string::npos);
  CHECK_FALSE(serves_lookups(*info));
  CHECK(registered_backend_names().find("switch_visibility") != std::string::npos);
  // Not among the backends hosts that look keys up accept (the list built
  // from the registry, in registration order).
  const std::string lookups = forein::testing::lookup_names_from_registry();
  CHECK(lookups.find("switch_visibility") == std::string::npos);
  CHECK(lookup_backend_names() == lookups);

  // Hosts that need start hints refuse it with a message that says why and what to use.
  try {
    backend_for_lookups("switch_visibility");
    FAIL("backend_for_lookups accepted switch_visibility");
  } catch (const InvalidArgument& e) {
    CHECK(std::string(e.what()) ==
          "backend \"switch_visibility\" gives no start hints (it makes in-flight writes visible on the "
          "network path: forein-switch --backend switch_visibility); use one of: " + lookups);
  }
  CHECK(&backend_for_lookups("none") == find_backend("none"));
  CHECK(&backend_for_lookups("switch_lpm") == find_backend("switch_lpm"));
  CHECK(&backend_for_lookups("fattree") == find_backend("fattree"));
  CHECK_THROWS_WITH(backend_for_lookups("bogus"), Catch::Contains("unknown offload backend 'bogus'"));

  Backend backend(*info);
  CHECK(backend.config().capacity == 65536);
  const PlanDiff d = backend.planner().plan(PlanInput{});
  CHECK(d.install.records == 0);
  CHECK(d.install.bytes.empty());
  CHECK(d.remove.records == 0);
  CHECK(d.target_records == 0);
  CHECK(backend.planner().full_target().records == 0);
  const BackendUsage u = backend.usage();
  CHECK(u.unit == "slots");
  CHECK(u.capacity == 65536);
  CHECK(u.used == 0);
  CHECK(backend.model().source.find("Switch-delta") != std::string::npos);

  // Only empty batches; anything else is kInvalidEntry and changes nothing.
  ChangeBatch empty;
  CHECK(backend.device().apply(empty) == BackendStatus::kOk);
  empty.kind = BatchKind::kRemove;
  CHECK(backend.device().apply(empty) == BackendStatus::kOk);
  for (const BatchKind kind : {BatchKind::kInstall, BatchKind::kRemove}) {
    ChangeBatch b;
    b.kind = kind;
    b.records = 1;
    CHECK(backend.device().apply(b) == BackendStatus::kInvalidEntry);
    b.records = 0;
    b.bytes.assign(24, std::byte{1});
    CHECK(backend.device().apply(b) == BackendStatus::kInvalidEntry);
  }
  CHECK(backend.device().load_image()->version == 0);
  CHECK(backend.device().load_image()->bytes.empty());

  // Capacity: a power of two up to 65,536.
  BackendConfig small;
  small.capacity = 512;
  CHECK(Backend(*info, small).usage().capacity == 512);
  for (const std::uint64_t bad : {3000ull, 65537ull, 1ull << 20, 1ull << 40}) {
    BackendConfig c;
    c.capacity = bad;
    CHECK_THROWS_AS(Backend(*info, c), InvalidArgument);
  }
}

TEST_CASE("switch_visibility backend: the image lists the valid slots; records() and hints on any bytes",
          "[switch_visibility]") {
  SwitchVisibilityDevice device(64);
  VisibilityTable& t = device.table();
  CHECK(t.on_write_reply(9, 0x99, 4, meta(10, 9)) == WriteOutcome::kStored);
  CHECK(t.on_write_reply(9, 0x98, 6, {}) == WriteOutcome::kSlotBusy);
  CHECK(t.on_write_reply(2, 0x22, 1, meta(96, 2)) == WriteOutcome::kStored);
  CHECK(t.on_write_reply(40, 0x40, 3, {}) == WriteOutcome::kStored);
  CHECK(t.on_clear(40, 3));  // cleared: not listed
  device.publish_table();
  const auto img = device.load_image();
  CHECK(img->version == 1);
  CHECK(device.usage().used == 2);
  CHECK(img->bytes.size() == kImageHeaderBytes + 2 * kImageSlotFixedBytes + 10 + 96);
  CHECK(img->bytes.size() <= image_max_bytes(2));
  CHECK(img->bytes.size() <= image_max_bytes(64));
  CHECK(image_max_bytes(0) == 0);
  CHECK(image_max_bytes(1ull << 40) == image_max_bytes(65536));

  const auto slots = decode_image(img->bytes);
  REQUIRE(slots.has_value());
  REQUIRE(slots->size() == 2);
  CHECK((*slots)[0] == ImageSlot{2, 0x22, 1, 1, meta(96, 2)});
  CHECK((*slots)[1] == ImageSlot{9, 0x99, 4, 6, meta(10, 9)});

  const std::vector<ImageRecord> recs = kSwitchVisibilityBackend.records(img->bytes);
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].key == 2);
  CHECK(recs[1].key == 9);
  for (const ImageRecord& r : recs) {
    CHECK(r.kind == 0);
    CHECK(r.level == 0);
    CHECK(r.node == forein::kNoPage);
  }
  const std::vector<UsageRow> rows = image_usage(kSwitchVisibilityBackend, img->bytes, 64);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].used == 2);
  CHECK(rows[0].capacity == 64);
  CHECK(rows[0].unit == "slots");

  // Every cut and every single-byte change: records() never reads past the
  // span (ASan) and gives either a valid list or nothing; never a hint.
  const std::vector<std::byte>& real = img->bytes;
  for (std::size_t n = 0; n <= real.size(); ++n) {
    std::vector<std::byte> cut(real.begin(), real.begin() + static_cast<std::ptrdiff_t>(n));
    const auto r = kSwitchVisibilityBackend.records(cut);
    CHECK((n == real.size() ? r.size() == 2 : r.empty()));
    CHECK_FALSE(kSwitchVisibilityBackend.hint(cut, 9).primary.present());
  }
  std::size_t accepted = 0;
  for (std::size_t at = 0; at < real.size(); ++at) {
    for (const int v : {0x00, 0x01, 0x7f, 0xff}) {
      std::vector<std::byte> b = real;
      b[at] = static_cast<std::byte>(v);
      const auto r = decode_image(b);
      accepted += r.has_value();
      if (r) CHECK(r->size() <= 64);
      const forein::StartHints h = kSwitchVisibilityBackend.hint(b, 0x99);
      CHECK_FALSE(h.primary.present());
      CHECK_FALSE(h.secondary.present());
    }
  }
  INFO("flipped images that still decode: " << accepted);
  CHECK(kSwitchVisibilityBackend.records({}).empty());
  CHECK(decode_image({}).has_value());  // the empty device

  // An empty table publishes the empty image.
  CHECK(t.on_clear(2, 1));
  CHECK(t.on_clear(9, 4));
  device.publish_table();
  CHECK(device.load_image()->bytes.empty());
  CHECK(device.load_image()->version == 2);
}
