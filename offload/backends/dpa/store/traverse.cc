// dpa store: the traversers' request paths (DPA-Store 3.1): descent
// through the NIC tree with fixed-point models, the leaf's insert buffer,
// the host key window and value by DMA, RANGE's merge, writes appended to
// the insert buffer. Every access is counted as section 4.2.6 counts it.
#include <algorithm>
#include <string>

#include "dpa/store/store_core.h"
#include "forein/error.h"

namespace forein::offload::dpa {

using detail::BufferEntry;
using detail::kLine;
using detail::lines_spanned;
using detail::NicInner;
using detail::NicLeaf;
using detail::NicNode;
using detail::RequestScope;

namespace {

// The last index i with a[i] <= key among a[0, n) (-1 if none), searching
// the window of +-eps around the prediction first and stepping outwards
// only when the key lies past the window's edge (a key the model was not
// trained on). [first, last]: the indices read.
struct Probe {
  std::int64_t at = -1;
  std::uint32_t first = 0, last = 0;
  bool outside = false;  // read beyond the window
};

Probe window_search(const std::uint64_t* a, std::uint32_t n, std::int64_t predicted, std::uint32_t eps,
                    std::uint64_t key) {
  Probe p;
  const Window w = search_window(predicted, eps, n);
  p.first = w.first;
  p.last = w.last;
  std::int64_t at = static_cast<std::int64_t>(w.first) - 1;
  for (std::uint32_t i = w.first; i <= w.last && a[i] <= key; ++i) at = i;
  if (at == static_cast<std::int64_t>(w.last) && a[at] != key) {  // an exact hit needs no more
    while (static_cast<std::uint32_t>(at) + 1 < n) {
      p.last = static_cast<std::uint32_t>(at) + 1;
      p.outside = true;
      if (a[at + 1] > key) break;
      ++at;
    }
  } else if (at == static_cast<std::int64_t>(w.first) - 1) {
    while (at >= 0) {
      p.first = static_cast<std::uint32_t>(at);
      p.outside = true;
      if (a[at] <= key) break;
      --at;
    }
  }
  p.at = at;
  return p;
}

// One inner node (4.2.6): the metadata + segment-keys line, the segment's
// model line, the pivot lines the window touches, the child pointer's
// line. The root's first two lines are served by the L3 when configured.
std::size_t inner_child(const NicInner& node, std::uint64_t key, std::uint32_t eps, bool first_lines_in_l3,
                        OpCost& cost) {
  const detail::InnerLayout& l = node.layout;
  (first_lines_in_l3 ? cost.l3_lines : cost.dpa_lines) += 2;
  std::uint32_t s = 0;
  while (s + 1 < l.segments && l.first_keys[s + 1] <= key) ++s;
  const std::uint32_t base = l.seg_begin[s], n = l.seg_count[s];
  const Probe p = window_search(l.pivots.data() + base, n, l.models[s].predict(key), eps, key);
  cost.dpa_lines += lines_spanned(p.first, p.last, detail::kPivotBytes);
  cost.dpa_lines += 1;  // the child pointer
  cost.inner_nodes += 1;
  return base + static_cast<std::size_t>(p.at < 0 ? 0 : p.at);
}

// The host key window of a leaf by DMA (sequential lines collapse into one
// DMA; reading past the window is a second one).
Probe leaf_key_search(const NicLeaf& leaf, std::uint64_t key, std::uint32_t eps, OpCost& cost) {
  const detail::LeafImage& img = leaf.image;
  const Probe p = window_search(img.host_keys, img.count, img.model.predict(key), eps, key);
  const std::uint64_t lines = lines_spanned(p.first, p.last, 8);
  cost.dmas += p.outside ? 2 : 1;
  cost.dma_bytes += lines * kLine;
  return p;
}

// Buffer lines touched by reading entries [first, last].
std::uint64_t buffer_lines(std::uint32_t first, std::uint32_t last) {
  return lines_spanned(first, last, detail::kBufferEntryBytes);
}

std::uint32_t published_entries(const NicLeaf& leaf) {
  return std::min(leaf.reserved.load(), leaf.capacity);
}

}  // namespace

detail::TraverserContext& Store::Impl::context_of(std::uint64_t key) {
  return *contexts[traverser_of(key, contexts.size())];
}

LeafRange Store::Impl::descend(std::uint64_t key, OpCost& cost) const {
  LeafRange r;
  const NicNode* node = root.load();
  bool at_root = true;
  while (!node->is_leaf) {
    const auto& inner = *static_cast<const NicInner*>(node);
    const std::size_t i = inner_child(inner, key, options.epsilon_inner, at_root && options.root_lines_in_l3, cost);
    r.lo = inner.layout.pivots[i];
    if (i + 1 < inner.child_count) r.hi = inner.layout.pivots[i + 1];
    node = inner.children[i].load(std::memory_order_acquire);
    at_root = false;
  }
  r.leaf = const_cast<NicLeaf*>(static_cast<const NicLeaf*>(node));
  cost.leaves += 1;
  cost.dpa_lines += 1;  // the leaf's metadata line (model, DMA addresses, buffer counters)
  return r;
}

std::optional<std::uint64_t> Store::Impl::get(std::uint64_t key, OpCost& cost) {
  detail::TraverserContext& ctx = context_of(key);
  RequestScope scope(ctx);
  std::uint64_t cached = 0;
  if (options.hot_cache && ctx.cache.get(key, &cached, &cost)) {
    cost.hot_hits += 1;
    return cached;
  }
  const NicLeaf& leaf = *descend(key, cost).leaf;
  // The insert buffer, newest first (only when non-empty: its counters
  // share the metadata line).
  const std::uint32_t n = published_entries(leaf);
  if (n > 0) {
    std::int64_t found = -1;
    detail::EntryRead hit;
    for (std::int64_t i = static_cast<std::int64_t>(n) - 1; i >= 0 && found < 0; --i) {
      if (detail::read_entry(leaf.entries[i], &hit) && hit.key == key) found = i;
    }
    const auto lowest = static_cast<std::uint32_t>(found < 0 ? 0 : found);
    cost.buffer_entries += n - lowest;
    cost.dpa_lines += buffer_lines(lowest, n - 1);
    if (found >= 0) {
      if (hit.op == detail::kOpDelete) return std::nullopt;
      return hit.value;
    }
  }
  if (leaf.image.count == 0) return std::nullopt;
  const Probe p = leaf_key_search(leaf, key, options.epsilon_leaf, cost);
  if (p.at < 0 || leaf.image.host_keys[p.at] != key) return std::nullopt;
  cost.dmas += 1;  // the value
  cost.dma_bytes += kLine;
  const std::uint64_t value = leaf.image.host_values[p.at].load();
  if (options.hot_cache) ctx.cache.offer(key, value);
  return value;
}

RangeResult Store::Impl::range(std::uint64_t from, std::size_t max_pairs, OpCost& cost) {
  if (max_pairs == 0) throw InvalidArgument("dpa store: range needs max_pairs >= 1");
  max_pairs = std::min(max_pairs, kMaxRangePairs);
  RangeResult out;
  detail::TraverserContext& ctx = context_of(from);
  RequestScope scope(ctx);
  std::uint64_t cursor = from;
  for (;;) {
    const LeafRange lr = descend(cursor, cost);
    const NicLeaf& leaf = *lr.leaf;
    // The buffer's newest op per key in [cursor, hi), sorted. Newest slot
    // first, as GET reads it, and the first entry found for a key is kept:
    // an UPDATE-only patch's RESET can clear the buffer during the scan,
    // and once one slot reads cleared every lower slot does too, so an
    // older entry can never stand in for a newer one the RESET cleared
    // (whose value the patch has already written to the host arrays).
    struct Buffered {
      std::uint64_t key, value;
      std::uint8_t op;
    };
    std::vector<Buffered> buffered;
    const std::uint32_t n = published_entries(leaf);
    if (n > 0) {
      cost.buffer_entries += n;
      cost.dpa_lines += buffer_lines(0, n - 1);
      for (std::uint32_t i = n; i-- > 0;) {
        detail::EntryRead e;
        if (!detail::read_entry(leaf.entries[i], &e)) continue;
        const std::uint64_t k = e.key;
        if (k < cursor || (lr.hi && k >= *lr.hi)) continue;
        const bool newer_seen =
            std::any_of(buffered.begin(), buffered.end(), [&](const Buffered& b) { return b.key == k; });
        if (!newer_seen) buffered.push_back({k, e.value, e.op});
      }
      std::sort(buffered.begin(), buffered.end(), [](const Buffered& a, const Buffered& b) { return a.key < b.key; });
    }
    // The host arrays from the first key >= cursor.
    const detail::LeafImage& img = leaf.image;
    std::uint32_t h = 0;
    std::uint32_t key_lines_first = 0;
    if (img.count > 0) {
      const Probe p = window_search(img.host_keys, img.count, img.model.predict(cursor), options.epsilon_leaf, cursor);
      key_lines_first = p.first;
      h = p.at < 0 ? 0 : (img.host_keys[p.at] == cursor ? static_cast<std::uint32_t>(p.at)
                                                         : static_cast<std::uint32_t>(p.at) + 1);
    }
    const std::uint32_t h_start = h;
    std::size_t b = 0;
    while (out.pairs.size() < max_pairs && (h < img.count || b < buffered.size())) {
      const bool take_buffer = h >= img.count || (b < buffered.size() && buffered[b].key <= img.host_keys[h]);
      if (take_buffer) {
        if (h < img.count && buffered[b].key == img.host_keys[h]) ++h;  // the buffer overrides the host
        if (buffered[b].op != detail::kOpDelete) out.pairs.push_back({buffered[b].key, buffered[b].value});
        ++b;
      } else {
        out.pairs.push_back({img.host_keys[h], img.host_values[h].load()});
        ++h;
      }
    }
    if (img.count > 0) {
      // Keys from the window to the last one read: one DMA; values read: one more.
      const std::uint32_t last_key = std::min(std::max(h, h_start), img.count - 1);
      cost.dmas += 1;
      cost.dma_bytes += lines_spanned(std::min(key_lines_first, h_start), std::max(last_key, key_lines_first), 8) * kLine;
      if (h > h_start) {
        cost.dmas += 1;
        cost.dma_bytes += lines_spanned(h_start, h - 1, 8) * kLine;
      }
    }
    if (out.pairs.size() == max_pairs) {
      const std::uint64_t last = out.pairs.back().key;
      out.more = last != UINT64_MAX;
      out.next_key = out.more ? last + 1 : 0;
      return out;
    }
    if (!lr.hi) return out;
    cursor = *lr.hi;  // the next leaf: its lowest key is above every key returned
  }
}

void Store::Impl::write(WriteKind kind, std::uint64_t key, std::uint64_t value, OpCost& cost) {
  const std::uint8_t op = kind == WriteKind::kInsert   ? detail::kOpInsert
                          : kind == WriteKind::kUpdate ? detail::kOpUpdate
                                                       : detail::kOpDelete;
  detail::TraverserContext& ctx = context_of(key);
  for (;;) {
    const std::uint64_t seen_generation = stitch_generation();
    {
      RequestScope scope(ctx);
      NicLeaf& leaf = *descend(key, cost).leaf;
      const std::uint32_t slot = leaf.reserved.fetch_add(1);  // the first counter: before the write
      if (slot < leaf.capacity) {
        if (options.hot_cache) ctx.cache.invalidate(key, &cost);
        BufferEntry& e = leaf.entries[slot];
        e.key.store(key);
        e.value.store(value);
        e.tag.store(detail::entry_tag(leaf.generation.load(), op));  // publishes the entry
        cost.buffer_entries += 1;
        cost.dpa_lines += buffer_lines(slot, slot);
        // The second counter, after the write; whoever fills the last slot
        // sends the patch request (3.2.1).
        if (leaf.committed.fetch_add(1) + 1 == leaf.capacity) send_patch(&leaf);
        return;
      }
      if (leaf.patch_failed.load()) {
        throw InvalidArgument("dpa store: DPA memory is full (" + std::to_string(memory.used()) + " of " +
                              std::to_string(memory.capacity()) +
                              " bytes): the leaf's insert buffer is full and its patch could not allocate "
                              "new nodes; the write of key " + std::to_string(key) + " was not applied");
      }
    }
    // The buffer is full and its patch in flight: the paper re-enqueues
    // the request; we leave the context and retry after the next stitch.
    write_waits.fetch_add(1);
    std::unique_lock<std::mutex> lock(flight_mutex);
    flight_cv.wait(lock, [&] { return generation != seen_generation; });
  }
}

}  // namespace forein::offload::dpa
