#include "forein/offload/manager.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "core/control_plane.h"
#include "core/invalid_nodes.h"
#include "core/node_table.h"

namespace forein::offload {

namespace {

// Samples kept between refreshes; beyond this, new samples are dropped
// (a host that never refreshes must not grow without bound).
constexpr std::size_t kMaxPendingSamples = std::size_t{1} << 20;

// CPU time of the calling thread.
ManagerDuration thread_cpu_time() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

}  // namespace

ManagerDuration background_refresh_interval(ManagerDuration period, ManagerDuration cost, double share) {
  if (!(share > 0) || cost.count() <= 0) return period;
  const double spaced = static_cast<double>(cost.count()) / std::min(share, 1.0);
  // Bounded so a pathological cost cannot overflow: an hour at most.
  const double cap = static_cast<double>(std::chrono::nanoseconds(std::chrono::hours(1)).count());
  return std::max(period, ManagerDuration(static_cast<ManagerDuration::rep>(std::min(spaced, cap))));
}

double ManagerStats::metric(std::string_view name) const {
  for (const PlanMetric& m : plan_metrics) {
    if (m.name == name) return m.value;
  }
  return 0;
}

OffloadManager::OffloadManager(Backend& backend, ManagerOptions options)
    : backend_(backend),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : steady_clock_),
      control_(std::make_unique<DelayedControlPlane>(backend.device())),
      invalid_(std::make_unique<InvalidNodes>()),
      table_(std::make_unique<NodeTable>()),
      delay_rng_(options_.delay_seed) {}

OffloadManager::~OffloadManager() { detach(); }

void OffloadManager::attach(const IndexSource& source) { attach(source, nullptr); }

