// Honeycomb's write path (sections 3.4-3.5): lock-free traversal of the
// latest node versions, a CAS on the leaf's lock word that also checks the
// sequence number seen while traversing, then
//   - fast path: append to the log block; take the write version; set the
//     entry's version delta; one store of size + sequence + unlock;
//   - merge: the log block is full: copy-on-write into a new buffer with
//     new shortcuts, old-version pointer to the old buffer, remap the LID;
//   - split: the merged items do not fit: split the leaf and, up the path,
//     every full parent; copy the root of the split into a new buffer (same
//     LID) and swap its mapping; new leaves' old-version pointers name the
//     old leaf so older snapshots reached through siblings see it.
// Buffers that are replaced stay locked forever: a writer that traversed
// to one fails its CAS and restarts. All lock attempts are try-locks, so
// writers never wait for each other's locks (no deadlock); they restart.
//
// Not implemented (the paper omits the details too): merging underfull
// nodes with siblings on delete. Empty leaves stay in the tree; their
// space is reclaimed only by a later merge or split of the same leaf.
#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>

#include "forein/error.h"
#include "fpga/honeycomb/store_impl.h"

namespace forein::offload::fpga {
namespace {

using layout::Header;
using layout::Image;

constexpr std::uint64_t kLockBit = std::uint64_t{1} << 63;
constexpr Version kLatest = ~Version{0};
// Stand-ins for LIDs allocated once every lock is held.
constexpr Lid kPlaceholder = Lid{1} << 62;

struct PathNode {
  Lid lid;
  std::byte* buf;
  std::uint64_t w1;  // the lock word seen while traversing
};

struct Held {
  std::byte* buf;
  std::uint64_t w1;  // the unlocked word to restore
};

void copy_full(NodeAddress buf, Image& img) {
  copy_node_bytes(buf, 0, kHeaderBytes, img.bytes.data());
  img.header = layout::decode_header(img.bytes.data());
  const std::size_t size = std::clamp<std::size_t>(img.header.size, kHeaderBytes, kNodeBytes);
  copy_node_bytes(buf, kHeaderBytes, size - kHeaderBytes, img.bytes.data() + kHeaderBytes);
}

// The header words of a live buffer (atomic loads: writers change the lock
// word and sibling LIDs in place).
Header read_header(NodeAddress buf) {
  std::byte words[kHeaderBytes];
  copy_node_bytes(buf, 0, kHeaderBytes, words);
  return layout::decode_header(words);
}

// A leaf image to merge from, reused by the thread's writes: an Image is
// 8 KB, too big to zero per write, and the merged items' string_views
// point into it until the new buffers are built.
Image& merge_image() {
  thread_local Image image;
  return image;
}

std::vector<layout::SortedItem> all_sorted(const Image& img, const layout::Segments& segs) {
  std::vector<layout::SortedItem> out;
  for (std::size_t i = 0; i < segs.count(); ++i) {
    if (!layout::parse_segment(img, segs, i, out)) throw Error("honeycomb: corrupt node");
  }
  return out;
}

// Starts loading [begin, end) of a node into the cache. The header says
// which blocks a search reads next (the shortcut block, a leaf's log), so
// their cache misses can overlap instead of following one another.
void prefetch(const std::byte* buf, std::size_t begin, std::size_t end) {
  for (std::size_t off = begin & ~std::size_t{63}; off < end; off += 64) __builtin_prefetch(buf + off);
}

// The child of an interior node to descend to for key, searched in place:
// a published interior buffer never changes below its header.
Lid find_child(const std::byte* buf, const Header& h, std::string_view key) {
  const auto seg = layout::find_segment(buf, h, key);
  if (!seg) return kNoLid;
  prefetch(buf, seg->start, seg->end);
  Lid child = seg->index == 0 ? h.leftmost : kNoLid;
  layout::SegmentCursor cursor(buf, true, *seg);
  layout::SortedItem item;
  while (cursor.next(item) && item.key <= key) child = item.child;
  return cursor.ok() ? child : kNoLid;
}

// Root to leaf over the latest versions (no locks, no old versions).
bool traverse(StoreCore& s, std::string_view key, std::vector<PathNode>& path) {
  path.clear();
  Lid lid = s.root_lid();
  for (int depth = 0; depth < 64; ++depth) {
    auto* buf = const_cast<std::byte*>(s.table.translate(lid));
    if (buf == nullptr) return false;
    const std::uint64_t w1 = layout::load_word(buf, 1);
    const Header h = read_header(buf);
    if (!h.plausible()) return false;
    prefetch(buf, kHeaderBytes, kFirstBlockBytes);
    path.push_back({lid, buf, w1});
    if (!h.interior()) {
      prefetch(buf, h.sorted_end, h.size);  // the log block, scanned by probe_leaf
      return true;
    }
    lid = find_child(buf, h, key);
    if (lid == kNoLid) return false;
  }
  return false;
}

// What a write needs to know about its key in a leaf, found the way the
// accelerator finds it (section 3.4): one segment searched and the log
// block scanned, in place, allocating nothing. The caller holds the leaf's
// lock, so the bytes below its size cannot change.
struct KeyProbe {
  bool exists = false;        // a sorted item or log entry (a delete marker included)
  bool live = false;          // exists and its newest entry is not a delete
  std::uint16_t latest = 0;   // offset of the key's newest entry
  std::uint16_t greater = 0;  // the first sorted item with a greater key (sorted_end: none)
  std::size_t log_entries = 0;
  std::size_t hint = 0;       // log entries with a key <= ours: our order hint
};

KeyProbe probe_leaf(const std::byte* buf, const Header& h, std::string_view key) {
  KeyProbe p;
  const auto seg = layout::find_segment(buf, h, key);
  if (!seg) throw Error("honeycomb: corrupt leaf");
  prefetch(buf, seg->start, seg->end);
  // No greater key in the segment: the next segment's first item (its
  // boundary, > key) or sorted_end is the first greater one.
  p.greater = seg->end;
  layout::SegmentCursor cursor(buf, false, *seg);
  layout::SortedItem item;
  while (cursor.next(item)) {
    if (item.key < key) continue;
    if (item.key == key) {
      p.exists = p.live = true;
      p.latest = item.offset;
    } else {
      p.greater = item.offset;
    }
    break;
  }
  if (!cursor.ok()) throw Error("honeycomb: corrupt leaf");
  // Log entries are in append (= version) order: the last one for key is
  // its newest.
  layout::LogCursor log(buf, h);
  layout::LogEntry e;
  while (p.log_entries < layout::kMaxLogEntries && log.next(e)) {
    ++p.log_entries;
    if (e.key > key) continue;
    ++p.hint;
    if (e.key == key) {
      p.exists = true;
      p.live = e.live_op();
      p.latest = e.offset;
    }
  }
  return p;
}

void backoff(unsigned attempt) {
  if (attempt < 4) return;
  if (attempt < 64) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(std::min(attempt, 500u)));
  }
}

