// fattree: Fat-B+Tree's in-switch B+tree (Zhao et al., ICDE 2024; digest
// section 2 of shared/papers/DIGESTS.md) -- the records its controller
// installs and the hardware limits they live under.
//
// A switch holds two kinds of tree node (paper section III):
//   fat root     a TCAM range table: up to 1,024 key ranges, each naming
//                the next node's address and the server that holds it
//                (section III-B, IV-A), built as four chained 16-bit range
//                tables by Algorithm 1 (range_tables.h);
//   node set     up to 4,096 16-branch regular nodes in SRAM: 16
//                get_pivot_i tables, 16 cal_result_i tables and one
//                get_child_address table of 16n entries (section III-A).
// Each takes 6 pipeline stages of a switch's 12 or more, so a switch holds
// a fat root and one node set, or two node sets (section IV-A). On a k=4
// FatTree the fat root sits in a core switch, and a query then crosses an
// aggregation and an edge switch of the server's pod: five node sets on
// the path, one cached tree layer each (section III-C).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "forein/fattree/data_plane.h"
#include "forein/key.h"
#include "forein/page_store.h"

namespace forein::offload::fattree {

// Hardware limits and the paper's experiment defaults (section IV-A, V-B).
inline constexpr std::size_t kBranches = 16;             // pivots and children per regular node
inline constexpr std::size_t kFatRootRangeLimit = 1024;  // ranges the fat root supports
inline constexpr std::size_t kNodeSetLimit = 4096;       // regular nodes per node set
inline constexpr std::size_t kNodeSets = 5;              // node sets on a k=4 FatTree path
inline constexpr std::size_t kStagesPerSwitch = 12;      // "at least 12 stages"
inline constexpr std::size_t kStagesPerPart = 6;         // a fat root or a node set
inline constexpr std::size_t kRangeStages = 4;           // 64-bit key as four 16-bit slices
inline constexpr std::size_t kSliceBits = 16;
inline constexpr std::uint32_t kDefaultFatRootRanges = 600;  // "a maximum of 600 ranges"
inline constexpr std::uint32_t kDefaultLayerNodes = 3600;    // "a maximum of 3600 nodes"
// The device's capacity in its unit, in-switch nodes: fat-root ranges plus
// regular nodes of all node sets.
inline constexpr std::uint64_t kCapacity = kFatRootRangeLimit + kNodeSets * kNodeSetLimit;

// Which switch of the k=4 path holds node set s (section IV-A): set 0
// shares the core switch with the fat root, sets 1-2 are in the
// aggregation switch, sets 3-4 in the edge switch.
inline constexpr std::array<const char*, kPathSwitches> kSwitchNames = {"core switch", "aggregation switch",
                                                                       "edge switch"};
inline constexpr std::size_t switch_of_set(std::size_t set) { return set == 0 ? 0 : (set + 1) / 2; }

// A node address as the switch tables carry it. A real tree node's address
// is its page id. A wide tree node is reformed into a 16-ary subtree of
// switch nodes (docs/fattree.md): its top has the tree node's address, the
// ones below get virtual addresses, tagged with bit 63 and naming their
// tree node, so that the address alone says which tree node a packet has
// reached. (Address itself is forein/fattree/data_plane.h's.)
inline constexpr Address kVirtualBit = Address{1} << 63;
inline constexpr Address real_address(PageId page) { return page; }
inline constexpr Address virtual_address(PageId owner, std::uint32_t seq) {
  return kVirtualBit | (Address{owner} << 16) | (seq & 0xFFFF);
}
inline constexpr bool is_virtual(Address a) { return (a & kVirtualBit) != 0; }
inline constexpr bool is_real(Address a) { return !is_virtual(a) && a <= 0xFFFFFFFFu; }

// The words above every word: a pivot no key is greater than, filling the
// slots of a node with fewer than 16 children.
inline constexpr Word kUnusedPivot = ~Word{0};

// One fat-root range [lo, hi] (inclusive words): the node a key in it goes
// to next, the tree node that is (the hint), and the server holding it.
struct RangeRecord {
  Word lo = 0;
  Word hi = 0;
  Address target = 0;
  PageId hint_node = kNoPage;
  std::uint16_t hint_level = 0;
  std::uint16_t server = 0;

  bool operator==(const RangeRecord&) const = default;
};

// One 16-branch regular node in node set `set`. Child i (i < children)
// covers the words w with pivot[i] < w <= pivot[i + 1] (the paper's
// (p_i, p_i+1]); pivot[0] is the sentinel lo - 1, and the unused pivots are
// kUnusedPivot. owner is the tree node this switch node belongs to (its
// address when the node is a tree node's top, else the tree node it was
// reformed from); a child with a real address is a child of owner, one
// level down.
struct NodeRecord {
  std::uint8_t set = 0;
  std::uint8_t children = 0;
  std::uint16_t owner_level = 0;
  PageId owner = kNoPage;
  Address address = 0;
  std::array<Word, kBranches> pivot{};
  std::array<Address, kBranches> child{};

  bool operator==(const NodeRecord&) const = default;
};

}  // namespace forein::offload::fattree
