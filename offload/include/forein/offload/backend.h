// The offload backend seam (docs/offload.md, docs/design.md contract 4).
//
// A backend models one piece of offload hardware in three parts:
//
//   planner  node table + access weights + key source -> a change batch in
//            the backend's own terms (LPM entries, range-table rows, cached
//            nodes, model segments ...), as the difference from what it
//            planned last time;
//   device   applies a batch all or nothing under the hardware's capacity,
//            reports usage() in the paper's units and model() figures, and
//            publishes its tables as one image after every change;
//   image    the device's tables as one flat, position-independent,
//            immutable byte string, and a pure lookup hint(image, word)
//            that is safe on torn or garbage bytes.
//
// The same image is what an in-process host reads, what PostgreSQL keeps
// in shared memory, what a software switch holds and what the control
// plane carries. Batches are bytes too, so a control plane can carry them
// unchanged; a device must refuse a malformed batch without changing
// anything.
//
// A hint is advice: hosts validate it, so a stale, torn or garbage image
// costs speed, never a wrong result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "forein/key.h"
#include "forein/node_interval.h"
#include "forein/offload/plan.h"
#include "forein/offload/published.h"

namespace forein::offload {

enum class BackendStatus : std::uint8_t {
  kOk,
  kCapacityExceeded,  // the batch would not fit; nothing was changed
  kInvalidEntry,      // a malformed batch or record; nothing was changed
};

const char* to_string(BackendStatus status);

// What a backend can do beyond being asked for start hints. Declared, not
// assumed: a host uses a capability only if the backend declares it.
enum Capability : std::uint32_t {
  kStartHints = 1u << 0,       // hint(image, word) -> start nodes (every lookup backend)
  kWriteVisibility = 1u << 1,  // in-flight updates visible in the network (Switch-delta)
  kValueCache = 1u << 2,       // hot key -> value answered by the device (DPA-Store)
  kScanExecution = 1u << 3,    // GET/SCAN executed by the device (Honeycomb)
};

// Resources in use, in the hardware's own units (LPM entries for a switch,
// bytes of SRAM or DPA memory for others), as the papers' tables report them.
struct BackendUsage {
  std::string unit;                  // e.g. "LPM entries"
  std::uint64_t used = 0;            // in `unit`
  std::uint64_t capacity = 0;        // in `unit`
  std::uint64_t hardware_bytes = 0;  // what the used entries occupy on the device
  std::uint64_t host_bytes = 0;      // memory of this software model

