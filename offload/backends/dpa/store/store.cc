// dpa store: the facade (store.h) -- options, the initial empty tree, the
// threads, flush, stats, and the host-side check and dump.
#include "forein/dpa/store.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "dpa/store/store_core.h"
#include "forein/error.h"

namespace forein::offload::dpa {

using detail::HostChild;
using detail::HostInner;
using detail::NicInner;
using detail::NicLeaf;
using detail::NicNode;

namespace {

void validate(const StoreOptions& o) {
  const auto bad = [](const std::string& what) { throw InvalidArgument("dpa store: " + what); };
  if (o.leaf_capacity < 1 || o.leaf_capacity > kLeafCapacity) bad("leaf_capacity must be 1..128");
  if (o.epsilon_inner < 1 || o.epsilon_inner > 64) bad("epsilon_inner must be 1..64");
  if (o.epsilon_leaf < 1 || o.epsilon_leaf > 64) bad("epsilon_leaf must be 1..64");
  if (o.insert_buffer < 1 || o.insert_buffer > 256) bad("insert_buffer must be 1..256");
  if (!(o.retrain_bound > 0.0 && o.retrain_bound <= 1.0)) bad("retrain_bound must be in (0, 1]");
  if (!(o.admit_probability >= 0.0 && o.admit_probability <= 1.0)) bad("admit_probability must be in [0, 1]");
  if (o.traversers < 1 || o.patchers < 1 || o.stitchers < 1) bad("traversers, patchers and stitchers must be >= 1");
}

}  // namespace

Store::Impl::Impl(const StoreOptions& opts)
    : options((validate(opts), opts)), memory(opts.dpa_memory_bytes), epochs(contexts, memory, host_bytes) {
  for (std::size_t i = 0; i < options.traversers; ++i) {
    contexts.push_back(std::make_unique<detail::TraverserContext>(options.seed + i, options.admit_probability));
  }
  // The empty tree: a root of one segment over one empty leaf (pivot 0),
  // installed directly (no traverser runs yet).
  NicLeaf* leaf = new_leaf(0, detail::make_arrays({}, {}, 0, 0));
  NicInner* root_nic = leaf == nullptr ? nullptr : new_inner(1, 1);
  if (root_nic == nullptr) {
    if (leaf != nullptr) free_unpublished(leaf);
    throw InvalidArgument("dpa store: dpa_memory_bytes " + std::to_string(options.dpa_memory_bytes) +
                          " cannot hold an empty tree (a root and a leaf)");
  }
  host_root = new HostInner;
  host_root->layout.segments = 1;
  host_root->layout.seg_count[0] = 1;
  host_root->layout.pivots = {0};
  host_root->children = {HostChild{nullptr, leaf}};
  host_root->nic = root_nic;
  leaf->image.host_keys = leaf->host->keys.data();
  leaf->image.host_values = leaf->host->values.get();
  root_nic->layout = host_root->layout;
  root_nic->children[0].store(leaf);
  root.store(root_nic);
  leaves.store(1);
  inner_nodes.store(1);
  depth.store(2);
  stitchers = std::make_unique<detail::Stitchers>(options.stitchers, root,
                                                  [this](detail::StitchBatch& b) { batch_stitched(b); });
  for (std::size_t i = 0; i < options.patchers; ++i) patchers.emplace_back([this] { patcher_loop(); });
}

namespace {

void free_host_tree(HostInner* node) {
  for (const HostChild& c : node->children) {
    if (c.inner != nullptr) {
      free_host_tree(c.inner);
    } else {
      detail::destroy_node(c.leaf);
    }
  }
  detail::destroy_node(node->nic);
  delete node;
}

}  // namespace

Store::Impl::~Impl() {
  flush();
  {
    std::lock_guard<std::mutex> lock(patch_mutex);
    stopping = true;
    patch_cv.notify_all();
  }
  for (auto& t : patchers) t.join();
  stitchers.reset();
  free_host_tree(host_root);
}

NicLeaf* Store::Impl::new_leaf(std::uint64_t lo, std::unique_ptr<detail::HostArrays> arrays) {
  const std::uint64_t bytes = detail::leaf_bytes(options.insert_buffer);
  if (!memory.reserve(bytes)) return nullptr;
  host_bytes.fetch_add(arrays->bytes());
  return new NicLeaf(bytes, options.insert_buffer, lo, std::move(arrays));
}

NicInner* Store::Impl::new_inner(std::size_t segments, std::size_t children) {
  const std::uint64_t bytes = detail::inner_bytes(segments, children);
  if (!memory.reserve(bytes)) return nullptr;
  return new NicInner(bytes, children);
}

void Store::Impl::free_unpublished(NicNode* node) {
  memory.release(node->bytes);
  if (node->is_leaf) host_bytes.fetch_sub(static_cast<NicLeaf*>(node)->host->bytes());
  detail::destroy_node(node);
}

void Store::Impl::batch_stitched(detail::StitchBatch& batch) {
  for (NicNode* n : batch.retire) epochs.retire(n);
  epochs.reclaim();
  std::lock_guard<std::mutex> lock(flight_mutex);
  --in_flight;
  ++generation;
  flight_cv.notify_all();
}

std::uint64_t Store::Impl::stitch_generation() const {
  std::lock_guard<std::mutex> lock(flight_mutex);
  return generation;
}

void Store::Impl::flush() {
  {
    std::unique_lock<std::mutex> lock(flight_mutex);
    flight_cv.wait(lock, [&] { return in_flight == 0; });
  }
  epochs.reclaim();
}

namespace {

// The invariants of one subtree, host and NIC side together.
struct Checker {
  const StoreOptions& options;
  std::ostringstream problems;
  std::uint64_t bytes = 0, keys = 0, leaves = 0, inners = 0;
  std::int64_t leaf_depth = -1;

