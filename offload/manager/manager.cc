#include "forein/offload/manager.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "forein/offload/layers.h"
#include "forein/tree.h"
#include "manager/control_plane.h"
#include "manager/entry_diff.h"
#include "manager/invalid_nodes.h"
#include "manager/node_table.h"

namespace forein::offload {

namespace {

// Samples kept between refreshes; beyond this, new samples are dropped
// (a host that never refreshes must not grow without bound).
constexpr std::size_t kMaxPendingSamples = std::size_t{1} << 20;

// The distinct words of the tree's keys, ascending (for hollow-prefix
// elimination). Not a snapshot: keys written meanwhile may or may not be
// seen, which only decides whether a prefix is treated as hollow.
std::vector<Word> present_words(Tree& tree) {
  std::vector<Word> words;
  words.reserve(tree.size());
  tree.scan(ScanSpec{}, [&](std::string_view key, std::string_view) {
    const Word w = word_of(key);
    if (words.empty() || words.back() != w) words.push_back(w);
    return true;
  });
  return words;
}

}  // namespace

OffloadManager::OffloadManager(OffloadBackend& backend, ManagerOptions options)
    : backend_(backend),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : steady_clock_),
      control_(std::make_unique<DelayedControlPlane>(backend)),
      invalid_(std::make_unique<InvalidNodes>()),
      table_(std::make_unique<NodeTable>()),
      delay_rng_(options_.delay_seed) {}

OffloadManager::~OffloadManager() { detach(); }

void OffloadManager::attach(Tree& tree) {
  {
    std::lock_guard lock(refresh_mu_);
    tree_ = &tree;
    tree.for_each_node([&](const NodeInterval& iv) {
      table_->apply(NodeEvent{NodeEventKind::kCreated, iv});
    });
  }
  if (options_.refresh_period.count() > 0 && !thread_.joinable()) {
    {
      std::lock_guard lock(thread_mu_);
      stop_ = false;
    }
    thread_ = std::thread([this] { run_background(); });
  }
}

void OffloadManager::detach() {
  stop_background();
  std::lock_guard lock(refresh_mu_);
  tree_ = nullptr;
}

