// The tree owner's writes (the memory node's CPU side, docs/remote-read.md,
// "Writes"): one writer thread over a built region while clients READ it.
//
// An update writes a new value record, then swaps the leaf's pointer under
// the leaf's seqlock. An insert goes into its leaf under the seqlock; a
// full node splits B-link style: the new right node is written first (not
// reachable yet), then the old node is rewritten in place with the new hi
// fence and right sibling, then the separator goes into the parent the
// same way, up to a new root (then the header). A reader that reaches a
// node whose range no longer holds its key follows the right sibling.
// Nothing is freed or reused (append-only, fine for read-mostly loads), so
// an old address still reads a valid old node or record, and a node's lo
// never changes.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "remote/node_layout.h"
#include "remote/region.h"

namespace forein::net::remote {

enum class PutResult : std::uint8_t {
  kUpdated,
  kInserted,
  kRegionFull,  // nothing written: no room for the record and a split to the root
};

struct WriterStats {
  std::uint64_t updates = 0;
  std::uint64_t inserts = 0;
  std::uint64_t splits = 0;       // nodes split, leaves and inner
  std::uint64_t root_splits = 0;
  std::uint64_t rewrites = 0;     // nodes rewritten in place under their seqlock
};

class Writer {
 public:
  // Takes over a built region (its header); throws CorruptionError if the
  // header does not check.
  explicit Writer(Region& region);

  // Throws InvalidArgument for a value above kMaxValueBytes, and
  // CorruptionError when a node on the way does not check (nothing written).
  PutResult put(std::uint64_t key, std::string_view value);

  const RegionHeader& header() const { return header_; }
  const WriterStats& stats() const { return stats_; }

 private:
  Node read_node(Address a) const;
  void rewrite(Address a, Node& n);    // in place, version + 2
  Address write_new(const Node& n);   // a fresh node, version 0
  // Puts (key, ptr) into the node at path[depth]; splits upward as needed.
  void insert_at(std::vector<Address>& path, std::size_t depth, std::uint64_t key, Address ptr);
  void publish_header();

  Region& region_;
  RegionHeader header_;
  WriterStats stats_;
  std::vector<std::byte> image_;
};

}  // namespace forein::net::remote