enum class Outcome { kChanged, kUnchanged, kRetry };

struct InteriorPlan {
  std::size_t depth;  // index in the path
  std::unique_ptr<Image> img;
  Lid leftmost = kNoLid;
  std::vector<std::pair<std::string_view, Lid>> items;
  bool split = false;
  std::size_t mid = 0;
};

// What a split decides while it takes its locks. New nodes are named by
// placeholder LIDs (kPlaceholder + i) until every lock is held, so a split
// that has to restart has allocated nothing and has nothing to undo.
struct SplitPlan {
  std::size_t m = 0;  // the leaf's items [0, m) go left, [m, end) right
  Lid next_ph = kPlaceholder;
  Lid leaf_l = kNoLid, leaf_r = kNoLid;
  std::vector<InteriorPlan> interiors;  // bottom-up: the parents that split, then the root of the split
  bool root_split = true;               // every node on the path split: the tree grows
  // The topmost split's separator and halves: a new root's only item.
  std::string_view sep;
  Lid new_left = kNoLid, new_right = kNoLid;
  std::vector<Held> held;  // every lock taken but the leaf's, with the word to restore
  std::byte* sib[2] = {nullptr, nullptr};  // the leaf's siblings, locked
};

// The split's new nodes, built once every lock is held, and what they
// replace.
struct SplitNodes {
  Version w = 0;  // the write version
  bool mvcc = false;
  std::vector<Lid> real;  // placeholder kPlaceholder + i -> real[i]
  std::vector<std::pair<Lid, std::byte*>> fresh;  // new LIDs to map
  std::pair<Lid, std::byte*> swap{kNoLid, nullptr};  // the root of the split's new buffer (no root split)
  Lid new_root = kNoLid;  // a root split's new root
  std::vector<Retired> retired;
  std::uint64_t nodes_split = 1;  // the leaf, then every interior node that split