  double fraction() const {
    return capacity == 0 ? 0 : static_cast<double>(used) / static_cast<double>(capacity);
  }
};

// Modelled cost figures of the hardware path, for experiments that cannot
// run on the device. Each backend documents where its numbers come from.
struct BackendModel {
  double hint_latency_ns = 0;     // added to a query by the hint lookup
  double hints_per_second = 0;    // lookup throughput of the device
  double install_latency_us = 0;  // control-plane latency of one batch
  double entries_per_second = 0;  // control-plane install rate
  std::string source;             // where the figures come from
};

enum class BatchKind : std::uint8_t { kInstall, kRemove };

// A change batch in the backend's own terms, encoded by its planner and
// decoded (and validated) by its device.
struct ChangeBatch {
  BatchKind kind = BatchKind::kInstall;
  std::vector<std::byte> bytes;
  std::size_t records = 0;  // how many records `bytes` holds
};

// A named figure of one plan (layer sizes, modelled accesses ...).
struct PlanMetric {
  std::string name;
  double value = 0;
};

// The difference between what the device will hold once everything queued
// is applied and what the planner wants now.
struct PlanDiff {
  ChangeBatch install;           // new records and changed targets
  ChangeBatch remove;            // records no longer wanted
  std::size_t new_records = 0;   // installs that take new device room (not replacements)
  std::size_t target_records = 0;  // the device's records once both are applied
  // Set by a planner whose device has limits per table that one capacity
  // figure cannot show (fattree's node sets): the old and new records would
  // not fit together, so the manager queues the removals first.
  bool remove_first = false;
  std::vector<PlanMetric> metrics;
};

struct PlanInput {
  std::span<const OffloadNode> nodes;  // the live nodes with parents and weights
  const KeySource* keys = nullptr;     // the index's key words (may be null: no keys known)
  std::uint64_t capacity = 0;          // the device's capacity, in its units
  // The manager's promise that `keys` is the source of the previous plan()
  // call and its words have not changed since (same known key_generation):
  // a planner may reuse what it read from them then (switch_lpm keeps the
  // words) instead of reading them again. False: read them.
  bool keys_unchanged = false;
};

class Planner {
 public:
  virtual ~Planner() = default;
  // Plans from the current node table; remembers the new target, so the
  // next call diffs against it.
  virtual PlanDiff plan(const PlanInput& input) = 0;
  // The planned target again, whole, as one install batch (after the device
  // refused a batch, or for a new device).
  virtual ChangeBatch full_target() const = 0;
  // Forget the target: the device is empty.
  virtual void reset() = 0;
};

// One immutable version of the device's tables.
struct BackendImage {
  std::vector<std::byte> bytes;
  std::uint64_t version = 0;  // 0: the empty device; +1 per applied batch
};

class Device {
 public:
  Device();
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // All or nothing. A remove batch skips records that are not installed.
  virtual BackendStatus apply(const ChangeBatch& batch) = 0;
  virtual BackendUsage usage() const = 0;
  virtual BackendModel model() const = 0;

  // The current image; readers never block.
  const Published<BackendImage>& image() const { return image_; }
  std::shared_ptr<const BackendImage> load_image() const { return image_.load(); }

 protected:
  void publish(std::shared_ptr<const BackendImage> next) { image_.publish(std::move(next)); }

 private:
  Published<BackendImage> image_;
};

// Pure lookup over an image: never reads outside `image`, never fails; on
// bytes that are not a valid image it returns some hint or none.
using HintFunction = StartHints (*)(std::span<const std::byte> image, Word w) noexcept;

// One of a backend's own settings, declared by the backend as PostgreSQL
// declares a reloption: an integer with its range and default.
struct SettingSpec {
  const char* name;         // lower case, e.g. "hot_leaves"
  const char* description;  // one line, for errors and docs
  std::int64_t default_value;
  std::int64_t min;
  std::int64_t max;
};

// A setting as a host passes it: name=value, not yet validated.
struct BackendSetting {
  std::string name;
  std::string value;
};

// What a host configures: the two settings every backend has, and the
// backend's own settings by name (BackendInfo::settings declares them; the
// backend validates them, check_settings()).
struct BackendConfig {
  std::uint64_t capacity = 0;  // in the device's units; 0: the paper's figure
  // Planner budget in the device's units; 0: half the capacity, so a
  // complete turnover still fits while new records are installed before
  // the old ones are removed.
  std::uint64_t budget = 0;
  std::vector<BackendSetting> settings;  // unset ones take their default