  void fail(const std::string& where, const std::string& what) { problems << where << ": " << what << "\n"; }

  void inner(const HostInner& h, std::uint64_t lo, std::optional<std::uint64_t> hi, std::int64_t level) {
    const std::string where = "inner node at key " + std::to_string(lo);
    ++inners;
    const NicInner* nic = h.nic;
    bytes += nic->bytes;
    const auto& l = h.layout;
    const std::size_t n = l.pivots.size();
    if (nic->layout != l) fail(where, "NIC copy differs from the host node");
    if (n == 0 || n != h.children.size() || n != nic->child_count) return fail(where, "child counts disagree");
    if (l.segments < 1 || l.segments > kInnerSegments) fail(where, "segment count out of range");
    if (nic->bytes != detail::inner_bytes(l.segments, n)) fail(where, "bytes not accounted");
    if (l.pivots[0] != lo) fail(where, "first pivot is not the node's low key");
    std::uint32_t next = 0;
    for (std::uint32_t s = 0; s < l.segments && s < kInnerSegments; ++s) {
      if (l.seg_begin[s] != next || l.seg_count[s] == 0 || l.seg_count[s] > kSegmentPivots) {
        fail(where, "segment " + std::to_string(s) + " does not tile the pivots");
        return;
      }
      if (l.first_keys[s] != l.pivots[l.seg_begin[s]]) fail(where, "segment first key wrong");
      const std::span<const std::uint64_t> seg(l.pivots.data() + l.seg_begin[s], l.seg_count[s]);
      if (max_error(seg, l.models[s]) > options.epsilon_inner) fail(where, "segment model beyond epsilon_inner");
      next += l.seg_count[s];
    }
    if (next != n) fail(where, "segments do not cover the pivots");
    for (std::size_t i = 0; i < n; ++i) {
      if (i > 0 && l.pivots[i] <= l.pivots[i - 1]) fail(where, "pivots not ascending");
      if (hi && l.pivots[i] >= *hi) fail(where, "pivot beyond the node's range");
      if (nic->children[i].load() != h.children[i].nic()) fail(where, "NIC child " + std::to_string(i) + " differs");
      const std::optional<std::uint64_t> child_hi = i + 1 < n ? std::optional(l.pivots[i + 1]) : hi;
      if (h.children[i].inner != nullptr) {
        inner(*h.children[i].inner, l.pivots[i], child_hi, level + 1);
      } else {
        leaf(*h.children[i].leaf, l.pivots[i], child_hi, level + 1);
      }
    }
  }

