// The offload manager (docs/design.md, data flow and contract 3): turns one
// index's node-interval events and sampled accesses into a node table,
// asks the backend's planner for the difference to install, and pushes it
// to the backend's device, new records before removals, through a control
// plane with a configurable install delay. It knows no backend's terms:
// batches are the planner's bytes, hints come from the device's image.
//
// Never on the tree's critical path: on_node_event() appends to a queue and
// returns; record_access() appends a word. All work happens in refresh()
// (explicit, or every refresh_period on the manager's own thread) and
// pump() (applies the batches whose delay has passed).
//
// Idle costs nothing: refresh() asks the planner only when its input may
// have changed since the last plan (node events, sampled accesses, a new
// node table from sync_nodes, another key_generation of the source, weights
// that decay would still change); otherwise the plan would be the last one
// again and the refresh only pumps (ManagerStats::skipped_refreshes).
//
// Coherence while batches are pending (FOREIN section V-D) needs nothing
// from the tree beyond its validation: a key under a hollow prefix that is
// not installed yet matches a shorter prefix (an ancestor or the bottom
// line) and descends from there; after a split the stale entry leads to
// the old node and the sibling link to the new one; after a merge the dead
// node is tracked here as invalid until the batch removing its entries is
// applied, and filter()/hint() skip it so the lookup goes to the secondary
// hint instead of visiting a dead page.
//
// Lifetime: construct the manager, create the tree with
// TreeOptions::observer = &manager, then attach(tree) (or attach any
// IndexSource: a host that is not the engine's tree lists its nodes and key
// words itself). Call detach() (or destroy the manager) before the tree or
// source is destroyed.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "forein/node_interval.h"
#include "forein/offload/backend.h"
#include "forein/offload/manager_clock.h"
#include "forein/offload/plan.h"

namespace forein {
class Tree;
}

