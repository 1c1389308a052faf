// The hint source: the offload manager (offload/core) with the table's
// backend (default switch_lpm), planning from what this connection's page
// cache holds. 1 in 16 lookups (sampled) weight the leaves; a refresh asks
// the backend's planner for the difference and installs it into the
// modelled device, whose image gives the start hint.
//
// What the hint path knows (ResidentIndex, the manager's IndexSource) is
// learned from pages already in memory, never by reading more: the pages
// a descent fetches (Table::read_page notes them), the pages the tree's
// node events name (splits, merges, new roots), and the pages another
// connection's commit or a rollback replaced (forgotten unless still
// cached). At a refresh each noted page still in the cache is described
// from its frame (PageStore::peek, forein/node_view.h), and every cached
// inner node above level 1 also describes its children from its downlinks,
// so the levels above the leaves are known whole once their parents were
// read (the root is read when the table is opened). Inner nodes stay known
// after eviction (their ranges change only through writes, which read
// them, or through commits, which are noted); leaves are known while
// cached, and the words the planner drops hollow prefixes with are the
// keys of the cached leaves. A level is planned from only when its known
// nodes cover the whole key space (a partly known level would stretch its
// nodes' entries over the unknown ones, and a hint would then walk right
// through pages not in memory). A fully cached table therefore gets the
// plan the whole tree would give; a cold one gets hints into the part it
// holds, and a hint never costs a page read that the operation would not
// need anyway, beyond a stale entry's sibling steps.
//
// No background thread (a loadable extension should not start threads, and
// fork() in an application must stay safe): refresh() runs inline. Its
// cost is proportional to what is cached (its nodes, and its leaves' keys
// read from the frames), not to the table, so it runs when the tree is
// first used, then after a number of operations proportional to what is
// cached, or once the cache has doubled since (refresh_due). Operations
// right of the plan's last key while the tree grows (a load of ascending
// keys) go unhinted and do not count towards a refresh: no plan stays
// current at the right edge of a growing tree.
#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include "forein/node_view.h"
#include "forein/offload/manager.h"
#include "forein/offload/plan.h"
#include "forein/offload/registry.h"
#include "forein_vtab.h"

namespace forein::sqlite {
namespace {

// Operations between refreshes (appends aside) unless the cache doubled.
constexpr std::uint64_t kMinOpsBetweenRefreshes = 4096;
// While no level is known whole (right after a commit replaced the root):
// operations before the next try, which the fallbacks' descents (reading
// the root) make succeed.
constexpr std::uint64_t kOpsBetweenRetries = 64;
// Operations right of the plan's right edge after which, if three in four
// of them added a key, the next ones there go unhinted (hint()).
constexpr std::uint64_t kAppendStreak = 256;
// Noted page ids kept between refreshes; beyond this, the next refresh
// looks at every page's cache slot instead.
constexpr std::size_t kMaxNoted = std::size_t{1} << 16;

}  // namespace

// The index as this connection's page cache shows it (see above).
class ResidentIndex final : public offload::IndexSource {
 public:
  void note(PageId id) {
    if (noted_.size() < kMaxNoted) {
      noted_.push_back(id);
    } else {
      overflow_ = true;
    }
  }
  void note_replaced(PageId id) {
    if (replaced_.size() < kMaxNoted) {
      replaced_.push_back(id);
    } else {
      overflow_ = true;
      lost_replaced_ = true;
    }
  }
  void clear() {
    known_.clear();
    noted_.clear();
    replaced_.clear();
    overflow_ = false;
    lost_replaced_ = false;
    nodes_.clear();
    leaves_.clear();
    store_ = nullptr;
    beyond_.reset();
    words_ = 0;
  }

  // Brings the known nodes up to date with the cache and picks the ones a
  // plan may use; returns whether one level is known whole.
  bool update(const Tree& tree, const PageStore& store);
  const std::vector<NodeInterval>& nodes() const { return nodes_; }
  std::size_t known() const { return known_.size(); }
  std::uint64_t words() const { return words_; }
  // The first word right of every key the plan knows, when the plan knows
  // the tree's rightmost leaf (nullopt otherwise): where appends go.
  std::optional<Word> beyond() const { return beyond_; }

