// What a planner plans from: the index's live nodes (with parents and
// sampled weights) and its key words. Hosts provide both through an
// IndexSource: the engine tree (TreeIndexSource), PostgreSQL's index pages
// (through the C ABI), or anything else that can list nodes and words.
#pragma once

#include <cstdint>
#include <functional>

#include "forein/key.h"
#include "forein/node_interval.h"

namespace forein::offload {

// The manager's view of one node.
struct OffloadNode {
  NodeInterval interval;
  std::int32_t parent = -1;  // index in the node table; -1 for the root
  double weight = 0;         // sampled accesses (leaves')
};

// The distinct words of an index's keys, ascending. Not a snapshot: keys
// written meanwhile may or may not be seen (a planner only uses words to
// skip prefixes no key falls under).
class KeySource {
 public:
  virtual ~KeySource() = default;
  // Calls fn for each distinct word, ascending, until fn returns false.
  virtual void for_each_word(const std::function<bool(Word)>& fn) const = 0;
};

// A host's index as the manager reads it when it attaches.
class IndexSource : public KeySource {
 public:
  // Calls fn for every live node (as a kCreated event would report it).
  virtual void for_each_node(const std::function<void(const NodeInterval&)>& fn) const = 0;
};

}  // namespace forein::offload
