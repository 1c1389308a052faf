// Switch-delta's secondary-index case study (paper 002, section VI-B,
// with the partial writes of III-C) as the load client runs it
// (--workload secondary-index; protocol/secondary_index.h has the wire).
//
//   write(i, v): LOG_APPEND(dataset_key(i), SidxRecord{secondary_key_of(i,
//     v, S), dataset_record(i, v)}, {slot, fp of the secondary key}) ->
//     kOk, value = the SidxEntry (primary, secondary), visibility {slot,
//     state, fp, ts}. kStored: the switch took the partial entry, committed
//     after one round trip. kFallback (slot busy), kPartial (no switch
//     table on the path: the data node's own state) or kNone: phase 2,
//     META_PUT(primary, the entry, {slot, fp, ts}), committed by its kOk.
//   read(j): SIDX_READ(dataset_key(j), count C) -> the first C primary
//     keys the metadata node lists for j (kFlagMore if more follow);
//     then multi-reads (LOG_READ, count n, the keys as scan entries;
//     SLIK's multiRead) -> their newest SidxRecords in order (empty:
//     none); a reply with kFlagMore answered only its first m keys (one
//     frame's worth), and the rest are asked again. A listed key is kept iff its
//     record names dataset_key(j) and the payload is a whole
//     dataset_record of that primary index: the validation step that
//     drops the index's stale composite keys (the data node holds the
//     truth; the index may lag or hold a key that has moved on).
//
// Kept free of sockets like load/ordered.h: the engine drives them, one
// request in flight per operation, and the steps are tested with
// hand-built replies (tests/net/test_load_sidx.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "load/ordered.h"
#include "protocol/packet.h"
#include "protocol/visibility.h"

namespace forein::net::load {

class SidxWrite {
 public:
  enum class Phase : std::uint8_t { kAppend, kMetaPut, kCommitted, kFailed };

  SidxWrite(std::uint64_t index, std::uint32_t version, std::uint64_t secondary_keys,
            std::size_t record_bytes = kRecordBytes);

  // LOG_APPEND of the SidxRecord, slot and fingerprint of its secondary key.
  Packet start() const;
  Step on_reply(const Packet& reply);

  Phase phase() const { return phase_; }
  bool one_rtt() const { return one_rtt_; }  // the switch stored the partial entry
  std::uint32_t ts() const { return ts_; }
  std::uint64_t index() const { return index_; }
  std::uint32_t version() const { return version_; }
  std::uint64_t secondary_index() const { return secondary_index_; }  // the j this write names

 private:
  Step fail(std::string why);

  std::uint64_t index_;
  std::uint32_t version_;
  std::size_t record_bytes_;
  std::uint64_t secondary_index_;
  std::string key_;
  std::string secondary_;
  SlotKey slot_;  // of the secondary key
  Phase phase_ = Phase::kAppend;
  bool one_rtt_ = false;
  std::uint32_t ts_ = 0;
};

class SidxRead {
 public:
  enum class Phase : std::uint8_t { kSidxRead, kLogRead, kDone, kFailed };

  // A record LOG_READ returned for a listed primary key.
  struct Looked {
    std::uint64_t index = 0;
    std::string secondary;  // the record's secondary key
    std::string payload;    // its payload (a dataset_record if all is well)
  };
  struct Member {
    std::uint64_t index = 0;
    std::uint32_t version = 0;
    bool operator==(const Member&) const = default;
  };

  SidxRead(std::uint64_t secondary_index, std::uint32_t count);

  // SIDX_READ of dataset_key(j) for at most `count` primary keys.
  Packet start() const;
  Step on_reply(const Packet& reply);
  // The records the last reply carried (a multi-read's found keys), one
  // per call, each once, then nullopt: the engine checks every record it
  // is shown, kept or not.
  std::optional<Looked> take_looked();

  Phase phase() const { return phase_; }
  std::uint64_t secondary_index() const { return secondary_index_; }
  // The SIDX_READ reply's primary keys (indexes), duplicates dropped.
  const std::vector<std::uint64_t>& listed() const { return listed_; }
  std::uint64_t listed_entries() const { return listed_entries_; }  // as the reply counted them
  // The reply had kFlagMore or filled `count`: keys may be missing.
  bool truncated() const { return truncated_; }
  const std::vector<Member>& kept() const { return kept_; }
  std::uint64_t dropped() const { return dropped_; }      // listed, not kept (not found included)
  std::uint64_t not_found() const { return not_found_; }  // multi-read entries with no record
  std::uint64_t multi_reads() const { return multi_reads_; }  // multi-read requests sent

 private:
  Step fail(std::string why);
  // A multi-read of the listed keys from at_ on (as many as one frame
  // holds), or kDone after the last.
  Step next();
  Step on_multi_read(const Packet& reply);

  std::uint64_t secondary_index_;
  std::uint32_t count_;
  std::string secondary_;
  SlotKey slot_;  // of the secondary key
  Phase phase_ = Phase::kSidxRead;
  std::vector<std::uint64_t> listed_;
  std::uint64_t listed_entries_ = 0;
  std::size_t at_ = 0;     // the first listed key of the multi-read in flight
  std::size_t asked_ = 0;  // how many keys it asks for
  std::uint64_t multi_reads_ = 0;
  bool truncated_ = false;
  std::vector<Member> kept_;
  std::uint64_t dropped_ = 0;
  std::uint64_t not_found_ = 0;
  std::deque<Looked> looked_;
};

}  // namespace forein::net::load