  // Sets (or replaces) one of the backend's settings.
  BackendConfig& set(std::string_view name, std::string_view value);
  BackendConfig& set(std::string_view name, std::int64_t value);
};

// One line of a device's usage broken down by part (fattree: per switch and
// table), in the hardware's units, read off an image.
struct UsageRow {
  std::string device;    // "switch", "core switch", "edge switch 1" ...
  std::string resource;  // "LPM entries", "fat-root ranges", "node set 2" ...
  std::string unit;      // "entries", "ranges", "nodes", "stages" ...
  std::uint64_t used = 0;
  std::uint64_t capacity = 0;
};

// One record of an image, for diagnostics (PostgreSQL's
// forein_offload_entries): the words under a prefix (the high key_bits bits
// of key) lead to node at level; kind is the backend's record class
// (switch_lpm: the FOREIN layer).
struct ImageRecord {
  Word key = 0;
  std::uint8_t key_bits = 0;
  std::uint8_t kind = 0;
  std::uint16_t level = 0;
  PageId node = kNoPage;
};

// A registered backend: its name, paper, capabilities and factories.
struct BackendInfo {
  const char* name;
  const char* summary;  // one line: the hardware and paper it models
  std::uint32_t capabilities;
  const char* unit;  // usage() unit
  std::uint64_t default_capacity;
  // About how many units of the capacity one planned record takes, for
  // sizing capacities in records (the conformance suite does): 1 for a
  // backend that counts records (LPM entries, in-switch nodes, slots); fpga,
  // counting cache bytes, 8,192 (a node's 8 KB slot); dpa, counting DPA
  // bytes, 1,024 (an index node takes 80 bytes to about 2 KiB).
  std::uint64_t units_per_record = 1;
  HintFunction hint;
  std::unique_ptr<Planner> (*make_planner)(const BackendConfig& config);
  std::unique_ptr<Device> (*make_device)(const BackendConfig& config);
  // The largest image the device can publish with `capacity` records (for
  // hosts that reserve room for images up front, as PostgreSQL's shared
  // memory does).
  std::size_t (*max_image_bytes)(std::uint64_t capacity);
  // The image's records (empty for bytes that are not a valid image).
  std::vector<ImageRecord> (*records)(std::span<const std::byte> image);
  // The image's usage by part, for a device of `capacity` (0: the
  // default); null: one row, the record count against the capacity.
  std::vector<UsageRow> (*image_usage)(std::span<const std::byte> image,
                                       std::uint64_t capacity) = nullptr;
  // The backend's own settings (BackendConfig::settings); empty: none.
  std::span<const SettingSpec> settings = {};
  // The name hosts gave this backend's capacity before capacities were
  // named for what they size (switch_lpm: "lpm_entries", PostgreSQL's
  // forein.lpm_entries and reloption lpm_entries); hosts keep accepting it,
  // deprecated, for this backend only. Null: none.
  const char* deprecated_capacity_name = nullptr;
};

// "name=value,name=value" (blanks around names and values ignored; empty
// text: none) added to config's settings. Throws InvalidArgument for an
// item without '=', an empty name or a name config already sets. Does not
// validate values or names: check_settings().
void parse_settings(std::string_view text, BackendConfig* config);

// Throws InvalidArgument, naming the backend, the setting and what it takes,
// when config sets a name `info` does not declare (or the same one twice),
// or a value that is not an integer in the declared range.
void check_settings(const BackendInfo& info, const BackendConfig& config);

// The value of info's setting `name` in config (validated), or its default.
// Throws InvalidArgument as check_settings does, and for a name `info`
// does not declare (a backend asking for a setting it never declared).
std::int64_t setting_value(const BackendInfo& info, const BackendConfig& config, std::string_view name);

// info.image_usage, or its one-row default.
std::vector<UsageRow> image_usage(const BackendInfo& info, std::span<const std::byte> image,
                                  std::uint64_t capacity);

// One backend instance (for one index): planner and device together.
class Backend {
 public:
  // Throws InvalidArgument for a bad configuration (check_settings()).
  Backend(const BackendInfo& info, BackendConfig config = {});

  const BackendInfo& info() const { return info_; }
  const char* name() const { return info_.name; }
  const BackendConfig& config() const { return config_; }
  Planner& planner() { return *planner_; }
  Device& device() { return *device_; }
  const Device& device() const { return *device_; }

  // Start hints from the device's current image. Never blocks.
  StartHints hint_for_word(Word w) const {
    return device_->image().read(
        [&](const BackendImage& img) { return info_.hint(img.bytes, w); });
  }
  StartHints hint(std::string_view key) const { return hint_for_word(word_of(key)); }
  BackendUsage usage() const { return device_->usage(); }
  BackendModel model() const { return device_->model(); }

 private:
  const BackendInfo& info_;
  BackendConfig config_;
  std::unique_ptr<Planner> planner_;
  std::unique_ptr<Device> device_;
};

}  // namespace forein::offload
