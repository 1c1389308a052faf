// dpa store: the NIC-side nodes in DPA memory (DPA-Store 3.1, Figure 4)
// and their byte and cache-line accounting.
//
//   inner node: one 64 B line of metadata + the seven segments' first
//   keys, one line per segment model, then per child an 8 B pivot and an
//   8 B child pointer (pivots and children kept in separate arrays, 3.1,
//   each segment's arrays starting on a line).
//   leaf: one 64 B line (model, key count, the host addresses of the key
//   and value arrays, the buffer's two counters) + the insert buffer
//   (entries of 8 B key, 8 B value, 1 B op, rounded up to lines).
//
// A node is immutable once its COPY stitch has run, except the leaf's
// insert buffer (atomics) and the inner node's child pointers (atomic
// swaps by CONNECT stitches).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "forein/dpa/types.h"
#include "dpa/fixed_point.h"

namespace forein::offload::dpa::detail {

inline constexpr std::uint64_t kLine = kCacheLineBytes;
inline constexpr std::uint64_t kBufferEntryBytes = 17;  // key, value, op byte
inline constexpr std::uint64_t kPivotBytes = 8, kChildBytes = 8;

// Buffer entry ops; kOpNone marks a slot not published yet (or reset).
enum BufferOp : std::uint8_t { kOpNone = 0, kOpInsert = 1, kOpUpdate = 2, kOpDelete = 3 };

// One insert-buffer slot. The op byte is published last; here it is a tag
// that also carries the buffer's RESET generation, so a reader that races
// a RESET and a new write to the same slot never pairs one write's key
// with another's value (the paper reads values before keys for the same
// reason, 3.1). The model still counts 17 bytes an entry.
struct BufferEntry {
  std::atomic<std::uint64_t> key{0};
  std::atomic<std::uint64_t> value{0};
  std::atomic<std::uint64_t> tag{0};  // generation << 8 | op; 0: empty
};

inline std::uint64_t entry_tag(std::uint32_t generation, std::uint8_t op) {
  return (std::uint64_t{generation} << 8) | op;
}

struct EntryRead {
  std::uint64_t key = 0, value = 0;
  std::uint8_t op = kOpNone;
};

// A consistent read of a published entry (seqlock style: the tag before
// and after); false if the slot is empty or changed meanwhile. Every
// access is seq_cst, so a key or value written after a RESET's clearing
// store implies the second tag read sees that store or a later one.
inline bool read_entry(const BufferEntry& e, EntryRead* out) {
  const std::uint64_t before = e.tag.load();
  if ((before & 0xff) == kOpNone) return false;
  out->key = e.key.load();
  out->value = e.value.load();
  if (e.tag.load() != before) return false;
  out->op = static_cast<std::uint8_t>(before & 0xff);
  return true;
}

// The host arrays a leaf's DMA addresses point at (host memory). Values are
// atomics because UPDATE-only patches rewrite them in place while
// traversers read them (3.2.1).
struct HostArrays {
  std::vector<std::uint64_t> keys;
  std::unique_ptr<std::atomic<std::uint64_t>[]> values;
  std::size_t size() const { return keys.size(); }
  std::uint64_t bytes() const { return keys.size() * 16; }
};

struct NicNode {
  NicNode(bool leaf, std::uint64_t node_bytes) : is_leaf(leaf), bytes(node_bytes) {}
  const bool is_leaf;
  const std::uint64_t bytes;  // DPA memory it occupies
};

// What a COPY stitch writes into a leaf: "only model parameters and DMA
// addresses are transferred" (4.2.8).
struct LeafImage {
  FixedModel model;
  std::uint32_t count = 0;
  const std::uint64_t* host_keys = nullptr;
  std::atomic<std::uint64_t>* host_values = nullptr;
};

struct NicLeaf final : NicNode {
  NicLeaf(std::uint64_t node_bytes, std::size_t buffer_entries, std::uint64_t lo_key,
          std::unique_ptr<HostArrays> arrays);

  LeafImage image;  // filled by COPY
  // The insert buffer (3.1): `reserved` is incremented before an entry is
  // written, `committed` after; the writer whose commit fills the last slot
  // sends the patch request.
  const std::uint32_t capacity;
  std::atomic<std::uint32_t> reserved{0};
  std::atomic<std::uint32_t> committed{0};
  std::unique_ptr<BufferEntry[]> entries;
  std::atomic<std::uint32_t> generation{1};  // bumped by RESET
  std::atomic<bool> patch_failed{false};  // its patch could not allocate DPA memory
  // The leaf's lowest key (its pivot in the parent): the patch request
  // names it so the patcher can descend to the leaf from the root.
  const std::uint64_t lo;
  // Host memory behind the DMA addresses, freed with the leaf by the epochs.
  const std::unique_ptr<HostArrays> host;
};

// An inner node's contents: segments over one pivot array.
struct InnerLayout {
  std::uint32_t segments = 0;
  std::array<std::uint64_t, kInnerSegments> first_keys{};
  std::array<std::uint32_t, kInnerSegments> seg_begin{};
  std::array<std::uint32_t, kInnerSegments> seg_count{};
  std::array<FixedModel, kInnerSegments> models{};
  std::vector<std::uint64_t> pivots;  // pivots[i]: lowest key of child i
  std::size_t size() const { return pivots.size(); }
  bool operator==(const InnerLayout&) const = default;
};

struct NicInner final : NicNode {
  NicInner(std::uint64_t node_bytes, std::size_t children);
  InnerLayout layout;  // filled by COPY
  const std::size_t child_count;
  std::unique_ptr<std::atomic<NicNode*>[]> children;  // swapped by CONNECT
};

// DPA bytes of a leaf and an inner node (the units of Table 1).
std::uint64_t leaf_bytes(std::size_t buffer_entries);
std::uint64_t inner_bytes(std::size_t segments, std::size_t children);
// Host-to-DPA bytes a COPY stitch moves (4.2.8): a leaf's model and DMA
// addresses (one line); an inner node all of it (metadata, models, pivots,
// child pointers).
inline constexpr std::uint64_t kLeafStitchBytes = kLine;

// Cache lines spanned by elements [first, last] of `elem_bytes` each in an
// array starting on a line.
inline std::uint64_t lines_spanned(std::uint64_t first, std::uint64_t last, std::uint64_t elem_bytes) {
  return (last * elem_bytes + elem_bytes - 1) / kLine - (first * elem_bytes) / kLine + 1;
}

}  // namespace forein::offload::dpa::detail

namespace forein::offload::dpa::detail {
// Frees a node of either kind (and a leaf's host arrays with it).
void destroy_node(NicNode* node);
}  // namespace forein::offload::dpa::detail