  // IndexSource: the planned nodes, and the words of the cached leaves'
  // keys (read from their frames, in key order).
  void for_each_node(const std::function<void(const NodeInterval&)>& fn) const override {
    for (const NodeInterval& iv : nodes_) fn(iv);
  }
  void for_each_word(const std::function<bool(Word)>& fn) const override;

 private:
  struct Known {
    NodeInterval interval;
    bool described = false;  // from its own frame, not its parent's downlink
  };

  void describe(const PageStore& store);
  void derive_children(const PageStore& store);
  bool pick_levels(const Tree& tree);  // after store_ is set

  std::unordered_map<PageId, Known> known_;
  std::vector<PageId> noted_;     // read or named by node events since the last update
  std::vector<PageId> replaced_;  // replaced or dropped underneath since then
  bool overflow_ = false;         // noted_ or replaced_ ran over: look at every page
  bool lost_replaced_ = false;    // replaced_ ran over: forget every inner node not cached
  std::vector<NodeInterval> nodes_;  // as planned: the levels known whole, and the cached leaves
  std::vector<PageId> leaves_;       // cached leaves in key order (for_each_word)
  const PageStore* store_ = nullptr;
  std::optional<Word> beyond_;
  mutable std::uint64_t words_ = 0;  // words the last for_each_word gave
};

bool ResidentIndex::update(const Tree& tree, const PageStore& store) {
  store_ = &store;
  // Replaced pages: what was learned from them is void; the cached ones
  // are described again below.
  for (PageId id : replaced_) {
    known_.erase(id);
    if (store.peek(id) != nullptr) noted_.push_back(id);
  }
  replaced_.clear();
  if (lost_replaced_) {
    std::erase_if(known_, [&](const auto& e) { return store.peek(e.first) == nullptr; });
    lost_replaced_ = false;
  }
  for (PageId id : noted_) {
    if (store.peek(id) != nullptr) known_.try_emplace(id);
  }
  noted_.clear();
  if (overflow_) {
    // Cache slots only: nothing is read.
    for (PageId id = 1; id < store.page_count(); ++id) {
      if (store.peek(id) != nullptr) known_.try_emplace(id);
    }
    overflow_ = false;
  }
  describe(store);
  derive_children(store);
  return pick_levels(tree);
}

// Every known page in the cache, from its frame: a node that is gone
// (freed, merged away) is forgotten. Out of the cache, inner nodes keep
// what was known of them; leaves are forgotten with their keys.
void ResidentIndex::describe(const PageStore& store) {
  for (auto it = known_.begin(); it != known_.end();) {
    const std::byte* frame = store.peek(it->first);
    if (frame == nullptr) {
      // A never-described entry here is a page noted and evicted since.
      if (it->second.interval.level == 0 || it->second.interval.node == kNoPage) {
        it = known_.erase(it);
      } else {
        ++it;
      }
      continue;
    }
    const std::optional<NodeInterval> iv = page_node_interval(it->first, frame, store.page_size());
    if (!iv) {
      it = known_.erase(it);
      continue;
    }
    it->second.interval = *iv;
    it->second.described = true;
    ++it;
  }
}

// The children of cached inner nodes above level 1 from their downlinks,
// where the child's own frame did not say more.
void ResidentIndex::derive_children(const PageStore& store) {
  std::vector<PageId> parents;
  for (const auto& [id, k] : known_) {
    if (k.interval.level >= 2 && store.peek(id) != nullptr) parents.push_back(id);
  }
  for (PageId id : parents) {
    for_each_page_child(store.peek(id), store.page_size(), 0, [&](const NodeInterval& child) {
      if (child.node == kNoPage || child.node >= store.page_count()) return;
      Known& k = known_[child.node];
      if (k.described) return;
      k.interval = child;
    });
  }
}

// A level is usable when its known nodes' word intervals chain from word 0
// to the end of word space. Planned: every usable level above the leaves
// and the cached leaves (or the root leaf of a one-level tree).
bool ResidentIndex::pick_levels(const Tree& tree) {
  std::map<std::uint16_t, std::vector<const NodeInterval*>> levels;
  for (const auto& [id, k] : known_) levels[k.interval.level].push_back(&k.interval);
  const std::uint16_t height = tree.height();
  auto whole = [](std::vector<const NodeInterval*>& v) {
    std::sort(v.begin(), v.end(), [](const NodeInterval* a, const NodeInterval* b) {
      return a->lo != b->lo ? a->lo < b->lo : a->node < b->node;
    });
    Word next = 0;
    for (const NodeInterval* iv : v) {
      if (iv->empty()) continue;
      if (iv->lo != next) return false;
      if (iv->hi_inf) return true;
      next = iv->hi;
    }
    return false;
  };
  nodes_.clear();
  leaves_.clear();
  bool usable = false;
  for (auto& [level, v] : levels) {
    const bool top_leaf = level == 0 && height == 1;
    if (level == 0 && !top_leaf) {
      std::sort(v.begin(), v.end(), [](const NodeInterval* a, const NodeInterval* b) {
        if (a->lo != b->lo) return a->lo < b->lo;
        return a->empty() != b->empty() ? a->empty() : a->node < b->node;
      });
    } else if (whole(v)) {
      usable = true;
    } else {
      continue;
    }
    for (const NodeInterval* iv : v) {
      nodes_.push_back(*iv);
      if (level == 0) leaves_.push_back(iv->node);
    }
  }
  if (!usable) {
    nodes_.clear();
    leaves_.clear();
  }
  // The right edge: past the last key of the rightmost leaf, if cached.
  beyond_.reset();
  // Leaves come first in nodes_ (level 0 first), in key order.
  if (!leaves_.empty() && nodes_[leaves_.size() - 1].hi_inf) {
    const NodeInterval& last = nodes_[leaves_.size() - 1];
    std::vector<Word> words;
    append_page_words(store_->peek(last.node), store_->page_size(), &words);
    if (words.empty()) {
      beyond_ = last.lo;
    } else if (words.back() != ~Word{0}) {
      beyond_ = words.back() + 1;
    }
  }
  return usable;
}

void ResidentIndex::for_each_word(const std::function<bool(Word)>& fn) const {
  words_ = 0;
  if (store_ == nullptr) return;
  std::vector<Word> buf;
  bool first = true;
  Word last = 0;
  for (PageId id : leaves_) {
    buf.clear();
    append_page_words(store_->peek(id), store_->page_size(), &buf);
    for (Word w : buf) {
      // A leaf's first keys may share the last word of the leaf before.
      if (!first && w <= last) continue;
      first = false;
      last = w;
      ++words_;
      if (!fn(w)) return;
    }
  }
}

HintSource::HintSource() : index_(std::make_unique<ResidentIndex>()) {}
HintSource::~HintSource() { detach(); }

void HintSource::on_node_event(const NodeEvent& ev) {
  ++changes_;
  index_->note(ev.interval.node);
}

void HintSource::note_fetched(PageId id) {
  ++changes_;
  index_->note(id);
}

void HintSource::note_replaced(PageId id) {
  ++changes_;
  index_->note_replaced(id);
}

void HintSource::attach(Tree& tree) {
  backend_ = std::make_unique<offload::Backend>(info_ != nullptr ? *info_ : offload::default_backend());
  manager_ = std::make_unique<offload::OffloadManager>(*backend_);
  manager_->attach(*index_);  // lists nothing yet: the first refresh syncs the known nodes
  tree_ = &tree;
  refreshed_ = false;
  usable_ = false;
  ops_since_refresh_ = 0;
}

void HintSource::detach() {
  if (manager_) manager_->detach();
  manager_.reset();
  backend_.reset();
  index_->clear();
  tree_ = nullptr;
  changes_ = 0;
}

void HintSource::refresh() {
  usable_ = index_->update(*tree_, tree_->store());
  if (usable_) {
    manager_->sync_nodes(index_->nodes());
    manager_->refresh();
    manager_->flush();  // no modelled install delay here: apply now
  }
  refreshed_ = true;
  ops_since_refresh_ = 0;
  changes_ = 0;
  planned_size_ = index_->words() + index_->known();
  planned_resident_ = tree_->store().resident_pages();
  beyond_ = usable_ ? index_->beyond() : std::nullopt;
  beyond_ops_ = 0;
  size_at_refresh_ = tree_->size();
  const TreeStats st = tree_->stats();
  missed_at_refresh_ = st.fallbacks + st.secondary_hits;
  ++refreshes_;
}

// When a refresh is due. It costs about what the cache holds (its nodes
// and cached keys, scaled from the last refresh by how the cache grew
// since), so it waits for a number of operations proportional to that,
// or for the cache to have doubled since (which bounds the refreshes of a
// growing cache to twice the cost of the last one). Appends (operations
// right of the plan's right edge while the tree grew) do not count: a
// load of ascending keys changes only the tree's right edge, where no plan
// stays current, and would otherwise replan the whole tree every time it
// grew by a fraction; the first other operations after it replan.
// With pages read or changed since the last refresh it is due after a
// quarter of that many operations if hints went wrong often since (1 in
// 16 operations fell back or took the secondary, appends aside), else
// after twice that many: a phase of writes changes nodes all the time, yet
// a refresh, which replans every node, buys little while hints keep being
// accepted. Without changes it is only re-weighting: due after eight
// times that many.
bool HintSource::refresh_due() const {
  constexpr std::uint64_t kCheckEvery = 64;  // operations between looks at the counters
  if (ops_since_refresh_ % kCheckEvery != 0) return false;
  const std::uint64_t keys = tree_->size();
  const std::uint64_t grown = keys > size_at_refresh_ ? keys - size_at_refresh_ : 0;
  const std::uint64_t appends = std::min(beyond_ops_, grown);
  const std::uint64_t ops = ops_since_refresh_ - appends;
  const std::size_t resident = std::max<std::size_t>(tree_->store().resident_pages(), 1);
  const std::size_t planned_resident = std::max<std::size_t>(planned_resident_, 1);
  if (ops >= kCheckEvery && resident >= 2 * planned_resident) return true;
  if (ops < kMinOpsBetweenRefreshes) return false;
  const std::uint64_t size = planned_size_ * resident / planned_resident;
  if (changes_ == 0) return ops >= size * 8;
  if (ops >= size * 2) return true;
  if (ops < size / 4) return false;
  const TreeStats s = tree_->stats();
  const std::uint64_t failed = s.fallbacks + s.secondary_hits;
  // The table resets the tree's counters at a page-level refresh.
  const std::uint64_t since = failed - (failed >= missed_at_refresh_ ? missed_at_refresh_ : 0);
  const std::uint64_t missed = since > appends ? since - appends : 0;
  return missed * 16 >= ops;
}

StartHints HintSource::hint(std::string_view key) {
  if (mode == 2 || tree_ == nullptr) return {};
  if (mode == 1) {
    // Garbage: any page (some past the end), any level up to 2.
    const std::uint64_t pages = tree_->store().page_count() + 16;
    StartHints h;
    h.primary = Hint{static_cast<PageId>(rng() % pages), static_cast<std::uint16_t>(rng() % 3), rng()};
    h.secondary = Hint{static_cast<PageId>(rng() % pages), static_cast<std::uint16_t>(rng() % 3), rng()};
    return h;
  }
  const Word w = word_of(key);
  ++ops_since_refresh_;
  if (!refreshed_) {
    refresh();
  } else if (!usable_) {
    if (ops_since_refresh_ >= kOpsBetweenRetries && changes_ > 0) refresh();
  } else if (refresh_due()) {
    refresh();
  }
  if (!usable_) return {};
  // Right of every key the plan knew, in the tree's last leaf: where a
  // load of ascending keys appends. While most operations there added a
  // key (an append streak), the plan's entries there lead to leaves that
  // have split many times since: a hint would walk right through them and
  // fall back, which costs more than the descent from the root these
  // operations take instead (unhinted, so not counted as hinted).
  if (beyond_ && w >= *beyond_) {
    ++beyond_ops_;
    const std::uint64_t keys = tree_->size();
    const std::uint64_t grown = keys > size_at_refresh_ ? keys - size_at_refresh_ : 0;
    if (beyond_ops_ >= kAppendStreak && grown * 4 >= beyond_ops_ * 3) return {};
  }
  manager_->sample_access(w);
  return manager_->hint_for_word(w);
}

void HintSource::ensure_refreshed() {
  if (mode == 0 && manager_ && tree_ != nullptr && !refreshed_) refresh();
}

const char* HintSource::backend_name() const {
  return (info_ != nullptr ? *info_ : offload::default_backend()).name;
}
std::uint64_t HintSource::installed_entries() const { return backend_ ? backend_->usage().used : 0; }
std::uint64_t HintSource::capacity_entries() const {
  if (backend_) return backend_->usage().capacity;
  return (info_ != nullptr ? *info_ : offload::default_backend()).default_capacity;
}

}  // namespace forein::sqlite