  Lid lid_of(Lid x) const { return x >= kPlaceholder ? real[static_cast<std::size_t>(x - kPlaceholder)] : x; }
  Version version() const { return mvcc ? w : 0; }
  std::uint64_t old_ptr(const std::byte* b) const {
    return mvcc ? static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(b)) : 0;
  }
};

// An interior node's items, copied from its buffer (the caller holds its
// lock, and a published interior buffer never changes below its header).
InteriorPlan copy_interior(std::size_t depth, std::byte* buf) {
  InteriorPlan plan;
  plan.depth = depth;
  plan.img = std::make_unique<Image>();
  copy_full(buf, *plan.img);
  const auto segs = layout::parse_shortcuts(*plan.img);
  if (!segs) throw Error("honeycomb: corrupt interior node");
  plan.leftmost = plan.img->header.leftmost;
  for (const auto& x : all_sorted(*plan.img, *segs)) plan.items.emplace_back(x.key, x.child);
  return plan;
}

// The child that split replaced by its halves: the left one in its place,
// (sep, right) just after it. False if the parent no longer points at the
// child.
bool replace_child(InteriorPlan& plan, Lid old_child, std::string_view sep, Lid new_left, Lid new_right) {
  std::size_t at;
  if (plan.leftmost == old_child) {
    plan.leftmost = new_left;
    at = 0;
  } else {
    const auto f = std::find_if(plan.items.begin(), plan.items.end(),
                                [&](const auto& x) { return x.second == old_child; });
    if (f == plan.items.end()) return false;
    f->second = new_left;
    at = static_cast<std::size_t>(f - plan.items.begin()) + 1;
  }
  plan.items.insert(plan.items.begin() + static_cast<std::ptrdiff_t>(at), {sep, new_right});
  return true;
}

class LeafWrite {
 public:
  LeafWrite(StoreCore& s, WriteOp op, std::string_view key, std::string_view value,
            std::vector<PathNode>& path, std::uint64_t leaf_w1)
      : s_(s), op_(op), key_(key), value_(value), path_(path), leaf_(path.back()), leaf_w1_(leaf_w1) {}

  Outcome run();

 private:
  Outcome unlock_leaf(Outcome o) {
    layout::store_word(leaf_.buf, 1, leaf_w1_);
    return o;
  }
  bool fits_log(std::size_t log_entries, std::size_t entry) const;
  Outcome fast_path(std::uint16_t back, std::uint8_t hint, std::uint8_t flags, std::string_view value);
  Outcome merge(WriteOp op, std::string_view value);
  Outcome merge_or_split(const std::vector<layout::BuildItem>& items);
  Outcome split(const std::vector<layout::BuildItem>& items);
  // split()'s phases.
  bool lock_split_path(SplitPlan& sp);
  bool lock_siblings(SplitPlan& sp);
  Outcome restart_split(const SplitPlan& sp);
  SplitNodes build_split(const std::vector<layout::BuildItem>& items, const SplitPlan& sp, Version w);
  void build_split_leaves(const std::vector<layout::BuildItem>& items, const SplitPlan& sp, SplitNodes& n);
  void build_split_interiors(const SplitPlan& sp, SplitNodes& n);
  std::byte* build_buffer(const Header& hdr, const std::vector<layout::BuildItem>& b);
  void publish_split(const SplitPlan& sp, const SplitNodes& n);
  void count(std::uint8_t op_code) {
    (op_code == layout::kOpInsert ? s_.puts : op_code == layout::kOpUpdate ? s_.updates : s_.deletes)
        .fetch_add(1, std::memory_order_relaxed);
  }

  StoreCore& s_;
  WriteOp op_;
  std::string_view key_, value_;
  std::vector<PathNode>& path_;
  PathNode leaf_;
  std::uint64_t leaf_w1_;  // unlocked lock word
  Header h_;               // the leaf's header, read under its lock
  std::uint8_t op_code_ = 0;
};

