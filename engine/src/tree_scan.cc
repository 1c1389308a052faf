// Ordered scans. A cursor copies the qualifying entries of one leaf at a
// time under its shared latch, then hands them out with no latch held. It
// continues from the last key it returned, not from a page position, so
// splits and merges between batches can neither skip nor repeat a key.
#include <climits>

#include "tree_impl.h"

namespace forein {

using detail::LatchedPage;
using detail::Node;
using detail::OpCounters;
using detail::SearchKey;

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
  LatchedPage first_leaf(OpCounters& c);
  LatchedPage next_leaf(OpCounters& c);
  void collect_forward(const Node& n);
  void collect_backward(const Node& n);
  void add(const detail::StoredKey& key, std::string_view value);
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

void Cursor::State::add(const detail::StoredKey& key, std::string_view value) {
  const std::size_t key_at = arena.size();
  key.append_to(arena);
  const std::size_t value_at = arena.size();
  arena.append(value);
  entries.push_back({key_at, value_at - key_at, value_at, value.size()});
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
    add(key, n.value_at(i));
  }
  // Keys past hi live further right, unless the upper bound stops short.
  if (n.hi_inf() ||
      (spec.upper && (compare_keys(spec.upper->key, n.hi()) < 0 ||
                      (!spec.upper->inclusive && compare_keys(spec.upper->key, n.hi()) == 0)))) {
    exhausted = true;
    return;
  }
  next_boundary.assign(n.hi());
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
    add(key, n.value_at(i));
  }
  // Keys below lo live further left; none exist below the empty key.
  if (n.lo().empty() || (spec.lower && compare_keys(spec.lower->key, n.lo()) >= 0)) {
    exhausted = true;
    return;
  }
  next_boundary.assign(n.lo());
  next_sibling = n.left();
}

LatchedPage Cursor::State::first_leaf(OpCounters& c) {
  const StartHints* h = hints ? &*hints : nullptr;
  if (spec.direction == Direction::kForward) {
    const std::string start = spec.lower ? spec.lower->key : std::string();
    return tree->find_leaf(SearchKey(start), h, false, nullptr, c);
  }
  if (spec.upper) return tree->find_leaf(SearchKey(spec.upper->key), h, false, nullptr, c);
  return tree->find_rightmost_leaf(c);
}

LatchedPage Cursor::State::next_leaf(OpCounters& c) {
  if (spec.direction == Direction::kForward) {
    // The old right link is only a hint: that page may have been merged
    // away or even reused since the previous batch.
    const StartHints via_sibling{Hint{next_sibling, 0, 0}, Hint{}};
    return tree->find_leaf(SearchKey(next_boundary), &via_sibling, false, nullptr, c);
  }
  return tree->find_leaf_before(next_boundary, next_sibling, c);
}

bool Cursor::State::load_batch() {
  entries.clear();
  arena.clear();
  pos = 0;
  detail::EpochManager::Guard guard;
  OpCounters c;
  while (entries.empty() && !exhausted) {
    LatchedPage leaf = first_batch ? first_leaf(c) : next_leaf(c);
    first_batch = false;
    if (spec.direction == Direction::kForward) {
      collect_forward(leaf.node());
    } else {
      collect_backward(leaf.node());
    }
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

LatchedPage Tree::Impl::find_rightmost_leaf(OpCounters& c) {
  LatchedPage n = latch_root(false);
  ++c.nodes_visited;
  for (;;) {
    while (n.node().dead() || !n.node().hi_inf()) {
      const PageId right = n.node().right();
      n.release();
      n = latch(right, false);
      ++c.nodes_visited;
    }
    const Node v = n.node();
    if (v.level() == 0) return n;
    const PageId child = v.child_at(v.count() - 1);
    n.release();
    n = latch(child, false);
    ++c.nodes_visited;
  }
}

// The leaf holding the keys just below `boundary` (a former lo): the left
// link if it still ends exactly there, else a descent that keeps to keys
// strictly less than the boundary.
LatchedPage Tree::Impl::find_leaf_before(const std::string& boundary, PageId left_hint,
                                         OpCounters& c) {
  if (left_hint != kNoPage && left_hint < store_->page_count()) {
    LatchedPage l = latch(left_hint, false);
    ++c.nodes_visited;
    const Node v = l.node();
    if (v.is_node() && !v.dead() && v.level() == 0 && !v.hi_inf() && v.hi() == boundary) {
      return l;
    }
  }
  const SearchKey k(boundary);
  LatchedPage n = latch_root(false);
  ++c.nodes_visited;
  for (;;) {
    // Move right while the node ends before the boundary.
    while (n.node().dead() || (!n.node().hi_inf() && compare_keys(n.node().hi(), boundary) < 0)) {
      const PageId right = n.node().right();
      n.release();
      n = latch(right, false);
      ++c.move_rights;
      ++c.nodes_visited;
    }
    const Node v = n.node();
    if (v.level() == 0) return n;
    const std::size_t i = v.lower_bound(k);
    const PageId child = v.child_at(i == 0 ? 0 : i - 1);
    n.release();
    n = latch(child, false);
    ++c.nodes_visited;
  }
}

}  // namespace forein
