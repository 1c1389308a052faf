// What a planner plans from: the index's live nodes (with parents and
// sampled weights) and its key words. Hosts provide both through an
// IndexSource: the engine tree (TreeIndexSource), PostgreSQL's index pages
// (through the C ABI), or anything else that can list nodes and words.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>

#include "forein/key.h"
#include "forein/node_interval.h"

namespace forein::offload {

// The manager's view of one node.
struct OffloadNode {
  NodeInterval interval;
  std::int32_t parent = -1;  // index in the node table; -1 for the root
  double weight = 0;         // sampled accesses (leaves')
};

// key_generation() of a source that cannot tell whether its keys changed.
inline constexpr std::uint64_t kUnknownKeyGeneration = std::numeric_limits<std::uint64_t>::max();

// The distinct words of an index's keys, ascending. Not a snapshot: keys
// written meanwhile may or may not be seen (a planner only uses words to
// skip prefixes no key falls under).
class KeySource {
 public:
  virtual ~KeySource() = default;
  // Calls fn for each distinct word, ascending, until fn returns false.
  virtual void for_each_word(const std::function<bool(Word)>& fn) const = 0;
  // A count of the changes to the set of keys (inserts of new keys,
  // erases; not value replacements), or kUnknownKeyGeneration. The
  // contract: a key-set change that completed before a call returned g is
  // seen by every for_each_word started after that call, and a change
  // completed after it makes a later call return a value other than g. So
  // two calls returning the same known value mean the words a scan after
  // the first one gave are still the words. The default: unknown (every
  // refresh re-reads the words); the engine tree (TreeIndexSource) and the
  // C ABI's source (words handed over at each refresh) know theirs.
  virtual std::uint64_t key_generation() const { return kUnknownKeyGeneration; }
};

// A host's index as the manager reads it when it attaches.
class IndexSource : public KeySource {
 public:
  // Calls fn for every live node (as a kCreated event would report it).
  virtual void for_each_node(const std::function<void(const NodeInterval&)>& fn) const = 0;
};

}  // namespace forein::offload
