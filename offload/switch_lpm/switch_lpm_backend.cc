#include "switch_lpm/switch_lpm_backend.h"

#include <set>

#include "forein/error.h"
#include "manager/entry_diff.h"

namespace forein::offload {

namespace {

Hint hint_of(const LpmAction& a) { return Hint{a.node, a.level, a.version_tag}; }

}  // namespace

SwitchLpmBackend::SwitchLpmBackend(SwitchLpmOptions options)
    : options_(options),
      upper_(options.capacity),
      bottom_(options.capacity),
      snapshots_(std::make_shared<const Snapshots>(
          Snapshots{upper_.snapshot(), bottom_.snapshot()})) {}

void SwitchLpmBackend::publish_snapshots_locked() {
  snapshots_.publish(
      std::make_shared<const Snapshots>(Snapshots{upper_.snapshot(), bottom_.snapshot()}));
}

SwitchLpmBackend::Key SwitchLpmBackend::key_of(const LpmEntry& e) {
  return {is_bottom_line(e), {e.prefix.value, e.prefix.len}};
}

BackendStatus SwitchLpmBackend::install(std::span<const LpmEntry> entries) {
  std::lock_guard lock(mu_);
  std::vector<LpmEntry> upper, bottom;
  std::set<Key> added;
  for (const LpmEntry& e : entries) {
    if (e.node == kNoPage || !prefix_valid(e.prefix)) return BackendStatus::kInvalidEntry;
    const Key k = key_of(e);
    if (!installed_.contains(k)) added.insert(k);
    (is_bottom_line(e) ? bottom : upper).push_back(e);
  }
  if (installed_.size() + added.size() > options_.capacity) return BackendStatus::kCapacityExceeded;
  // Both tables hold the whole capacity, so neither can refuse what fits
  // in total; the entries were validated above.
  if ((!upper.empty() && upper_.install(upper) != LpmStatus::kOk) ||
      (!bottom.empty() && bottom_.install(bottom) != LpmStatus::kOk)) {
    throw Error("switch_lpm: an LPM table refused a validated batch");
  }
  for (const LpmEntry& e : entries) installed_[key_of(e)] = e;
  publish_snapshots_locked();
  return BackendStatus::kOk;
}

std::size_t SwitchLpmBackend::remove(std::span<const LpmEntry> entries) {
  std::lock_guard lock(mu_);
  std::vector<Prefix> upper, bottom;
  std::size_t removed = 0;
  for (const LpmEntry& e : entries) {
    if (installed_.erase(key_of(e)) == 0) continue;
    ++removed;
    (is_bottom_line(e) ? bottom : upper).push_back(e.prefix);
  }
  if (!upper.empty()) upper_.remove(upper);
  if (!bottom.empty()) bottom_.remove(bottom);
  if (removed > 0) publish_snapshots_locked();
  return removed;
}

StartHints SwitchLpmBackend::hint_for_word(Word w) const {
  StartHints hints;
  const auto [upper, bottom] = snapshots_.read([w](const Snapshots& s) {
    return std::pair{s.upper->lookup(w), s.bottom->lookup(w)};
  });
  if (upper) {
    hints.primary = hint_of(*upper);
    if (bottom) hints.secondary = hint_of(*bottom);
  } else if (bottom) {
    hints.primary = hint_of(*bottom);
  }
  return hints;
}

BackendUsage SwitchLpmBackend::usage() const {
  const LpmUsage u = upper_.usage(), b = bottom_.usage();
  BackendUsage usage;
  usage.unit = "LPM entries";
  usage.used = u.entries + b.entries;
  usage.capacity = options_.capacity;
  usage.hardware_bytes = usage.used * kBytesPerEntry;
  usage.host_bytes = u.bytes + b.bytes;
  return usage;
}

BackendModel SwitchLpmBackend::model() const {
  BackendModel m;
  m.hint_latency_ns = options_.hint_latency_ns;
  m.hints_per_second = options_.hints_per_second;
  m.install_latency_us = options_.install_latency_us;
  m.entries_per_second = options_.entries_per_second;
  m.source = "switch_lpm: assumed Tofino figures (SwitchLpmOptions); the FOREIN paper reports none";
  return m;
}

std::vector<LpmEntry> SwitchLpmBackend::entries() const {
  std::lock_guard lock(mu_);
  std::vector<LpmEntry> out;
  out.reserve(installed_.size());
  for (const auto& item : installed_) out.push_back(item.second);
  return out;
}

}  // namespace forein::offload
