#include "forein/switch_visibility/visibility_table.h"

#include <algorithm>
#include <cstring>

#include "forein/error.h"

namespace forein::offload::switch_visibility {

// Flat arrays of slots() entries each, sized once: no allocation per
// packet. Only the writer touches the arrays; the counters and the valid
// count are relaxed atomics, so another thread may read counters(),
// usage() and valid_slots() while the writer runs (figures, not a
// snapshot: each counter is exact, the set of them may be a few packets
// apart).
struct VisibilityTable::Impl {
  std::uint32_t slots = 0;
  std::uint32_t mask = 0;
  std::size_t max_metadata = 0;
  std::vector<std::uint32_t> fingerprint;
  std::vector<std::uint32_t> cur_ts;
  std::vector<std::uint32_t> max_ts;
  std::vector<std::uint8_t> valid;  // 0 empty, kFull or kPartial
  std::vector<std::uint8_t> metadata_len;
  std::vector<std::byte> metadata;  // slots * kPaperMetadataBytes

  std::atomic<std::uint64_t> valid_count{0};
  std::atomic<std::uint64_t> stored{0};
  std::atomic<std::uint64_t> slot_busy{0};
  std::atomic<std::uint64_t> stale{0};
  std::atomic<std::uint64_t> too_large{0};
  std::atomic<std::uint64_t> cleared{0};
  std::atomic<std::uint64_t> clear_ignored{0};
  std::atomic<std::uint64_t> read_hits{0};
  std::atomic<std::uint64_t> read_misses{0};
  std::atomic<std::uint64_t> held{0};
  std::atomic<std::uint64_t> released{0};

  static constexpr std::uint8_t kFull = 1, kPartial = 2;
  std::atomic<std::uint64_t> partial_stored{0};
  std::atomic<std::uint64_t> partial_reads{0};

  std::uint32_t index(std::uint16_t slot) const { return slot & mask; }
  std::byte* meta_at(std::uint32_t i) { return metadata.data() + std::size_t{i} * kPaperMetadataBytes; }
  const std::byte* meta_at(std::uint32_t i) const {
    return metadata.data() + std::size_t{i} * kPaperMetadataBytes;
  }

  static void bump(std::atomic<std::uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }
  static std::uint64_t get(const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); }
};

VisibilityTable::VisibilityTable(std::uint32_t slots, std::size_t max_metadata) : impl_(std::make_unique<Impl>()) {
  if (slots == 0) slots = kPaperSlots;
  if (slots > kPaperSlots || (slots & (slots - 1)) != 0) {
    throw InvalidArgument("switch_visibility: slots must be a power of two up to " +
                          std::to_string(kPaperSlots) + " (the paper's 16-bit index), got " +
                          std::to_string(slots));
  }
  if (max_metadata == 0) max_metadata = kPaperMetadataBytes;
  if (max_metadata > kPaperMetadataBytes) {
    throw InvalidArgument("switch_visibility: metadata is at most " + std::to_string(kPaperMetadataBytes) +
                          " bytes per slot (the paper's parser limit), got " + std::to_string(max_metadata));
  }
  Impl& t = *impl_;
  t.slots = slots;
  t.mask = slots - 1;
  t.max_metadata = max_metadata;
  t.fingerprint.assign(slots, 0);
  t.cur_ts.assign(slots, 0);
  t.max_ts.assign(slots, 0);
  t.valid.assign(slots, 0);
  t.metadata_len.assign(slots, 0);
  t.metadata.assign(std::size_t{slots} * kPaperMetadataBytes, std::byte{0});
}

VisibilityTable::~VisibilityTable() = default;

std::uint32_t VisibilityTable::slots() const { return impl_->slots; }

std::size_t VisibilityTable::max_metadata() const { return impl_->max_metadata; }

