// Honeycomb's store (shared/papers/003_a83c9de61e1029db.txt, sections 3-5):
// the numbers and types every part shares. The B-tree lives in "pinned host
// memory" (8 KB node buffers); the CPU writes it, and GET/SCAN are executed
// either by CPU threads or by the accelerator model, both through a
// MemoryPort (memory_port.h) running one read algorithm (reader.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace forein::offload::fpga {

// Logical node ids: the paper's 6-byte LIDs (48 bits used). 0 names no node.
using Lid = std::uint64_t;
constexpr Lid kNoLid = 0;
constexpr Lid kMaxLid = (Lid{1} << 48) - 1;

// MVCC versions (section 3.2): write versions from the global write
// version (GWV), read versions from the global read version (GRV).
using Version = std::uint64_t;

// Node geometry (section 3.1): 8 KB nodes; a 48-byte header and a 464-byte
// shortcut block read together as the first 512 bytes; leaves' log blocks
// are merged into the sorted block when they pass 512 bytes.
constexpr std::size_t kNodeBytes = 8192;
constexpr std::size_t kHeaderBytes = 48;
constexpr std::size_t kShortcutBytes = 464;
constexpr std::size_t kFirstBlockBytes = kHeaderBytes + kShortcutBytes;  // 512
constexpr std::size_t kLogBlockMaxBytes = 512;
constexpr std::size_t kMinSegmentBytes = 256;
// Keys up to 460 bytes; values above 469 bytes would live outside the node
// in the paper; here they are refused (the evaluation uses 16 B).
constexpr std::size_t kMaxKeyBytes = 460;
constexpr std::size_t kMaxValueBytes = 469;

// The accelerator's cache works in 256-byte chunks of a node (section 5).
constexpr std::size_t kChunkBytes = 256;
constexpr std::size_t kChunksPerNode = kNodeBytes / kChunkBytes;  // 32

// A node buffer's "physical address": the buffer's first byte in host
// memory. Buffers are 8 KB and 8-byte aligned.
using NodeAddress = const std::byte*;

struct Item {
  std::string key;
  std::string value;
  bool operator==(const Item&) const = default;
};

// Which block of a node one read (one DMA for the accelerator) is for.
enum class Block : std::uint8_t {
  kFirst,    // header + shortcut block: the first 512 bytes
  kSegment,  // one segment of the sorted block
  kLog,      // the leaf's log block (bytes in use only)
};

struct NodeRead {
  Lid lid = kNoLid;             // the node's logical id (the cache's tag)
  NodeAddress address = nullptr;  // the node version read
  bool interior = false;        // interior nodes are cacheable, leaves never
  Block block = Block::kFirst;
  std::uint32_t offset = 0;     // within the node
  std::uint32_t length = 0;
};

// The one rule for reading a node buffer that writers may be changing: the
// header's six 8-byte words are read with atomic loads (writers change the
// lock/size word and sibling LIDs in place), the rest with memcpy. Writers
// only ever write bytes past the size they publish (log appends) or into
// buffers not yet published (copy-on-write), so the rest is stable.
inline void copy_node_bytes(NodeAddress node, std::size_t offset, std::size_t length,
                            std::byte* out) {
  std::size_t pos = offset;
  const std::size_t end = offset + length;
  while (pos < end && pos < kHeaderBytes) {
    const std::size_t word = pos / 8;
    const std::uint64_t value =
        std::atomic_ref<std::uint64_t>(
            *reinterpret_cast<std::uint64_t*>(const_cast<std::byte*>(node) + word * 8))
            .load(std::memory_order_acquire);
    const std::size_t in_word = pos - word * 8;
    const std::size_t n = std::min<std::size_t>(8 - in_word, end - pos);
    std::memcpy(out + (pos - offset), reinterpret_cast<const std::byte*>(&value) + in_word, n);
    pos += n;
  }
  if (pos < end) std::memcpy(out + (pos - offset), node + pos, end - pos);
}

}  // namespace forein::offload::fpga
