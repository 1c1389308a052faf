#include "kv_server/honeycomb_handler.h"

#include <exception>
#include <utility>
#include <vector>

#include "forein/error.h"

namespace forein::net::kv {

namespace {

namespace hc = offload::fpga;

constexpr std::size_t kScanEntryOverhead = 6;  // u16 key length, u32 value length
// The largest key there is: SCAN's open upper end.
const std::string& top_key() {
  static const std::string k(hc::kMaxKeyBytes, '\xff');
  return k;
}

}  // namespace

HoneycombHandler::HoneycombHandler(hc::Store& store, hc::Accelerator& accelerator, HoneycombReads reads,
                                   ServerStats& stats, std::function<std::string()> stats_json)
    : store_(store), accelerator_(accelerator), reads_(reads), stats_(stats), stats_json_(std::move(stats_json)) {}

std::optional<std::string> HoneycombHandler::read_get(std::string_view key) {
  return reads_ == HoneycombReads::kCpu ? store_.get(key) : accelerator_.get(key);
}

hc::ScanResult HoneycombHandler::read_scan(std::string_view lo, std::string_view hi, std::size_t max_items) {
  return reads_ == HoneycombReads::kCpu ? store_.scan(lo, hi, max_items) : accelerator_.scan(lo, hi, max_items);
}

Packet HoneycombHandler::handle(const Packet& request) {
  return serve_request(request, stats_, stats_json_, [&](Packet& reply, const auto& fail) {
    if (request.hints) stats_.count_hinted();
    if (request.key.empty() || request.key.size() > hc::kMaxKeyBytes) {
      fail(Status::kBadRequest, "honeycomb keys are 1.." + std::to_string(hc::kMaxKeyBytes) + " bytes");
      return;
    }
    switch (request.op) {
      case Op::kGet:
        if (auto v = read_get(request.key)) {
          reply.value = std::move(*v);
        } else {
          reply.status = Status::kNotFound;
        }
        break;
      case Op::kPut:
        if (request.value.size() > hc::kMaxValueBytes) {
          fail(Status::kBadRequest,
               "value longer than " + std::to_string(hc::kMaxValueBytes) + " bytes");
        } else {
          store_.upsert(request.key, request.value);
        }
        break;
      case Op::kDelete:
        if (!store_.erase(request.key)) reply.status = Status::kNotFound;
        break;
      case Op::kScan:
        reply = scan(request);
        break;
      default:
        fail(Status::kBadRequest, "not a request");
        break;
    }
  });
}

// The protocol's SCAN (entries from the key, at most count, one datagram)
// on Honeycomb's SCAN(K_l, K_u), which also returns the predecessor of
// K_l: asked for one item more, the predecessor dropped.
Packet HoneycombHandler::scan(const Packet& request) {
  Packet reply = make_reply(request, Op::kReply, Status::kOk);
  const std::size_t budget = kMaxDatagram - kHeaderBytes - reply.key.size();
  // No more entries than the smallest ones that fill a datagram.
  const std::size_t cap = budget / (kScanEntryOverhead + 1) + 1;
  const std::size_t want = request.count == 0 ? cap : std::min<std::size_t>(request.count, cap);
  hc::ScanResult r = read_scan(request.key, top_key(), want + 1);
  std::vector<ScanEntry> entries;
  std::size_t used = 0;
  bool more = false;
  for (hc::Item& item : r.items) {
    if (item.key < request.key) continue;  // the predecessor
    if (entries.size() >= want) {
      more = request.count == 0;  // a datagram's worth, and there is more
      break;
    }
    const std::size_t need = kScanEntryOverhead + item.key.size() + item.value.size();
    if (used + need > budget) {
      more = true;
      break;
    }
    used += need;
    entries.push_back({std::move(item.key), std::move(item.value)});
  }
  if (entries.empty() && more) {
    reply.op = Op::kError;
    reply.status = Status::kTooLarge;
    reply.value = "entry larger than a datagram";
    return reply;
  }
  reply.count = static_cast<std::uint32_t>(entries.size());
  reply.more = more;
  reply.value = encode_scan_entries(entries);
  return reply;
}

}  // namespace forein::net::kv
