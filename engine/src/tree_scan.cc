// Ordered scans. A cursor copies the qualifying entries of one leaf at a
// time, reading the leaf optimistically (an attempt that a writer disturbs
// is discarded and made again), then hands them out. It
// continues from the last key it returned, not from a page position, so
// splits and merges between batches can neither skip nor repeat a key.
#include <climits>

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
  std::optional<std::string> last_key;  // last key handed out
  std::string next_boundary;            // hi (forward) or lo (backward) of the last leaf
  PageId next_sibling = kNoPage;        // its right (forward) or left (backward) link

  bool load_batch();
  OptNode first_leaf(OpCounters& c);
  OptNode next_leaf(OpCounters& c);
  void collect_forward(const Node& n);
  void collect_backward(const Node& n);
  void add(const Node& n, std::size_t i);
};

namespace {

// Key order of a stored key against a bound's key.
int compare_to(const detail::StoredKey& stored, const std::string& bound) {
  return -detail::compare(SearchKey(bound), stored);
}

bool beyond_upper(const detail::StoredKey& key, const std::optional<KeyBound>& upper) {
  if (!upper) return false;
  const int c = compare_to(key, upper->key);
  return c > 0 || (c == 0 && !upper->inclusive);
}

bool below_lower(const detail::StoredKey& key, const std::optional<KeyBound>& lower) {
  if (!lower) return false;
  const int c = compare_to(key, lower->key);
  return c < 0 || (c == 0 && !lower->inclusive);
}

}  // namespace

void Cursor::State::add(const Node& n, std::size_t i) {
  const std::size_t key_at = arena.size();
  n.key_at(i).append_to(arena);
  const std::size_t value_at = arena.size();
  n.append_value_to(i, arena);
  entries.push_back({key_at, value_at - key_at, value_at, arena.size() - value_at});
}

void Cursor::State::collect_forward(const Node& n) {
  std::size_t i = 0;
  if (last_key) {
    i = n.upper_bound(SearchKey(*last_key));
  } else if (spec.lower) {
    const SearchKey lower(spec.lower->key);
    i = spec.lower->inclusive ? n.lower_bound(lower) : n.upper_bound(lower);
  }
  for (; i < n.count(); ++i) {
    const detail::StoredKey key = n.key_at(i);
    if (beyond_upper(key, spec.upper)) {
      exhausted = true;
      return;
    }
    add(n, i);
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
    end = n.lower_bound(SearchKey(*last_key));
  } else if (spec.upper) {
    const SearchKey upper(spec.upper->key);
    end = spec.upper->inclusive ? n.upper_bound(upper) : n.lower_bound(upper);
  }
  for (std::size_t i = end; i-- > 0;) {
    const detail::StoredKey key = n.key_at(i);
    if (below_lower(key, spec.lower)) {
      exhausted = true;
      return;
    }
    add(n, i);
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

bool Cursor::State::load_batch() {
  entries.clear();
  arena.clear();
  pos = 0;
  OpCounters c;
  while (entries.empty() && !exhausted) {
    // What an attempt changes, to undo it if a writer disturbed the leaf.
    const OpCounters saved_c = c;
    const std::string saved_boundary = next_boundary;
    const PageId saved_sibling = next_sibling;
    const OptNode leaf = first_batch ? first_leaf(c) : next_leaf(c);
    if (spec.direction == Direction::kForward) {
      collect_forward(leaf.node);
    } else {
      collect_backward(leaf.node);
    }
    if (!tree->valid(leaf)) {
      entries.clear();
      arena.clear();
      exhausted = false;
      next_boundary = saved_boundary;
      next_sibling = saved_sibling;
      tree->count_restart(c, saved_c);
      continue;
    }
    first_batch = false;
  }
  if (!entries.empty()) {
    const auto& e = entries.back();
    last_key = arena.substr(e[0], e[1]);
  }
  tree->publish(c);
  return !entries.empty();
}

Cursor::Cursor(std::unique_ptr<State> state) : state_(std::move(state)) {}
Cursor::~Cursor() = default;
Cursor::Cursor(Cursor&&) noexcept = default;
Cursor& Cursor::operator=(Cursor&&) noexcept = default;

bool Cursor::next() {
  State& s = *state_;
  if (s.positioned && s.pos + 1 < s.entries.size()) {
    ++s.pos;
    return true;
  }
  s.positioned = s.load_batch();
  return s.positioned;
}

std::string_view Cursor::key() const {
  const auto& e = state_->entries[state_->pos];
  return std::string_view(state_->arena).substr(e[0], e[1]);
}

std::string_view Cursor::value() const {
  const auto& e = state_->entries[state_->pos];
  return std::string_view(state_->arena).substr(e[2], e[3]);
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
