// The tree-side pieces of the offload benchmarks (forein_throughput,
// backend_compare): a node-event relay that can be re-pointed at each run's
// manager, the bulk-loaded tree over a MemoryPageStore, node counts, and
// the Zipf/uniform key picker with hot keys scattered over the key space.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "forein/node_interval.h"
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

}  // namespace forein::bench
