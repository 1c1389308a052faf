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

std::vector<layout::SortedItem> all_sorted(const Image& img, const layout::Segments& segs) {
  std::vector<layout::SortedItem> out;
  for (std::size_t i = 0; i < segs.count(); ++i) {
    if (!layout::parse_segment(img, segs, i, out)) throw Error("honeycomb: corrupt node");
  }
  return out;
}

// Root to leaf over the latest versions (no locks, no old versions).
bool traverse(StoreCore& s, std::string_view key, std::vector<PathNode>& path, Image& scratch) {
  path.clear();
  Lid lid = s.root_lid();
  for (int depth = 0; depth < 64; ++depth) {
    auto* buf = const_cast<std::byte*>(s.table.translate(lid));
    if (buf == nullptr) return false;
    const std::uint64_t w1 = layout::load_word(buf, 1);
    copy_node_bytes(buf, 0, kFirstBlockBytes, scratch.bytes.data());
    scratch.header = layout::decode_header(scratch.bytes.data());
    if (!scratch.header.plausible()) return false;
    path.push_back({lid, buf, w1});
    if (!scratch.header.interior()) return true;
    const auto segs = layout::parse_shortcuts(scratch);
    if (!segs) return false;
    const std::size_t seg = segs->find(key);
    copy_node_bytes(buf, segs->start(seg), segs->end(seg) - segs->start(seg),
                    scratch.bytes.data() + segs->start(seg));
    std::vector<layout::SortedItem> items;
    if (!layout::parse_segment(scratch, *segs, seg, items)) return false;
    Lid child = seg == 0 ? scratch.header.leftmost : kNoLid;
    for (const auto& it : items) {
      if (it.key > key) break;
      child = it.child;
    }
    if (child == kNoLid) return false;
    lid = child;
  }
  return false;
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
  Outcome fast_path(std::uint16_t back, std::uint8_t hint, std::uint8_t flags, std::string_view value);
  Outcome merge_or_split(const std::vector<layout::BuildItem>& items);
  Outcome split(const std::vector<layout::BuildItem>& items);
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
  Image img_;
  std::uint8_t op_code_ = 0;
};

