// forein-load --history FILE (docs/network.md, "forein-load", "The
// history file"): one line per Switch-delta ordered operation (write-only,
// write-heavy; load/ordered.h), for an offline linearizability check
// (tests/net/history_check.h). A line:
//
//   SLOT KIND KEY VERSION INVOKE_NS RESPONSE_NS OUTCOME RESENDS
//
//   SLOT         the client slot (0 .. --outstanding-1) that ran it
//   KIND         W (write) or R (read)
//   KEY          the data set index i (the key is dataset_key(i))
//   VERSION      W: the version v of dataset_record(i, v) written;
//                R: record_version() of the record read (0: the preloaded
//                record), "bad" if the bytes are no record of key i,
//                "-" if the read got no record (failed)
//   INVOKE_NS    CLOCK_MONOTONIC ns when the operation started (before its
//                first request was sent; resends and later phases are the
//                same operation)
//   RESPONSE_NS  CLOCK_MONOTONIC ns when it ended (after its last reply
//                was received, or when it was given up), "-" if pending
//   OUTCOME      ok: committed write / read with its record;
//                failed: an error reply or no reply after every resend (a
//                failed write may still take effect, at any later time);
//                pending: still in flight when the history ended
//   RESENDS      requests of the operation resent after a timeout (any
//                phase). A resent LOG_APPEND may be appended twice, the
//                late copy after the operation ended (the data node
//                stamps each copy), so a resent write may take effect
//                again later: the checker allows that.
//
// --workload secondary-index (load/sidx_ops.h) writes two other kinds:
//
//   SLOT SW KEY VERSION INVOKE_NS RESPONSE_NS OUTCOME RESENDS SECONDARY
//   SLOT SR SECONDARY - INVOKE_NS RESPONSE_NS OUTCOME RESENDS LISTING MEMBERS
//
//   SW           a write of version VERSION of primary key KEY, naming
//                secondary key SECONDARY (secondary_index_of(KEY, VERSION,
//                S)); fields as for W
//   SR           a read of secondary key SECONDARY (VERSION is "-")
//   LISTING      ok reads: "all" (the SIDX_READ reply listed every
//                primary key it holds for SECONDARY) or "truncated" (it
//                had the more flag or filled the read's count); "-" for
//                failed and pending reads
//   MEMBERS      ok reads: the primary keys kept after validation, as
//                KEY:VERSION (the version of the record LOG_READ
//                returned) joined by ",", "-" if none; "-" for failed and
//                pending reads
//
// Lines starting with '#' are comments; the first is a header naming the
// format and the run ("# forein-load history 1 keys=N ...";
// secondary-index adds "secondary_keys=S", which the checker needs for
// the preloaded records' secondary keys).
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace forein::net::load {

// A primary key a secondary-index read kept, with its record's version.
struct SidxMember {
  std::uint64_t key = 0;
  std::uint32_t version = 0;

  bool operator==(const SidxMember&) const = default;
};

struct HistoryOp {
  enum class Outcome : std::uint8_t { kOk, kFailed, kPending };
  static constexpr std::int64_t kNoVersion = -1;   // "-": a read with no record
  static constexpr std::int64_t kBadRecord = -2;   // "bad": bytes that are no record of the key

  std::uint32_t slot = 0;
  bool write = false;
  std::uint64_t key = 0;
  std::int64_t version = kNoVersion;
  std::uint64_t invoke_ns = 0;
  std::uint64_t response_ns = 0;  // unused while pending
  Outcome outcome = Outcome::kOk;
  std::uint32_t resends = 0;
  // --workload secondary-index: an SW (write) or SR (read, key = the
  // secondary index read, version kNoVersion) line.
  bool sidx = false;
  std::uint64_t secondary = 0;  // SW: the secondary index the write names
  bool truncated = false;       // SR ok: "truncated"
  std::vector<SidxMember> members{};  // SR ok: the primary keys kept

  bool operator==(const HistoryOp&) const = default;
};

const char* to_string(HistoryOp::Outcome o);

// The line for op (no newline).
std::string format_history_line(const HistoryOp& op);
// One line (no newline); nullopt with *why on anything malformed.
std::optional<HistoryOp> parse_history_line(std::string_view line, std::string* why);

// Writes the file as operations end. Throws std::runtime_error naming the
// path when it cannot be opened or written.
class HistoryWriter {
 public:
  HistoryWriter(const std::string& path, const std::string& header);
  ~HistoryWriter();
  HistoryWriter(const HistoryWriter&) = delete;
  HistoryWriter& operator=(const HistoryWriter&) = delete;

  void add(const HistoryOp& op);
  // Flushes and closes; throws if anything could not be written.
  void close();
  std::uint64_t lines() const { return lines_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::uint64_t lines_ = 0;
};

}  // namespace forein::net::load
