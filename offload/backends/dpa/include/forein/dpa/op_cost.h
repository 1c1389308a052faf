// dpa store: what one operation really did on the modelled hardware --
// DPA memory cache lines read or written, lines served by the DPA's L3,
// host DMAs and their bytes, bytes stitched from host to DPA memory. The
// store fills one per operation as it runs (never typed in); forein/dpa/model.h
// turns the counts into time with the paper's section 4.2.6 formula.
#pragma once

#include <cstdint>

namespace forein::offload::dpa {

struct OpCost {
  std::uint64_t dpa_lines = 0;      // DPA memory cache-line accesses (~465 ns each)
  std::uint64_t l3_lines = 0;       // lines served by the shared L3 (root lines, 4.2.6)
  std::uint64_t dmas = 0;           // host DMAs (~910 ns each); sequential lines collapse into one
  std::uint64_t dma_bytes = 0;      // bytes those DMAs moved
  std::uint64_t inner_nodes = 0;    // inner nodes descended
  std::uint64_t leaves = 0;         // leaves visited (RANGE: several)
  std::uint64_t buffer_entries = 0; // insert-buffer entries scanned
  std::uint64_t hot_hits = 0;       // answered by the hot-entry cache
  std::uint64_t stitched_bytes = 0; // host-to-DPA bytes of COPY stitches (writes, amortized by the caller)
  // The stitcher threads' work on the operation's behalf (amortized by the
  // caller like stitched_bytes): stitch commands, each polled by one DMA
  // (4.2.7), and the DPA lines CONNECT and RESET stitches write.
  std::uint64_t stitch_commands = 0;
  std::uint64_t stitcher_lines = 0;

  OpCost& operator+=(const OpCost& o) {
    dpa_lines += o.dpa_lines;
    l3_lines += o.l3_lines;
    dmas += o.dmas;
    dma_bytes += o.dma_bytes;
    inner_nodes += o.inner_nodes;
    leaves += o.leaves;
    buffer_entries += o.buffer_entries;
    hot_hits += o.hot_hits;
    stitched_bytes += o.stitched_bytes;
    stitch_commands += o.stitch_commands;
    stitcher_lines += o.stitcher_lines;
    return *this;
  }
};

}  // namespace forein::offload::dpa
