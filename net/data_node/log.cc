#include "data_node/log.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "protocol/secondary_index.h"
#include "protocol/visibility.h"

namespace forein::net::data_node {

namespace {

// A SidxRecord's secondary key without copying its payload (empty if the
// bytes are no record; the handler appends only records that decode).
std::string_view secondary_of(std::string_view record) {
  if (record.size() < 2) return {};
  const std::size_t k = sidx_detail::get_u16(record, 0);
  return record.size() < 2 + k ? std::string_view() : record.substr(2, k);
}

}  // namespace

DataLog::DataLog(std::uint32_t max_log_id, LogMode mode)
    : max_log_id_(max_log_id), mode_(mode), slot_ts_(kVisibilitySlots, 0) {}

void DataLog::note_newest(const Index& e, std::uint32_t log_id) {
  if (mode_ != LogMode::kSecondaryIndex) return;
  // The largest id is the newest: one counter stamps ids and timestamps
  // in the same order (a committed reservation may come after a later id).
  auto [it, fresh] = newest_.try_emplace(std::string(key_of(e)), log_id);
  if (!fresh && it->second < log_id) it->second = log_id;
}

DataLog::Index DataLog::store(std::string_view key, std::string_view record) {
  const std::size_t need = key.size() + record.size();
  if (blocks_.empty() || kBlockBytes - block_used_ < need) {
    blocks_.push_back(std::make_unique<char[]>(kBlockBytes));  // need <= 2 * 64 KiB < kBlockBytes
    block_used_ = 0;
  }
  Index e;
  e.block = static_cast<std::uint32_t>(blocks_.size() - 1);
  e.offset = static_cast<std::uint32_t>(block_used_);
  e.key_bytes = static_cast<std::uint16_t>(key.size());
  e.record_bytes = static_cast<std::uint16_t>(record.size());
  char* at = blocks_.back().get() + block_used_;
  if (!key.empty()) std::memcpy(at, key.data(), key.size());
  if (!record.empty()) std::memcpy(at + key.size(), record.data(), record.size());
  block_used_ += need;
  bytes_ += need;
  return e;
}

DataLog::AppendError DataLog::append_entry(std::uint16_t slot, std::string_view key, std::string_view record,
                                           bool pending, Appended* out) {
  if (key.size() > kMaxEntryField || record.size() > kMaxEntryField) return AppendError::kTooLarge;
  std::unique_lock lock(mutex_);
  if (index_.size() >= max_log_id_) return AppendError::kFull;
  Index e = store(key, record);
  // A slot's counter cannot wrap: it takes at most one value per log id
  // (max_log_id_ <= 2^32 - 1).
  e.ts = ++slot_ts_[counter_of(slot)];
  e.pending = pending ? 1 : 0;
  index_.push_back(e);
  out->log_id = static_cast<std::uint32_t>(index_.size());
  if (!pending) note_newest(e, out->log_id);
  out->ts = e.ts;
  return AppendError::kNone;
}

DataLog::AppendError DataLog::append(std::uint16_t slot, std::string_view key, std::string_view record,
                                     Appended* out) {
  return append_entry(slot, key, record, false, out);
}

DataLog::AppendError DataLog::reserve(std::uint16_t slot, std::string_view key, std::string_view record,
                                      Appended* out) {
  return append_entry(slot, key, record, true, out);
}

void DataLog::commit(std::uint32_t log_id) {
  std::unique_lock lock(mutex_);
  if (log_id == 0 || log_id > index_.size()) return;
  Index& e = index_[log_id - 1];
  if (e.pending == 0) return;
  e.pending = 0;
  note_newest(e, log_id);
}

DataLog::InstallResult DataLog::install(std::uint32_t log_id, std::uint32_t ts, std::uint16_t slot,
                                        std::string_view key, std::string_view record) {
  if (key.size() > kMaxEntryField || record.size() > kMaxEntryField) return InstallResult::kTooLarge;
  std::unique_lock lock(mutex_);
  if (log_id == 0 || log_id > max_log_id_) return InstallResult::kFull;
  if (log_id <= index_.size()) {
    Index& at = index_[log_id - 1];
    if (at.ts != 0) {
      const bool same = at.ts == ts && key_of(at) == key && record_of(at) == record;
      return same ? InstallResult::kDuplicate : InstallResult::kConflict;
    }
    Index e = store(key, record);
    e.ts = ts;
    at = e;
    --gaps_;
    note_newest(e, log_id);
  } else {
    if (log_id - index_.size() > kMaxInstallAhead) return InstallResult::kTooFarAhead;
    const std::size_t skipped = log_id - 1 - index_.size();
    index_.resize(log_id - 1);  // value-initialized: ts 0, gaps
    gaps_ += skipped;
    Index e = store(key, record);
    e.ts = ts;
    index_.push_back(e);
    note_newest(e, log_id);
  }
  slot_ts_[counter_of(slot)] = std::max(slot_ts_[counter_of(slot)], ts);
  return InstallResult::kInstalled;
}

const DataLog::Index* DataLog::find(std::uint32_t log_id) const {
  if (log_id == 0 || log_id > index_.size()) return nullptr;
  const Index& e = index_[log_id - 1];
  if (e.ts == 0 || e.pending != 0) return nullptr;
  return &e;
}

std::string_view DataLog::key_of(const Index& e) const {
  return {blocks_[e.block].get() + e.offset, e.key_bytes};
}

std::string_view DataLog::record_of(const Index& e) const {
  return {blocks_[e.block].get() + e.offset + e.key_bytes, e.record_bytes};
}

DataLog::ReadResult DataLog::read(std::uint32_t log_id, std::string_view key, std::string* record) const {
  std::shared_lock lock(mutex_);
  const Index* e = find(log_id);
  if (e == nullptr) return ReadResult::kNotFound;
  if (key_of(*e) != key) return ReadResult::kMismatch;
  record->assign(record_of(*e));
  return ReadResult::kOk;
}

bool DataLog::read_newest(std::string_view key, std::string* record) const {
  std::shared_lock lock(mutex_);
  const auto it = newest_.find(std::string(key));
  if (it == newest_.end()) return false;
  const Index* e = find(it->second);
  if (e == nullptr) return false;
  record->assign(record_of(*e));
  return true;
}

std::size_t DataLog::read_newest_many(std::span<const std::string> keys, std::size_t entry_overhead,
                                     std::size_t budget, std::vector<std::string>* records) const {
  records->clear();
  std::shared_lock lock(mutex_);
  std::size_t used = 0;
  for (const std::string& key : keys) {
    std::string_view record;
    if (const auto it = newest_.find(key); it != newest_.end()) {
      if (const Index* e = find(it->second)) record = record_of(*e);
    }
    const std::size_t size = entry_overhead + key.size() + record.size();
    if (!records->empty() && used + size > budget) break;
    used += size;
    records->emplace_back(record);
  }
  return records->size();
}

std::vector<FetchedEntry> DataLog::fetch(std::uint32_t first, std::size_t max_entries,
                                         std::size_t entry_overhead, std::size_t budget, bool* more) const {
  std::uint32_t scanned = 0;
  std::size_t passed_over = 0;
  return fetch_filtered(first, max_entries, entry_overhead, budget, {}, SIZE_MAX, more, &scanned, &passed_over);
}

std::vector<FetchedEntry> DataLog::fetch_filtered(std::uint32_t first, std::size_t max_entries,
                                                  std::size_t entry_overhead, std::size_t budget,
                                                  const std::function<bool(std::string_view)>& keep,
                                                  std::size_t max_scan, bool* more, std::uint32_t* scanned,
                                                  std::size_t* passed_over) const {
  std::vector<FetchedEntry> out;
  std::shared_lock lock(mutex_);
  std::uint64_t id = first == 0 ? 1 : first;
  *scanned = static_cast<std::uint32_t>(id - 1);
  *passed_over = 0;
  bool contiguous = true;  // every id so far returned or refused: *scanned follows
  std::size_t used = 0;
  for (std::size_t examined = 0; id <= index_.size() && out.size() < max_entries && examined < max_scan;
       ++id, ++examined) {
    const Index& e = index_[id - 1];
    if (e.ts == 0 || e.pending != 0) {  // a gap (backup) or not yet committed (primary)
      contiguous = false;
      continue;
    }
    if (keep && !keep(key_of(e))) {
      ++*passed_over;
      if (contiguous) *scanned = static_cast<std::uint32_t>(id);
      continue;
    }
    const std::string_view secondary = mode_ == LogMode::kSecondaryIndex ? secondary_of(record_of(e)) : "";
    const std::size_t cost = entry_overhead + e.key_bytes + secondary.size();
    if (used + cost > budget) break;
    used += cost;
    out.push_back({static_cast<std::uint32_t>(id), e.ts, std::string(key_of(e)), std::string(secondary)});
    if (contiguous) *scanned = static_cast<std::uint32_t>(id);
  }
  *more = id <= index_.size();
  return out;
}

std::optional<DataLog::Entry> DataLog::entry(std::uint32_t log_id) const {
  std::shared_lock lock(mutex_);
  const Index* e = find(log_id);
  if (e == nullptr) return std::nullopt;
  return Entry{std::string(key_of(*e)), std::string(record_of(*e)), e->ts};
}

std::uint32_t DataLog::slot_ts(std::uint16_t slot) const {
  std::shared_lock lock(mutex_);
  return slot_ts_[counter_of(slot)];
}

std::uint64_t DataLog::primary_keys() const {
  std::shared_lock lock(mutex_);
  return newest_.size();
}

std::uint64_t DataLog::entries() const {
  std::shared_lock lock(mutex_);
  return index_.size();
}

std::uint64_t DataLog::gaps() const {
  std::shared_lock lock(mutex_);
  return gaps_;
}

std::uint64_t DataLog::bytes() const {
  std::shared_lock lock(mutex_);
  return bytes_;
}

}  // namespace forein::net::data_node