  void leaf(const NicLeaf& f, std::uint64_t lo, std::optional<std::uint64_t> hi, std::int64_t level) {
    const std::string where = "leaf at key " + std::to_string(lo);
    ++leaves;
    bytes += f.bytes;
    if (leaf_depth < 0) leaf_depth = level;
    if (leaf_depth != level) fail(where, "leaves at different depths");
    if (f.lo != lo) fail(where, "leaf's low key differs from its pivot");
    const auto& k = f.host->keys;
    keys += k.size();
    if (k.size() > options.leaf_capacity) fail(where, "more keys than leaf_capacity");
    if (f.image.count != k.size() || f.image.host_keys != k.data() || f.image.host_values != f.host->values.get()) {
      fail(where, "NIC image does not describe the host arrays");
    }
    for (std::size_t i = 0; i < k.size(); ++i) {
      if (i > 0 && k[i] <= k[i - 1]) fail(where, "keys not ascending");
      if (k[i] < lo || (hi && k[i] >= *hi)) fail(where, "key " + std::to_string(k[i]) + " outside the leaf's range");
    }
    if (max_error(k, f.image.model) > options.epsilon_leaf) fail(where, "model beyond epsilon_leaf");
  }
};

}  // namespace

std::string Store::Impl::check() const {
  std::lock_guard<std::mutex> lock(host_mutex);
  Checker c{options, {}};
  if (root.load() != host_root->nic) c.fail("root", "the NIC root is not the host root's copy");
  c.inner(*host_root, 0, std::nullopt, 1);
  if (c.keys != keys.load()) c.fail("stats", "keys " + std::to_string(keys.load()) + ", counted " + std::to_string(c.keys));
  if (c.leaves != leaves.load() || c.inners != inner_nodes.load()) c.fail("stats", "node counts disagree");
  if (static_cast<std::uint64_t>(c.leaf_depth) != depth.load()) c.fail("stats", "depth disagrees");
  const std::uint64_t pending = epochs.pending_bytes();
  if (c.bytes + pending != memory.used()) {
    c.fail("dpa memory", std::to_string(memory.used()) + " bytes in use, nodes " + std::to_string(c.bytes) +
                             " + retired " + std::to_string(pending));
  }
  return c.problems.str();
}

namespace {

void dump_leaves(const HostInner& node, std::vector<KV>& out) {
  for (const HostChild& c : node.children) {
    if (c.inner != nullptr) {
      dump_leaves(*c.inner, out);
      continue;
    }
    const NicLeaf& leaf = *c.leaf;
    std::map<std::uint64_t, std::optional<std::uint64_t>> merged;
    for (std::size_t i = 0; i < leaf.host->size(); ++i) merged[leaf.host->keys[i]] = leaf.host->values[i].load();
    const std::uint32_t n = std::min(leaf.reserved.load(), leaf.capacity);
    for (std::uint32_t i = 0; i < n; ++i) {
      detail::EntryRead e;
      if (!detail::read_entry(leaf.entries[i], &e)) continue;
      merged[e.key] = e.op == detail::kOpDelete ? std::nullopt : std::optional(e.value);
    }
    for (const auto& [k, v] : merged) {
      if (v) out.push_back({k, *v});
    }
  }
}

}  // namespace

std::vector<KV> Store::Impl::dump() const {
  std::lock_guard<std::mutex> lock(host_mutex);
  std::vector<KV> out;
  dump_leaves(*host_root, out);
  return out;
}

// ---- Store ----

Store::Store(StoreOptions options) : impl_(std::make_unique<Impl>(options)) {}
Store::~Store() = default;

void Store::bulk_load(std::span<const KV> pairs) { impl_->bulk_load(pairs); }

std::optional<std::uint64_t> Store::get(std::uint64_t key, OpCost* cost) {
  OpCost local;
  return impl_->get(key, cost != nullptr ? *cost : local);
}

RangeResult Store::range(std::uint64_t from, std::size_t max_pairs, OpCost* cost) {
  OpCost local;
  return impl_->range(from, max_pairs, cost != nullptr ? *cost : local);
}

void Store::write(WriteKind kind, std::uint64_t key, std::uint64_t value, OpCost* cost) {
  OpCost local;
  impl_->write(kind, key, value, cost != nullptr ? *cost : local);
}

void Store::flush() { impl_->flush(); }

StoreStats Store::stats() const {
  const Impl& m = *impl_;
  StoreStats s;
  s.keys = m.keys.load();
  s.leaves = m.leaves.load();
  s.inner_nodes = m.inner_nodes.load();
  s.depth = m.depth.load();
  s.dpa_bytes = m.memory.used();
  s.dpa_capacity = m.memory.capacity();
  s.host_bytes = m.host_bytes.load();
  s.patches = m.patches.load();
  s.update_only_patches = m.update_only_patches.load();
  s.failed_patches = m.failed_patches.load();
  s.leaf_splits = m.leaf_splits.load();
  s.inner_splits = m.inner_splits.load();
  s.root_splits = m.root_splits.load();
  const auto& sc = m.stitchers->counters();
  s.copy_stitches = sc.copies.load();
  s.connect_stitches = sc.connects.load();
  s.reset_stitches = sc.resets.load();
  s.stitched_bytes = sc.bytes.load();
  s.stitcher_lines = sc.lines.load();
  s.retired_nodes = m.epochs.retired();
  s.reclaimed_nodes = m.epochs.reclaimed();
  s.write_waits = m.write_waits.load();
  for (const auto& c : m.contexts) {
    std::lock_guard<std::mutex> lock(c->mutex);
    s.hot_lookups += c->cache.lookups();
    s.hot_hits += c->cache.hits();
  }
  return s;
}

const StoreOptions& Store::options() const { return impl_->options; }
std::vector<KV> Store::dump() const { return impl_->dump(); }
std::string Store::check() const { return impl_->check(); }

OpCost stitcher_work(const StoreStats& before, const StoreStats& after) {
  auto delta = [](std::uint64_t a, std::uint64_t b) { return b > a ? b - a : 0; };
  OpCost c;
  c.stitched_bytes = delta(before.stitched_bytes, after.stitched_bytes);
  c.stitch_commands = delta(before.copy_stitches + before.connect_stitches + before.reset_stitches,
                            after.copy_stitches + after.connect_stitches + after.reset_stitches);
  c.stitcher_lines = delta(before.stitcher_lines, after.stitcher_lines);
  return c;
}

}  // namespace forein::offload::dpa