void OffloadManager::stop_background() {
  if (thread_.joinable()) {
    {
      std::lock_guard lock(thread_mu_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
}

void OffloadManager::on_node_event(const NodeEvent& event) {
  std::lock_guard lock(input_mu_);
  events_.push_back(event);
}

void OffloadManager::record_access(Word w) {
  std::lock_guard lock(input_mu_);
  if (samples_.size() < kMaxPendingSamples) samples_.push_back(w);
}

void OffloadManager::sample_access(Word w) {
  if (options_.sample_rate == 0) return;
  thread_local std::uint32_t calls = 0;
  if (++calls % options_.sample_rate == 0) record_access(w);
}

ManagerDuration OffloadManager::next_delay() {
  ManagerDuration delay = options_.install_delay;
  if (options_.install_delay_jitter.count() > 0) {
    std::uniform_int_distribution<std::int64_t> jitter(0, options_.install_delay_jitter.count());
    delay += ManagerDuration(jitter(delay_rng_));
  }
  return delay;
}

void OffloadManager::refresh() {
  std::unique_lock lock(refresh_mu_);
  std::vector<NodeEvent> events;
  std::vector<Word> samples;
  {
    std::lock_guard input(input_mu_);
    events.swap(events_);
    samples.swap(samples_);
  }
  std::uint64_t applied_events = 0, foreign_events = 0;
  for (const NodeEvent& e : events) {
    if (e.interval.index != options_.index_id) {
      ++foreign_events;
      continue;
    }
    table_->apply(e);
    ++applied_events;
  }
  table_->decay(options_.weight_decay);
  table_->add_accesses(samples);
  const std::vector<PageId> dead = table_->take_newly_dead();

  // Phase I: the entry set the current tree wants.
  std::vector<LpmEntry> next;
  LayeredEntries layers;
  const std::vector<OffloadNode> table = table_->build(options_.prior_weight);
  const std::uint64_t capacity = backend_.usage().capacity;
  if (tree_ != nullptr && !table.empty()) {
    LayerOptions layer_options;
    layer_options.budget = options_.budget != 0 ? options_.budget : capacity / 2;
    layer_options.bottom_line_level = options_.bottom_line_level;
    layer_options.hot_leaves = options_.hot_leaves;
    const std::vector<Word> words = present_words(*tree_);
    layers = build_layered_entries(table, words, layer_options);
    next.reserve(layers.entries.size());
    for (const LpmEntry& e : layers.entries) {
      if (e.node != kNoPage) next.push_back(e);  // not the synthetic root's
    }
  }
  sort_entries(next);

  // Phase II: queue the difference, installs first unless both sets
  // together would not fit the device. Without a tree there is nothing to
  // recompute from: the installed set stays.
  if (tree_ == nullptr) next = target_;
  EntryDiff diff = diff_entries(target_, next);
  if (reinstall_all_.exchange(false)) diff.install = next;
  const bool remove_first = capacity != 0 && target_.size() + diff.new_keys > capacity;
  const ManagerDuration now = clock_.now();
  const std::size_t installs = diff.install.size(), removes = diff.remove.size();
  auto queue_installs = [&] {
    if (!diff.install.empty()) {
      control_->enqueue(BatchKind::kInstall, std::move(diff.install), now + next_delay());
    }
  };
  auto queue_removes = [&] {
    if (!diff.remove.empty()) {
      control_->enqueue(BatchKind::kRemove, std::move(diff.remove), now + next_delay());
    }
  };
  if (remove_first) {
    queue_removes();
    queue_installs();
  } else {
    queue_installs();
    queue_removes();
  }
  // Once everything queued so far is applied, the device holds the new set,
  // which has no entry of a dead node.
  const std::uint64_t confirm_seq = control_->enqueued_seq();
  if (!dead.empty() && confirm_seq > control_->applied_seq()) invalid_->add(dead, confirm_seq);
  target_ = std::move(next);

  {
    std::lock_guard s(stats_mu_);
    ++stats_.refreshes;
    stats_.events += applied_events;
    stats_.foreign_events += foreign_events;
    stats_.sampled_accesses += samples.size();
    stats_.install_batches += installs != 0;
    stats_.remove_batches += removes != 0;
    stats_.remove_first_batches += remove_first && installs != 0 && removes != 0;
    stats_.entries_queued_install += installs;
    stats_.entries_queued_remove += removes;
    stats_.target_entries = target_.size();
    stats_.live_nodes = table_->live_count();
    stats_.bottom_line_entries = layers.bottom_line_entries;
    stats_.main_entries = layers.main_entries;
    stats_.hot_leaf_entries = layers.hot_leaf_entries;
    stats_.bottom_line_level = layers.bottom_line_level;
    stats_.modelled_ama = layers.selection.ama;
  }
  lock.unlock();
  pump();
}

void OffloadManager::after_pump(std::size_t batches, std::size_t installed, std::size_t removed,
                                std::size_t failed, std::uint64_t applied_seq) {
  invalid_->confirm(applied_seq);
  if (failed != 0) reinstall_all_.store(true);
  if (batches == 0) return;
  std::lock_guard s(stats_mu_);
  stats_.entries_installed += installed;
  stats_.entries_removed += removed;
  stats_.failed_installs += failed;
}

std::size_t OffloadManager::pump() {
  const PumpResult r = control_->pump(clock_.now());
  after_pump(r.batches, r.installed, r.removed, r.failed_installs, r.applied_seq);
  return r.batches;
}

std::size_t OffloadManager::flush() {
  const PumpResult r = control_->flush();
  after_pump(r.batches, r.installed, r.removed, r.failed_installs, r.applied_seq);
  return r.batches;
}

void OffloadManager::request_refresh() {
  {
    std::lock_guard lock(thread_mu_);
    refresh_requested_ = true;
  }
  wake_.notify_all();
}

void OffloadManager::run_background() {
  using std::chrono::steady_clock;
  auto last_refresh = steady_clock::now();
  std::unique_lock lock(thread_mu_);
  while (!stop_) {
    wake_.wait_for(lock, options_.pump_period, [&] { return stop_ || refresh_requested_; });
    if (stop_) break;
    const bool due = refresh_requested_ || steady_clock::now() - last_refresh >= options_.refresh_period;
    refresh_requested_ = false;
    lock.unlock();
    if (due) {
      refresh();
      last_refresh = steady_clock::now();
    } else {
      pump();
    }
    lock.lock();
  }
}

StartHints OffloadManager::filter(StartHints hints) const {
  if (invalid_->size() == 0) return hints;
  if (hints.secondary.present() && invalid_->contains(hints.secondary.node)) hints.secondary = {};
  if (hints.primary.present() && invalid_->contains(hints.primary.node)) {
    hints.primary = hints.secondary;
    hints.secondary = {};
  }
  return hints;
}

StartHints OffloadManager::hint(std::string_view key) const { return filter(backend_.hint(key)); }

bool OffloadManager::is_invalid(PageId node) const { return invalid_->contains(node); }

std::vector<LpmEntry> OffloadManager::target_entries() const {
  std::lock_guard lock(refresh_mu_);
  return target_;
}

ManagerStats OffloadManager::stats() const {
  ManagerStats s;
  {
    std::lock_guard lock(stats_mu_);
    s = stats_;
  }
  s.pending_batches = control_->pending();
  s.invalid_nodes = invalid_->size();
  return s;
}

}  // namespace forein::offload