Outcome LeafWrite::run() {
  // Under the lock nothing below the leaf's size changes; its header is
  // re-read because a neighbour's split may have changed the sibling LIDs
  // since the traversal (it holds this lock while it does).
  h_ = read_header(leaf_.buf);
  if (!h_.plausible()) throw Error("honeycomb: corrupt leaf");
  const KeyProbe k = probe_leaf(leaf_.buf, h_, key_);

  WriteOp op = op_;
  if (op == WriteOp::kUpsert) op = k.live ? WriteOp::kUpdate : WriteOp::kPut;
  if ((op == WriteOp::kPut) == k.live) {
    // Nothing to write, but what decided it may be a write not yet
    // released: return only once readers see it too (linearizability).
    unlock_leaf(Outcome::kUnchanged);
    s_.versions.wait_released(s_.versions.write_version());
    return Outcome::kUnchanged;
  }
  op_code_ = op == WriteOp::kPut ? layout::kOpInsert : op == WriteOp::kUpdate ? layout::kOpUpdate : layout::kOpDelete;
  const std::string_view value = op == WriteOp::kErase ? std::string_view{} : value_;

  // Back-pointer: the newest entry of this key (it replaces it), else the
  // first sorted item with a greater key. Hint: the entry's index in the
  // log's sorted order now (after every entry with a key <= ours).
  const std::uint16_t back = k.exists ? k.latest : k.greater;
  const std::uint8_t flags = op_code_ | (k.exists ? layout::kReplaces : 0);
  if (fits_log(k.log_entries, layout::log_entry_bytes(key_, value))) {
    return fast_path(back, static_cast<std::uint8_t>(k.hint), flags, value);
  }
  return merge(op, value);
}

bool LeafWrite::fits_log(std::size_t log_entries, std::size_t entry) const {
  // The version delta must fit its 5 bytes for any version taken soon.
  const bool delta_ok = !s_.versions.mvcc() ||
                        s_.versions.write_version() + (Version{1} << 30) - h_.version <= layout::kMaxVersionDelta;
  return h_.size - h_.sorted_end + entry <= s_.options.log_block_bytes && h_.size + entry <= kNodeBytes &&
         log_entries < layout::kMaxLogEntries - 1 && delta_ok;
}

Outcome LeafWrite::merge(WriteOp op, std::string_view value) {
  // The log block is full: parse the whole leaf (a private copy, so the
  // items' string_views stay valid after the buffer is retired).
  Image& img = merge_image();
  copy_full(leaf_.buf, img);
  const auto segs = layout::parse_shortcuts(img);
  if (!img.header.plausible() || !segs) throw Error("honeycomb: corrupt leaf");
  const layout::LeafMerger merger(img, layout::parse_log(img), kLatest);
  thread_local std::vector<layout::LeafItem> items;  // reused: merges are every few writes
  merger.merge_into(*segs, 0, segs->count() - 1, items);

  // The merged block: live items with this write applied at its place
  // (found once: items ascend).
  const auto at = std::lower_bound(items.begin(), items.end(), key_,
                                   [](const layout::LeafItem& x, std::string_view k) { return x.key < k; });
  thread_local std::vector<layout::BuildItem> merged;
  merged.clear();
  merged.reserve(items.size() + 1);
  auto copy_live = [&](auto from, auto to) {
    for (auto x = from; x != to; ++x) {
      if (x->live) merged.push_back({x->key, x->value, kNoLid});
    }
  };
  copy_live(items.begin(), at);
  if (op != WriteOp::kErase) merged.push_back({key_, value, kNoLid});
  copy_live(at != items.end() && at->key == key_ ? at + 1 : at, items.end());
  return merge_or_split(merged);
}

Outcome LeafWrite::fast_path(std::uint16_t back, std::uint8_t hint, std::uint8_t flags, std::string_view value) {
  const Header& h = h_;
  std::byte* at = leaf_.buf + h.size;  // past the published size: no reader looks here
  layout::encode_log_entry(at, back, hint, flags, 0, key_, value);
  const Version w = s_.versions.acquire();
  const std::uint64_t delta = s_.versions.mvcc() ? w - h.version : 0;
  std::memcpy(at + 4, &delta, 5);
  const auto size = static_cast<std::uint32_t>(h.size + layout::log_entry_bytes(key_, value));
  layout::store_word(leaf_.buf, 1, layout::pack_lock_word(false, layout::seq_of(leaf_w1_) + 1, size));
  s_.versions.release(w);
  s_.log_appends.fetch_add(1, std::memory_order_relaxed);
  count(op_code_);
  return Outcome::kChanged;
}

