// Compile-time checks of the paper's geometry (honeycomb_types.h).
#include "forein/fpga/honeycomb_types.h"

#include "fpga/honeycomb/cache_geometry.h"

namespace forein::offload::fpga {

static_assert(kFirstBlockBytes == 512, "header + shortcut block are read as the first 512 B");
static_assert(kChunksPerNode == 32, "a 32-bit occupancy map covers an 8 KB node");
static_assert(kHeaderBytes % 8 == 0, "the header is read and written as 8-byte words");
static_assert(cache_sets(kBoardDramBytes) == (std::uint64_t{4} << 30) / kNodeBytes / kCacheWays);

}  // namespace forein::offload::fpga
