// Honeycomb's read algorithm (offload/backends/fpga/honeycomb/reader.cc)
// on arbitrary node bytes: the input is cut into 8 KB node buffers named by
// LIDs 1..n (the last one zero-padded), the first bytes choosing the read
// version and the scan bounds. GET and SCAN must return (sorted, bounded)
// without reading outside a buffer, crashing or looping, whatever the
// headers, shortcuts, segments, log entries, sibling LIDs and old-version
// pointers say. Old-version pointers that name no buffer read as zeros:
// the port only hands out the buffers it owns.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "forein/fpga/memory_port.h"
#include "forein/fpga/reader.h"

namespace {

namespace hc = forein::offload::fpga;

class BytesPort final : public hc::MemoryPort {
 public:
  BytesPort(const std::uint8_t* data, std::size_t size) {
    nodes_ = (size + hc::kNodeBytes - 1) / hc::kNodeBytes;
    if (nodes_ == 0) nodes_ = 1;
    // 8-byte aligned buffers: the header words are read atomically.
    words_.assign(nodes_ * hc::kNodeBytes / 8, 0);
    std::memcpy(words_.data(), data, size);
  }
  hc::NodeAddress translate(hc::Lid lid) override {
    if (lid == hc::kNoLid || lid > nodes_) return nullptr;
    return reinterpret_cast<const std::byte*>(words_.data()) + (lid - 1) * hc::kNodeBytes;
  }
  void read(const hc::NodeRead& r, std::byte* out) override {
    // The reader must keep every read inside one 8 KB node.
    if (std::size_t{r.offset} + r.length > hc::kNodeBytes) __builtin_trap();
    // An address that is none of the buffers (a garbage old-version
    // pointer) reads as zeros, as a DMA to unmapped memory would return
    // nothing useful; the reader must cope with whatever it gets.
    const auto* base = reinterpret_cast<const std::byte*>(words_.data());
    const std::size_t total = nodes_ * hc::kNodeBytes;
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(r.address);
    const std::uintptr_t b = reinterpret_cast<std::uintptr_t>(base);
    if (a < b || a >= b + total || (a - b) % hc::kNodeBytes != 0) {
      std::memset(out, 0, r.length);
      return;
    }
    hc::copy_node_bytes(r.address, r.offset, r.length, out);
  }
  hc::Lid root() override { return 1; }
  hc::Version read_version() override { return rv_; }
  void set_read_version(hc::Version rv) { rv_ = rv; }

 private:
  std::size_t nodes_ = 0;
  std::vector<std::uint64_t> words_;
  hc::Version rv_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 12) return 0;
  hc::Version rv;
  std::memcpy(&rv, data, sizeof rv);
  const std::size_t lo_len = 1 + data[8] % 24;
  const std::size_t hi_len = 1 + data[9] % 24;
  const std::size_t max_items = data[10] % 64;
  data += 12;
  size -= 12;
  std::string lo(lo_len, static_cast<char>(size > 0 ? data[0] : 0));
  std::string hi(hi_len, static_cast<char>(size > 1 ? data[1] : 0xff));
  BytesPort port(data, size);
  port.set_read_version(rv);
  const hc::ScanResult r = hc::honeycomb_scan(port, lo, hi, rv, max_items);
  if (max_items != 0 && r.items.size() > max_items) __builtin_trap();
  for (std::size_t i = 1; i < r.items.size(); ++i) {
    if (!(r.items[i - 1].key < r.items[i].key)) __builtin_trap();  // sorted, no duplicates
  }
  (void)hc::honeycomb_get(port, lo, rv);
  return 0;
}
