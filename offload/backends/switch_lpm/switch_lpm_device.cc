#include "switch_lpm/switch_lpm_device.h"

#include <memory>
#include <set>

#include "forein/error.h"
#include "switch_lpm/entry_diff.h"
#include "switch_lpm/lpm_batch.h"
#include "switch_lpm/lpm_image.h"

namespace forein::offload {

SwitchLpmDevice::SwitchLpmDevice(SwitchLpmOptions options)
    : options_(options), upper_(options.capacity), bottom_(options.capacity) {
  publish_image_locked();  // version 0: the empty tables
}

void SwitchLpmDevice::publish_image_locked() {
  std::vector<LpmEntry> upper, bottom;
  for (const auto& [key, e] : installed_) (is_bottom_line(e) ? bottom : upper).push_back(e);
  auto image = std::make_shared<BackendImage>();
  image->version = version_;
  image->bytes = build_lpm_image(upper, bottom, version_);
  publish(std::move(image));
}

BackendStatus SwitchLpmDevice::apply(const ChangeBatch& batch) {
  std::vector<LpmEntry> entries;
  if (!decode_lpm_batch(batch, &entries)) return BackendStatus::kInvalidEntry;
  if (batch.kind == BatchKind::kInstall) return install(entries);
  remove(entries);
  return BackendStatus::kOk;
}

StartHints SwitchLpmDevice::hint_for_word(Word w) const {
  return image().read([w](const BackendImage& img) { return lpm_image_hint(img.bytes, w); });
}

SwitchLpmDevice::Key SwitchLpmDevice::key_of(const LpmEntry& e) {
  return {is_bottom_line(e), {e.prefix.value, e.prefix.len}};
}

BackendStatus SwitchLpmDevice::install(std::span<const LpmEntry> entries) {
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
  ++version_;
  publish_image_locked();
  return BackendStatus::kOk;
}

std::size_t SwitchLpmDevice::remove(std::span<const LpmEntry> entries) {
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
  if (removed > 0) {
    ++version_;
    publish_image_locked();
  }
  return removed;
}

BackendUsage SwitchLpmDevice::usage() const {
  const LpmUsage u = upper_.usage(), b = bottom_.usage();
  BackendUsage usage;
  usage.unit = "LPM entries";
  usage.used = u.entries + b.entries;
  usage.capacity = options_.capacity;
  usage.hardware_bytes = usage.used * kBytesPerEntry;
  usage.host_bytes = u.bytes + b.bytes +
                     image().read([](const BackendImage& img) { return img.bytes.size(); });
  return usage;
}

BackendModel SwitchLpmDevice::model() const {
  BackendModel m;
  m.hint_latency_ns = options_.hint_latency_ns;
  m.hints_per_second = options_.hints_per_second;
  m.install_latency_us = options_.install_latency_us;
  m.entries_per_second = options_.entries_per_second;
  m.source = "switch_lpm: assumed Tofino figures (SwitchLpmOptions); the FOREIN paper reports none";
  return m;
}

std::vector<LpmEntry> SwitchLpmDevice::entries() const {
  std::lock_guard lock(mu_);
  std::vector<LpmEntry> out;
  out.reserve(installed_.size());
  for (const auto& item : installed_) out.push_back(item.second);
  return out;
}

}  // namespace forein::offload
