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

// One patch, phase by phase: read the frozen buffer; either rewrite values
// in place (UPDATE-only) or merge the buffer with the leaf's arrays, build
// the new leaves, climb (rebuild every parent that changes, growing the
// root if it splits), then commit on the host and send the batch. Every
// phase runs under host_mutex, and neither the host tree nor the NIC sees
// anything before commit(), so a failed allocation undoes allocations only
// (abandon()).
struct Store::Impl::Patch {
  Patch(Impl& store, NicLeaf* full);

  std::ptrdiff_t position(std::uint64_t k) const;  // k's index in the leaf's arrays, or -1
  bool update_only() const;
  void rewrite_values();
  void merge();
  bool build_leaves();
  bool make_inner_nodes(std::vector<detail::InnerPlan>& plans, const std::vector<HostChild>& children);
  bool climb();
  void commit();
  void count() const;
  void abandon();

  Impl& s;
  NicLeaf* const leaf;
  NicLeaf* found = nullptr;  // the leaf the descent for leaf->lo reached
  const std::vector<detail::PathStep> path;
  std::shared_ptr<StitchBatch> batch;
  std::map<std::uint64_t, EntryRead> latest;  // the buffer's newest op per key
  const HostArrays& old;                      // the leaf's arrays
  std::vector<std::uint64_t> merged, values;  // the arrays with the buffer applied
  std::vector<PlaSegment> segs;               // one per new leaf

  std::vector<NicNode*> allocated;  // DPA memory to free if the patch is abandoned
  std::vector<HostInner*> created;  // host nodes to delete then
  std::vector<HostInner*> replaced;  // host nodes the commit unlinks
  // The nodes that replace one child at the level being rebuilt, and
  // their pivots.
  std::vector<HostChild> repl;
  std::vector<std::uint64_t> repl_pivots;
  std::size_t level = 0;  // the path step whose child commit() swaps
  HostInner* new_root = nullptr;
  bool grew = false;
  std::uint64_t splits = 0;  // inner nodes that split
};

Store::Impl::Patch::Patch(Impl& store, NicLeaf* full)
    : s(store), leaf(full), path(detail::host_path(s.host_root, leaf->lo, &found)),
      batch(std::make_shared<StitchBatch>()), old(*leaf->host) {
  batch->partition = path[0].index;
  // The buffer is full and frozen: every slot committed, none can change.
  for (std::uint32_t i = 0; i < leaf->capacity; ++i) {
    EntryRead e;
    if (detail::read_entry(leaf->entries[i], &e)) latest[e.key] = e;  // later slots are newer
  }
}

std::ptrdiff_t Store::Impl::Patch::position(std::uint64_t k) const {
  const auto it = std::lower_bound(old.keys.begin(), old.keys.end(), k);
  return it != old.keys.end() && *it == k ? static_cast<std::ptrdiff_t>(it - old.keys.begin()) : -1;
}

bool Store::Impl::Patch::update_only() const {
  return found == leaf && std::all_of(latest.begin(), latest.end(), [&](const auto& kv) {
           return kv.second.op == detail::kOpUpdate && position(kv.first) >= 0;
         });
}

// UPDATE-only: the keys stay, so the host values change in place and a
// RESET stitch clears the buffer; no node is replaced.
void Store::Impl::Patch::rewrite_values() {
  for (const auto& [k, e] : latest) old.values[position(k)].store(e.value);
  Stitch reset;
  reset.kind = Stitch::Kind::kReset;
  reset.leaf = leaf;
  batch->stitches.push_back(reset);
  s.update_only_patches.fetch_add(1);
  s.stitchers->submit(std::move(batch));
}

// Merge: the buffer's newest op per key over the leaf's arrays.
void Store::Impl::Patch::merge() {
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
}

// The merged arrays re-segmented by PLA into new leaves (the retrain bound
// when they split); the first keeps the old leaf's low bound. False if DPA
// memory is full.
bool Store::Impl::Patch::build_leaves() {
  segs = detail::plan_leaves(merged, s.options.epsilon_leaf, s.options.leaf_capacity, s.options.retrain_bound);
  if (segs.empty()) segs.push_back(PlaSegment{});  // every key deleted: one empty leaf
  for (std::size_t i = 0; i < segs.size(); ++i) {
    const std::uint64_t lo = i == 0 ? leaf->lo : merged[segs[i].begin];
    NicLeaf* nl = s.new_leaf(lo, detail::make_arrays(merged, values, segs[i].begin, segs[i].count));
    if (nl == nullptr) return false;
    allocated.push_back(nl);
    batch->stitches.push_back(copy_leaf(nl, segs[i].model));
    repl.push_back(HostChild{nullptr, nl});
    repl_pivots.push_back(lo);
  }
  batch->retire.push_back(leaf);
  return true;
}

