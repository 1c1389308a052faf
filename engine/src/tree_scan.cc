// Ordered scans. A cursor copies the qualifying entries of one leaf at a
// time, reading the leaf optimistically (an attempt that a writer disturbs
// is discarded and made again), then hands them out. It
// continues from the last key it returned, not from a page position, so
// splits and merges between batches can neither skip nor repeat a key.
//
// An in-place cursor (ScanSpec::in_place, single-threaded hosts) copies
// nothing but the current key: it remembers the leaf, its version and the
// range of slots to hand out, and before each step checks that the leaf's
// version is unchanged (a write, an eviction or a host's page restore
// gives it a new one); if it changed, it finds the leaf again from the
// last key returned. next_run() hands out several slots of the leaf at
// once as a LeafRun (forein/leaf_run.h) that the host reads inline.
#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>

#include "tree_impl.h"

namespace forein {

using detail::Node;
using detail::OpCounters;
using detail::OptNode;
using detail::SearchKey;
using detail::Walk;

struct Cursor::State {
  Tree::Impl* tree = nullptr;
  ScanSpec spec;
  std::optional<StartHints> hints;

  // The current batch: entries [i] = (key offset, key len, value offset,
  // value len) into `arena`.
  std::string arena;
  std::vector<std::array<std::size_t, 4>> entries;
  std::size_t pos = 0;
  bool positioned = false;  // entries[pos] is the cursor's current entry

  bool first_batch = true;
  bool exhausted = false;
  // Batch mode copies at most next_run_rows() rows a batch (a short scan
  // does not copy the rest of its leaf); a batch cut short is continued
  // from last_key's leaf.
  bool batch_cut = false;
  PageId cut_leaf = kNoPage;  // the leaf a cut batch stopped in
  std::optional<std::string> last_key;  // last key handed out
  std::string next_boundary;            // hi (forward) or lo (backward) of the last leaf
  PageId next_sibling = kNoPage;        // its right (forward) or left (backward) link

  // In-place mode: the leaf read last and its slots [from, to) still to
  // hand out (forward from `from`, backward from `to` - 1), the current
  // key copied (a short key lives in the slot as a word) and value viewed.
  OptNode leaf;
  std::size_t from = 0, to = 0;
  std::uint64_t short_key = 0;  // the current key's bytes when it is short
  std::string key_buf;                 // ... when it is long
  std::string_view key_view, value_view;
  bool resume = false;  // resume_after(): continue after last_key

  // Rows handed out in runs (or copied in batches) so far. The next run
  // (batch) takes what is left of
  // spec.expected_rows, or else kFirstRun more than that (8, 16, 32, ...:
  // the caller may want few), up to kMaxRun.
  static constexpr std::size_t kFirstRun = 8, kMaxRun = 128;
  std::size_t handed = 0;
  std::size_t next_run_rows() const {
    const std::size_t want =
        spec.expected_rows > handed ? spec.expected_rows - handed : handed + kFirstRun;
    return std::min(want, kMaxRun);
  }