Outcome LeafWrite::merge_or_split(const std::vector<layout::BuildItem>& items) {
  const Header& h = h_;
  Header nh;
  nh.left = h.left;
  nh.right = h.right;
  std::byte* buf = s_.new_buffer();
  // Keep a log block's room free so the next writes take the fast path.
  const std::size_t limit = kNodeBytes - std::min(s_.options.log_block_bytes, kNodeBytes / 4);
  if (!layout::build_node(buf, nh, items, limit)) {
    s_.delete_buffer(buf);
    return split(items);
  }
  const Version w = s_.versions.acquire();
  if (s_.versions.mvcc()) {
    layout::store_word(buf, 2, w);
    layout::store_word(buf, 3, reinterpret_cast<std::uintptr_t>(leaf_.buf));
  }
  // Sibling LIDs are read under the leaf's lock: writers that change them
  // (a neighbour's split) hold this lock too.
  s_.table.map(leaf_.lid, buf);
  s_.versions.release(w);
  s_.merges.fetch_add(1, std::memory_order_relaxed);
  count(op_code_);
  s_.retired.fetch_add(1, std::memory_order_relaxed);
  s_.epochs.retire({{leaf_.buf, kNoLid}});  // stays locked: late writers restart
  return Outcome::kChanged;
}

std::size_t split_point(const std::vector<layout::BuildItem>& items, bool interior) {
  std::size_t total = 0;
  for (const auto& it : items) total += layout::item_bytes(it, interior);
  std::size_t acc = 0, m = 0;
  while (m + 1 < items.size() && acc + layout::item_bytes(items[m], interior) / 2 < total / 2) {
    acc += layout::item_bytes(items[m], interior);
    ++m;
  }
  return std::clamp<std::size_t>(m, 1, items.size() - 1);
}

// The split, phase by phase: choose the split point, lock and plan up the
// path, lock the siblings, build the new nodes, publish them, release the
// write. Every lock is taken (try-locks)
// before a LID is allocated or a buffer built, so a failed try-lock
// restarts with nothing to undo; nothing new is reachable before the
// publish phase.
Outcome LeafWrite::split(const std::vector<layout::BuildItem>& items) {
  if (items.size() < 2) throw Error("honeycomb: leaf cannot split");
  SplitPlan sp;
  sp.m = split_point(items, false);
  sp.leaf_l = sp.next_ph++;
  sp.leaf_r = sp.next_ph++;
  sp.sep = items[sp.m].key;
  if (!lock_split_path(sp) || !lock_siblings(sp)) return restart_split(sp);

  // Every lock is held: this write will happen.
  const Version w = s_.versions.acquire();
  SplitNodes n = build_split(items, sp, w);
  publish_split(sp, n);
  s_.versions.release(w);
  s_.splits.fetch_add(n.nodes_split, std::memory_order_relaxed);
  count(op_code_);
  s_.retired.fetch_add(n.retired.size(), std::memory_order_relaxed);
  s_.epochs.retire(std::move(n.retired));
  return Outcome::kChanged;
}

// Up the path: every full parent splits; the first that fits is the
// root of the split. Interior buffers never change in place, so a
// successful CAS with the traversal's lock word means the copy is current.
// False: a lock or check failed (restart).
bool LeafWrite::lock_split_path(SplitPlan& sp) {
  Lid old_child = leaf_.lid;
  sp.new_left = sp.leaf_l;
  sp.new_right = sp.leaf_r;
  for (std::size_t d = path_.size() - 1; d-- > 0;) {
    const PathNode& p = path_[d];
    std::uint64_t expected = p.w1;
    if (layout::lock_bit(expected) || !layout::cas_word(p.buf, 1, expected, expected | kLockBit)) return false;
    sp.held.push_back({p.buf, expected});
    if (s_.table.translate(p.lid) != p.buf || (d == 0 && s_.root_lid() != p.lid)) return false;
    InteriorPlan plan = copy_interior(d, p.buf);
    if (!replace_child(plan, old_child, sp.sep, sp.new_left, sp.new_right)) return false;
    std::size_t bytes = 0;
    for (const auto& x : plan.items) bytes += layout::item_bytes({x.first, {}, x.second}, true);
    if (bytes <= kNodeBytes - layout::kSortedStart) {
      sp.interiors.push_back(std::move(plan));
      sp.root_split = false;
      break;
    }
    plan.split = true;
    plan.mid = plan.items.size() / 2;
    sp.sep = plan.items[plan.mid].first;
    old_child = p.lid;
    sp.new_left = sp.next_ph++;
    sp.new_right = sp.next_ph++;
    sp.interiors.push_back(std::move(plan));
  }
  return true;
}