WriteOutcome VisibilityTable::on_write_reply(std::uint16_t slot, std::uint32_t fingerprint, std::uint32_t ts,
                                             std::span<const std::byte> metadata, bool partial) {
  Impl& t = *impl_;
  const std::uint32_t i = t.index(slot);
  if (metadata.size() > t.max_metadata) {
    // Not stored, but it used the slot: an older reply of the same key
    // arriving after this write committed (phase 2) must not be stored
    // (tests/offload/test_switch_visibility_model.cc found the stale read).
    if (ts > t.max_ts[i]) t.max_ts[i] = ts;
    Impl::bump(t.too_large);
    return WriteOutcome::kTooLarge;
  }
  if (t.valid[i] == 0 && ts > t.max_ts[i]) {
    // A partial write takes the slot only when it is empty, like a full
    // one: a second partial write of the entry would need the slot to hold
    // both parts, so it falls back (phase 2) until the first is applied.
    t.valid[i] = partial ? Impl::kPartial : Impl::kFull;
    if (partial) Impl::bump(t.partial_stored);
    t.fingerprint[i] = fingerprint;
    t.cur_ts[i] = ts;
    t.max_ts[i] = ts;
    t.metadata_len[i] = static_cast<std::uint8_t>(metadata.size());
    if (!metadata.empty()) std::memcpy(t.meta_at(i), metadata.data(), metadata.size());
    t.valid_count.fetch_add(1, std::memory_order_relaxed);
    Impl::bump(t.stored);
    return WriteOutcome::kStored;
  }
  if (ts > t.max_ts[i]) {
    t.max_ts[i] = ts;  // the slot holds another write: remember the newer timestamp
    Impl::bump(t.slot_busy);
    return WriteOutcome::kSlotBusy;
  }
  Impl::bump(t.stale);
  return WriteOutcome::kStale;
}

void VisibilityTable::note_unstored_reply(std::uint16_t slot, std::uint32_t ts) {
  Impl& t = *impl_;
  const std::uint32_t i = t.index(slot);
  if (ts > t.max_ts[i]) t.max_ts[i] = ts;
}

bool VisibilityTable::on_clear(std::uint16_t slot, std::uint32_t ts) {
  Impl& t = *impl_;
  const std::uint32_t i = t.index(slot);
  if (t.valid[i] == 0 || t.cur_ts[i] != ts) {
    Impl::bump(t.clear_ignored);
    return false;
  }
  t.valid[i] = 0;  // MaxTs stays: an older reply can never take the slot again
  t.valid_count.fetch_sub(1, std::memory_order_relaxed);
  Impl::bump(t.cleared);
  return true;
}

std::optional<std::span<const std::byte>> VisibilityTable::on_read(std::uint16_t slot, std::uint32_t fingerprint) {
  Impl& t = *impl_;
  const std::uint32_t i = t.index(slot);
  if (t.valid[i] != Impl::kFull || t.fingerprint[i] != fingerprint) {
    Impl::bump(t.read_misses);
    return std::nullopt;
  }
  Impl::bump(t.read_hits);
  return std::span<const std::byte>(t.meta_at(i), t.metadata_len[i]);
}

std::optional<PartialRead> VisibilityTable::on_partial_read(std::uint16_t slot, std::uint32_t fingerprint) {
  Impl& t = *impl_;
  const std::uint32_t i = t.index(slot);
  if (t.valid[i] != Impl::kPartial || t.fingerprint[i] != fingerprint) {
    Impl::bump(t.read_misses);
    return std::nullopt;
  }
  Impl::bump(t.partial_reads);
  return PartialRead{std::span<const std::byte>(t.meta_at(i), t.metadata_len[i]), t.cur_ts[i]};
}

bool VisibilityTable::release_fallback(std::uint16_t slot, std::uint32_t ts) {
  Impl& t = *impl_;
  const std::uint32_t i = t.index(slot);
  if (t.valid[i] != 0 && ts > t.cur_ts[i]) {
    Impl::bump(t.held);
    return false;
  }
  Impl::bump(t.released);
  return true;
}

