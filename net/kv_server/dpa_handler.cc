#include "kv_server/dpa_handler.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "forein/dpa/store.h"
#include "forein/dpa/types.h"
#include "protocol/dataset.h"

namespace forein::net::kv {

namespace {

namespace dpa = offload::dpa;

constexpr std::uint64_t kDatasetForm = std::uint64_t{1} << 63;
constexpr std::uint64_t kLow60 = (std::uint64_t{1} << 60) - 1;
constexpr std::size_t kShortMax = 7;
constexpr std::size_t kScanEntryOverhead = 6;  // u16 key length, u32 value length

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case too: it would not come back the same
}

}  // namespace

std::optional<std::uint64_t> encode_dpa_value(std::string_view value) {
  if (value.size() <= kShortMax) {
    std::uint64_t bytes = 0;
    for (const char c : value) bytes = (bytes << 8) | static_cast<unsigned char>(c);
    return (std::uint64_t{value.size()} << 56) | bytes;
  }
  if (value.size() != 16 || value[0] != 'v') return std::nullopt;
  std::uint64_t digits = 0;
  for (const char c : value.substr(1)) {
    const int d = hex_digit(c);
    if (d < 0) return std::nullopt;
    digits = (digits << 4) | static_cast<std::uint64_t>(d);
  }
  return kDatasetForm | digits;
}

std::string decode_dpa_value(std::uint64_t stored) {
  if ((stored & kDatasetForm) != 0) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string v(16, 'v');
    std::uint64_t digits = stored & kLow60;
    for (std::size_t i = 15; i >= 1; --i, digits >>= 4) v[i] = kHex[digits & 0xf];
    return v;
  }
  const std::size_t length = (stored >> 56) & 7;
  std::string v(length, '\0');
  for (std::size_t j = 0; j < length; ++j) {
    v[j] = static_cast<char>(stored >> (8 * (length - 1 - j)));
  }
  return v;
}

std::size_t dpa_port_index(std::uint64_t key, std::size_t ports) {
  return dpa::traverser_of(key, dpa::kTraverserThreads) % ports;
}

const char* to_string(DpaOpKind kind) {
  switch (kind) {
    case DpaOpKind::kGet: return "get";
    case DpaOpKind::kScan: return "scan";
    case DpaOpKind::kPut: return "put";
    case DpaOpKind::kDelete: return "delete";
  }
  return "?";
}

void DpaCounters::add(DpaOpKind kind, const dpa::OpCost& c) {
  Sum& s = sums_[static_cast<std::size_t>(kind)];
  constexpr auto relaxed = std::memory_order_relaxed;
  s.ops.fetch_add(1, relaxed);
  s.dpa_lines.fetch_add(c.dpa_lines, relaxed);
  s.l3_lines.fetch_add(c.l3_lines, relaxed);
  s.dmas.fetch_add(c.dmas, relaxed);
  s.dma_bytes.fetch_add(c.dma_bytes, relaxed);
  s.inner_nodes.fetch_add(c.inner_nodes, relaxed);
  s.leaves.fetch_add(c.leaves, relaxed);
  s.buffer_entries.fetch_add(c.buffer_entries, relaxed);
  s.hot_hits.fetch_add(c.hot_hits, relaxed);
  s.stitched_bytes.fetch_add(c.stitched_bytes, relaxed);
}

dpa::OpCost DpaCounters::total(DpaOpKind kind, std::uint64_t* ops) const {
  const Sum& s = sums_[static_cast<std::size_t>(kind)];
  dpa::OpCost c;
  c.dpa_lines = s.dpa_lines.load();
  c.l3_lines = s.l3_lines.load();
  c.dmas = s.dmas.load();
  c.dma_bytes = s.dma_bytes.load();
  c.inner_nodes = s.inner_nodes.load();
  c.leaves = s.leaves.load();
  c.buffer_entries = s.buffer_entries.load();
  c.hot_hits = s.hot_hits.load();
  c.stitched_bytes = s.stitched_bytes.load();
  *ops = s.ops.load();
  return c;
}