// Siblings get new sibling LIDs in place, under their locks (try-locks).
// The leaf's header was read under its lock, and a neighbour's split that
// changes these LIDs holds it too, so they are current.
bool LeafWrite::lock_siblings(SplitPlan& sp) {
  const Lid sib_lid[2] = {h_.left, h_.right};
  for (int i = 0; i < 2; ++i) {
    if (sib_lid[i] == kNoLid) continue;
    auto* buf = const_cast<std::byte*>(s_.table.translate(sib_lid[i]));
    if (buf == nullptr) return false;
    std::uint64_t w = layout::load_word(buf, 1);
    if (layout::lock_bit(w) || !layout::cas_word(buf, 1, w, w | kLockBit)) return false;
    sp.held.push_back({buf, w});
    if (s_.table.translate(sib_lid[i]) != buf) return false;
    sp.sib[i] = buf;
  }
  return true;
}

// Gives back every lock taken, the leaf's last; the write restarts.
Outcome LeafWrite::restart_split(const SplitPlan& sp) {
  for (const Held& x : sp.held) layout::store_word(x.buf, 1, x.w1);
  return unlock_leaf(Outcome::kRetry);
}

// Real LIDs for the placeholders, then the new buffers from the leaf up,
// all with the write version; none is reachable yet.
SplitNodes LeafWrite::build_split(const std::vector<layout::BuildItem>& items, const SplitPlan& sp, Version w) {
  SplitNodes n;
  n.w = w;
  n.mvcc = s_.versions.mvcc();
  n.real.resize(static_cast<std::size_t>(sp.next_ph - kPlaceholder));
  for (Lid& l : n.real) l = s_.table.allocate();
  build_split_leaves(items, sp, n);
  build_split_interiors(sp, n);
  return n;
}

std::byte* LeafWrite::build_buffer(const Header& hdr, const std::vector<layout::BuildItem>& b) {
  std::byte* buf = s_.new_buffer();
  if (!layout::build_node(buf, hdr, b)) throw Error("honeycomb: split half overflow");
  return buf;
}

// Two leaves, each other's sibling; their old-version pointers name the
// old leaf, so older snapshots reached through a sibling still see it.
void LeafWrite::build_split_leaves(const std::vector<layout::BuildItem>& items, const SplitPlan& sp,
                                   SplitNodes& n) {
  const Header& h = h_;
  Header lh;
  lh.version = n.version();
  lh.old_version = n.old_ptr(leaf_.buf);
  lh.left = h.left;
  lh.right = n.lid_of(sp.leaf_r);
  n.fresh.emplace_back(n.lid_of(sp.leaf_l),
                       build_buffer(lh, {items.begin(), items.begin() + static_cast<std::ptrdiff_t>(sp.m)}));
  lh.left = n.lid_of(sp.leaf_l);
  lh.right = h.right;
  n.fresh.emplace_back(n.lid_of(sp.leaf_r),
                       build_buffer(lh, {items.begin() + static_cast<std::ptrdiff_t>(sp.m), items.end()}));
  n.retired.push_back({leaf_.buf, leaf_.lid});
}

