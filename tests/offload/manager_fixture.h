// Shared pieces of the offload manager tests: a tree wired to a manager and
// a switch_lpm backend under a manual clock, a backend that records call
// order, and one that answers garbage.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "forein/key.h"
#include "forein/offload/backend.h"
#include "forein/offload/manager.h"
#include "forein/offload/manager_clock.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "switch_lpm/switch_lpm_backend.h"

namespace forein::offload::testing {

inline std::string int_key(std::int64_t i) { return encode_int64(i); }

// Live nodes by id, with their level.
inline std::map<PageId, std::uint16_t> live_nodes(Tree& tree) {
  std::map<PageId, std::uint16_t> live;
  tree.for_each_node([&](const NodeInterval& n) { live[n.node] = n.level; });
  return live;
}

// Forwards to a switch_lpm backend and logs every call.
class RecordingBackend final : public OffloadBackend {
 public:
  struct Call {
    bool install;
    std::vector<LpmEntry> entries;
  };

  explicit RecordingBackend(SwitchLpmOptions options = {}) : inner_(options) {}

  const char* name() const override { return "recording"; }
  BackendStatus install(std::span<const LpmEntry> entries) override {
    log(true, entries);
    return inner_.install(entries);
  }
  std::size_t remove(std::span<const LpmEntry> entries) override {
    log(false, entries);
    return inner_.remove(entries);
  }
  StartHints hint_for_word(Word w) const override { return inner_.hint_for_word(w); }
  BackendUsage usage() const override { return inner_.usage(); }
  BackendModel model() const override { return inner_.model(); }

  std::vector<Call> calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  SwitchLpmBackend& inner() { return inner_; }

 private:
  void log(bool install, std::span<const LpmEntry> entries) {
    std::lock_guard lock(mu_);
    calls_.push_back(Call{install, {entries.begin(), entries.end()}});
  }

  SwitchLpmBackend inner_;
  mutable std::mutex mu_;
  std::vector<Call> calls_;
};

// Accepts everything, hints at random pages and levels (some of them real
// nodes, most not). Thread-safe.
class GarbageBackend final : public OffloadBackend {
 public:
  GarbageBackend(std::uint64_t seed, const PageStore& store) : rng_(seed), store_(store) {}

  const char* name() const override { return "garbage"; }
  BackendStatus install(std::span<const LpmEntry>) override { return BackendStatus::kOk; }
  std::size_t remove(std::span<const LpmEntry> entries) override { return entries.size(); }
  StartHints hint_for_word(Word) const override {
    std::lock_guard lock(mu_);
    return StartHints{random_hint(), random_hint()};
  }
  BackendUsage usage() const override { return BackendUsage{"entries", 0, 1000, 0, 0}; }
  BackendModel model() const override { return {}; }

 private:
  Hint random_hint() const {
    const PageId pages = store_.page_count() + 8;
    Hint h;
    switch (rng_() % 4) {
      case 0: break;  // absent
      case 1: h.node = static_cast<PageId>(rng_()); break;  // far out of range
      default: h.node = static_cast<PageId>(rng_() % pages); break;
    }
    h.level = static_cast<std::uint16_t>(rng_() % 4);
    h.version = rng_();
    return h;
  }

  mutable std::mutex mu_;
  mutable std::mt19937_64 rng_;
  const PageStore& store_;
};

// A tree whose events feed a manager over a switch_lpm-like backend.
// The manager is detached before the tree is destroyed.
template <typename Backend = SwitchLpmBackend>
struct ManagedTree {
  explicit ManagedTree(ManagerOptions options = {}, SwitchLpmOptions backend_options = {},
                       std::uint32_t page_size = 4096)
      : backend(backend_options), manager(backend, with_clock(options, &clock)) {
    TreeOptions tree_options;
    tree_options.observer = &manager;
    tree_options.index_id = options.index_id;
    tree = Tree::create(std::make_unique<MemoryPageStore>(page_size), tree_options);
    manager.attach(*tree);
  }
  ~ManagedTree() { manager.detach(); }

  static ManagerOptions with_clock(ManagerOptions o, const ManagerClock* c) {
    if (o.clock == nullptr) o.clock = c;
    return o;
  }

  ManualClock clock;
  Backend backend;
  OffloadManager manager;
  std::unique_ptr<Tree> tree;
};

}  // namespace forein::offload::testing