namespace forein::offload {

class DelayedControlPlane;
class InvalidNodes;
class NodeTable;

// Told of every batch the manager's control plane applies to the device,
// in the order applied (installs before removals, as queued), right after
// Device::apply returned, so after the install delay. Called on the thread
// that pumps (a host's, or the manager's own), under the control plane's
// lock: it must be short and must not call back into the manager (queue
// the work; AgentMirror in net/agent forwards batches to a switch agent).
// Refused batches are reported too, with their status; they changed
// nothing on the device.
class ApplyListener {
 public:
  virtual ~ApplyListener() = default;
  virtual void on_applied(const ChangeBatch& batch, BackendStatus status) = 0;
};

struct ManagerOptions {
  std::uint64_t index_id = 0;  // TreeOptions::index_id of the tree; other events are ignored
  // sample_access() passes 1 in sample_rate calls to record_access()
  // (1: every lookup; 0: none).
  std::uint32_t sample_rate = 16;
  // Weight of every leaf before sampling, so a tree without samples still
  // gets its leaves selected evenly.
  double prior_weight = 1.0;
  // Weights are multiplied by this at every refresh, so the selection
  // follows a drifting workload.
  double weight_decay = 0.5;
  // A weight that decays below this becomes 0 (one sampled access weighs
  // 1; 2^-20 is 20 halvings: 2 s of 100 ms refreshes at the default decay).
  // The heat of a workload that stopped thus fades out completely, and
  // once every weight is 0 an idle refresh plans nothing (0: weights fade
  // only by underflow, after about 1,100 halvings).
  double negligible_weight = 1.0 / (1 << 20);
  // Skip the planner when nothing it plans from can have changed (see
  // refresh()). false: plan at every refresh (tests compare the two).
  bool skip_unchanged = true;
  // Control-plane latency from "computed" to "installed": each batch is due
  // install_delay plus a uniform draw from [0, install_delay_jitter] after
  // its refresh (jitter drawn from delay_seed).
  ManagerDuration install_delay{0};
  ManagerDuration install_delay_jitter{0};
  std::uint64_t delay_seed = 0;
  const ManagerClock* clock = nullptr;  // null: the steady clock
  // Background thread: refresh every refresh_period (0: no thread; call
  // refresh() and pump() yourself), pump every pump_period.
  ManagerDuration refresh_period{0};
  ManagerDuration pump_period{std::chrono::milliseconds(1)};
  // The background thread spends at most this share of one core in
  // refresh(): after a refresh that took c of its CPU time, the next one is
  // due no sooner than c / max_refresh_share later (so refreshes space out
  // on a tree whose plan is expensive -- 1e8 keys under a moving workload --
  // instead of taking a core from the data path; the way autovacuum's cost
  // delay bounds vacuum). 0: no bound, a refresh every refresh_period.
  // request_refresh() is not bounded.
  double max_refresh_share = 0.05;
};

// The background thread's wait from the end of one refresh to the next:
// the period, or longer where the refresh's CPU cost `cost` would make
// refreshes take more than `share` of a core (share 0: the period).
ManagerDuration background_refresh_interval(ManagerDuration period, ManagerDuration cost, double share);

struct ManagerStats {
  std::uint64_t refreshes = 0;          // refresh() calls, planned or skipped
  std::uint64_t plans = 0;              // refreshes that asked the planner
  std::uint64_t skipped_refreshes = 0;  // refreshes with nothing to plan (refreshes - plans, when a source is attached)
  std::uint64_t refresh_cpu_us = 0;     // CPU time of the thread(s) running refresh(), summed
  std::uint64_t last_refresh_cpu_us = 0;
  // The background thread's current wait between refreshes (refresh_period,
  // or longer under max_refresh_share); 0 without the thread.
  std::uint64_t refresh_interval_ms = 0;
  std::uint64_t events = 0;            // node events applied (ignoring foreign indexes)
  std::uint64_t foreign_events = 0;    // events of another index_id
  std::uint64_t sampled_accesses = 0;
  std::uint64_t install_batches = 0;   // queued
  std::uint64_t remove_batches = 0;    // queued
  std::uint64_t remove_first_batches = 0;  // refreshes that had to remove before installing (capacity)
  // Entries are the device's records (LPM entries for switch_lpm).
  std::uint64_t entries_queued_install = 0;
  std::uint64_t entries_queued_remove = 0;
  std::uint64_t entries_installed = 0;  // applied to the device
  std::uint64_t entries_removed = 0;
  std::uint64_t failed_installs = 0;    // batches the device refused
  std::size_t pending_batches = 0;
  std::size_t target_entries = 0;       // what the device holds once nothing is pending
  std::size_t invalid_nodes = 0;
  std::size_t live_nodes = 0;
  // The last plan's own figures (switch_lpm: its layers and modelled AMA).
  std::vector<PlanMetric> plan_metrics;

  // A plan metric by name; 0 if the last plan had none.
  double metric(std::string_view name) const;
};

class OffloadManager final : public NodeObserver {
 public:
  explicit OffloadManager(Backend& backend, ManagerOptions options = {});
  ~OffloadManager() override;
  OffloadManager(const OffloadManager&) = delete;
  OffloadManager& operator=(const OffloadManager&) = delete;

  // Reads the source's live nodes into the node table (events already
  // queued or arriving later are reconciled by version) and starts the
  // background thread if refresh_period > 0. The source must outlive the
  // attachment.
  void attach(const IndexSource& source);
  // The same for the engine's tree (defined in tree_source.cc, so hosts
  // that are not the engine link no engine code).
  void attach(Tree& tree);
  // Stops the background thread and forgets the source. Pending batches
  // stay queued.
  void detach();
  // Stops the background thread only; refresh() and pump() still work.
  void stop_background();

  // For hosts without node events: the index's whole live node table, read
  // now. Nodes that are gone count as merged away (tracked as invalid until
  // a batch without them is applied). Applied at once, not queued.
  void sync_nodes(std::span<const NodeInterval> nodes);