SlotState VisibilityTable::slot(std::uint16_t slot) const {
  const Impl& t = *impl_;
  const std::uint32_t i = t.index(slot);
  SlotState s;
  s.valid = t.valid[i] != 0;
  s.partial = t.valid[i] == Impl::kPartial;
  s.fingerprint = t.fingerprint[i];
  s.cur_ts = t.cur_ts[i];
  s.max_ts = t.max_ts[i];
  if (s.valid) s.metadata.assign(t.meta_at(i), t.meta_at(i) + t.metadata_len[i]);
  return s;
}

std::uint64_t VisibilityTable::valid_slots() const { return Impl::get(impl_->valid_count); }

VisibilityCounters VisibilityTable::counters() const {
  const Impl& t = *impl_;
  VisibilityCounters c;
  c.stored = Impl::get(t.stored);
  c.slot_busy = Impl::get(t.slot_busy);
  c.stale = Impl::get(t.stale);
  c.too_large = Impl::get(t.too_large);
  c.cleared = Impl::get(t.cleared);
  c.clear_ignored = Impl::get(t.clear_ignored);
  c.read_hits = Impl::get(t.read_hits);
  c.read_misses = Impl::get(t.read_misses);
  c.held = Impl::get(t.held);
  c.released = Impl::get(t.released);
  c.partial_stored = Impl::get(t.partial_stored);
  c.partial_reads = Impl::get(t.partial_reads);
  return c;
}

BackendUsage VisibilityTable::usage() const {
  const Impl& t = *impl_;
  BackendUsage u;
  u.unit = "slots";
  u.used = valid_slots();
  u.capacity = t.slots;
  u.hardware_bytes = u.used * kSlotRegisterBytes;
  u.host_bytes = sizeof(VisibilityTable) + sizeof(Impl) +
                 t.fingerprint.capacity() * sizeof(std::uint32_t) + t.cur_ts.capacity() * sizeof(std::uint32_t) +
                 t.max_ts.capacity() * sizeof(std::uint32_t) + t.valid.capacity() + t.metadata_len.capacity() +
                 t.metadata.capacity();
  return u;
}

BackendModel VisibilityTable::model() const {
  BackendModel m;
  m.hint_latency_ns = 0;
  m.hints_per_second = 0;
  m.install_latency_us = 0;
  m.entries_per_second = 0;
  m.source =
      "switch_visibility (Switch-delta, paper 002): no lookup is added, the table's registers are read "
      "and written in the switch pipeline as packets pass (IV-A: find the entry by hash, compare "
      "fingerprint and timestamps, read/write/clear), so hint_latency_ns = 0; throughput not "
      "modelled (hints_per_second = 0): the table is read at line rate in the switch pipeline "
      "(IV-A); the paper's switch is a Barefoot Tofino Wedge 100BF-32X (V-A), 32 x 100 GbE ports "
      "(a vendor figure, not in the paper); install_latency_us = 0 and entries_per_second = 0: "
      "slots are filled and cleared by data-plane register writes (data-write replies and CLEARs, "
      "III-A/III-B), no control plane installs anything; capacity 65,536 slots (IV-B: 16-bit "
      "index), " +
      std::to_string(kSlotRegisterBytes) +
      " register bytes per slot (IV-B: metadata <= 96 B, 32-bit fingerprint, CurTs, MaxTs)";
  return m;
}

void VisibilityTable::reset() {
  Impl& t = *impl_;
  std::fill(t.fingerprint.begin(), t.fingerprint.end(), 0u);
  std::fill(t.cur_ts.begin(), t.cur_ts.end(), 0u);
  std::fill(t.max_ts.begin(), t.max_ts.end(), 0u);
  std::fill(t.valid.begin(), t.valid.end(), std::uint8_t{0});
  std::fill(t.metadata_len.begin(), t.metadata_len.end(), std::uint8_t{0});
  t.valid_count.store(0, std::memory_order_relaxed);
}

}  // namespace forein::offload::switch_visibility
