#include "switch_lpm/lpm_table.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "forein/error.h"

namespace forein::offload {

const char* to_string(LpmStatus status) {
  switch (status) {
    case LpmStatus::kOk: return "ok";
    case LpmStatus::kCapacityExceeded: return "LPM table capacity exceeded";
    case LpmStatus::kInvalidEntry: return "invalid LPM entry";
  }
  return "?";
}

LpmAction action_of(const LpmEntry& entry) {
  return LpmAction{entry.node, entry.level, static_cast<std::uint16_t>(entry.version)};
}

namespace {

std::size_t checked_capacity(std::size_t capacity) {
  if (capacity == 0 || capacity > (std::size_t{1} << 30)) {
    throw InvalidArgument("LpmTable: capacity must be in 1..2^30, got " + std::to_string(capacity));
  }
  return capacity;
}

}  // namespace

LpmTable::LpmTable(std::size_t capacity)
    : capacity_(checked_capacity(capacity)),
      current_(std::make_shared<const LpmSnapshot>(std::span<const std::pair<Prefix, LpmAction>>(), 0)) {}

LpmStatus LpmTable::install(std::span<const LpmEntry> entries) {
  std::vector<std::pair<Prefix, LpmAction>> actions;
  actions.reserve(entries.size());
  for (const LpmEntry& entry : entries) actions.emplace_back(entry.prefix, action_of(entry));
  return install(std::span<const std::pair<Prefix, LpmAction>>(actions));
}

LpmStatus LpmTable::install(std::span<const std::pair<Prefix, LpmAction>> entries) {
  for (const auto& [prefix, action] : entries) {
    if (!prefix_valid(prefix) || action.node == 0) return LpmStatus::kInvalidEntry;
  }
  // The batch sorted, one entry per prefix: the last one given wins.
  std::vector<Entry> batch(entries.begin(), entries.end());
  std::stable_sort(batch.begin(), batch.end(),
                   [](const Entry& a, const Entry& b) { return prefix_less(a.first, b.first); });
  std::vector<Entry> unique_batch;
  unique_batch.reserve(batch.size());
  for (const Entry& e : batch) {
    if (!unique_batch.empty() && unique_batch.back().first == e.first) {
      unique_batch.back() = e;
    } else {
      unique_batch.push_back(e);
    }
  }

  std::lock_guard lock(write_mu_);
  // Merge; an installed prefix takes the batch's action.
  std::vector<Entry> merged;
  merged.reserve(entries_.size() + unique_batch.size());
  auto old_it = entries_.begin();
  for (const Entry& e : unique_batch) {
    while (old_it != entries_.end() && prefix_less(old_it->first, e.first)) merged.push_back(*old_it++);
    if (old_it != entries_.end() && old_it->first == e.first) ++old_it;
    merged.push_back(e);
  }
  merged.insert(merged.end(), old_it, entries_.end());
  if (merged.size() > capacity_) return LpmStatus::kCapacityExceeded;
  entries_ = std::move(merged);
  publish_locked();
  return LpmStatus::kOk;
}

std::size_t LpmTable::remove(std::span<const Prefix> prefixes) {
  std::vector<Prefix> gone(prefixes.begin(), prefixes.end());
  std::sort(gone.begin(), gone.end(), prefix_less);
  std::lock_guard lock(write_mu_);
  const std::size_t before = entries_.size();
  std::erase_if(entries_, [&](const Entry& e) {
    return std::binary_search(gone.begin(), gone.end(), e.first, prefix_less);
  });
  publish_locked();
  return before - entries_.size();
}

void LpmTable::clear() {
  std::lock_guard lock(write_mu_);
  entries_.clear();
  publish_locked();
}

void LpmTable::publish_locked() {
  current_.publish(std::make_shared<const LpmSnapshot>(entries_, next_version_++));
}

LpmUsage LpmTable::usage() const {
  const auto current = snapshot();
  return LpmUsage{current->entry_count(), capacity_, current->segment_count(), current->bytes()};
}

}  // namespace forein::offload
