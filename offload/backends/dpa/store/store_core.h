// dpa store: the store's shared state (Store::Impl), split by role over
// traverse.cc (GET, RANGE, writes), patcher.cc (host patches),
// bulk_load.cc, store.cc (construction, flush, stats, check, dump);
// epochs.h, stitcher.h, host_tree.h, nic_layout.h and dpa_memory.h hold
// the parts with no store-wide state.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "dpa/store/dpa_memory.h"
#include "dpa/store/epochs.h"
#include "dpa/store/host_tree.h"
#include "dpa/store/nic_layout.h"
#include "dpa/store/stitcher.h"
#include "forein/dpa/store.h"

namespace forein::offload::dpa {

// A descent's leaf and its key range [lo, hi) (hi absent: unbounded).
struct LeafRange {
  detail::NicLeaf* leaf = nullptr;
  std::uint64_t lo = 0;
  std::optional<std::uint64_t> hi;
};

namespace detail {
// COPY stitches of a host node's current contents (patcher.cc).
Stitch copy_inner(const HostInner& node);
Stitch copy_leaf(NicLeaf* leaf, const FixedModel& model);
// Host arrays of keys[begin, begin + count) and their values.
std::unique_ptr<HostArrays> make_arrays(const std::vector<std::uint64_t>& keys,
                                        const std::vector<std::uint64_t>& values, std::size_t begin,
                                        std::size_t count);
}  // namespace detail

struct Store::Impl {
  explicit Impl(const StoreOptions& opts);
  ~Impl();

  // traverse.cc: the traversers' request paths.
  std::optional<std::uint64_t> get(std::uint64_t key, OpCost& cost);
  RangeResult range(std::uint64_t from, std::size_t max_pairs, OpCost& cost);
  void write(WriteKind kind, std::uint64_t key, std::uint64_t value, OpCost& cost);
  LeafRange descend(std::uint64_t key, OpCost& cost) const;
  detail::TraverserContext& context_of(std::uint64_t key);

  // patcher.cc: patch requests and the host-side patching.
  void send_patch(detail::NicLeaf* leaf);
  void patcher_loop();
  void patch(detail::NicLeaf* leaf);
  struct Patch;  // patch()'s state and phases

  // bulk_load.cc
  void bulk_load(std::span<const KV> pairs);

  // store.cc
  void flush();
  void batch_stitched(detail::StitchBatch& batch);
  std::uint64_t stitch_generation() const;
  std::string check() const;
  std::vector<KV> dump() const;

  // Allocation of new nodes (host side, may fail): nullptr if DPA memory
  // is full.
  detail::NicLeaf* new_leaf(std::uint64_t lo, std::unique_ptr<detail::HostArrays> arrays);
  detail::NicInner* new_inner(std::size_t segments, std::size_t children);
  void free_unpublished(detail::NicNode* node);

  const StoreOptions options;
  detail::DpaMemory memory;
  std::atomic<std::uint64_t> host_bytes{0};
  std::vector<std::unique_ptr<detail::TraverserContext>> contexts;
  detail::Epochs epochs;
  std::atomic<detail::NicNode*> root{nullptr};

  // The host tree, patchers' and bulk load's only.
  mutable std::mutex host_mutex;
  detail::HostInner* host_root = nullptr;

  std::atomic<std::uint64_t> keys{0}, leaves{0}, inner_nodes{0}, depth{0};
  std::atomic<std::uint64_t> patches{0}, update_only_patches{0}, failed_patches{0};
  std::atomic<std::uint64_t> leaf_splits{0}, inner_splits{0}, root_splits{0}, write_waits{0};

  // Patch requests sent and not yet stitched (flush waits for none), and a
  // generation bumped after every stitched batch (full-buffer writers wait
  // for it).
  mutable std::mutex flight_mutex;
  std::condition_variable flight_cv;
  std::uint64_t in_flight = 0;
  std::uint64_t generation = 0;

  // The host's patch queue and patcher threads.
  std::mutex patch_mutex;
  std::condition_variable patch_cv;
  std::deque<detail::NicLeaf*> patch_queue;
  bool stopping = false;
  std::vector<std::thread> patchers;
  std::unique_ptr<detail::Stitchers> stitchers;
};

}  // namespace forein::offload::dpa
