// forein-data-node's append-only log (paper 002, section II, Table I: the
// log-structured KV store's data node maps logID -> key-value pair): each
// entry holds the key, its record and the timestamp the append took from
// the counter of the key's slot. Log ids are 1, 2, 3, ... (u32).
//
// Replication (paper section V-D; docs/network.md, "forein-data-node",
// "Replication"): a primary reserve()s an entry (id and timestamp taken,
// bytes stored, not yet readable) when it sends LOG_REPLICATE, and
// commit()s it once the backups' ACKs are in; a backup install()s each
// entry at the primary's id and timestamp, in any order, so its log holds
// the same entries (ids it has not received yet are gaps: never read,
// never fetched).
//
// A --secondary-index log (protocol/secondary_index.h) differs in three
// ways: every append takes its timestamp from one counter (not the slot's),
// so a primary key's writes are ordered whatever secondary keys (slots)
// they name; it keeps the primary index, key -> its newest log id,
// updated under the append's lock so concurrent workers agree with the
// log; and fetch() returns each entry's secondary key (its record is a
// SidxRecord).
//
// Thread-safe: appends take the lock exclusively, reads and fetches share
// it. Entries are stored compactly: 16 bytes of index per entry, key and
// record bytes back to back in 1 MiB blocks (no reallocation of what is
// stored, so a large log never needs twice its size while growing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace forein::net::data_node {

// One entry as fetch() returns it.
struct FetchedEntry {
  std::uint32_t log_id = 0;
  std::uint32_t ts = 0;
  std::string key;
  std::string secondary;  // a --secondary-index log's: the record's secondary key
};

enum class LogMode : std::uint8_t {
  kPerSlot,         // a timestamp counter per slot (Switch-delta's KV store)
  kSecondaryIndex,  // one counter, the primary index, secondary keys fetched
};

class DataLog {
 public:
  static constexpr std::uint32_t kMaxLogId = 0xFFFFFFFFu;
  static constexpr std::size_t kMaxEntryField = 0xFFFF;  // key and record bytes, each

  // max_log_id: the last id the log hands out (tests set it low to see
  // the refusal; the default is every u32 id but 0).
  explicit DataLog(std::uint32_t max_log_id = kMaxLogId, LogMode mode = LogMode::kPerSlot);
  DataLog(const DataLog&) = delete;
  DataLog& operator=(const DataLog&) = delete;

  struct Appended {
    std::uint32_t log_id = 0;
    std::uint32_t ts = 0;
  };
  enum class AppendError { kNone, kFull, kTooLarge };
  // Appends (key, record) stamped with ++counter[slot] (so the first
  // append in a slot gets 1; never 0; a kSecondaryIndex log: its one
  // counter, whatever the slot). kFull once max_log_id ids are
  // used (nothing changes then), kTooLarge for a key or record over
  // kMaxEntryField bytes.
  AppendError append(std::uint16_t slot, std::string_view key, std::string_view record, Appended* out);
  // append() for a primary: the entry takes its id and timestamp now but
  // stays pending (read: kNotFound, fetch: skipped) until commit(log_id).
  AppendError reserve(std::uint16_t slot, std::string_view key, std::string_view record, Appended* out);
  // Makes a reserved entry readable (no-op for any other id).
  void commit(std::uint32_t log_id);

  // A backup installs the primary's entry at log_id with timestamp ts
  // (both > 0). Ids may arrive in any order: the ids between the last one
  // and log_id become gaps until their entries arrive. The slot's counter
  // becomes max(counter, ts), so a backup taking over goes on from there.
  //   kInstalled: stored; kDuplicate: the same entry is there already
  //   (a resend; nothing changes); kConflict: another entry holds log_id;
  //   kFull: log_id > max_log_id; kTooFarAhead: log_id more than
  //   kMaxInstallAhead past the last id (refused: a garbage id must not
  //   grow the index by gigabytes); kTooLarge: key or record too large.
  enum class InstallResult { kInstalled, kDuplicate, kConflict, kFull, kTooFarAhead, kTooLarge };
  static constexpr std::uint32_t kMaxInstallAhead = 1u << 20;
  InstallResult install(std::uint32_t log_id, std::uint32_t ts, std::uint16_t slot, std::string_view key,
                        std::string_view record);

