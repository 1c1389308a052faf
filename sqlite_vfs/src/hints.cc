// The hint source: the offload manager (offload/core) with the table's
// backend (default switch_lpm), wired to the table's tree as
// tools/forein_demo.cc does. The tree's node-interval events and 1 in 16
// lookups (sampled) feed the manager; a refresh asks the backend's planner
// for the difference and installs it into the modelled device, whose image
// gives the start hint.
//
// No background thread (a loadable extension should not start threads, and
// fork() in an application must stay safe): refresh() runs inline. A
// refresh scans every key of the tree (hollow-prefix elimination) and
// recomputes the selection, so it runs when the tree is first used, then
// only after a number of operations proportional to the tree's size:
// a quarter of the keys once the tree's structure changed (node events),
// eight times the keys otherwise (re-weighting for a drifting workload).
// Its cost thus stays a small fraction of a key scan per operation.
#include <algorithm>
#include <memory>

#include "forein/offload/manager.h"
#include "forein/offload/registry.h"
#include "forein_vtab.h"

namespace forein::sqlite {
namespace {

// Operations between refreshes: at least this many, and at least the
// tree's keys times the factor (x/4 after node events, x8 without).
constexpr std::uint64_t kMinOpsBetweenRefreshes = 4096;

}  // namespace

HintSource::HintSource() = default;
HintSource::~HintSource() { detach(); }

void HintSource::on_node_event(const NodeEvent& ev) {
  ++events_since_refresh_;
  if (manager_) manager_->on_node_event(ev);
}

void HintSource::attach(Tree& tree) {
  detach();
  backend_ = std::make_unique<offload::Backend>(info_ != nullptr ? *info_
                                                                 : offload::backend_by_name("switch_lpm"));
  manager_ = std::make_unique<offload::OffloadManager>(*backend_);
  manager_->attach(tree);
  tree_ = &tree;
  refresh_stats_ = TreeStats{};
  refreshed_ = false;
  ops_since_refresh_ = 0;
  events_since_refresh_ = 0;
}

void HintSource::detach() {
  if (manager_) manager_->detach();
  manager_.reset();
  backend_.reset();
  tree_ = nullptr;
}

void HintSource::suspend() {
  if (manager_) manager_->detach();
  tree_ = nullptr;
}

void HintSource::resume(Tree& tree, const std::vector<NodeEvent>& events, std::size_t changed_pages) {
  if (!manager_) {
    attach(tree);
    return;
  }
  for (const NodeEvent& ev : events) manager_->on_node_event(ev);
  events_since_refresh_ += changed_pages;
  manager_->attach(tree);  // replays every live node (only newer versions count)
  tree_ = &tree;
  refresh_stats_ = TreeStats{};
}

void HintSource::refresh() {
  const TreeStats before = tree_->stats();
  manager_->refresh();
  manager_->flush();  // no modelled install delay here: apply now
  const TreeStats after = tree_->stats();
  refresh_stats_.hinted += after.hinted - before.hinted;
  refresh_stats_.hint_hits += after.hint_hits - before.hint_hits;
  refresh_stats_.fallbacks += after.fallbacks - before.fallbacks;
  refreshed_ = true;
  ops_since_refresh_ = 0;
  events_since_refresh_ = 0;
  ++refreshes_;
}

StartHints HintSource::hint(std::string_view key) {
  if (mode == 2 || tree_ == nullptr) return {};
  if (mode == 1) {
    // Garbage: any page (some past the end), any level up to 2.
    const std::uint64_t pages = tree_->store().page_count() + 16;
    StartHints h;
    h.primary = Hint{static_cast<PageId>(rng() % pages), static_cast<std::uint16_t>(rng() % 3), rng()};
    h.secondary = Hint{static_cast<PageId>(rng() % pages), static_cast<std::uint16_t>(rng() % 3), rng()};
    return h;
  }
  const Word w = word_of(key);
  if (!refreshed_) {
    refresh();
  } else if (++ops_since_refresh_ >= kMinOpsBetweenRefreshes) {
    const std::uint64_t keys = tree_->size();
    if (ops_since_refresh_ >= (events_since_refresh_ > 0 ? keys / 4 : keys * 8)) refresh();
  }
  manager_->sample_access(w);
  return manager_->hint_for_word(w);
}

TreeStats HintSource::own_stats() const {
  if (tree_ == nullptr) return {};
  TreeStats s = tree_->stats();
  s.hinted -= refresh_stats_.hinted;
  s.hint_hits -= refresh_stats_.hint_hits;
  s.fallbacks -= refresh_stats_.fallbacks;
  return s;
}

void HintSource::ensure_refreshed() {
  if (mode == 0 && manager_ && tree_ != nullptr && !refreshed_) refresh();
}

const char* HintSource::backend_name() const {
  return info_ != nullptr ? info_->name : "switch_lpm";
}
std::uint64_t HintSource::installed_entries() const { return backend_ ? backend_->usage().used : 0; }
std::uint64_t HintSource::capacity_entries() const {
  if (backend_) return backend_->usage().capacity;
  return info_ != nullptr ? info_->default_capacity : offload::backend_by_name("switch_lpm").default_capacity;
}

}  // namespace forein::sqlite
