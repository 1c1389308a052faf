#include "mem_server/memory_node.h"

#include <algorithm>
#include <exception>

#include "forein/error.h"
#include "protocol/dataset.h"

namespace forein::net::mem {

const char* to_string(BadRead r) {
  switch (r) {
    case BadRead::kBadHeader: return "bad_header";
    case BadRead::kOutOfRange: return "out_of_range";
    case BadRead::kPastEnd: return "past_end";
    case BadRead::kTooLong: return "too_long";
  }
  return "?";
}

void MemoryStats::count_read(std::size_t bytes, bool start, bool rewritten) {
  bump(reads_);
  read_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  if (start) bump(start_reads_);
  if (rewritten) bump(rewritten_reads_);
}

std::uint64_t MemoryStats::bad_reads_total() const {
  std::uint64_t n = 0;
  for (const auto& c : bad_reads_) n += load(c);
  return n;
}

void MemoryStats::add_json(Json& out) const {
  out["datagrams"] = load(datagrams_);
  out["reads"] = load(reads_);
  out["read_bytes"] = load(read_bytes_);
  out["start_reads"] = load(start_reads_);
  out["rewritten_reads"] = load(rewritten_reads_);
  out["bad_reads"] = bad_reads_total();
  Json& by = out["bad_reads_by_reason"] = Json::object();
  for (std::size_t i = 0; i < kBadReads; ++i) by[to_string(static_cast<BadRead>(i))] = load(bad_reads_[i]);
  out["puts"] = load(puts_);
  out["failed_puts"] = load(failed_puts_);
  out["bad_requests"] = load(bad_requests_);
  add_drops_json(out);
}

MemoryNode::MemoryNode(remote::Region& region, Hooks hooks)
    : region_(region), hooks_(std::move(hooks)), writer_(region) {}

remote::WriterStats MemoryNode::writer_stats() const {
  std::lock_guard lock(write_mu_);
  return writer_.stats();
}

remote::RegionHeader MemoryNode::header() const {
  std::lock_guard lock(write_mu_);
  return writer_.header();
}

std::optional<std::vector<std::byte>> MemoryNode::handle(std::span<const std::byte> datagram) {
  stats_.count_datagram();
  Packet request;
  if (const ParseError e = parse_packet(datagram, &request); e != ParseError::kNone) {
    stats_.count_parse_error(e);
    return std::nullopt;
  }
  if (request.op == Op::kReply || request.op == Op::kError) {
    stats_.count_drop(DropReason::kNotRequest);
    return std::nullopt;
  }
  try {
    return encode_packet(serve(request));
  } catch (const std::exception&) {
    stats_.count_drop(DropReason::kSendFailed);
    return std::nullopt;
  }
}

Packet MemoryNode::serve(const Packet& request) {
  switch (request.op) {
    case Op::kRead: return read(request);
    case Op::kPut: return put(request);
    case Op::kStats: {
      Packet reply;
      reply.op = Op::kReply;
      reply.seq = request.seq;
      reply.value = hooks_.stats_json ? hooks_.stats_json() : std::string("{}");
      return reply;
    }
    default: {
      // No key logic here (GET, SCAN, DELETE) and no Switch-delta ops.
      stats_.count_bad_request();
      Packet reply;
      reply.op = Op::kError;
      reply.seq = request.seq;
      reply.status = Status::kBadRequest;
      return reply;
    }
  }
}

Packet MemoryNode::read(const Packet& request) {
  Packet reply;
  reply.op = Op::kReply;
  reply.seq = request.seq;
  const std::optional<ReadHeader> h =
      request.value.size() == kReadHeaderBytes ? decode_read_header(request.value) : std::nullopt;
  if (!h) {
    stats_.count_bad_read(BadRead::kBadHeader);
    reply.op = Op::kError;
    reply.status = Status::kBadRequest;
    return reply;
  }
  reply.value.resize(kReadHeaderBytes + std::min<std::size_t>(h->length, remote::kMaxReadBytes));
  const remote::ReadError e = region_.read(h->address, h->length,
                                           reinterpret_cast<std::byte*>(reply.value.data()) + kReadHeaderBytes);
  if (e != remote::ReadError::kOk) {
    stats_.count_bad_read(e == remote::ReadError::kOutOfRange ? BadRead::kOutOfRange
                          : e == remote::ReadError::kPastEnd  ? BadRead::kPastEnd
                                                              : BadRead::kTooLong);
    reply.op = Op::kError;
    reply.status = Status::kBadAddress;
    reply.value = encode_read_header(*h);  // which READ was refused
    return reply;
  }
  const bool start = (h->flags & kReadStart) != 0;
  const bool rewritten = (h->flags & kReadRewritten) != 0;
  stats_.count_read(h->length, start, rewritten);
  if (start && hooks_.on_start_read) {
    std::uint64_t word = 0;
    if (dataset_index(request.key, &word)) hooks_.on_start_read(word);
  }
  const std::string head = encode_read_header(*h);
  reply.value.replace(0, kReadHeaderBytes, head);
  return reply;
}

Packet MemoryNode::put(const Packet& request) {
  Packet reply;
  reply.op = Op::kReply;
  reply.seq = request.seq;
  std::uint64_t key = 0;
  if (!dataset_index(request.key, &key) || request.value.size() > remote::kMaxValueBytes) {
    // The remote tree's keys are 64-bit words (8-byte keys).
    stats_.count_bad_request();
    reply.op = Op::kError;
    reply.status = Status::kBadRequest;
    return reply;
  }
  remote::PutResult r;
  try {
    std::lock_guard lock(write_mu_);
    const std::uint64_t splits = writer_.stats().splits;
    r = writer_.put(key, request.value);
    if (r == remote::PutResult::kInserted) key_generation_.fetch_add(1, std::memory_order_release);
    if (writer_.stats().splits != splits && hooks_.on_nodes_changed) hooks_.on_nodes_changed();
  } catch (const Error&) {
    // A node on the way did not check (corruption): nothing written.
    stats_.count_put(false);
    reply.op = Op::kError;
    reply.status = Status::kServerError;
    return reply;
  }
  if (r == remote::PutResult::kRegionFull) {
    // No room for the record and a split to the root (--spare-bytes).
    stats_.count_put(false);
    reply.op = Op::kError;
    reply.status = Status::kServerError;
    return reply;
  }
  stats_.count_put(true);
  return reply;
}

}  // namespace forein::net::mem
