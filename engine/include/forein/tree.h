// The forein B+tree: a B-link tree (Lehman-Yao right links and high keys)
// over fixed-size pages, whose operations can start from a node hinted by
// offload hardware.
//
// Keys are byte strings (see key.h for typed encodings), unique; put()
// replaces. Every node keeps level, lo (inclusive), hi (exclusive or +inf),
// left and right sibling and a version. Readers and writers run
// concurrently on any number of threads: writers latch pages exclusively;
// readers latch nothing, reading each page optimistically and checking its
// version afterwards (restarting if a writer came between), so lookups
// write no shared memory; pages unlinked by merges are reused only after
// every writer that could still hold their ids has finished (epochs).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "forein/error.h"
#include "forein/key.h"
#include "forein/leaf_run.h"
#include "forein/node_interval.h"
#include "forein/page_store.h"

namespace forein {

struct TreeOptions {
  std::uint64_t index_id = 0;         // copied into every NodeInterval
  NodeObserver* observer = nullptr;   // not owned; may be null
  std::uint8_t bulk_fill_percent = 90;  // leaf fill for bulk_load, 10..100
  // Writes without a hint first try the rightmost leaf that the last write
  // reached (like nbtree's fastpath for ascending inserts): a key at or
  // above that leaf's lo goes there without a root descent, checked under
  // the leaf's latch. It counts as one node visited. Off by default, so
  // root-descent baselines (nodes_visited) stay what they measure.
  bool append_fast_path = false;
};

// Limits, for the tree's page size (see Tree::max_key_size()).
//   key:   at most page_size / 16 bytes (512 at 8 KiB)
//   value: at most page_size / 8 bytes (1024 at 8 KiB)
// so that any split leaves both halves within one page. Larger input throws
// InvalidArgument and changes nothing; hosts store bigger values out of line.

enum class Direction : std::uint8_t { kForward, kBackward };

struct KeyBound {
  std::string key;
  bool inclusive = true;
};

// [lower, upper] with either end open; visited in `direction` order.
struct ScanSpec {
  std::optional<KeyBound> lower;
  std::optional<KeyBound> upper;
  Direction direction = Direction::kForward;
  // Hand out entries straight from the leaf page instead of copying each
  // leaf's entries into the cursor first. Only for a tree that no other
  // thread changes while the cursor is in use (a single-threaded host such
  // as the SQLite module): value() then views the page and is valid until
  // next() or the next change to the tree or its pages (a write, an
  // eviction); key() stays valid until next(). next() re-checks the
  // leaf's version and, if the leaf changed in between, continues after
  // the last key returned, as a batch cursor does.
  bool in_place = false;
  // The rows the caller expects to use (a LIMIT), 0 if unknown. In-place
  // runs (Cursor::next_run) and copied batches then hold that many rows (up
  // to a cap, 128) instead of starting small (8) and growing; the scan
  // still goes on past it if asked.
  std::size_t expected_rows = 0;
};

class Tree;

// Pull-style ordered iteration. Not a snapshot: every key returned was
// present at some moment during the scan, keys come in strict order, and
// none is returned twice. Holds no latch between calls.
class Cursor {
 public:
  // No scan: next() is false at once (Tree::rescan() starts one).
  Cursor();
  ~Cursor();
  Cursor(Cursor&&) noexcept;
  Cursor& operator=(Cursor&&) noexcept;

  // Advances to the next entry; false at the end.
  bool next();
  std::string_view key() const;
  std::string_view value() const;

  // In-place scans only: the next slots of the current leaf at once (of
  // the next leaf once the current one is used up; ScanSpec::expected_rows
  // of them, or a few at first and more with each call), in scan order, to
  // be read with LeafRun's inline accessors; empty at the end. The cursor
  // then stands on the run's last row (key(), value()). A caller that could
  // not use the whole run because the tree changed calls resume_after()
  // with the last key it used before asking for more.
  LeafRun next_run();
  // The next next() or next_run() continues after `key`, finding its
  // leaf again from the root.
  void resume_after(std::string_view key);

