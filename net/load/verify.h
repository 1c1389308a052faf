// --verify: is an answer one the server may give, given the data set
// (protocol/dataset.h) and this client's own writes?
//
// Time is a ticket counter advanced at every request start and answer.
// Each key's state is a version: -1 absent, 0 the data set's value (keys
// < N; keys >= N start absent), v >= 1 dataset_value(key, v) written by
// this client. A read started at ticket r0 and answered at r1 may see:
//   - the original state, unless some write to the key was acknowledged
//     before r0;
//   - the state of any write w started before r1, unless w was superseded
//     before r0: another write started after w's acknowledgement and was
//     itself acknowledged before r0. A write that was resent, or that got
//     no answer at all, may still land late, so it is never superseded.
// With several writes to one key in flight this accepts any of their
// values (or not found after a delete), as the brief for forein-load asks;
// with one at a time it is exact. Superseded writes are pruned once no
// read in flight started before the superseding acknowledgement, so a hot
// key's history stays short.
//
// Switch-delta's ordered writes (write-only, write-heavy) use the same
// rules with records: a write of dataset_record(key, v) is state v (v >= 1,
// from the run's global version counter), the preloaded record is state 0,
// and check_record takes the record a read returned. So a read must name
// its key and a version the key may hold: not older than the newest write
// committed (acknowledged) before the read started, unless that write
// overlapped an older one (writes to a key in flight together may land in
// either order: the data node's timestamps, not the client's versions,
// order them), and never a version not yet issued for the key (no
// invented data).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "protocol/packet.h"

namespace forein::net::load {

class Verifier {
 public:
  using Ticket = std::uint64_t;
  using WriteId = std::uint64_t;
  static constexpr std::int64_t kAbsent = -1;

  explicit Verifier(std::uint64_t keys) : keys_(keys) {}

  // A PUT of dataset_value(key, version) (version >= 1) or a DELETE
  // (version kAbsent) starts.
  WriteId begin_write(std::uint64_t key, std::int64_t version);
  void write_resent(WriteId id);
  void write_acked(WriteId id);
  void write_failed(WriteId id);  // no answer after all retries

  // A GET or SCAN starts; its answer is checked with the ticket, and
  // end_read is called once it is done (answered or given up).
  Ticket begin_read();
  void end_read(Ticket r0);

  // An ordered read's record (LOG_READ's value): record_version(record,
  // key) must name a state allowed for the read. *why says what was wrong.
  bool check_record(std::uint64_t key, Ticket r0, std::string_view record, std::string* why);
  // A GET's answer: the value, or nullopt for not found.
  bool check_get(std::uint64_t key, Ticket r0, const std::optional<std::string>& value);
  // A SCAN from start_key for count entries: keys ascending from start_key,
  // every value allowed, no key skipped that must be present, and, unless
  // `more`, fewer than count entries only if no such key follows. *why
  // says what was wrong.
  bool check_scan(std::uint64_t start_key, std::uint32_t count, Ticket r0,
                  const std::vector<ScanEntry>& entries, bool more, std::string* why);

  // Whether state `version` of key is allowed for a read [r0, r1].
  bool allowed(std::uint64_t key, std::int64_t version, Ticket r0, Ticket r1) const;
  // Whether the key may be absent for a read [r0, r1].
  bool may_be_absent(std::uint64_t key, Ticket r0, Ticket r1) const {
    return allowed(key, kAbsent, r0, r1);
  }
  std::size_t tracked_keys() const { return history_.size(); }
  std::size_t tracked_writes() const;

 private:
  static constexpr Ticket kNever = UINT64_MAX;
  struct Write {
    WriteId id;
    std::int64_t version;
    Ticket issued;
    Ticket acked = kNever;
    bool resent = false;
    Ticket settled() const { return resent ? kNever : acked; }  // when it can no longer land
  };
  struct History {
    std::vector<Write> writes;
    Ticket first_ack = kNever;  // the original state is gone for reads after this
  };

  bool value_allowed(std::uint64_t key, const std::string& value, Ticket r0, Ticket r1) const;
  void prune(History& h);
  Write* find(WriteId id, History** h);

  std::uint64_t keys_;
  std::uint64_t max_written_ = 0;
  Ticket now_ = 0;
  WriteId next_id_ = 1;
  std::unordered_map<std::uint64_t, History> history_;
  std::unordered_map<WriteId, std::uint64_t> write_key_;
  std::multiset<Ticket> reads_in_flight_;
};

}  // namespace forein::net::load
