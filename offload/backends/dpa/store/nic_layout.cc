#include "dpa/store/nic_layout.h"

namespace forein::offload::dpa::detail {

NicLeaf::NicLeaf(std::uint64_t node_bytes, std::size_t buffer_entries, std::uint64_t lo_key,
                 std::unique_ptr<HostArrays> arrays)
    : NicNode(true, node_bytes),
      capacity(static_cast<std::uint32_t>(buffer_entries)),
      entries(std::make_unique<BufferEntry[]>(buffer_entries)),
      lo(lo_key),
      host(std::move(arrays)) {}

NicInner::NicInner(std::uint64_t node_bytes, std::size_t children)
    : NicNode(false, node_bytes),
      child_count(children),
      children(std::make_unique<std::atomic<NicNode*>[]>(children)) {}

std::uint64_t leaf_bytes(std::size_t buffer_entries) {
  const std::uint64_t buffer = (buffer_entries * kBufferEntryBytes + kLine - 1) / kLine * kLine;
  return kLine + buffer;  // 16 entries: 64 + 320 = 384 B
}

std::uint64_t inner_bytes(std::size_t segments, std::size_t children) {
  return kLine + segments * kLine + children * (kPivotBytes + kChildBytes);
}

void destroy_node(NicNode* node) {
  if (node == nullptr) return;
  if (node->is_leaf) {
    delete static_cast<NicLeaf*>(node);
  } else {
    delete static_cast<NicInner*>(node);
  }
}

}  // namespace forein::offload::dpa::detail