DpaHandler::DpaHandler(dpa::Store& store, DpaCounters& counters, ServerStats& stats,
                       std::function<std::string()> stats_json, std::size_t port_index, std::size_t ports)
    : store_(store),
      counters_(counters),
      stats_(stats),
      stats_json_(std::move(stats_json)),
      port_index_(port_index),
      ports_(std::max<std::size_t>(ports, 1)) {}

Packet DpaHandler::handle(const Packet& request) {
  return serve_request(request, stats_, stats_json_, [&](Packet& reply, const auto& fail) {
    if (request.hints) stats_.count_hinted();
    if (request.op != Op::kGet && request.op != Op::kPut && request.op != Op::kDelete && request.op != Op::kScan) {
      fail(Status::kBadRequest, "not a request");
      return;
    }
    std::uint64_t key = 0;
    if (!dataset_index(request.key, &key)) {
      fail(Status::kBadRequest, kDpaKeyLimit);
      return;
    }
    if (dpa_port_index(key, ports_) != port_index_) counters_.count_misrouted();
    dpa::OpCost cost;
    switch (request.op) {
      case Op::kGet:
        if (const auto v = store_.get(key, &cost)) {
          reply.value = decode_dpa_value(*v);
        } else {
          reply.status = Status::kNotFound;
        }
        counters_.add(DpaOpKind::kGet, cost);
        break;
      case Op::kPut: {
        const auto v = encode_dpa_value(request.value);
        if (!v) {
          fail(Status::kBadRequest, kDpaValueLimit);
          return;
        }
        store_.insert(key, *v, &cost);
        counters_.add(DpaOpKind::kPut, cost);
        break;
      }
      case Op::kDelete:
        // DPA-Store's DELETE does not say whether the key was there: a GET
        // first answers not_found (and saves the insert buffer a
        // tombstone); both costs are the DELETE's.
        if (store_.get(key, &cost)) {
          store_.remove(key, &cost);
        } else {
          reply.status = Status::kNotFound;
        }
        counters_.add(DpaOpKind::kDelete, cost);
        break;
      default:  // kScan
        reply = scan(request, key);
        break;
    }
  });
}

// The protocol's SCAN over DPA-Store's RANGE: responses of at most 64
// pairs, each next one from the previous one's next_key.
Packet DpaHandler::scan(const Packet& request, std::uint64_t from) {
  Packet reply = make_reply(request, Op::kReply, Status::kOk);
  const std::size_t budget = kMaxDatagram - kHeaderBytes - reply.key.size();
  std::vector<ScanEntry> entries;
  std::size_t used = 0;
  bool more = false;
  dpa::OpCost cost;
  for (bool full = false; !full;) {
    const std::size_t want =
        request.count == 0 ? dpa::kMaxRangePairs
                           : std::min<std::size_t>(dpa::kMaxRangePairs, request.count - entries.size());
    if (want == 0) break;
    const dpa::RangeResult r = store_.range(from, want, &cost);
    counters_.count_range_call();
    for (const dpa::KV& kv : r.pairs) {
      std::string value = decode_dpa_value(kv.value);
      const std::size_t need = kScanEntryOverhead + 8 + value.size();
      if (used + need > budget) {
        more = true;  // entries remain that this datagram cannot hold
        full = true;
        break;
      }
      used += need;
      entries.push_back({dataset_key(kv.key), std::move(value)});
    }
    // The end of the keys, or a store that did not move on.
    if (!r.more || (r.pairs.empty() && r.next_key <= from)) break;
    from = r.next_key;
  }
  counters_.add(DpaOpKind::kScan, cost);
  reply.count = static_cast<std::uint32_t>(entries.size());
  reply.more = more;
  reply.value = encode_scan_entries(entries);
  return reply;
}

}  // namespace forein::net::kv
