// The two seams between Honeycomb's CPU side and its accelerator.
//
// MemoryPort: how a reader reaches host memory. The read algorithm
// (reader.h) runs over it unchanged for CPU threads (direct loads) and for
// the accelerator model (page table copy, interior-node cache, PCIe model,
// node address table).
//
// AcceleratorLink: the CPU's commands to the accelerator over PCIe
// (sections 3.2 and 3.4): page-table updates, the global read version,
// the root and height, and the epoch sequence numbers it exposes.
#pragma once

#include <cstdint>

#include "forein/fpga/honeycomb_types.h"

namespace forein::offload::fpga {

class MemoryPort {
 public:
  virtual ~MemoryPort() = default;
  // lid's current node buffer in this reader's page table; null if unmapped.
  virtual NodeAddress translate(Lid lid) = 0;
  // Copies read.length bytes at read.address + read.offset into out, by
  // copy_node_bytes' rule. One call is one DMA for the accelerator.
  virtual void read(const NodeRead& read, std::byte* out) = 0;
  // The tree's root as this reader knows it.
  virtual Lid root() = 0;
  // The read version of a request arriving now (the GRV copy).
  virtual Version read_version() = 0;
};

class AcceleratorLink {
 public:
  virtual ~AcceleratorLink() = default;
  // A page-table entry was created or changed: the accelerator's copy is
  // updated and its cached copy of the node (if any) invalidated.
  virtual void map(Lid lid, NodeAddress address) = 0;
  // The LID was freed (after reclamation).
  virtual void unmap(Lid lid) = 0;
  // Writers released changes up to grv (in version order).
  virtual void set_read_version(Version grv) = 0;
  // The read version the accelerator serves requests at now (0: none).
  // CPU reads take the larger of it and their own GRV, so a version a NIC
  // read has already returned is never hidden from a later CPU read.
  virtual Version current_read_version() { return 0; }
  // The tree grew (or was loaded): new root LID and height (levels, 1 =
  // the root is a leaf).
  virtual void set_root(Lid root, std::uint32_t height) = 0;
  // The epoch manager's sequence numbers (section 4.1): S_new, the newest
  // request's, and S_old, the oldest in-flight request's (S_new + 1 when
  // none is in flight). A node version retired when S_new was s may be
  // freed once S_old > s.
  virtual std::uint64_t newest_sequence() = 0;
  virtual std::uint64_t oldest_sequence() = 0;
};

}  // namespace forein::offload::fpga
