// Switch-delta's metadata index (paper 002, section II, Table I): key ->
// the location of its newest write in the data nodes' logs plus that
// write's timestamp (protocol/visibility.h, StampedLocation, 10 bytes), in
// the engine tree. Every way an update arrives (META_PUT, META_ASYNC,
// start-up replay, catch-up) goes through apply(), whose rule makes
// duplicates and reordered older updates no-ops.
#pragma once

#include <optional>
#include <string_view>

#include "forein/tree.h"
#include "protocol/visibility.h"

namespace forein::net::kv {

enum class ApplyResult : std::uint8_t {
  kApplied,       // the tree now maps the key to this location
  kIgnoredOlder,  // the tree already held this write or a newer one
};

class MetadataIndex {
 public:
  explicit MetadataIndex(Tree& tree) : tree_(tree) {}

  // The stored location and timestamp; nullopt if the key is absent (or
  // its tree value is not a StampedLocation, which apply() never writes).
  std::optional<StampedLocation> lookup(std::string_view key);

  // The apply rule: put iff the key is absent or its stored timestamp is
  // older. All writes of a key take their timestamps from one data node's
  // counter for the key's slot (visibility.h), so timestamps order them.
  ApplyResult apply(std::string_view key, const StampedLocation& update);

  // Tree::prefetch: starts loading the leaf apply(key) will touch.
  void prefetch(std::string_view key) const { tree_.prefetch(key); }

  std::size_t max_key_size() const { return tree_.max_key_size(); }

 private:
  Tree& tree_;
};

}  // namespace forein::net::kv