// Interior nodes, bottom-up: two halves (new LIDs) per node that split,
// one new buffer for the root of the split (its LID kept, remapped on
// publish) or, if the root split too, a new root over its halves.
void LeafWrite::build_split_interiors(const SplitPlan& sp, SplitNodes& n) {
  Lid ph_left = kPlaceholder + 2;  // after the leaves' two
  for (const InteriorPlan& plan : sp.interiors) {
    const PathNode& p = path_[plan.depth];
    Header ih;
    ih.type = layout::NodeType::kInterior;
    ih.level = plan.img->header.level;
    ih.version = n.version();
    ih.old_version = n.old_ptr(p.buf);
    auto to_build = [&](std::size_t b, std::size_t e) {
      std::vector<layout::BuildItem> v;
      for (std::size_t i = b; i < e; ++i) v.push_back({plan.items[i].first, {}, n.lid_of(plan.items[i].second)});
      return v;
    };
    if (!plan.split) {
      ih.leftmost = n.lid_of(plan.leftmost);
      n.swap = {p.lid, build_buffer(ih, to_build(0, plan.items.size()))};
      n.retired.push_back({p.buf, kNoLid});
      break;
    }
    ih.leftmost = n.lid_of(plan.leftmost);
    n.fresh.emplace_back(n.lid_of(ph_left), build_buffer(ih, to_build(0, plan.mid)));
    ih.leftmost = n.lid_of(plan.items[plan.mid].second);
    n.fresh.emplace_back(n.lid_of(ph_left + 1), build_buffer(ih, to_build(plan.mid + 1, plan.items.size())));
    n.retired.push_back({p.buf, p.lid});
    ph_left += 2;
    ++n.nodes_split;
  }
  if (sp.root_split) {
    // The tree grows: a new root over the two halves of the old one.
    Header rh;
    rh.type = layout::NodeType::kInterior;
    rh.level = static_cast<std::uint8_t>(s_.height());
    rh.leftmost = n.lid_of(sp.new_left);
    rh.version = n.version();
    rh.old_version = n.old_ptr(path_.front().buf);
    n.new_root = s_.table.allocate();
    n.fresh.emplace_back(n.new_root, build_buffer(rh, {{sp.sep, {}, n.lid_of(sp.new_right)}}));
  }
}

// Publish: new nodes first (unreachable until the swap), then sibling
// LIDs, then the swap of the split root's mapping (or the new root).
// Only the siblings are unlocked; every replaced buffer stays locked, so a
// writer that reached one fails its CAS and restarts.
void LeafWrite::publish_split(const SplitPlan& sp, const SplitNodes& n) {
  for (const auto& [lid, buf] : n.fresh) s_.table.map(lid, buf);
  if (sp.sib[0] != nullptr) {
    const std::uint64_t w5 = layout::load_word(sp.sib[0], 5);
    layout::store_word(sp.sib[0], 5,
                       layout::pack_sibling_word(n.lid_of(sp.leaf_l), static_cast<std::uint16_t>(w5 >> 48)));
  }
  if (sp.sib[1] != nullptr) {
    const std::uint64_t w4 = layout::load_word(sp.sib[1], 4);
    layout::store_word(sp.sib[1], 4,
                       layout::pack_sibling_word(n.lid_of(sp.leaf_r), static_cast<std::uint16_t>(w4 >> 48)));
  }
  if (sp.root_split) {
    s_.set_root(n.new_root, s_.height() + 1);
  } else {
    s_.table.map(n.swap.first, n.swap.second);
  }
  for (const Held& x : sp.held) {
    if (x.buf == sp.sib[0] || x.buf == sp.sib[1]) layout::store_word(x.buf, 1, x.w1);
  }
}

}  // namespace

bool StoreCore::write(WriteOp op, std::string_view key, std::string_view value) {
  Epochs::Guard guard(epochs);
  thread_local std::vector<PathNode> path;  // reused: no allocation per write
  for (unsigned attempt = 0;; ++attempt) {
    if (attempt > 0) {
      restarts.fetch_add(1, std::memory_order_relaxed);
      backoff(attempt);
    }
    if (!traverse(*this, key, path)) continue;
    const PathNode& leaf = path.back();
    std::uint64_t expected = leaf.w1 & ~kLockBit;
    if (!layout::cas_word(leaf.buf, 1, expected, expected | kLockBit)) continue;
    if (table.translate(leaf.lid) != leaf.buf) {
      layout::store_word(leaf.buf, 1, expected);
      continue;
    }
    const Outcome r = LeafWrite(*this, op, key, value, path, expected).run();
    if (r == Outcome::kRetry) continue;
    maybe_collect();
    return r == Outcome::kChanged;
  }
}

}  // namespace forein::offload::fpga
