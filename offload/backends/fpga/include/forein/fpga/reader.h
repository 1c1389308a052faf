// Honeycomb's read algorithm (sections 3.3 and 4.2-4.3), one implementation
// for CPU threads and the accelerator model, over a MemoryPort.
//
// SCAN(lo, hi) finds the largest key Ks <= lo and returns every live item
// with key in [Ks, hi], ascending (predecessor semantics: a range of file
// offsets must include the chunk that starts before lo). GET(k) is SCAN(k, k)
// post-processed. At every node the reader reads the first 512 bytes,
// follows old-version pointers while node.version > rv, reads one sorted
// segment chosen by the shortcuts, and in leaves the log block (items with
// version > rv skipped; the newest version of a key wins; delete markers
// hide it). A request records the node buffer it first read for each LID
// (the node address table) and reads every later block of that node from
// the same buffer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "forein/fpga/memory_port.h"

namespace forein::offload::fpga {

// What one request did, for the accelerator's counters and model.
struct ReadTrace {
  std::uint32_t interior_nodes = 0;    // interior node versions visited
  std::uint32_t leaves = 0;            // leaf versions visited
  std::uint32_t old_versions = 0;      // old-version pointers followed
  std::uint32_t log_items = 0;         // log-block entries sorted (order hints)
  std::uint32_t reads = 0;             // MemoryPort::read calls (DMAs)
  std::uint64_t bytes = 0;             // bytes read
};

// At most `max_items` items are returned (0: no limit); `truncated` is set
// when the range held more.
struct ScanResult {
  std::vector<Item> items;
  bool truncated = false;
};

ScanResult honeycomb_scan(MemoryPort& port, std::string_view lo, std::string_view hi, Version rv,
                          std::size_t max_items = 0, ReadTrace* trace = nullptr);

std::optional<std::string> honeycomb_get(MemoryPort& port, std::string_view key, Version rv,
                                         ReadTrace* trace = nullptr);

}  // namespace forein::offload::fpga