 private:
  friend class Tree;
  struct State;
  explicit Cursor(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class Tree {
 public:
  // A new, empty tree in an empty store.
  static std::unique_ptr<Tree> create(std::unique_ptr<PageStore> store, TreeOptions options = {});
  // The tree already in `store` (e.g. a reopened FilePageStore). Throws
  // CorruptionError if the meta page is not a forein tree.
  static std::unique_ptr<Tree> open(std::unique_ptr<PageStore> store, TreeOptions options = {});
  ~Tree();
  Tree(const Tree&) = delete;
  Tree& operator=(const Tree&) = delete;

  // Point lookup. On a hit copies the value into *value (if not null). On a
  // miss *value is left as it was, or empty if a concurrent write made the
  // lookup retry after it had copied a value.
  bool get(std::string_view key, std::string* value, const StartHints* hints = nullptr);
  // Point lookup that hands out the value where it lies instead of copying
  // it: *value views the leaf's page frame, valid until the next call on
  // this tree (a write changes the page; an on-demand store may evict it).
  // For hosts no other thread writes to meanwhile, as in-place scans are
  // (LeafRun): with a concurrent writer the bytes may change under the
  // view, so such callers use get(). Counts and hints as get().
  bool get_view(std::string_view key, std::string_view* value,
                const StartHints* hints = nullptr);
  // Insert or replace. Returns true if the key was new.
  bool put(std::string_view key, std::string_view value, const StartHints* hints = nullptr);
  // Insert only: returns false and changes nothing if the key is present
  // (one descent where get() then put() would take two).
  bool insert(std::string_view key, std::string_view value, const StartHints* hints = nullptr);
  // Returns true if the key was present.
  bool erase(std::string_view key, const StartHints* hints = nullptr);

  // Ordered iteration; the hint applies to the scan's starting key.
  Cursor scan(const ScanSpec& spec, const StartHints* hints = nullptr);
  // scan(), reusing `cursor` (of any tree, or moved-from) and its buffers:
  // for hosts that run many short scans, such as SQLite's xFilter.
  void rescan(Cursor& cursor, const ScanSpec& spec, const StartHints* hints = nullptr);
  // Callback form: fn returns false to stop.
  void scan(const ScanSpec& spec,
            const std::function<bool(std::string_view key, std::string_view value)>& fn,
            const StartHints* hints = nullptr);

  // Loads strictly ascending (key, value) pairs into an empty tree, filling
  // leaves to bulk_fill_percent. Throws InvalidArgument if the tree is not
  // empty or the input is not strictly ascending.
  void bulk_load(const std::vector<std::pair<std::string, std::string>>& sorted);
  // bulk_load from a generator, for data sets too large to hold as a
  // vector beside the tree (forein-kv-server --keys 100000000): next(key,
  // value) assigns the next pair to *key and *value and returns true, or
  // returns false at the end. The same nodes as bulk_load of the same
  // pairs; memory besides the tree's pages: one leaf's pairs and a
  // (separator, page) per leaf. Throws InvalidArgument if the tree is not
  // empty, or on a pair out of order or too large (the tree then stays
  // empty; the pages written so far stay allocated in its store).
  void bulk_load_stream(const std::function<bool(std::string* key, std::string* value)>& next);

  // Asks the CPU to start loading the leaf an operation on `key` would
  // reach: walks the inner nodes from the root as a lookup does and issues
  // a prefetch for the leaf's header line instead of reading it. A hint to
  // the memory system only: it changes nothing, counts nothing, takes no
  // latch and gives up quietly at anything a lookup would restart on (a
  // concurrent writer, a node being split or merged). Safe from any
  // thread, as get() is. A batch of writes calls it a few keys ahead of
  // the one it applies, so leaf misses overlap (forein-kv-server's
  // metadata mode, docs/network.md).
  void prefetch(std::string_view key) const;

  // The leaf a root descent reaches for `key` (the oracle hint).
  Hint leaf_for(std::string_view key);
  // The leaf an operation would start its leaf work at, after validating
  // `hints` and falling back (for the hint-exactness tests).
  Hint start_leaf(std::string_view key, const StartHints* hints);

  // Calls fn for every live node, level by level, leaves last.
  void for_each_node(const std::function<void(const NodeInterval&)>& fn);

  // The leaves left to right, each with its change count (a number that
  // differs whenever a write changed the leaf since: a caller that kept a
  // leaf's words from an earlier walk need not read them again) and, where
  // want(leaf, change) is true, its keys' words in ascending order (read
  // false: the words are not read and the span is empty). visit is called
  // once per live leaf, after the leaf was read consistently; want may be
  // asked more than once for a leaf (a writer came in between) and must
  // have no side effects. Not a snapshot, as scan(): a leaf split or merged
  // during the walk may show its keys before or after the move, so words
  // can repeat across leaves (the walk's words are ascending only within a
  // leaf). A key change completed before the walk starts is seen. Safe
  // beside writers (the offload layer's incremental key words,
  // TreeIndexSource).
  void for_each_leaf_words(
      const std::function<bool(PageId leaf, std::uint64_t change)>& want,
      const std::function<void(PageId leaf, std::uint64_t change, std::span<const Word> words,
                               bool read)>& visit);

  // Verifies every invariant: key order inside nodes, lo/hi nesting,
  // sibling links in both directions, levels, entry counts, each leaf's
  // search-window entry. Throws
  // CorruptionError naming the page. Run it while no writer is active.
  void check();

  // Re-reads root, height and key count from the meta page after the host
  // replaced pages underneath (another process's commit, a rollback, any
  // write to store()'s pages that bypassed the tree).
  // Pages retired but not yet freed are forgotten. No operation may run
  // concurrently.
  void reload();

  // Makes the tree durable in a persistent store (see PageStore::sync).
  // Callers must not modify the tree concurrently.
  void sync();

  std::uint64_t size() const;    // number of keys
  // Advances on every change to the set of keys: a new key (put, insert),
  // an erase, bulk_load, reload; not on a value replaced in place. Bumped
  // (release) after the change is visible, so a reader that loads a value
  // (acquire) and then scans sees every change counted in it; a change not
  // counted yet makes a later call return more (the offload layer's
  // KeySource::key_generation: an unchanged index re-reads no keys).
  std::uint64_t key_generation() const;
  std::uint16_t height() const;  // levels, 1 = a single leaf
  std::size_t max_key_size() const;
  std::size_t max_value_size() const;
  // The tree's pages. A host that writes them directly calls reload().
  PageStore& store();

  TreeStats stats() const;
  void reset_stats();

 private:
  class Impl;
  explicit Tree(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend class Cursor;
};

}  // namespace forein
