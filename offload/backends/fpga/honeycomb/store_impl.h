// Store internals shared by store.cc (reads, bulk load, reclamation) and
// store_writes.cc (the write path: log append, merge, split).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

#include "fpga/honeycomb/epochs.h"
#include "fpga/honeycomb/node_layout.h"
#include "fpga/honeycomb/page_table.h"
#include "forein/fpga/store.h"
#include "fpga/honeycomb/versions.h"

namespace forein::offload::fpga {

// The CPU's port: its own page table, direct loads by copy_node_bytes.
class CpuPort final : public MemoryPort {
 public:
  CpuPort(PageTable& table, Versions& versions, std::atomic<std::uint64_t>& root_word)
      : table_(table), versions_(versions), root_word_(root_word) {}
  NodeAddress translate(Lid lid) override;
  void read(const NodeRead& read, std::byte* out) override;
  Lid root() override;
  Version read_version() override;

 private:
  PageTable& table_;
  Versions& versions_;
  std::atomic<std::uint64_t>& root_word_;  // root LID | height << 48
};

enum class WriteOp { kPut, kUpdate, kErase, kUpsert };

// Store::Impl's state, as a namespace-level type so the write path's
// helpers can name it (Store::Impl itself is private).
struct StoreCore {
  StoreCore(StoreOptions o, AcceleratorLink* l);
  ~StoreCore();

  // Root LID and height in one word, so readers see a matching pair.
  static std::uint64_t pack_root(Lid lid, std::uint32_t height) { return lid | std::uint64_t{height} << 48; }
  Lid root_lid() const { return root_word.load(std::memory_order_acquire) & kMaxLid; }
  std::uint32_t height() const { return static_cast<std::uint32_t>(root_word.load(std::memory_order_acquire) >> 48); }
  void set_root(Lid lid, std::uint32_t h);

  std::byte* new_buffer();
  void delete_buffer(std::byte* buffer);
  void free_retired(const Retired& r);
  void maybe_collect();

  // store_writes.cc
  bool write(WriteOp op, std::string_view key, std::string_view value);

  StoreOptions options;
  AcceleratorLink* link;
  PageTable table;
  Versions versions;
  Epochs epochs;
  std::atomic<std::uint64_t> root_word{0};
  CpuPort port{table, versions, root_word};

  // Freed node buffers kept for reuse (at most kPoolBuffers): every merge
  // allocates one buffer and retires one, and 8 KB aligned allocations
  // fragment malloc's heap and fault pages in again.
  static constexpr std::size_t kPoolBuffers = 256;
  std::mutex pool_mutex;
  std::vector<std::byte*> pool;

  std::atomic<std::uint64_t> puts{0}, updates{0}, deletes{0}, log_appends{0}, merges{0}, splits{0},
      restarts{0}, retired{0}, freed{0}, buffers{0}, writes_since_gc{0};
};

struct Store::Impl : StoreCore {
  using StoreCore::StoreCore;
};

}  // namespace forein::offload::fpga
