// The tree-side pieces of the offload benchmarks (forein_throughput,
// backend_compare): a node-event relay that can be re-pointed at each run's
// manager, the bulk-loaded tree over a MemoryPageStore, node counts, the
// Zipf/uniform key picker with hot keys scattered over the key space, and a
// manager trained on a request sequence with its hints read off in advance.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "forein/key.h"
#include "forein/node_interval.h"
#include "forein/offload/manager.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "support/zipf.h"

namespace forein::bench {

// The tree's observer, re-pointed at each run's manager (null: nobody).
class Relay final : public forein::NodeObserver {
 public:
  void on_node_event(const forein::NodeEvent& event) override {
    if (to != nullptr) to->on_node_event(event);
  }
  forein::NodeObserver* to = nullptr;
};

inline std::unique_ptr<forein::Tree> load_tree(
    const std::vector<std::pair<std::string, std::string>>& sorted, std::uint32_t page_size,
    int fill_percent, Relay* relay) {
  forein::TreeOptions topt;
  topt.bulk_fill_percent = static_cast<std::uint8_t>(fill_percent);
  topt.observer = relay;
  auto tree = forein::Tree::create(std::make_unique<forein::MemoryPageStore>(page_size), topt);
  tree->bulk_load(sorted);
  return tree;
}

// {nodes, leaves} of the tree.
inline std::pair<std::size_t, std::size_t> node_counts(forein::Tree& tree) {
  std::size_t nodes = 0, leaves = 0;
  tree.for_each_node([&](const forein::NodeInterval& n) {
    ++nodes;
    if (n.level == 0) ++leaves;
  });
  return {nodes, leaves};
}

// Zipf (theta > 0) or uniform (theta == 0) indices in [0, n), rank r
// mapped through perm (a fixed random permutation, so hot keys are
// scattered over the key space).
class KeyPicker {
 public:
  KeyPicker(const std::vector<std::uint32_t>& perm, double theta)
      : perm_(perm), theta_(theta),
        zipf_(theta > 0 ? std::make_unique<forein::testing::ZipfGenerator>(perm.size(), theta)
                        : nullptr) {}
  template <typename Rng>
  std::uint32_t operator()(Rng& rng) {
    const std::uint64_t rank = zipf_ ? (*zipf_)(rng)
                                     : std::uniform_int_distribution<std::uint64_t>(0, perm_.size() - 1)(rng);
    return perm_[rank];
  }
  double theta() const { return theta_; }

 private:
  const std::vector<std::uint32_t>& perm_;
  double theta_;
  std::unique_ptr<forein::testing::ZipfGenerator> zipf_;
};

// Attaches manager to tree (its node events through relay), records every
// request's key as an access, plans and applies the plan: the device then
// holds what the workload's exact frequencies call for.
inline void train_on_requests(forein::offload::OffloadManager& manager, Relay& relay,
                              forein::Tree& tree, const std::vector<std::string>& keys) {
  relay.to = &manager;
  manager.attach(tree);
  for (const auto& k : keys) manager.record_access(forein::word_of(k));
  manager.refresh();
  manager.flush();
}

// The manager's hint for every request, read before a timed loop as the
// network computes them before the request reaches the host; *ns_per_hint
// is the software lookup's cost per request.
inline std::vector<forein::StartHints> hints_of(const forein::offload::OffloadManager& manager,
                                                const std::vector<std::string>& keys,
                                                double* ns_per_hint) {
  std::vector<forein::StartHints> hints(keys.size());
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < keys.size(); ++i) hints[i] = manager.hint(keys[i]);
  const std::chrono::duration<double, std::nano> spent = std::chrono::steady_clock::now() - t0;
  *ns_per_hint = keys.empty() ? 0 : spent.count() / static_cast<double>(keys.size());
  return hints;
}

}  // namespace forein::bench