  // Starts a new scan, keeping the buffers.
  void restart(Tree::Impl* t, const ScanSpec& s, const StartHints* h);
  OptNode read_leaf(bool refind, OpCounters& c);
  bool load_batch();
  bool position_leaf();
  bool step_in_place();
  void stand_on(std::size_t i);
  LeafRun take_run();
  bool load_leaf(bool refind);
  void take(const Node& n, std::size_t first, std::size_t end);
  OptNode first_leaf(OpCounters& c);
  OptNode next_leaf(OpCounters& c);
  void collect_forward(const Node& n);
  void collect_backward(const Node& n);
  void add(const Node& n, std::size_t i);
};

void Cursor::State::add(const Node& n, std::size_t i) {
  const std::size_t key_at = arena.size();
  n.key_at(i).append_to(arena);
  const std::size_t value_at = arena.size();
  n.append_value_to(i, arena);
  entries.push_back({key_at, value_at - key_at, value_at, arena.size() - value_at});
}

// Slots [first, end) qualify: copied (batch mode) or remembered (in place).
void Cursor::State::take(const Node& n, std::size_t first, std::size_t end) {
  if (spec.in_place) {
    from = first;
    to = end;
    return;
  }
  const std::size_t cap = next_run_rows();
  if (end - first > cap) {
    batch_cut = true;
    if (spec.direction == Direction::kForward) {
      end = first + cap;
    } else {
      first = end - cap;
    }
  }
  if (spec.direction == Direction::kForward) {
    for (std::size_t i = first; i < end; ++i) add(n, i);
  } else {
    for (std::size_t i = end; i-- > first;) add(n, i);
  }
}

void Cursor::State::collect_forward(const Node& n) {
  std::size_t i = 0;
  if (last_key) {
    // Reached through the right link, a leaf's keys all lie above the last
    // one returned: one comparison instead of a search.
    const SearchKey last(*last_key);
    i = n.count() > 0 && detail::compare(last, n.key_at(0)) < 0 ? 0 : n.upper_bound(last);
  } else if (spec.lower) {
    const SearchKey lower(spec.lower->key);
    i = spec.lower->inclusive ? n.lower_bound(lower) : n.upper_bound(lower);
  }
  const std::size_t count = n.count();
  i = std::min(i, count);  // a torn optimistic read; valid() rejects it
  // The first slot beyond the upper bound ends the scan.
  std::size_t end = count;
  if (spec.upper) {
    const SearchKey upper(spec.upper->key);
    end = std::clamp(spec.upper->inclusive ? n.upper_bound(upper) : n.lower_bound(upper), i, count);
  }
  take(n, i, end);
  if (batch_cut) return;  // more of this leaf next batch
  if (end < count) {
    exhausted = true;
    return;
  }
  // Keys past hi live further right, unless the upper bound stops short.
  if (n.hi_inf()) {
    exhausted = true;
    return;
  }
  if (spec.upper) {
    const int c = n.compare_with_hi(spec.upper->key);
    if (c < 0 || (c == 0 && !spec.upper->inclusive)) {
      exhausted = true;
      return;
    }
  }
  next_boundary = n.hi_copy();
  next_sibling = n.right();
}

void Cursor::State::collect_backward(const Node& n) {
  std::size_t end = n.count();
  if (last_key) {
    // Reached through the left link, all keys lie below the last one.
    const SearchKey last(*last_key);
    end = end > 0 && detail::compare(last, n.key_at(end - 1)) > 0 ? end : n.lower_bound(last);
  } else if (spec.upper) {
    const SearchKey upper(spec.upper->key);
    end = spec.upper->inclusive ? n.upper_bound(upper) : n.lower_bound(upper);
  }
  end = std::min<std::size_t>(end, n.count());  // a torn optimistic read; valid() rejects it
  // A slot below the lower bound ends the scan.
  std::size_t first = 0;
  if (spec.lower) {
    const SearchKey lower(spec.lower->key);
    first = std::min(spec.lower->inclusive ? n.lower_bound(lower) : n.upper_bound(lower), end);
  }
  take(n, first, end);
  if (batch_cut) return;  // more of this leaf next batch
  if (first > 0) {
    exhausted = true;
    return;
  }
  // Keys below lo live further left; none exist below the empty key.
  if (n.lo_empty() || (spec.lower && n.compare_with_lo(spec.lower->key) >= 0)) {
    exhausted = true;
    return;
  }
  next_boundary = n.lo_copy();
  next_sibling = n.left();
}

OptNode Cursor::State::first_leaf(OpCounters& c) {
  const StartHints* h = hints ? &*hints : nullptr;
  if (spec.direction == Direction::kForward) {
    const std::string start = spec.lower ? spec.lower->key : std::string();
    return tree->locate(SearchKey(start), h, 0, nullptr, c);
  }
  if (spec.upper) return tree->locate(SearchKey(spec.upper->key), h, 0, nullptr, c);
  return tree->find_rightmost_leaf(c);
}

OptNode Cursor::State::next_leaf(OpCounters& c) {
  if (spec.direction == Direction::kForward) {
    // The old right link is only a hint: that page may have been merged
    // away or even reused since the previous batch.
    // The sibling is the scan's own link, not offload advice: it must not
    // count as a hinted operation or a hint hit.
    const StartHints via_sibling{Hint{next_sibling, 0, 0}, Hint{}};
    OpCounters step;
    const OptNode n = tree->locate(SearchKey(next_boundary), &via_sibling, 0, nullptr, step);
    c.move_rights += step.move_rights;
    c.nodes_visited += step.nodes_visited;
    c.restarts += step.restarts;
    return n;
  }
  return tree->find_leaf_before(next_boundary, next_sibling, c);
}

// One validated read: the next leaf (the first one, or the one after the
// last through next_boundary) or, with `refind`, the leaf holding last_key
// again; collects its slots. An attempt that a writer disturbed is undone
// and made again.
OptNode Cursor::State::read_leaf(bool refind, OpCounters& c) {
  for (;;) {
    const OpCounters saved_c = c;
    const std::string saved_boundary = next_boundary;
    const PageId saved_sibling = next_sibling;
    OptNode n;
    batch_cut = false;
    if (refind && cut_leaf != kNoPage) {
      // The leaf a cut batch stopped in is where its next rows are, unless
      // a writer moved them: a hint the walk checks (the scan's own, not
      // offload advice, as for a sibling).
      const StartHints via_leaf{Hint{cut_leaf, 0, 0}, Hint{}};
      OpCounters step;
      n = tree->locate(SearchKey(*last_key), &via_leaf, 0, nullptr, step);
      c.move_rights += step.move_rights;
      c.nodes_visited += step.nodes_visited;
      c.restarts += step.restarts;
    } else if (refind) {
      n = tree->locate(SearchKey(*last_key), nullptr, 0, nullptr, c);
    } else {
      n = first_batch ? first_leaf(c) : next_leaf(c);
    }
    if (spec.direction == Direction::kForward) {
      collect_forward(n.node);
    } else {
      collect_backward(n.node);
    }
    if (tree->valid(n)) {
      first_batch = false;
      cut_leaf = batch_cut ? n.id : kNoPage;
      return n;
    }
    entries.clear();
    arena.clear();
    from = to = 0;
    exhausted = false;
    next_boundary = saved_boundary;
    next_sibling = saved_sibling;
    tree->count_restart(c, saved_c);
  }
}

bool Cursor::State::load_batch() {
  entries.clear();
  arena.clear();
  pos = 0;
  OpCounters c;
  bool refind = batch_cut;  // the last batch stopped inside its leaf
  while (entries.empty() && !exhausted) {
    read_leaf(refind, c);
    refind = false;
  }
  handed += entries.size();
  if (!entries.empty()) {
    const auto& e = entries.back();
    last_key = arena.substr(e[0], e[1]);
  }
  tree->publish(c);
  return !entries.empty();
}

// In place: the next leaf with slots to hand out; with `refind` starting
// from last_key's leaf (the current leaf changed since it was read).
bool Cursor::State::load_leaf(bool refind) {
  OpCounters c;
  if (refind) exhausted = false;  // the leaf that ended the scan may have changed
  from = to = 0;
  while (from == to && !exhausted) {
    leaf = read_leaf(refind, c);
    refind = false;
  }
  tree->publish(c);
  return from != to;
}

// In place: stands on a leaf with slots still to hand out; false at the
// end.
bool Cursor::State::position_leaf() {
  if (resume) {
    resume = false;
    return load_leaf(true);
  }
  if (!positioned) return load_leaf(false);
  if (!tree->valid(leaf)) {
    // A write, eviction or restore since the leaf was read: find it again.
    last_key = std::string(key_view);
    return load_leaf(true);
  }
  if (from == to) {
    if (exhausted) return false;
    last_key = std::string(key_view);
    return load_leaf(false);
  }
  return true;
}

// A short key is its word's leading bytes: one store, no string.
inline std::string_view short_key_view(const detail::StoredKey& k, std::uint64_t* out) {
  std::uint64_t bytes = k.word;
  if constexpr (std::endian::native == std::endian::little) bytes = __builtin_bswap64(bytes);
  *out = bytes;
  return std::string_view(reinterpret_cast<const char*>(out), k.len);
}

// The cursor stands on slot i of the current leaf: its key copied (the
// next leaf is found from it), its value viewed.
void Cursor::State::stand_on(std::size_t i) {
  const Node& n = leaf.node;
  const detail::StoredKey k = n.key_at(i);
  if (k.len <= kWordBytes) {
    key_view = short_key_view(k, &short_key);
  } else {
    key_buf.clear();
    k.append_to(key_buf);
    key_view = key_buf;
  }
  value_view = n.value_at(i);
}

bool Cursor::State::step_in_place() {
  if (!position_leaf()) return false;
  stand_on(spec.direction == Direction::kForward ? from++ : --to);
  return true;
}

// The next next_run_rows() slots of [from, to), in scan order, as a run; the
// cursor stands on its last row.
LeafRun Cursor::State::take_run() {
  const Node& n = leaf.node;
  const std::size_t count = std::min(to - from, next_run_rows());
  handed += count;
  const bool forward = spec.direction == Direction::kForward;
  const std::size_t first = forward ? from : to - 1, last = forward ? from + count - 1 : to - count;
  if (forward) {
    from += count;
  } else {
    to -= count;
  }
  LeafRun run;
  run.page_ = n.page();
  run.page_size_ = tree->page_size_;
  run.slot_ = n.page() + detail::kHeaderSize + first * n.slot_size();
  run.step_ = forward ? static_cast<std::ptrdiff_t>(n.slot_size()) : -static_cast<std::ptrdiff_t>(n.slot_size());
  run.left_ = count;
  run.inline_values_ = n.slot_size() == detail::kLeafSlotSize;
  run.fixed_ = n.fixed();
  run.fixed_key_len_ = n.fixed_key_len();
  run.fixed_value_len_ = n.fixed_value_len();
  stand_on(last);
  return run;
}

Cursor::Cursor(std::unique_ptr<State> state) : state_(std::move(state)) {}
Cursor::Cursor() = default;
Cursor::~Cursor() = default;
Cursor::Cursor(Cursor&&) noexcept = default;
Cursor& Cursor::operator=(Cursor&&) noexcept = default;

bool Cursor::next() {
  if (!state_) return false;
  State& s = *state_;
  if (s.spec.in_place) {
    s.positioned = s.step_in_place();
    return s.positioned;
  }
  if (s.positioned && s.pos + 1 < s.entries.size()) {
    ++s.pos;
    return true;
  }
  s.positioned = s.load_batch();
  return s.positioned;
}

LeafRun Cursor::next_run() {
  if (!state_) return {};
  State& s = *state_;
  if (!s.spec.in_place) throw InvalidArgument("Cursor::next_run needs ScanSpec::in_place");
  s.positioned = s.position_leaf();
  if (!s.positioned) return {};
  return s.take_run();
}

void Cursor::resume_after(std::string_view key) {
  if (!state_) return;
  State& s = *state_;
  s.last_key = std::string(key);
  s.resume = true;
  s.positioned = true;
}

std::string_view Cursor::key() const {
  if (!state_) return {};
  if (state_->spec.in_place) return state_->key_view;
  const auto& e = state_->entries[state_->pos];
  return std::string_view(state_->arena).substr(e[0], e[1]);
}

std::string_view Cursor::value() const {
  if (!state_) return {};
  if (state_->spec.in_place) return state_->value_view;
  const auto& e = state_->entries[state_->pos];
  return std::string_view(state_->arena).substr(e[2], e[3]);
}

void Cursor::State::restart(Tree::Impl* t, const ScanSpec& s, const StartHints* h) {
  tree = t;
  spec = s;
  hints.reset();
  if (h != nullptr) hints = *h;
  arena.clear();
  entries.clear();
  pos = 0;
  positioned = false;
  first_batch = true;
  exhausted = false;
  batch_cut = false;
  cut_leaf = kNoPage;
  last_key.reset();
  next_boundary.clear();
  next_sibling = kNoPage;
  leaf = OptNode{};
  from = to = 0;
  key_view = value_view = {};
  resume = false;
  handed = 0;
}

void Tree::rescan(Cursor& cursor, const ScanSpec& spec, const StartHints* hints) {
  if (!cursor.state_) {
    cursor = scan(spec, hints);
    return;
  }
  cursor.state_->restart(impl_.get(), spec, hints);
}

Cursor Tree::scan(const ScanSpec& spec, const StartHints* hints) {
  auto state = std::make_unique<Cursor::State>();
  state->tree = impl_.get();
  state->spec = spec;
  if (hints != nullptr) state->hints = *hints;
  return Cursor(std::move(state));
}

void Tree::scan(const ScanSpec& spec,
                const std::function<bool(std::string_view, std::string_view)>& fn,
                const StartHints* hints) {
  Cursor cursor = scan(spec, hints);
  while (cursor.next()) {
    if (!fn(cursor.key(), cursor.value())) return;
  }
}

// ---- descents used only by scans ----

OptNode Tree::Impl::find_rightmost_leaf(OpCounters& c) const {
  const auto go_right = [](const Node& v) { return v.dead() || !v.hi_inf(); };
  const auto last_child = [](const Node& v) {
    const std::size_t n = v.count();
    return v.child_at(n == 0 ? 0 : n - 1);
  };
  for (;;) {
    const OpCounters saved = c;
    OptNode n = read_root(c);
    if (walk_down(n, 0, go_right, last_child, nullptr, c) == Walk::kOk) return n;
    count_restart(c, saved);
  }
}

// The leaf holding the keys just below `boundary` (a former lo): the left
// link if it still ends exactly there, else a descent that keeps to keys
// strictly less than the boundary.
OptNode Tree::Impl::find_leaf_before(const std::string& boundary, PageId left_hint,
                                     OpCounters& c) const {
  if (left_hint != kNoPage) {
    OptNode l;
    for (;;) {
      if (!read_begin(left_hint, l)) break;
      const Node v = l.node;
      const bool ends_there = v.is_node() && !v.dead() && v.level() == 0 && !v.hi_inf() &&
                              v.compare_with_hi(boundary) == 0;
      if (!valid(l)) continue;
      ++c.nodes_visited;
      if (ends_there) return l;
      break;
    }
  }
  const SearchKey k(boundary);
  // Move right while the node ends before the boundary.
  const auto go_right = [&](const Node& v) {
    return v.dead() || (!v.hi_inf() && v.compare_with_hi(boundary) > 0);
  };
  const auto child_before = [&](const Node& v) {
    const std::size_t i = v.lower_bound(k);
    return v.child_at(i == 0 ? 0 : i - 1);
  };
  for (;;) {
    const OpCounters saved = c;
    OptNode n = read_root(c);
    if (walk_down(n, 0, go_right, child_before, nullptr, c) == Walk::kOk) return n;
    count_restart(c, saved);
  }
}

}  // namespace forein
