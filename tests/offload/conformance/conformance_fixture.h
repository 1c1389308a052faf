// Shared pieces of the offload conformance suite (docs/offload-conformance.md):
// every test loops over conformance_backends() (conformance_backends.h: the
// registered backends, then any a linked-in test file adds, registered or
// not), so a new backend is tested with no edit here.
//
// A ConformanceTree is an engine tree whose node events feed an
// OffloadManager over Backend(info, config) under a manual clock; the
// manager is detached before the tree is destroyed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "forein/key.h"
#include "forein/node_interval.h"
#include "forein/offload/backend.h"
#include "forein/offload/manager.h"
#include "forein/offload/manager_clock.h"
#include "forein/offload/registry.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "offload/conformance/conformance_backends.h"

#if defined(__SANITIZE_ADDRESS__)
#define FOREIN_CONFORMANCE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FOREIN_CONFORMANCE_ASAN 1
#endif
#endif
#if defined(FOREIN_CONFORMANCE_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace forein::offload::conformance {

inline std::string int_key(std::int64_t i) { return encode_int64(i); }

// Whether the backend can hold anything at all ("none" cannot).
inline bool holds_records(const BackendInfo& info) { return info.default_capacity > 0; }

// Whether its planner plans records from the tree: a backend that holds
// records and gives start hints. switch_visibility holds slots but plans
// none (packets on the network path fill them), and gives no hints: for it
// the suite checks that it plans nothing, refuses non-empty batches and
// never returns a hint, on any image.
inline bool plans_records(const BackendInfo& info) {
  return holds_records(info) && (info.capabilities & kStartHints) != 0;
}

// Device units one planned record takes (BackendInfo::units_per_record,
// declared by the backend; 0 is taken as 1). Capacities the suite chooses in
// records are scaled by it.
inline std::uint64_t units_per_record(const BackendInfo& info) {
  return info.units_per_record == 0 ? 1 : info.units_per_record;
}

struct ConformanceTree {
  explicit ConformanceTree(const BackendInfo& info, BackendConfig config = {},
                           ManagerOptions options = {})
      : backend(info, config), manager(backend, with_clock(options, &clock)) {
    TreeOptions tree_options;
    tree_options.observer = &manager;
    tree_options.index_id = options.index_id;
    tree = Tree::create(std::make_unique<MemoryPageStore>(4096), tree_options);
    manager.attach(*tree);
  }
  ~ConformanceTree() { manager.detach(); }
  ConformanceTree(const ConformanceTree&) = delete;
  ConformanceTree& operator=(const ConformanceTree&) = delete;

  static ManagerOptions with_clock(ManagerOptions o, const ManagerClock* c) {
    if (o.clock == nullptr) o.clock = c;
    return o;
  }

  // Plans from the tree as it is now and installs everything.
  void settle() {
    manager.refresh();
    manager.flush();
  }

  std::set<PageId> live_node_ids() {
    std::set<PageId> ids;
    tree->for_each_node([&](const NodeInterval& n) { ids.insert(n.node); });
    return ids;
  }

  std::vector<std::byte> image_bytes() const { return backend.device().load_image()->bytes; }

  ManualClock clock;
  Backend backend;
  OffloadManager manager;
  std::unique_ptr<Tree> tree;
};

// Keys i * stride for i in [0, n), values of `value_bytes` bytes (large
// values make small leaves, so a few thousand keys give a tall tree).
inline void bulk_load_ints(Tree& tree, std::int64_t n, std::int64_t stride,
                           std::size_t value_bytes) {
  std::vector<std::pair<std::string, std::string>> items;
  items.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    items.emplace_back(int_key(i * stride), std::string(value_bytes, static_cast<char>('a' + i % 26)));
  }
  tree.bulk_load(items);
}

// A heap buffer that holds `bytes` at a chosen misalignment with nothing
// readable after the last byte: under AddressSanitizer the rest of the
// allocation is poisoned, so hint() reading one byte past its span fails.
class ExactBuffer {
 public:
  ExactBuffer(std::span<const std::byte> bytes, std::size_t misalign = 0)
      : storage_(bytes.size() + misalign + kSlack), misalign_(misalign), size_(bytes.size()) {
    if (!bytes.empty()) std::memcpy(storage_.data() + misalign_, bytes.data(), bytes.size());
    poison();
  }
  ~ExactBuffer() { unpoison(); }
  ExactBuffer(const ExactBuffer&) = delete;
  ExactBuffer& operator=(const ExactBuffer&) = delete;

  std::span<const std::byte> span() const { return {storage_.data() + misalign_, size_}; }

  // Shrinks the readable part to the first n bytes (n <= the size given).
  void truncate(std::size_t n) {
    unpoison();
    size_ = n;
    poison();
  }

 private:
  static constexpr std::size_t kSlack = 64;
  void poison() {
#if defined(FOREIN_CONFORMANCE_ASAN)
    ASAN_POISON_MEMORY_REGION(storage_.data(), misalign_);
    ASAN_POISON_MEMORY_REGION(storage_.data() + misalign_ + size_, storage_.size() - misalign_ - size_);
#endif
  }
  void unpoison() {
#if defined(FOREIN_CONFORMANCE_ASAN)
    ASAN_UNPOISON_MEMORY_REGION(storage_.data(), storage_.size());
#endif
  }

  std::vector<std::byte> storage_;
  std::size_t misalign_;
  std::size_t size_;
};

}  // namespace forein::offload::conformance
