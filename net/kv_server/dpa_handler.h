// forein-kv-server --engine dpa: requests served by DPA-Store's store
// (offload/backends/dpa/store/, shared/papers/004 section 3.1) as the
// paper's NIC does: every listening UDP port is one traverser thread's
// (worker i owns port base + i), clients pick the port by hashing the key
// (traverser_of(key, 176) % ports), and any thread serves any request --
// one that came in on another port is served and counted as misrouted.
//
// DPA-Store holds 64-bit keys and values:
//   key   8 bytes, the big-endian uint64 (the data set's dataset_key(i) is
//         the key i); any other length: ERROR bad_request.
//   value (encode_dpa_value) either the data set's form, "v" and 15
//         lowercase hex digits (dataset_value(): 60 bits), stored as
//         1 << 63 | those 60 bits; or a short value of 0..7 bytes, stored
//         as length << 56 | the bytes as a big-endian number (bit 63
//         clear). Anything else (8..15 bytes, 16 bytes not in the data
//         set's form, longer): ERROR bad_request naming the limit.
//
// GET -> Store::get; PUT -> Store::insert (DPA-Store's INSERT: an upsert);
// DELETE -> Store::get, then Store::remove only when the key is there
// (REPLY not_found without a write otherwise; the GET's cost is counted in
// the DELETE's); SCAN(key, count) -> Store::range from the key, at most 64
// pairs a call (the paper's responses), again from next_key until count
// is reached, the store has no more, or the datagram is full (then
// kFlagMore). Every operation's OpCost is summed per kind (atomics; any
// worker may render STATS) for the modelled figures in STATS.
// Start hints are counted and ignored (the traversers walk their own tree).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "forein/dpa/op_cost.h"
#include "forein/dpa/store.h"
#include "kv_server/handler.h"
#include "kv_server/stats.h"

namespace forein::net::kv {

// The 64-bit value a request's value is stored as, or nullopt if it has
// no encoding (see above).
std::optional<std::uint64_t> encode_dpa_value(std::string_view value);
// The bytes encode_dpa_value took (for every value it returns).
std::string decode_dpa_value(std::uint64_t stored);
// What a value without an encoding is told.
inline constexpr const char* kDpaValueLimit =
    "dpa values are 64-bit: at most 7 bytes, or \"v\" and 15 lowercase hex digits (the data set's values)";
inline constexpr const char* kDpaKeyLimit = "dpa keys are 64-bit: 8 bytes";

// The key's traverser thread (DPA-Store's hash, over the paper's 176
// traversers) and the port index it maps to among `ports`:
// traverser_of(key, 176) % ports. forein-load --route-by-key uses the same.
std::size_t dpa_port_index(std::uint64_t key, std::size_t ports);

// The op kinds whose costs are summed.
enum class DpaOpKind : std::uint8_t { kGet, kScan, kPut, kDelete };
inline constexpr std::size_t kDpaOpKinds = 4;
const char* to_string(DpaOpKind kind);

// Every worker's handler adds here; STATS reads it from any thread.
class DpaCounters {
 public:
  void add(DpaOpKind kind, const offload::dpa::OpCost& cost);
  void count_misrouted() { misrouted_.fetch_add(1, std::memory_order_relaxed); }
  void count_range_call() { range_calls_.fetch_add(1, std::memory_order_relaxed); }

  // The summed cost and the number of operations of a kind.
  offload::dpa::OpCost total(DpaOpKind kind, std::uint64_t* ops) const;
  std::uint64_t misrouted() const { return misrouted_.load(std::memory_order_relaxed); }
  std::uint64_t range_calls() const { return range_calls_.load(std::memory_order_relaxed); }

 private:
  struct Sum {
    std::atomic<std::uint64_t> ops{0}, dpa_lines{0}, l3_lines{0}, dmas{0}, dma_bytes{0}, inner_nodes{0},
        leaves{0}, buffer_entries{0}, hot_hits{0}, stitched_bytes{0};
  };
  std::array<Sum, kDpaOpKinds> sums_;
  std::atomic<std::uint64_t> misrouted_{0}, range_calls_{0};
};

class DpaHandler final : public PacketHandler {
 public:
  // port_index: the port (worker) this handler serves, among `ports`.
  DpaHandler(offload::dpa::Store& store, DpaCounters& counters, ServerStats& stats,
             std::function<std::string()> stats_json, std::size_t port_index, std::size_t ports);

  Packet handle(const Packet& request) override;

 private:
  Packet scan(const Packet& request, std::uint64_t from);

  offload::dpa::Store& store_;
  DpaCounters& counters_;
  ServerStats& stats_;
  std::function<std::string()> stats_json_;
  std::size_t port_index_;
  std::size_t ports_;
};

}  // namespace forein::net::kv