  enum class ReadResult { kOk, kNotFound, kMismatch };
  // The record at log_id if its key is `key` (kMismatch: another key is
  // there; kNotFound: no such id).
  ReadResult read(std::uint32_t log_id, std::string_view key, std::string* record) const;
  // A kSecondaryIndex log: the record of key's newest entry (the primary
  // index); false if it has none (or the log keeps no primary index).
  bool read_newest(std::string_view key, std::string* record) const;
  // read_newest() of keys in order under one lock (a multi-read sees one
  // state of the log): (*records)[i] is keys[i]'s newest record, empty
  // when it has none (a SidxRecord is never empty). Stops before the
  // first key whose (entry_overhead + key + record bytes) would take the
  // sum past budget, but always answers the first key. Returns how many
  // keys it answered (records->size()).
  std::size_t read_newest_many(std::span<const std::string> keys, std::size_t entry_overhead, std::size_t budget,
                               std::vector<std::string>* records) const;

  // The entries from log id `first` (0 counts as 1) on, in id order
  // (gaps and pending entries skipped): at
  // most max_entries, and while the sum of (entry_overhead + key bytes
  // [+ secondary key bytes: a kSecondaryIndex log]) stays within budget. *more: entries remain after the last one
  // returned.
  std::vector<FetchedEntry> fetch(std::uint32_t first, std::size_t max_entries, std::size_t entry_overhead,
                                  std::size_t budget, bool* more) const;

  // A filtered fetch (LOG_FETCH with a key range): as fetch(), but only
  // entries whose key `keep` accepts, examining at most max_scan ids.
  // *scanned: the last id up to which every entry from `first` was
  // returned or refused by keep (first - 1 when the first is a gap or
  // pending: the caller's cursor must stop there); *passed_over: the
  // entries refused.
  std::vector<FetchedEntry> fetch_filtered(std::uint32_t first, std::size_t max_entries, std::size_t entry_overhead,
                                           std::size_t budget, const std::function<bool(std::string_view)>& keep,
                                           std::size_t max_scan, bool* more, std::uint32_t* scanned,
                                           std::size_t* passed_over) const;

  // The whole entry (tests); nullopt for a gap or a pending entry.
  struct Entry {
    std::string key;
    std::string record;
    std::uint32_t ts = 0;
  };
  std::optional<Entry> entry(std::uint32_t log_id) const;

  // The last timestamp slot handed out (0: none yet; a kSecondaryIndex
  // log: the one counter's, for every slot).
  std::uint32_t slot_ts(std::uint16_t slot) const;
  LogMode mode() const { return mode_; }
  std::uint64_t primary_keys() const;  // keys in the primary index (0: not a kSecondaryIndex log)
  std::uint64_t entries() const;  // == the last log id (gaps and pending entries included)
  std::uint64_t gaps() const;     // ids below the last one with no entry (a backup's)
  std::uint64_t bytes() const;    // key and record bytes stored

 private:
  static constexpr std::size_t kBlockBytes = std::size_t{1} << 20;

  // ts 0: a gap (no entry at this id yet).
  struct Index {
    std::uint32_t block : 31 = 0;
    std::uint32_t pending : 1 = 0;  // reserved, not committed
    std::uint32_t offset = 0;
    std::uint16_t key_bytes = 0;
    std::uint16_t record_bytes = 0;
    std::uint32_t ts = 0;
  };
  static_assert(sizeof(Index) == 16);

  const Index* find(std::uint32_t log_id) const;  // under the lock; nullptr: none, a gap or pending
  Index store(std::string_view key, std::string_view record);  // under the lock: the bytes, in a block
  AppendError append_entry(std::uint16_t slot, std::string_view key, std::string_view record, bool pending,
                           Appended* out);
  std::string_view key_of(const Index& e) const;
  std::string_view record_of(const Index& e) const;
  std::uint16_t counter_of(std::uint16_t slot) const { return mode_ == LogMode::kSecondaryIndex ? 0 : slot; }
  void note_newest(const Index& e, std::uint32_t log_id);  // under the lock: the primary index

  const std::uint32_t max_log_id_;
  const LogMode mode_;
  mutable std::shared_mutex mutex_;
  std::deque<Index> index_;  // log id i at index_[i - 1]
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::size_t block_used_ = 0;  // bytes used in blocks_.back()
  std::uint64_t bytes_ = 0;
  std::uint64_t gaps_ = 0;
  std::vector<std::uint32_t> slot_ts_;  // 65,536 counters (a kSecondaryIndex log uses [0])
  // kSecondaryIndex: primary key -> its newest readable log id.
  std::unordered_map<std::string, std::uint32_t> newest_;
};

}  // namespace forein::net::data_node
