#include "switch_lpm/selection.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <string>
#include <utility>

#include "forein/error.h"

namespace forein::offload {

SelectionTree::SelectionTree(std::vector<TreeNodeDesc> nodes) : nodes_(std::move(nodes)) {
  const std::size_t n = nodes_.size();
  if (n == 0) throw InvalidArgument("SelectionTree: no nodes");
  std::vector<std::vector<std::size_t>> children(n);
  bool have_root = false;
  for (std::size_t i = 0; i < n; ++i) {
    const TreeNodeDesc& d = nodes_[i];
    if (!std::isfinite(d.weight) || d.weight < 0) {
      throw InvalidArgument("SelectionTree: weight of node " + std::to_string(i) +
                            " is not finite and >= 0");
    }
    if (d.parent < 0) {
      if (have_root) throw InvalidArgument("SelectionTree: more than one root");
      have_root = true;
      root_ = i;
    } else if (static_cast<std::size_t>(d.parent) >= n || static_cast<std::size_t>(d.parent) == i) {
      throw InvalidArgument("SelectionTree: bad parent index at node " + std::to_string(i));
    } else {
      children[static_cast<std::size_t>(d.parent)].push_back(i);
    }
  }
  if (!have_root) throw InvalidArgument("SelectionTree: no root");

  depth_.assign(n, 0);
  child_count_.assign(n, 0);
  order_.reserve(n);
  order_.push_back(root_);
  depth_[root_] = 1;
  for (std::size_t k = 0; k < order_.size(); ++k) {
    const std::size_t i = order_[k];
    child_count_[i] = static_cast<std::uint32_t>(children[i].size());
    for (std::size_t c : children[i]) {
      depth_[c] = depth_[i] + 1;
      order_.push_back(c);
    }
  }
  // Nodes on a parent cycle are never reached from the root.
  if (order_.size() != n) throw InvalidArgument("SelectionTree: nodes unreachable from the root");
}

double compute_ama(const SelectionTree& tree, std::span<const std::size_t> selected) {
  std::vector<char> in_s(tree.size(), 0);
  for (std::size_t i : selected) in_s.at(i) = 1;
  in_s[tree.root()] = 1;
  // Top down: the depth of the deepest selected node on each node's path.
  std::vector<std::uint32_t> anchor_depth(tree.size(), 0);
  double ama = 0;
  for (std::size_t i : tree.top_down_order()) {
    const std::int32_t parent = tree.node(i).parent;
    anchor_depth[i] = in_s[i] ? tree.depth(i) : anchor_depth[static_cast<std::size_t>(parent)];
    if (tree.is_leaf(i)) {
      ama += tree.node(i).weight * static_cast<double>(tree.depth(i) - anchor_depth[i] + 1);
    }
  }
  return ama;
}

namespace {

// Greedy state. For every node i, "free" leaves are the leaves of i's
// subtree not covered by a selected node strictly below i: the leaves whose
// queries i would take over if selected (and, for a selected i, the leaves
// i serves). Counting positive-weight free leaves keeps "serves nothing"
// exact despite floating-point sums.
class Greedy {
 public:
  Greedy(const SelectionTree& tree, const SelectionOptions& options)
      : tree_(tree),
        selected_(tree.size(), 0),
        pinned_(tree.size(), 0),
        excluded_(tree.size(), 0),
        free_weight_(tree.size(), 0),
        free_leaves_(tree.size(), 0),
        rank_(options.rank) {
    std::uint64_t pinned_cost = 0;
    for (std::size_t i : options.pinned) {
      if (i >= tree.size()) throw InvalidArgument("select_nodes: pinned index out of range");
      if (i == tree.root() || pinned_[i]) continue;
      pinned_[i] = selected_[i] = 1;
      pinned_cost += tree.node(i).cost;
    }
    if (pinned_cost > options.budget) {
      throw InvalidArgument("select_nodes: pinned nodes cost " + std::to_string(pinned_cost) +
                            " entries, over the budget of " + std::to_string(options.budget));
    }
    for (std::size_t i : options.excluded) {
      if (i >= tree.size()) throw InvalidArgument("select_nodes: excluded index out of range");
      excluded_[i] = 1;
    }
    selected_[tree.root()] = 1;
    cost_ = pinned_cost;
    remaining_ = options.budget - pinned_cost;
    max_remaining_ = remaining_;
    init_free_sets();
  }

