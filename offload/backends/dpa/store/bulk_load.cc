// dpa store: bulk loading (DPA-Store 3.2.4). The sorted pairs are cut into
// PLA segments for eps_leaf, each a leaf; the leaves' first keys are the
// pivots of the level above, segmented with eps_inner into nodes of up to
// seven segments, and so on until one node remains: the root. The nodes
// travel as COPY stitches, each first-level subtree to its partition's
// stitcher queue, and a final fenced root-pointer stitch makes the tree
// visible.
#include <string>

#include "dpa/store/store_core.h"
#include "forein/error.h"

namespace forein::offload::dpa {

using detail::HostChild;
using detail::HostInner;
using detail::NicLeaf;
using detail::Stitch;
using detail::StitchBatch;

namespace {

void copy_subtree(const HostInner& node, StitchBatch& batch) {
  for (const HostChild& c : node.children) {
    if (c.inner != nullptr) copy_subtree(*c.inner, batch);
  }
  batch.stitches.push_back(detail::copy_inner(node));
}

}  // namespace

void Store::Impl::bulk_load(std::span<const KV> pairs) {
  for (std::size_t i = 1; i < pairs.size(); ++i) {
    if (pairs[i].key <= pairs[i - 1].key) {
      throw InvalidArgument("dpa store: bulk_load needs strictly ascending keys; pair " + std::to_string(i) +
                            " (key " + std::to_string(pairs[i].key) + ") does not follow key " +
                            std::to_string(pairs[i - 1].key));
    }
  }
  std::unique_lock<std::mutex> host_lock(host_mutex);
  NicLeaf* old_leaf = host_root->children.size() == 1 ? host_root->children[0].leaf : nullptr;
  if (old_leaf == nullptr || !old_leaf->host->keys.empty() || old_leaf->reserved.load() != 0 ||
      patches.load() != 0) {
    throw InvalidArgument("dpa store: bulk_load needs an empty store (no keys, no writes)");
  }
  if (pairs.empty()) return;

  std::vector<std::uint64_t> sorted_keys(pairs.size()), values(pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    sorted_keys[i] = pairs[i].key;
    values[i] = pairs[i].value;
  }
  const std::vector<PlaSegment> segs = pla_segments(sorted_keys, options.epsilon_leaf, options.leaf_capacity);

  // Plan every level first, to check DPA memory before changing anything.
  std::vector<std::uint64_t> pivots(segs.size());
  for (std::size_t i = 0; i < segs.size(); ++i) pivots[i] = i == 0 ? 0 : sorted_keys[segs[i].begin];
  std::uint64_t need = segs.size() * detail::leaf_bytes(options.insert_buffer);
  std::vector<std::vector<detail::InnerPlan>> levels;
  std::vector<std::uint64_t> level_pivots = pivots;
  do {
    levels.push_back(detail::plan_inner_nodes(level_pivots, options.epsilon_inner, kInnerSegments));
    level_pivots.clear();
    for (const auto& plan : levels.back()) {
      need += detail::inner_bytes(plan.layout.segments, plan.end - plan.begin);
      level_pivots.push_back(plan.layout.pivots.front());
    }
  } while (levels.back().size() > 1);
  if (need > memory.capacity() - memory.used()) {
    throw InvalidArgument("dpa store: bulk_load of " + std::to_string(pairs.size()) + " pairs needs " +
                          std::to_string(need) + " bytes of DPA memory; " +
                          std::to_string(memory.capacity() - memory.used()) + " of " +
                          std::to_string(memory.capacity()) + " are free");
  }

  // Build: leaves, then each level's inner nodes over the one below.
  std::vector<HostChild> below;
  std::vector<Stitch> leaf_copies;
  for (std::size_t i = 0; i < segs.size(); ++i) {
    // Fits: checked above.
    NicLeaf* leaf = new_leaf(pivots[i], detail::make_arrays(sorted_keys, values, segs[i].begin, segs[i].count));
    leaf_copies.push_back(detail::copy_leaf(leaf, segs[i].model));
    below.push_back(HostChild{nullptr, leaf});
  }
  std::uint64_t inners = 0;
  for (auto& level : levels) {
    std::vector<HostChild> next;
    for (auto& plan : level) {
      auto* h = new HostInner;
      h->layout = std::move(plan.layout);
      h->children.assign(below.begin() + static_cast<std::ptrdiff_t>(plan.begin),
                         below.begin() + static_cast<std::ptrdiff_t>(plan.end));
      h->nic = new_inner(h->layout.segments, h->children.size());
      next.push_back(HostChild{h, nullptr});
      ++inners;
    }
    below = std::move(next);
  }
  HostInner* new_root = below.front().inner;

  // Stitch: each first-level subtree to its partition, the root last.
  std::vector<std::shared_ptr<StitchBatch>> batches(stitchers->threads());
  for (std::size_t p = 0; p < batches.size(); ++p) {
    batches[p] = std::make_shared<StitchBatch>();
    batches[p]->partition = p;
  }
  std::size_t next_leaf = 0;
  for (std::size_t i = 0; i < new_root->children.size(); ++i) {
    StitchBatch& b = *batches[i % batches.size()];
    const HostChild& c = new_root->children[i];
    if (c.inner != nullptr) {
      copy_subtree(*c.inner, b);
    }
    // The leaves under this child (leaves are in key order, as children are).
    while (next_leaf < leaf_copies.size() &&
           (i + 1 == new_root->children.size() || leaf_copies[next_leaf].leaf->lo < new_root->layout.pivots[i + 1])) {
      b.stitches.push_back(std::move(leaf_copies[next_leaf++]));
    }
  }
  auto root_batch = std::make_shared<StitchBatch>();
  root_batch->fenced = true;
  root_batch->stitches.push_back(detail::copy_inner(*new_root));
  Stitch connect;
  connect.kind = Stitch::Kind::kConnectRoot;
  connect.target = new_root->nic;
  root_batch->stitches.push_back(connect);
  root_batch->retire = {host_root->nic, old_leaf};
  batches.push_back(root_batch);
  {
    std::lock_guard<std::mutex> lock(flight_mutex);
    in_flight += batches.size();
  }
  for (auto& b : batches) stitchers->submit(b);
  delete host_root;
  host_root = new_root;
  keys.store(pairs.size());
  leaves.store(segs.size());
  inner_nodes.store(inners);
  depth.store(levels.size() + 1);
  host_lock.unlock();
  flush();
}

}  // namespace forein::offload::dpa