Outcome LeafWrite::run() {
  copy_full(leaf_.buf, img_);
  const Header& h = img_.header;
  const auto segs = layout::parse_shortcuts(img_);
  if (!h.plausible() || !segs) throw Error("honeycomb: corrupt leaf");
  const auto sorted = all_sorted(img_, *segs);
  const layout::LeafMerger merger(img_, layout::parse_log(img_), kLatest);
  const auto items = merger.merge(*segs, 0, segs->count() - 1);

  const auto it = std::lower_bound(items.begin(), items.end(), key_,
                                   [](const layout::LeafItem& x, std::string_view k) { return x.key < k; });
  const bool exists = it != items.end() && it->key == key_;  // live or a delete marker
  const bool present = exists && it->live;
  WriteOp op = op_;
  if (op == WriteOp::kUpsert) op = present ? WriteOp::kUpdate : WriteOp::kPut;
  if ((op == WriteOp::kPut) == present) {
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
  std::uint16_t back = h.sorted_end;
  if (exists) {
    back = it->latest;
  } else {
    const auto gt = std::upper_bound(sorted.begin(), sorted.end(), key_,
                                     [](std::string_view k, const layout::SortedItem& x) { return k < x.key; });
    if (gt != sorted.end()) back = gt->offset;
  }
  std::size_t hint = 0;
  for (const auto& e : merger.log()) hint += e.key <= key_ ? 1 : 0;
  const std::uint8_t flags = op_code_ | (exists ? layout::kReplaces : 0);

  const std::size_t entry = layout::log_entry_bytes(key_, value);
  const bool delta_ok = !s_.versions.mvcc() ||
                        s_.versions.write_version() + (Version{1} << 30) - h.version <= layout::kMaxVersionDelta;
  if (h.size - h.sorted_end + entry <= s_.options.log_block_bytes && h.size + entry <= kNodeBytes &&
      merger.log().size() < 255 && delta_ok) {
    return fast_path(back, static_cast<std::uint8_t>(hint), flags, value);
  }

  // The merged block: live items with this write applied.
  std::vector<layout::BuildItem> merged;
  merged.reserve(items.size() + 1);
  for (const auto& x : items) {
    if (x.key == key_) continue;
    if (!x.live) continue;
    if (op != WriteOp::kErase && x.key > key_ && (merged.empty() || merged.back().key < key_)) {
      merged.push_back({key_, value, kNoLid});
    }
    merged.push_back({x.key, x.value, kNoLid});
  }
  if (op != WriteOp::kErase && (merged.empty() || merged.back().key < key_)) merged.push_back({key_, value, kNoLid});
  return merge_or_split(merged);
}

Outcome LeafWrite::fast_path(std::uint16_t back, std::uint8_t hint, std::uint8_t flags, std::string_view value) {
  const Header& h = img_.header;
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
  const Header& h = img_.header;
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

Outcome LeafWrite::split(const std::vector<layout::BuildItem>& items) {
  std::vector<Held> held;
  auto fail = [&] {
    for (const Held& x : held) layout::store_word(x.buf, 1, x.w1);
    return unlock_leaf(Outcome::kRetry);
  };
  if (items.size() < 2) throw Error("honeycomb: leaf cannot split");
  const std::size_t m = split_point(items, false);
  Lid next_ph = kPlaceholder;
  const Lid leaf_l = next_ph++, leaf_r = next_ph++;

  // Up the path: every full parent splits; the first that fits is the
  // root of the split. Interior buffers never change in place, so a
  // successful CAS with the traversal's lock word means the copy is current.
  std::vector<InteriorPlan> plans;
  std::string_view sep = items[m].key;
  Lid old_child = leaf_.lid, new_left = leaf_l, new_right = leaf_r;
  bool root_split = true;
  for (std::size_t d = path_.size() - 1; d-- > 0;) {
    const PathNode& p = path_[d];
    std::uint64_t expected = p.w1;
    if (layout::lock_bit(expected) || !layout::cas_word(p.buf, 1, expected, expected | kLockBit)) return fail();
    held.push_back({p.buf, expected});
    if (s_.table.translate(p.lid) != p.buf || (d == 0 && s_.root_lid() != p.lid)) return fail();
    InteriorPlan plan;
    plan.depth = d;
    plan.img = std::make_unique<Image>();
    copy_full(p.buf, *plan.img);
    const auto segs = layout::parse_shortcuts(*plan.img);
    if (!segs) throw Error("honeycomb: corrupt interior node");
    plan.leftmost = plan.img->header.leftmost;
    for (const auto& x : all_sorted(*plan.img, *segs)) plan.items.emplace_back(x.key, x.child);
    std::size_t at;
    if (plan.leftmost == old_child) {
      plan.leftmost = new_left;
      at = 0;
    } else {
      const auto f = std::find_if(plan.items.begin(), plan.items.end(),
                                  [&](const auto& x) { return x.second == old_child; });
      if (f == plan.items.end()) return fail();
      f->second = new_left;
      at = static_cast<std::size_t>(f - plan.items.begin()) + 1;
    }
    plan.items.insert(plan.items.begin() + static_cast<std::ptrdiff_t>(at), {sep, new_right});
    std::size_t bytes = 0;
    for (const auto& x : plan.items) bytes += layout::item_bytes({x.first, {}, x.second}, true);
    if (bytes <= kNodeBytes - layout::kSortedStart) {
      plans.push_back(std::move(plan));
      root_split = false;
      break;
    }
    plan.split = true;
    plan.mid = plan.items.size() / 2;
    sep = plan.items[plan.mid].first;
    old_child = p.lid;
    new_left = next_ph++;
    new_right = next_ph++;
    plans.push_back(std::move(plan));
  }

  // Siblings get new sibling LIDs in place, under their locks (try-locks).
  const Header& h = img_.header;
  std::byte* sib[2] = {nullptr, nullptr};
  const Lid sib_lid[2] = {h.left, h.right};
  for (int i = 0; i < 2; ++i) {
    if (sib_lid[i] == kNoLid) continue;
    auto* buf = const_cast<std::byte*>(s_.table.translate(sib_lid[i]));
    if (buf == nullptr) return fail();
    std::uint64_t w = layout::load_word(buf, 1);
    if (layout::lock_bit(w) || !layout::cas_word(buf, 1, w, w | kLockBit)) return fail();
    held.push_back({buf, w});
    if (s_.table.translate(sib_lid[i]) != buf) return fail();
    sib[i] = buf;
  }

  // Every lock is held: this write will happen.
  const Version w = s_.versions.acquire();
  const bool mvcc = s_.versions.mvcc();
  std::vector<Lid> real(static_cast<std::size_t>(next_ph - kPlaceholder));
  for (Lid& l : real) l = s_.table.allocate();
  auto lid_of = [&](Lid x) { return x >= kPlaceholder ? real[static_cast<std::size_t>(x - kPlaceholder)] : x; };
  auto old_ptr = [&](std::byte* b) { return mvcc ? static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(b)) : 0; };
  std::vector<std::pair<Lid, std::byte*>> fresh;  // new LIDs to map
  auto build = [&](const Header& hdr, const std::vector<layout::BuildItem>& b) {
    std::byte* buf = s_.new_buffer();
    if (!layout::build_node(buf, hdr, b)) throw Error("honeycomb: split half overflow");
    return buf;
  };

  // Leaves.
  Header lh;
  lh.version = mvcc ? w : 0;
  lh.old_version = old_ptr(leaf_.buf);
  lh.left = h.left;
  lh.right = lid_of(leaf_r);
  fresh.emplace_back(lid_of(leaf_l), build(lh, {items.begin(), items.begin() + static_cast<std::ptrdiff_t>(m)}));
  lh.left = lid_of(leaf_l);
  lh.right = h.right;
  fresh.emplace_back(lid_of(leaf_r), build(lh, {items.begin() + static_cast<std::ptrdiff_t>(m), items.end()}));
  std::uint64_t nodes_split = 1;

  // Interior nodes, bottom-up.
  std::vector<Retired> retired{{leaf_.buf, leaf_.lid}};
  Lid ph_left = kPlaceholder + 2;
  std::pair<Lid, std::byte*> swap{kNoLid, nullptr};
  for (const InteriorPlan& plan : plans) {
    const PathNode& p = path_[plan.depth];
    Header ih;
    ih.type = layout::NodeType::kInterior;
    ih.level = plan.img->header.level;
    ih.version = mvcc ? w : 0;
    ih.old_version = old_ptr(p.buf);
    auto to_build = [&](std::size_t b, std::size_t e) {
      std::vector<layout::BuildItem> v;
      for (std::size_t i = b; i < e; ++i) v.push_back({plan.items[i].first, {}, lid_of(plan.items[i].second)});
      return v;
    };
    if (!plan.split) {
      ih.leftmost = lid_of(plan.leftmost);
      swap = {p.lid, build(ih, to_build(0, plan.items.size()))};
      retired.push_back({p.buf, kNoLid});
      break;
    }
    ih.leftmost = lid_of(plan.leftmost);
    fresh.emplace_back(lid_of(ph_left), build(ih, to_build(0, plan.mid)));
    ih.leftmost = lid_of(plan.items[plan.mid].second);
    fresh.emplace_back(lid_of(ph_left + 1), build(ih, to_build(plan.mid + 1, plan.items.size())));
    retired.push_back({p.buf, p.lid});
    ph_left += 2;
    ++nodes_split;
  }
  Lid new_root = kNoLid;
  if (root_split) {
    // The tree grows: a new root over the two halves of the old one.
    Header rh;
    rh.type = layout::NodeType::kInterior;
    rh.level = static_cast<std::uint8_t>(s_.height());
    rh.leftmost = lid_of(new_left);
    rh.version = mvcc ? w : 0;
    rh.old_version = old_ptr(path_.front().buf);
    new_root = s_.table.allocate();
    fresh.emplace_back(new_root, build(rh, {{sep, {}, lid_of(new_right)}}));
  }

  // Publish: new nodes first (unreachable until the swap), then sibling
  // LIDs, then the swap of the split root's mapping (or the new root).
  for (const auto& [lid, buf] : fresh) s_.table.map(lid, buf);
  if (sib[0] != nullptr) {
    const std::uint64_t w5 = layout::load_word(sib[0], 5);
    layout::store_word(sib[0], 5, layout::pack_sibling_word(lid_of(leaf_l), static_cast<std::uint16_t>(w5 >> 48)));
  }
  if (sib[1] != nullptr) {
    const std::uint64_t w4 = layout::load_word(sib[1], 4);
    layout::store_word(sib[1], 4, layout::pack_sibling_word(lid_of(leaf_r), static_cast<std::uint16_t>(w4 >> 48)));
  }
  if (root_split) {
    s_.set_root(new_root, s_.height() + 1);
  } else {
    s_.table.map(swap.first, swap.second);
  }
  // Unlock the siblings only; every replaced buffer stays locked.
  for (const Held& x : held) {
    if (x.buf == sib[0] || x.buf == sib[1]) layout::store_word(x.buf, 1, x.w1);
  }
  s_.versions.release(w);
  s_.splits.fetch_add(nodes_split, std::memory_order_relaxed);
  count(op_code_);
  s_.retired.fetch_add(retired.size(), std::memory_order_relaxed);
  s_.epochs.retire(std::move(retired));
  return Outcome::kChanged;
}

}  // namespace

bool StoreCore::write(WriteOp op, std::string_view key, std::string_view value) {
  Epochs::Guard guard(epochs);
  std::vector<PathNode> path;
  auto scratch = std::make_unique<Image>();
  for (unsigned attempt = 0;; ++attempt) {
    if (attempt > 0) {
      restarts.fetch_add(1, std::memory_order_relaxed);
      backoff(attempt);
    }
    if (!traverse(*this, key, path, *scratch)) continue;
    const PathNode& leaf = path.back();
    std::uint64_t expected = leaf.w1 & ~kLockBit;
    if (!layout::cas_word(leaf.buf, 1, expected, expected | kLockBit)) continue;
    if (table.translate(leaf.lid) != leaf.buf) {
      layout::store_word(leaf.buf, 1, expected);
      continue;
    }
    auto w = std::make_unique<LeafWrite>(*this, op, key, value, path, expected);
    const Outcome r = w->run();
    if (r == Outcome::kRetry) continue;
    maybe_collect();
    return r == Outcome::kChanged;
  }
}

}  // namespace forein::offload::fpga