  Selection run() {
    for (std::size_t i = 0; i < tree_.size(); ++i) {
      if (!is_candidate(i)) continue;
      const double g = gain(i);
      if (g > 0) heap_.push({g, i});
    }
    while (!heap_.empty()) {
      const auto [stored, i] = heap_.top();
      heap_.pop();
      if (selected_[i]) continue;
      const double fresh = gain(i);
      if (fresh <= 0) continue;  // gains never grow back
      if (fresh < stored) {      // stale: someone below or above was selected
        heap_.push({fresh, i});
        continue;
      }
      if (tree_.node(i).cost > remaining_) {
        deferred_.emplace(tree_.node(i).cost, HeapItem{fresh, i});  // skip, continue
        continue;
      }
      add(i);
    }
    Selection result;
    for (std::size_t i = 0; i < tree_.size(); ++i) {
      if (selected_[i] && i != tree_.root()) result.installed.push_back(i);
    }
    result.cost = cost_;
    result.ama = compute_ama(tree_, result.installed);
    return result;
  }

 private:
  struct HeapItem {
    double gain;
    std::size_t node;
    bool operator<(const HeapItem& o) const {
      return gain != o.gain ? gain < o.gain : node > o.node;  // ties: lower index first
    }
  };

  bool is_candidate(std::size_t i) const {
    return !selected_[i] && !excluded_[i] && tree_.node(i).cost <= max_remaining_;
  }

  std::size_t parent(std::size_t i) const {
    return static_cast<std::size_t>(tree_.node(i).parent);
  }

  void init_free_sets() {
    const auto& order = tree_.top_down_order();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const std::size_t i = *it;
      if (tree_.is_leaf(i) && tree_.node(i).weight > 0) {
        free_weight_[i] = tree_.node(i).weight;
        free_leaves_[i] = 1;
      }
      if (i != tree_.root() && !selected_[i]) {
        free_weight_[parent(i)] += free_weight_[i];
        free_leaves_[parent(i)] += free_leaves_[i];
      }
    }
  }

  std::size_t nearest_selected_ancestor(std::size_t i) const {
    std::size_t a = parent(i);
    while (!selected_[a]) a = parent(a);  // the root is always selected
    return a;
  }

  // The AMA reduction of adding i, divided by its cost under
  // kReductionPerEntry. Either way it only shrinks as S grows.
  double gain(std::size_t i) const {
    if (free_leaves_[i] == 0) return 0;
    const std::uint32_t saved = tree_.depth(i) - tree_.depth(nearest_selected_ancestor(i));
    const double reduction = free_weight_[i] * static_cast<double>(saved);
    if (rank_ == SelectionRank::kReduction) return reduction;
    const std::uint32_t cost = tree_.node(i).cost;
    return cost == 0 ? std::numeric_limits<double>::infinity() : reduction / cost;
  }

  void add(std::size_t n) {
    const std::size_t a = nearest_selected_ancestor(n);
    selected_[n] = 1;
    remaining_ -= tree_.node(n).cost;
    cost_ += tree_.node(n).cost;
    // n's free leaves stop being free for every node from n's parent up to A.
    const double moved_weight = free_weight_[n];
    const std::uint32_t moved_leaves = free_leaves_[n];
    for (std::size_t p = parent(n);; p = parent(p)) {
      free_leaves_[p] -= moved_leaves;
      free_weight_[p] = free_leaves_[p] == 0 ? 0 : free_weight_[p] - moved_weight;
      if (p == a) break;
    }
    if (a != tree_.root() && !pinned_[a] && free_leaves_[a] == 0) {
      // A serves no weighted leaf any more: its entries are redundant.
      // Removing it changes no other node's reduction (it served nothing).
      selected_[a] = 0;
      remaining_ += tree_.node(a).cost;
      cost_ -= tree_.node(a).cost;
      reconsider_deferred();
    }
  }

  void reconsider_deferred() {
    while (!deferred_.empty() && deferred_.begin()->first <= remaining_) {
      heap_.push(deferred_.begin()->second);  // its stored gain is still an upper bound
      deferred_.erase(deferred_.begin());
    }
  }

  const SelectionTree& tree_;
  std::vector<char> selected_;
  std::vector<char> pinned_;
  std::vector<char> excluded_;
  std::vector<double> free_weight_;
  std::vector<std::uint32_t> free_leaves_;
  const SelectionRank rank_;
  std::uint64_t cost_ = 0;
  std::uint64_t remaining_ = 0;
  std::uint64_t max_remaining_ = 0;  // nodes costlier than this can never fit
  std::priority_queue<HeapItem> heap_;
  std::multimap<std::uint64_t, HeapItem> deferred_;  // by cost
};

}  // namespace

Selection select_nodes(const SelectionTree& tree, const SelectionOptions& options) {
  return Greedy(tree, options).run();
}

}  // namespace forein::offload
