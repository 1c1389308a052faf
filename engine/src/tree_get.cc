// Point lookups: Tree::get and Tree::get_view, with a fast path for the
// common case.
//
// The fast path serves keys of up to 8 bytes (a key is then its word and
// its length, so every comparison is a comparison of integers), started
// from the root or from a primary hint (any level) that covers the key, on
// format-2 and fixed-shape leaves, when no writer is in the way. It reads the same pages
// under the same optimistic protocol as locate() (latch.h): version,
// fields, version again, child read before the parent is re-checked. It
// does none of the general path's bookkeeping it does not need (no
// SearchKey, no Node view but for a value in the heap, no restart
// accounting, no OpCounters copy per attempt), and counts what the general
// path would count for the same walk. Anything else it meets (a longer key,
// a secondary hint, a hint that does not cover the key, a page a writer
// holds, a split in flight, a dead node, a format-1 leaf, a version that
// moved) sends the lookup to the general path, which handles every case.
// Whenever it knows a leaf's page id before touching the leaf (the leaf's
// parent's slot, or a leaf hint), it fetches the leaf's search window
// together with the leaf's header (LeafWindows, leaf_windows.h).
#include "tree_impl.h"

namespace forein {

using detail::load;
using detail::Node;
using detail::OpCounters;
using detail::OptNode;
using detail::SearchKey;
namespace off = detail::off;

namespace {

// A key of at most 8 bytes. Against a stored key of the same word, a short
// key sorts by length (a shorter one is a zero-padded prefix of the longer),
// and a stored key longer than 8 bytes sorts after every short key of its
// word: so a comparison never needs the key's bytes.
struct ShortKey {
  Word word;
  std::size_t len;
};

[[gnu::always_inline]] inline std::uint16_t level_of(const std::byte* p) {
  return load<std::uint16_t>(p, off::kLevel);
}
[[gnu::always_inline]] inline std::uint16_t flags_of(const std::byte* p) {
  return load<std::uint16_t>(p, off::kFlags);
}

// A live node (not free, not merged away).
[[gnu::always_inline]] inline bool live(const std::byte* p) {
  return load<std::uint32_t>(p, off::kMagic) == detail::kNodeMagic &&
         (flags_of(p) & detail::kFlagDead) == 0;
}

// k < hi (Node::below_hi for a short key).
[[gnu::always_inline]] inline bool below_hi(const std::byte* p, ShortKey k) {
  if (flags_of(p) & detail::kFlagHiInf) return true;
  const Word hw = load<Word>(p, off::kHiWord);
  return k.word < hw || (k.word == hw && k.len < load<std::uint16_t>(p, off::kHiLen));
}

// lo <= k (Node::above_lo for a short key; a lo longer than 8 bytes with
// k's word is above k).
[[gnu::always_inline]] inline bool above_lo(const std::byte* p, ShortKey k) {
  const Word lw = load<Word>(p, off::kLoWord);
  return k.word > lw || (k.word == lw && k.len >= load<std::uint16_t>(p, off::kLoLen));
}

// Node::count(), clamped to `max` (the slots a page holds).
[[gnu::always_inline]] inline std::size_t count_of(const std::byte* p, std::size_t max) {
  const std::size_t n = load<std::uint16_t>(p, off::kCount);
  return n <= max ? n : max;
}

// Inner node: the slot of the child covering k (Node::child_index: the last
// slot whose key is <= k, or 0).
[[gnu::always_inline]] inline std::size_t child_slot(const std::byte* p, std::size_t max_slots,
                                                     ShortKey k) {
  constexpr std::size_t kStride = detail::kSlotSize;
  const std::size_t n = count_of(p, max_slots);
  std::size_t i = detail::word_search<kStride, false>(p, n, k.word);
  // Slots of k's word whose key is <= k: short ones no longer than k.
  while (i < n && load<Word>(p, detail::kHeaderSize + i * kStride) == k.word &&
         load<std::uint16_t>(p, detail::kHeaderSize + i * kStride + 10) <= k.len) {
    ++i;
  }
  return detail::kHeaderSize + (i == 0 ? 0 : i - 1) * kStride;
}

}  // namespace

// The fast path's walk: finds k's slot in the leaf covering it, from the
// primary hint or the root, without validating the leaf (the caller reads
// what it needs from it, then checks valid_short()). kSlow (nothing counted)
// or kRestart (a node changed under the walk: one restart) when the general
// path must answer. Inlined into its two callers, so that the
// hit stays in registers.
[[gnu::always_inline]] inline Tree::Impl::FastGet Tree::Impl::find_short(Word word, std::size_t len,
                                                                         const StartHints* hints,
                                                                         ShortHit& hit) const {
  const ShortKey k{word, len};
  auto begin = [&](const std::byte* page, ShortHit& r) {
    if (page == nullptr) return false;
    // A page a writer holds goes to the general path, which waits for it.
    const std::uint64_t v = detail::PageLatch(page).read_once();
    if (v & detail::PageLatch::kLocked) return false;
    r.page = page;
    r.version = v;
    return true;
  };

  hit.visited = 1;
  hit.hinted = false;
  if (hints != nullptr && !hints->primary.present()) {
    // Hints with nothing in them (a backend with no answer) start at the
    // root and count as no hint, as in locate().
    if (hints->secondary.present()) return FastGet::kSlow;
    hints = nullptr;
  }
  if (hints != nullptr) {
    // A hint at any level that covers k (locate()'s try_hint without its
    // move right); the walk goes down from it.
    hit.hinted = true;
    const Hint& h = hints->primary;
    const std::byte* start = store_->page(h.node);
    if (h.level == 0 && start != nullptr) leaf_windows_.prefetch(h.node, start, k.word);
    if (h.level >= detail::kMaxLevels || !begin(start, hit)) return FastGet::kSlow;
    const std::byte* p = hit.page;
    if (!live(p) || level_of(p) != h.level || !above_lo(p, k) || !below_hi(p, k)) {
      return FastGet::kSlow;
    }
  } else {
    if (!begin(store_->page(root_.load(std::memory_order_acquire)), hit)) return FastGet::kSlow;
    if (!live(hit.page) || !below_hi(hit.page, k)) return FastGet::kSlow;
  }
  for (std::uint16_t level = level_of(hit.page); level != 0;) {
    ShortHit child;
    const std::size_t slot = child_slot(hit.page, max_inner_slots_, k);
    const PageId child_id = load<PageId>(hit.page, slot + 12);
    const std::byte* c = store_->page(child_id);
    if (level == 1 && c != nullptr) leaf_windows_.prefetch(child_id, c, k.word);
    if (!begin(c, child)) return FastGet::kSlow;
    if (!valid_short(hit)) return FastGet::kRestart;
    const std::uint16_t child_level = level_of(c);
    if (child_level >= level || !live(c) || !below_hi(c, k)) return FastGet::kSlow;
    hit.page = c;
    hit.version = child.version;
    ++hit.visited;
    level = child_level;
  }

  const std::byte* p = hit.page;
  const std::uint16_t flags = flags_of(p);
  if (flags & detail::kFlagFixed) {
    // One key length for the whole leaf: a key of another length is not
    // in it, and k's word names at most one slot.
    constexpr std::size_t kStride = detail::kFixedSlotSize;
    const std::size_t n = count_of(p, max_fixed_slots_);
    const std::size_t i = detail::word_search<kStride, true>(p, n, k.word);
    hit.slot = detail::kHeaderSize + i * kStride;
    hit.stride = kStride;
    const bool found = i < n && load<Word>(p, hit.slot) == k.word &&
                       detail::fixed_key_len(flags) == k.len;
    return found ? FastGet::kFound : FastGet::kMissing;
  }
  if ((flags & detail::kFlagInlineValues) == 0) return FastGet::kSlow;  // format 1
  constexpr std::size_t kStride = detail::kLeafSlotSize;
  hit.stride = kStride;
  const std::size_t n = count_of(p, max_leaf_slots_);
  std::size_t i = detail::word_search<kStride, true>(p, n, k.word);
  for (; i < n; ++i) {
    // Slots of k's word, shortest key first.
    hit.slot = detail::kHeaderSize + i * kStride;
    if (load<Word>(p, hit.slot) != k.word) break;
    const std::size_t slot_len = load<std::uint16_t>(p, hit.slot + 10);
    if (slot_len >= k.len) return slot_len == k.len ? FastGet::kFound : FastGet::kMissing;
  }
  return FastGet::kMissing;
}

// Tree::get's fast path; kSlow or kRestart when the general path must
// answer (*copied
// tells whether *value was written by then).
Tree::Impl::FastGet Tree::Impl::get_short(Word word, std::size_t len, const StartHints* hints,
                                          std::string* value, bool* copied) const {
  ShortHit hit;
  const FastGet r = find_short(word, len, hints, hit);
  if (r == FastGet::kSlow || r == FastGet::kRestart) return r;
  if (r == FastGet::kFound && value != nullptr) {
    const bool fixed = hit.stride == detail::kFixedSlotSize;
    const std::size_t value_len = fixed ? detail::fixed_value_len(flags_of(hit.page))
                                        : load<std::uint32_t>(hit.page, hit.slot + 12);
    if (value_len <= detail::kInlineValueMax) {
      const std::uint64_t bytes = load<std::uint64_t>(hit.page, hit.slot + (fixed ? 8 : 16));
      value->resize(value_len);
      if (value_len == sizeof bytes) {
        std::memcpy(value->data(), &bytes, sizeof bytes);  // one store, no call
      } else {
        std::memcpy(value->data(), &bytes, value_len);
      }
    } else {  // in the heap: Node's reader-safe copy
      Node(const_cast<std::byte*>(hit.page), page_size_).copy_value(hit.index(), value);
    }
    *copied = true;
  }
  if (!valid_short(hit)) return FastGet::kRestart;
  publish_get(hit.visited, hit.hinted);
  return r;
}

bool Tree::get(std::string_view key, std::string* value, const StartHints* hints) {
  bool copied = false;  // an attempt that restarted may have left a torn value
  std::uint64_t restarts = 0;
  if (key.size() <= kWordBytes) {
    switch (impl_->get_short(word_of(key), key.size(), hints, value, &copied)) {
      case Impl::FastGet::kFound: return true;
      case Impl::FastGet::kMissing: return false;
      case Impl::FastGet::kRestart: restarts = 1; break;
      case Impl::FastGet::kSlow: break;
    }
  }
  const bool found = impl_->get_general(key, hints, restarts, [&](const Node& n, std::size_t i) {
    if (value != nullptr) {
      n.copy_value(i, value);
      copied = true;
    }
  });
  if (!found && copied) value->clear();
  return found;
}

bool Tree::get_view(std::string_view key, std::string_view* value, const StartHints* hints) {
  std::uint64_t restarts = 0;
  if (key.size() <= kWordBytes) {
    Impl::ShortHit hit;
    const Impl::FastGet r = impl_->find_short(word_of(key), key.size(), hints, hit);
    if (r == Impl::FastGet::kFound || r == Impl::FastGet::kMissing) {
      if (impl_->valid_short(hit)) {
        const bool found = r == Impl::FastGet::kFound;
        if (found && value != nullptr) {
          *value = Node(const_cast<std::byte*>(hit.page), impl_->page_size_).value_at(hit.index());
        }
        impl_->publish_get(hit.visited, hit.hinted);
        return found;
      }
      restarts = 1;
    } else if (r == Impl::FastGet::kRestart) {
      restarts = 1;
    }
  }
  // A view of a torn read is discarded with it (the attempt restarts).
  return impl_->get_general(key, hints, restarts, [&](const Node& n, std::size_t i) {
    if (value != nullptr) *value = n.value_at(i);
  });
}

// The general path: locate the leaf (any key, any hint), search it, hand a
// found entry to on_found(node, slot) and check the leaf's version,
// restarting until it holds (on_found may then run again). `restarts`: the
// fast path's attempt, if it was one. Out of line, so that the fast path's
// caller saves no registers for it.
template <typename OnFound>
[[gnu::noinline]] bool Tree::Impl::get_general(std::string_view key, const StartHints* hints,
                                               std::uint64_t restarts, OnFound&& on_found) {
  const SearchKey k(key);
  OpCounters c;
  c.restarts = restarts;
  for (;;) {
    const OpCounters saved = c;
    OptNode leaf;
    if (!locate_leaf_fast(k, hints, leaf, c)) leaf = locate(k, hints, 0, nullptr, c);
    const Node n = leaf.node;
    const std::size_t i = n.lower_bound(k);
    const bool found = n.key_equals(i, k);
    if (found) on_found(n, i);
    if (valid(leaf)) {
      publish(c);
      return found;
    }
    count_restart(c, saved);
  }
}

}  // namespace forein
