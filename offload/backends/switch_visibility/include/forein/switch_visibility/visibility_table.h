// Switch-delta's in-switch visibility table (paper 002, sections III-B and
// IV-B; docs/offload.md, "switch_visibility"): 2^16 slots addressed by a
// 16-bit index from the key's hash, each holding the metadata of one
// in-flight write (<= 96 bytes), the key's 32-bit fingerprint, CurTs (the
// timestamp of the stored metadata) and MaxTs (the highest timestamp that
// used the slot). The rules are the paper's register conditions:
//
//   data-write reply (slot, fp, ts, meta): store iff the slot is empty,
//       ts > MaxTs and the metadata fits; else MaxTs = max(MaxTs, ts) and
//       the write falls back;
//   CLEAR (slot, ts): clear iff the slot is valid and CurTs == ts;
//   read (slot, fp): the metadata iff the slot is valid and fp matches;
//   fallback META_PUT reply (slot, ts): held while the slot is valid and
//       ts > CurTs (it would otherwise commit a write a read could not see).
//
// Partial writes (section III-C): a write that changes only part of its
// entry (a secondary-index write adds one primary key to a secondary
// key's list) is stored as a partial entry under the same rules, but a
// read never gets an answer from it: on_partial_read() hands the partial
// entry and its CurTs to the plane, which attaches them to the read it
// forwards, and the metadata node merges them into the whole entry.
//
// A valid slot is never overwritten. One writer (the switch's data-plane
// thread) calls the mutating members; counters and usage() may be read
// from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "forein/offload/backend.h"

namespace forein::offload::switch_visibility {

inline constexpr std::uint32_t kPaperSlots = 65536;           // IV-B: 16-bit index
inline constexpr std::size_t kPaperMetadataBytes = 96;        // IV-B: parser limit
// Register bytes per slot on the switch: metadata, fingerprint, CurTs,
// MaxTs (IV-B: "a 48-bit hash value and a timestamp" plus the metadata).
inline constexpr std::size_t kSlotRegisterBytes = kPaperMetadataBytes + 4 + 4 + 4;

enum class WriteOutcome : std::uint8_t {
  kStored,     // the slot was empty and ts > MaxTs: committed in one round trip
  kSlotBusy,   // the slot holds another write: MaxTs raised, phase 2 on the client
  kStale,      // ts <= MaxTs (a reordered or duplicated reply): MaxTs unchanged, phase 2
  kTooLarge,   // metadata over the slot's bytes: not stored, MaxTs raised as for kSlotBusy, phase 2
};

struct SlotState {
  bool valid = false;
  bool partial = false;  // valid and holding a partial write (III-C)
  std::uint32_t fingerprint = 0;
  std::uint32_t cur_ts = 0;
  std::uint32_t max_ts = 0;
  std::vector<std::byte> metadata;
};

// Counters, by rule outcome.
struct VisibilityCounters {
  std::uint64_t stored = 0;
  std::uint64_t slot_busy = 0;
  std::uint64_t stale = 0;
  std::uint64_t too_large = 0;
  std::uint64_t cleared = 0;
  std::uint64_t clear_ignored = 0;  // CLEAR whose ts is not the slot's CurTs (or slot empty)
  std::uint64_t read_hits = 0;
  std::uint64_t read_misses = 0;    // empty slot or another key's fingerprint
  std::uint64_t held = 0;           // fallback replies turned back
  std::uint64_t released = 0;       // fallback replies let through
  std::uint64_t partial_stored = 0;  // of `stored`: partial writes
  std::uint64_t partial_reads = 0;   // reads that found a partial entry (forwarded with it)
};

// A read that found a partial entry: what the plane attaches.
struct PartialRead {
  std::span<const std::byte> metadata;
  std::uint32_t ts = 0;  // the slot's CurTs
};

class VisibilityTable {
 public:
  // slots: a power of two <= 65536 (0: the paper's 65,536); max_metadata
  // <= 96 (0: 96). Throws InvalidArgument otherwise.
  explicit VisibilityTable(std::uint32_t slots = 0, std::size_t max_metadata = 0);

  std::uint32_t slots() const;
  std::size_t max_metadata() const;

  // The data-write reply's rule. slot is taken modulo slots(). partial:
  // a partial write (III-C), stored under the same rule but never read
  // back by on_read().
  WriteOutcome on_write_reply(std::uint16_t slot, std::uint32_t fingerprint, std::uint32_t ts,
                              std::span<const std::byte> metadata, bool partial = false);
  // A data-write reply the switch may not store (switch-crash recovery:
  // the switch still recovering, or a reply to a request an earlier switch
  // forwarded): not stored, but MaxTs raised as for kSlotBusy, so an older
  // reply of the slot arriving later is never stored either. Not counted
  // here (the plane counts why).
  void note_unstored_reply(std::uint16_t slot, std::uint32_t ts);
  // CLEAR: true when it cleared the slot.
  bool on_clear(std::uint16_t slot, std::uint32_t ts);
  // META_GET: the stored metadata when the slot is valid, holds a full
  // write and the fingerprint matches (valid until the next mutating
  // call). A partial entry is never an answer: a miss.
  std::optional<std::span<const std::byte>> on_read(std::uint16_t slot, std::uint32_t fingerprint);
  // A read of a partial-write entry (SIDX_READ): the partial entry and its
  // CurTs when the slot is valid, partial and the fingerprint matches;
  // else nullopt (counted as a read miss).
  std::optional<PartialRead> on_partial_read(std::uint16_t slot, std::uint32_t fingerprint);
  // A fallback META_PUT reply: true to let it through to the client,
  // false to hold it (slot valid and ts > CurTs). Counts either.
  bool release_fallback(std::uint16_t slot, std::uint32_t ts);

  SlotState slot(std::uint16_t slot) const;
  std::uint64_t valid_slots() const;
  VisibilityCounters counters() const;

  // Slots in use against the paper's 65,536; hardware_bytes: register
  // bytes the valid slots occupy (kSlotRegisterBytes each).
  BackendUsage usage() const;
  // Modelled figures with their sources.
  BackendModel model() const;

  // Clears every slot and MaxTs (a switch reboot, section III-E).
  void reset();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;

 public:
  ~VisibilityTable();
  VisibilityTable(const VisibilityTable&) = delete;
  VisibilityTable& operator=(const VisibilityTable&) = delete;
};

}  // namespace forein::offload::switch_visibility
