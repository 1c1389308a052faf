// dpa store: host-side patching (DPA-Store 3.2.1). A patch request names a
// leaf whose insert buffer is full. UPDATE-only patches rewrite host
// values in place and send a RESET stitch. Otherwise the buffer is merged
// with the leaf's arrays, re-segmented by PLA into new leaves (the retrain
// bound when splitting), and the change climbs: one leaf -> one pointer
// swap in the parent; several -> the parent is rebuilt by PLA with
// eps_inner, split into balanced nodes beyond seven segments, and so on up
// to the root, which grows the tree when it splits. The host tree is
// changed only once every new node has DPA memory, so a patch that cannot
// allocate leaves everything as it was (the leaf is marked, its writers
// get InvalidArgument).
//
// The paper locks the parent it located by descending from the root; here
// one host mutex serializes patches (patchers descend from the root too),
// which is coarser but keeps the host tree simple.
#include <algorithm>
#include <map>

#include "dpa/store/store_core.h"

namespace forein::offload::dpa {

using detail::EntryRead;
using detail::HostArrays;
using detail::HostChild;
using detail::HostInner;
using detail::NicInner;
using detail::NicLeaf;
using detail::NicNode;
using detail::Stitch;
using detail::StitchBatch;

namespace detail {

std::unique_ptr<HostArrays> make_arrays(const std::vector<std::uint64_t>& keys, const std::vector<std::uint64_t>& values,
                                        std::size_t begin, std::size_t count) {
  auto a = std::make_unique<HostArrays>();
  a->keys.assign(keys.begin() + static_cast<std::ptrdiff_t>(begin),
                 keys.begin() + static_cast<std::ptrdiff_t>(begin + count));
  a->values = std::make_unique<std::atomic<std::uint64_t>[]>(count);
  for (std::size_t i = 0; i < count; ++i) a->values[i].store(values[begin + i], std::memory_order_relaxed);
  return a;
}

Stitch copy_leaf(NicLeaf* leaf, const FixedModel& model) {
  Stitch s;
  s.kind = Stitch::Kind::kCopyLeaf;
  s.leaf = leaf;
  s.leaf_image.model = model;
  s.leaf_image.count = static_cast<std::uint32_t>(leaf->host->size());
  s.leaf_image.host_keys = leaf->host->keys.data();
  s.leaf_image.host_values = leaf->host->values.get();
  return s;
}

Stitch copy_inner(const HostInner& node) {
  Stitch s;
  s.kind = Stitch::Kind::kCopyInner;
  s.inner = node.nic;
  s.layout = node.layout;
  for (const HostChild& c : node.children) s.children.push_back(c.nic());
  return s;
}

}  // namespace detail

void Store::Impl::send_patch(NicLeaf* leaf) {
  {
    std::lock_guard<std::mutex> lock(flight_mutex);
    ++in_flight;
  }
  std::lock_guard<std::mutex> lock(patch_mutex);
  patch_queue.push_back(leaf);
  patch_cv.notify_one();
}

void Store::Impl::patcher_loop() {
  for (;;) {
    NicLeaf* leaf = nullptr;
    {
      std::unique_lock<std::mutex> lock(patch_mutex);
      patch_cv.wait(lock, [&] { return stopping || !patch_queue.empty(); });
      if (patch_queue.empty()) return;
      leaf = patch_queue.front();
      patch_queue.pop_front();
    }
    patch(leaf);
  }
}

void Store::Impl::patch(NicLeaf* leaf) {
  std::lock_guard<std::mutex> host_lock(host_mutex);
  patches.fetch_add(1);
  NicLeaf* found = nullptr;
  const std::vector<detail::PathStep> path = detail::host_path(host_root, leaf->lo, &found);
  auto batch = std::make_shared<StitchBatch>();
  batch->partition = path[0].index;

  // The buffer is full and frozen: every slot committed, none can change.
  std::map<std::uint64_t, EntryRead> latest;
  for (std::uint32_t i = 0; i < leaf->capacity; ++i) {
    EntryRead e;
    if (detail::read_entry(leaf->entries[i], &e)) latest[e.key] = e;  // later slots are newer
  }
  const HostArrays& old = *leaf->host;
  const auto position = [&](std::uint64_t k) {
    const auto it = std::lower_bound(old.keys.begin(), old.keys.end(), k);
    return it != old.keys.end() && *it == k ? static_cast<std::ptrdiff_t>(it - old.keys.begin()) : -1;
  };
  const bool update_only = found == leaf && std::all_of(latest.begin(), latest.end(), [&](const auto& kv) {
                             return kv.second.op == detail::kOpUpdate && position(kv.first) >= 0;
                           });
  if (update_only) {
    for (const auto& [k, e] : latest) old.values[position(k)].store(e.value);
    Stitch reset;
    reset.kind = Stitch::Kind::kReset;
    reset.leaf = leaf;
    batch->stitches.push_back(reset);
    update_only_patches.fetch_add(1);
    stitchers->submit(std::move(batch));
    return;
  }

  // Merge: the buffer's newest op per key over the leaf's arrays.
  std::vector<std::uint64_t> merged, values;
  merged.reserve(old.size() + latest.size());
  values.reserve(old.size() + latest.size());
  auto b = latest.begin();
  for (std::size_t h = 0; h < old.size() || b != latest.end();) {
    if (b == latest.end() || (h < old.size() && old.keys[h] < b->first)) {
      merged.push_back(old.keys[h]);
      values.push_back(old.values[h].load());
      ++h;
      continue;
    }
    if (h < old.size() && old.keys[h] == b->first) ++h;
    if (b->second.op != detail::kOpDelete) {
      merged.push_back(b->first);
      values.push_back(b->second.value);
    }
    ++b;
  }

  // Allocate everything first; on failure undo the allocations only.
  std::vector<NicNode*> allocated;
  std::vector<HostInner*> created;
  const auto fail = [&] {
    for (NicNode* n : allocated) free_unpublished(n);
    for (HostInner* h : created) delete h;
    leaf->patch_failed.store(true);
    failed_patches.fetch_add(1);
    std::lock_guard<std::mutex> lock(flight_mutex);
    --in_flight;
    ++generation;
    flight_cv.notify_all();
  };
  if (found != leaf) {  // cannot happen: only its own patch replaces a leaf
    fail();
    return;
  }

  std::vector<PlaSegment> segs =
      detail::plan_leaves(merged, options.epsilon_leaf, options.leaf_capacity, options.retrain_bound);
  if (segs.empty()) segs.push_back(PlaSegment{});  // every key deleted: one empty leaf
  std::vector<HostChild> repl;
  std::vector<std::uint64_t> repl_pivots;
  for (std::size_t i = 0; i < segs.size(); ++i) {
    const std::uint64_t lo = i == 0 ? leaf->lo : merged[segs[i].begin];
    NicLeaf* nl = new_leaf(lo, detail::make_arrays(merged, values, segs[i].begin, segs[i].count));
    if (nl == nullptr) return fail();
    allocated.push_back(nl);
    batch->stitches.push_back(copy_leaf(nl, segs[i].model));
    repl.push_back(HostChild{nullptr, nl});
    repl_pivots.push_back(lo);
  }
  batch->retire.push_back(leaf);

  // Climb: rebuild parents while more than one node replaces a child.
  // New inner nodes over `children` as `plans` say; false if DPA memory is full.
  const auto make_nodes = [&](std::vector<detail::InnerPlan>& plans, const std::vector<HostChild>& children) {
    repl.clear();
    repl_pivots.clear();
    for (auto& plan : plans) {
      auto* h = new HostInner;
      created.push_back(h);
      h->layout = std::move(plan.layout);
      h->children.assign(children.begin() + static_cast<std::ptrdiff_t>(plan.begin),
                         children.begin() + static_cast<std::ptrdiff_t>(plan.end));
      h->nic = new_inner(h->layout.segments, h->children.size());
      if (h->nic == nullptr) return false;
      allocated.push_back(h->nic);
      batch->stitches.push_back(copy_inner(*h));
      repl.push_back(HostChild{h, nullptr});
      repl_pivots.push_back(h->layout.pivots.front());
    }
    return true;
  };
  std::vector<HostInner*> replaced;
  const std::size_t split_per_node = detail::split_segments_per_node(options.retrain_bound);
  std::size_t level = path.size() - 1;
  HostInner* new_root = nullptr;
  bool grew = false;
  std::uint64_t splits = 0;
  while (repl.size() > 1) {
    const HostInner& parent = *path[level].node;
    const auto idx = static_cast<std::ptrdiff_t>(path[level].index);
    const auto& pp = parent.layout.pivots;
    std::vector<std::uint64_t> pivots(pp.begin(), pp.begin() + idx);
    std::vector<HostChild> children(parent.children.begin(), parent.children.begin() + idx);
    pivots.insert(pivots.end(), repl_pivots.begin(), repl_pivots.end());
    children.insert(children.end(), repl.begin(), repl.end());
    pivots.insert(pivots.end(), pp.begin() + idx + 1, pp.end());
    children.insert(children.end(), parent.children.begin() + idx + 1, parent.children.end());
    std::vector<detail::InnerPlan> plans = detail::plan_inner_nodes(pivots, options.epsilon_inner, split_per_node);
    if (plans.size() > 1) ++splits;
    if (!make_nodes(plans, children)) return fail();
    replaced.push_back(path[level].node);
    batch->retire.push_back(parent.nic);
    if (level > 0) {
      --level;  // the new node(s) replace parent in its own parent
      continue;
    }
    // The root was rebuilt; if it split, the tree grows: new levels above
    // until a single root remains.
    while (repl.size() > 1) {
      grew = true;
      plans = detail::plan_inner_nodes(repl_pivots, options.epsilon_inner, kInnerSegments);
      const std::vector<HostChild> below = repl;
      if (!make_nodes(plans, below)) return fail();
    }
    new_root = repl.front().inner;
  }

  // Commit on the host, then the one CONNECT of the batch.
  Stitch connect;
  connect.target = repl.front().nic();
  if (new_root != nullptr) {
    connect.kind = Stitch::Kind::kConnectRoot;
    host_root = new_root;
    batch->fenced = true;  // a root update: behind the queue fence (3.2.2)
  } else {
    connect.kind = Stitch::Kind::kConnectChild;
    connect.inner = path[level].node->nic;
    connect.index = path[level].index;
    path[level].node->children[path[level].index] = repl.front();
  }
  batch->stitches.push_back(connect);
  for (HostInner* h : replaced) delete h;

  const std::uint64_t new_depth = depth.load() + (grew ? 1 : 0);
  depth.store(new_depth);
  keys.fetch_add(merged.size());
  keys.fetch_sub(old.size());
  leaves.fetch_add(segs.size() - 1);
  inner_nodes.fetch_add(created.size());
  inner_nodes.fetch_sub(replaced.size());
  if (segs.size() > 1) leaf_splits.fetch_add(1);
  inner_splits.fetch_add(splits);
  if (grew) root_splits.fetch_add(1);
  stitchers->submit(std::move(batch));
}

}  // namespace forein::offload::dpa