  // NodeObserver: queue the event, nothing else.
  void on_node_event(const NodeEvent& event) override;

  // One sampled access to the key word w (adds weight to its leaf at the
  // next refresh).
  void record_access(Word w);
  // Calls record_access() for 1 in sample_rate calls on this thread.
  void sample_access(Word w);

  // Drains events and samples, asks the planner for the difference,
  // queues it (installs, then removals) with the install delay, then
  // pumps. Serialized with other refreshes; never blocks hosts' lookups.
  // The planner is skipped (skip_unchanged) when the plan could not differ
  // from the last one: no node event, no sample, no sync_nodes that changed
  // the table, the source's key_generation known and the same as at the
  // last plan, and no weight left for decay to change. A device that
  // refused a batch still gets the whole target again.
  void refresh();
  // Wakes the background thread for a refresh (no-op without one).
  void request_refresh();
  // Applies the batches due now; returns how many.
  std::size_t pump();
  // Applies every pending batch now (shutdown, tests).
  std::size_t flush();

  // Backend hints with invalid (merged-away) nodes filtered out.
  StartHints hint(std::string_view key) const;
  StartHints hint_for_word(Word w) const;
  StartHints filter(StartHints hints) const;
  bool is_invalid(PageId node) const;

  ManagerStats stats() const;
  const ManagerOptions& options() const { return options_; }

  // Sets the one apply listener (null: none) and returns the device's image
  // at that moment: the listener hears of every batch applied after it.
  // Once this returns, the previous listener is no longer called (so clear
  // it before destroying the listener).
  std::shared_ptr<const BackendImage> set_apply_listener(ApplyListener* listener);
  Backend& backend() const { return backend_; }

 private:
  void attach(const IndexSource& source, std::unique_ptr<IndexSource> owned);
  void run_background();
  ManagerDuration next_delay();
  void set_refresh_interval(ManagerDuration interval);
  void after_pump(std::size_t batches, std::size_t installed, std::size_t removed,
                  std::size_t failed, std::uint64_t applied_seq);

  Backend& backend_;
  const ManagerOptions options_;
  SteadyManagerClock steady_clock_;
  const ManagerClock& clock_;
  std::unique_ptr<DelayedControlPlane> control_;
  std::unique_ptr<InvalidNodes> invalid_;

  // Inputs from hosts and writers; short critical sections only.
  mutable std::mutex input_mu_;
  std::vector<NodeEvent> events_;  // guarded by input_mu_
  std::vector<Word> samples_;      // guarded by input_mu_

  // Recompute state; guarded by refresh_mu_.
  mutable std::mutex refresh_mu_;
  const IndexSource* source_ = nullptr;
  std::unique_ptr<IndexSource> owned_source_;  // attach(Tree&)'s adapter
  std::unique_ptr<NodeTable> table_;
  std::size_t target_records_ = 0;  // the planner's target, as last planned
  // What refresh() needs to know to skip the planner (guarded by
  // refresh_mu_): whether the node table or its weights changed since the
  // last plan that returned (set by attach, sync_nodes, events, samples,
  // decay; cleared only once a plan returned, so a plan that threw is
  // retried), and the source's key_generation read before that plan
  // (kUnknownKeyGeneration: none, or the source cannot tell).
  bool table_changed_ = true;
  std::uint64_t planned_key_generation_ = kUnknownKeyGeneration;
  std::mt19937_64 delay_rng_;
  // An install batch failed: push the whole target at the next refresh.
  std::atomic<bool> reinstall_all_{false};

  mutable std::mutex stats_mu_;
  ManagerStats stats_;  // guarded by stats_mu_

  // Background thread.
  std::mutex thread_mu_;
  std::condition_variable wake_;
  bool stop_ = false;             // guarded by thread_mu_
  bool refresh_requested_ = false;  // guarded by thread_mu_
  std::thread thread_;
};

}  // namespace forein::offload