void OffloadManager::attach(const IndexSource& source, std::unique_ptr<IndexSource> owned) {
  {
    std::lock_guard lock(refresh_mu_);
    source_ = &source;
    owned_source_ = std::move(owned);
    source.for_each_node([&](const NodeInterval& iv) {
      table_->apply(NodeEvent{NodeEventKind::kCreated, iv});
    });
    table_changed_ = true;  // a new source: plan from it
    planned_key_generation_ = kUnknownKeyGeneration;
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
  source_ = nullptr;
  owned_source_.reset();
  planned_key_generation_ = kUnknownKeyGeneration;
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

void OffloadManager::sync_nodes(std::span<const NodeInterval> nodes) {
  std::lock_guard lock(refresh_mu_);
  if (table_->replace_all(nodes)) table_changed_ = true;
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
  const ManagerDuration cpu_start = thread_cpu_time();
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
  // Decay changes the table unless every weight is 0 (or the factor is 1).
  // It is not neutral to the plan: leaves weigh their samples plus the
  // prior, and the greedy ranks nodes by absolute AMA reductions under a
  // budget, so scaling the sampled part alone can reorder nodes. Hence no
  // refresh is skipped while some weight is left, and negligible_weight
  // brings every weight to exactly 0 a bounded number of refreshes after
  // the samples stop.
  if (applied_events != 0 || !samples.empty() ||
      (options_.weight_decay != 1.0 && table_->has_weight())) {
    table_changed_ = true;
  }
  table_->decay(options_.weight_decay, options_.negligible_weight);
  table_->add_accesses(samples);
  const std::vector<PageId> dead = table_->take_newly_dead();

  // Phase I: the planner's difference between what the device will hold
  // and what the current node table wants. Without a source there is
  // nothing to plan from: the installed set stays.
  //
  // Skipping the planner: the plan is a function of the node table (live
  // nodes, parents, weights plus the prior), the key words and the
  // capacity, and of the planner's previous target. When the table did not
  // change since the last plan (no event, sample, changed sync_nodes or
  // effective decay: table_changed_ false) and the source reports the same
  // known key_generation as before that plan, this plan's input is the last
  // one's, bit for bit, and every planner diffs an unchanged input to
  // nothing (the same target; tests/offload/test_idle_refresh.cc compares a
  // skipping manager with one that plans every time, image byte for byte).
  // Since a skip needs weights that decay leaves unchanged (all 0), there
  // is no decay to carry over to the next plan: the factor^n of skipped
  // refreshes is 1.
  const std::uint64_t capacity = backend_.usage().capacity;
  PlanDiff diff;
  const std::size_t before = target_records_;
  bool planned = false;
  if (source_ != nullptr) {
    // Read before the words are: a key change after this read makes the
    // next refresh's generation differ.
    const std::uint64_t key_generation = source_->key_generation();
    const bool keys_unchanged =
        key_generation != kUnknownKeyGeneration && key_generation == planned_key_generation_;
    if (!options_.skip_unchanged || table_changed_ || !keys_unchanged) {
      const std::vector<OffloadNode> table = table_->build(options_.prior_weight);
      diff = backend_.planner().plan(PlanInput{table, source_, capacity, keys_unchanged});
      target_records_ = diff.target_records;
      table_changed_ = false;
      planned_key_generation_ = key_generation;
      planned = true;
    } else {
      diff.target_records = target_records_;
    }
  } else {
    diff.target_records = target_records_;
  }
  if (reinstall_all_.exchange(false)) {
    diff.install = backend_.planner().full_target();
  }

  // Phase II: queue the difference, installs first unless both sets
  // together would not fit the device.
  const bool remove_first =
      diff.remove_first || (capacity != 0 && before + diff.new_records > capacity);
  const ManagerDuration now = clock_.now();
  const std::size_t installs = diff.install.records, removes = diff.remove.records;
  auto queue_installs = [&] {
    if (installs != 0) control_->enqueue(std::move(diff.install), now + next_delay());
  };
  auto queue_removes = [&] {
    if (removes != 0) control_->enqueue(std::move(diff.remove), now + next_delay());
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

  {
    std::lock_guard s(stats_mu_);
    stats_.plans += planned;
    stats_.skipped_refreshes += source_ != nullptr && !planned;
    stats_.events += applied_events;
    stats_.foreign_events += foreign_events;
    stats_.sampled_accesses += samples.size();
    stats_.install_batches += installs != 0;
    stats_.remove_batches += removes != 0;
    stats_.remove_first_batches += remove_first && installs != 0 && removes != 0;
    stats_.entries_queued_install += installs;
    stats_.entries_queued_remove += removes;
    stats_.target_entries = target_records_;
    stats_.live_nodes = table_->live_count();
    if (planned) stats_.plan_metrics = std::move(diff.metrics);
  }
  lock.unlock();
  pump();
  const auto cpu_us = std::chrono::duration_cast<std::chrono::microseconds>(thread_cpu_time() - cpu_start);
  {
    std::lock_guard s(stats_mu_);
    ++stats_.refreshes;  // last, with its cost: a reader that sees the count sees the cost
    stats_.refresh_cpu_us += static_cast<std::uint64_t>(cpu_us.count());
    stats_.last_refresh_cpu_us = static_cast<std::uint64_t>(cpu_us.count());
  }
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
  ManagerDuration interval = options_.refresh_period;
  set_refresh_interval(interval);
  std::unique_lock lock(thread_mu_);
  while (!stop_) {
    wake_.wait_for(lock, options_.pump_period, [&] { return stop_ || refresh_requested_; });
    if (stop_) break;
    const bool due = refresh_requested_ || steady_clock::now() - last_refresh >= interval;
    refresh_requested_ = false;
    lock.unlock();
    if (due) {
      const ManagerDuration cpu_start = thread_cpu_time();
      refresh();
      last_refresh = steady_clock::now();
      interval = background_refresh_interval(options_.refresh_period, thread_cpu_time() - cpu_start,
                                             options_.max_refresh_share);
      set_refresh_interval(interval);
    } else {
      pump();
    }
    lock.lock();
  }
}

void OffloadManager::set_refresh_interval(ManagerDuration interval) {
  std::lock_guard s(stats_mu_);
  stats_.refresh_interval_ms =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(interval).count());
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

StartHints OffloadManager::hint_for_word(Word w) const { return filter(backend_.hint_for_word(w)); }

std::shared_ptr<const BackendImage> OffloadManager::set_apply_listener(ApplyListener* listener) {
  return control_->set_listener(listener);
}

bool OffloadManager::is_invalid(PageId node) const { return invalid_->contains(node); }

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