// New inner nodes over `children` as `plans` say; they become the level's
// replacements. False if DPA memory is full.
bool Store::Impl::Patch::make_inner_nodes(std::vector<detail::InnerPlan>& plans,
                                          const std::vector<HostChild>& children) {
  repl.clear();
  repl_pivots.clear();
  for (auto& plan : plans) {
    auto* h = new HostInner;
    created.push_back(h);
    h->layout = std::move(plan.layout);
    h->children.assign(children.begin() + static_cast<std::ptrdiff_t>(plan.begin),
                       children.begin() + static_cast<std::ptrdiff_t>(plan.end));
    h->nic = s.new_inner(h->layout.segments, h->children.size());
    if (h->nic == nullptr) return false;
    allocated.push_back(h->nic);
    batch->stitches.push_back(copy_inner(*h));
    repl.push_back(HostChild{h, nullptr});
    repl_pivots.push_back(h->layout.pivots.front());
  }
  return true;
}

// Climb: rebuild parents while more than one node replaces a child (one
// node is a pointer swap in the parent, done by the commit). A parent
// is rebuilt by PLA with eps_inner and split into balanced nodes beyond
// its segment limit. False if DPA memory is full.
bool Store::Impl::Patch::climb() {
  const std::size_t split_per_node = detail::split_segments_per_node(s.options.retrain_bound);
  level = path.size() - 1;
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
    std::vector<detail::InnerPlan> plans =
        detail::plan_inner_nodes(pivots, s.options.epsilon_inner, split_per_node);
    if (plans.size() > 1) ++splits;
    if (!make_inner_nodes(plans, children)) return false;
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
      plans = detail::plan_inner_nodes(repl_pivots, s.options.epsilon_inner, kInnerSegments);
      const std::vector<HostChild> below = repl;
      if (!make_inner_nodes(plans, below)) return false;
    }
    new_root = repl.front().inner;
  }
  return true;
}

// Commit on the host, then the one CONNECT of the batch: a child pointer
// swap in path[level], or a new root (fenced behind every stitcher's queue).
void Store::Impl::Patch::commit() {
  Stitch connect;
  connect.target = repl.front().nic();
  if (new_root != nullptr) {
    connect.kind = Stitch::Kind::kConnectRoot;
    s.host_root = new_root;
    batch->fenced = true;  // a root update: behind the queue fence (3.2.2)
  } else {
    connect.kind = Stitch::Kind::kConnectChild;
    connect.inner = path[level].node->nic;
    connect.index = path[level].index;
    path[level].node->children[path[level].index] = repl.front();
  }
  batch->stitches.push_back(connect);
  for (HostInner* h : replaced) delete h;
}

void Store::Impl::Patch::count() const {
  const std::uint64_t new_depth = s.depth.load() + (grew ? 1 : 0);
  s.depth.store(new_depth);
  s.keys.fetch_add(merged.size());
  s.keys.fetch_sub(old.size());
  s.leaves.fetch_add(segs.size() - 1);
  s.inner_nodes.fetch_add(created.size());
  s.inner_nodes.fetch_sub(replaced.size());
  if (segs.size() > 1) s.leaf_splits.fetch_add(1);
  s.inner_splits.fetch_add(splits);
  if (grew) s.root_splits.fetch_add(1);
}

// Undo the allocations only (nothing else has changed yet): the leaf is
// marked so its writers get InvalidArgument, and its request leaves the
// flight count.
void Store::Impl::Patch::abandon() {
  for (NicNode* n : allocated) s.free_unpublished(n);
  for (HostInner* h : created) delete h;
  leaf->patch_failed.store(true);
  s.failed_patches.fetch_add(1);
  std::lock_guard<std::mutex> lock(s.flight_mutex);
  --s.in_flight;
  ++s.generation;
  s.flight_cv.notify_all();
}

void Store::Impl::patch(NicLeaf* leaf) {
  std::lock_guard<std::mutex> host_lock(host_mutex);
  patches.fetch_add(1);
  Patch p(*this, leaf);
  if (p.update_only()) return p.rewrite_values();
  p.merge();
  if (p.found != leaf) return p.abandon();  // cannot happen: only its own patch replaces a leaf
  if (!p.build_leaves() || !p.climb()) return p.abandon();
  p.commit();
  p.count();
  stitchers->submit(std::move(p.batch));
}

}  // namespace forein::offload::dpa
