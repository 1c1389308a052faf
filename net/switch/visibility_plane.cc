#include "visibility_plane.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string_view>

#include "frames.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "protocol/visibility.h"

namespace forein::net::sw {
namespace {

using offload::switch_visibility::WriteOutcome;

std::uint16_t be16(const std::byte* p) {
  return static_cast<std::uint16_t>((std::to_integer<unsigned>(p[0]) << 8) | std::to_integer<unsigned>(p[1]));
}
std::uint32_t be32(const std::byte* p) {
  return (static_cast<std::uint32_t>(be16(p)) << 16) | be16(p + 2);
}

// Offsets of a checked datagram's fields (packet.h's layout).
constexpr std::size_t kOpAt = 3, kStatusAt = 5, kKeyLenAt = 6, kValueLenAt = 16;

int drop(PortCounters& c, std::atomic<std::uint64_t>& reason, rte_mbuf* m) {
  bump(c.dropped);
  bump(reason);
  rte_pktmbuf_free(m);
  return -1;
}

// Replaces the frame's datagram with `bytes` (growing or trimming the
// mbuf) and sets the UDP and IPv4 lengths. False when the frame has no room.
bool write_datagram(rte_mbuf* m, rte_ipv4_hdr* ip, std::size_t ihl, rte_udp_hdr* udp, std::size_t old_bytes,
                    const std::vector<std::byte>& bytes) {
  if (bytes.size() > old_bytes) {
    if (rte_pktmbuf_append(m, static_cast<std::uint16_t>(bytes.size() - old_bytes)) == nullptr) return false;
  } else if (bytes.size() < old_bytes) {
    rte_pktmbuf_trim(m, static_cast<std::uint16_t>(old_bytes - bytes.size()));
  }
  std::memcpy(reinterpret_cast<std::byte*>(udp + 1), bytes.data(), bytes.size());
  udp->dgram_len = rte_cpu_to_be_16(static_cast<std::uint16_t>(sizeof(rte_udp_hdr) + bytes.size()));
  ip->total_length = rte_cpu_to_be_16(static_cast<std::uint16_t>(ihl + sizeof(rte_udp_hdr) + bytes.size()));
  return true;
}

// The frame goes back where it came from: the ports swap.
void swap_ports(rte_udp_hdr* udp) {
  const rte_be16_t src = udp->src_port;
  udp->src_port = udp->dst_port;
  udp->dst_port = src;
}

}  // namespace

VisibilityPlane::VisibilityPlane(Side* sides, VisibilityRouting routing)
    : sides_(sides),
      routing_(std::move(routing)),
      table_(routing_.slots),
      synced_(routing_.metadata_nodes.size(), 0),
      plane_start_(std::chrono::steady_clock::now()) {
  if (routing_.started == std::chrono::steady_clock::time_point{}) routing_.started = plane_start_;
  if (routing_.epoch == 0) {
    std::random_device rd;
    std::mt19937 mix(rd() ^ static_cast<std::uint32_t>(plane_start_.time_since_epoch().count()));
    while (routing_.epoch == 0) routing_.epoch = static_cast<std::uint32_t>(mix());
  }
  // With the table off nothing is ever stored, so a restart loses nothing:
  // no recovery to wait for.
  if (!routing_.visibility || routing_.metadata_nodes.empty()) {
    recovering_.store(false);
    ready_us_.store(std::chrono::duration_cast<std::chrono::microseconds>(plane_start_ - routing_.started).count());
    sync_us_.store(0);
  }
}

int VisibilityPlane::sync(int in, rte_mbuf* m, rte_ether_hdr* eth, rte_ipv4_hdr* ip, rte_udp_hdr* udp,
                          std::span<std::byte> datagram, std::size_t at) {
  VisibilityHeader v = load_visibility(datagram.data() + at);
  if (v.ts != 0) return drop(sides_[in].counters, sides_[in].counters.malformed, m);  // an answer: not ours
  const std::uint16_t from = rte_be_to_cpu_16(udp->src_port);
  if (in == 1) {
    bump(counters_.syncs);
    const auto it = std::find(routing_.metadata_nodes.begin(), routing_.metadata_nodes.end(), from);
    if (it != routing_.metadata_nodes.end() && v.aux == routing_.epoch && recovering()) {
      synced_[static_cast<std::size_t>(it - routing_.metadata_nodes.begin())] = 1;
      if (std::all_of(synced_.begin(), synced_.end(), [](std::uint8_t s) { return s != 0; })) {
        const auto now = std::chrono::steady_clock::now();
        ready_us_.store(std::chrono::duration_cast<std::chrono::microseconds>(now - routing_.started).count());
        sync_us_.store(std::chrono::duration_cast<std::chrono::microseconds>(now - plane_start_).count());
        recovering_.store(false, std::memory_order_release);
        std::fprintf(stderr,
                     "forein-switch: recovered: %zu metadata node(s) synced for epoch %u, %.1f ms after start "
                     "(%.1f ms after forwarding began)\n",
                     synced_.size(), routing_.epoch, static_cast<double>(ready_us_.load()) / 1000.0,
                     static_cast<double>(sync_us_.load()) / 1000.0);
      }
    }
  } else {
    bump(counters_.client_syncs);
  }
  v.ts = 1;
  v.aux = routing_.epoch;
  v.fingerprint = recovering()
                      ? static_cast<std::uint32_t>(std::count(synced_.begin(), synced_.end(), std::uint8_t{0}))
                      : 0;
  store_visibility(datagram.data() + at, v);
  swap_ports(udp);
  translate(eth, ip, udp, false, sides_[in]);
  return in;
}

bool VisibilityPlane::is_port_of(const std::vector<std::uint16_t>& ports, std::uint16_t port) const {
  return std::find(ports.begin(), ports.end(), port) != ports.end();
}

std::uint16_t VisibilityPlane::metadata_port(std::string_view key) const {
  const std::size_t k = routing_.metadata_nodes.size();
  const std::size_t i = k > 1 ? shard_of(key, static_cast<std::uint32_t>(k), routing_.keys) : 0;
  return routing_.metadata_nodes[i];
}

int VisibilityPlane::handle(int in, rte_mbuf* m, rte_ether_hdr* eth, rte_ipv4_hdr* ip, std::size_t ihl,
                            rte_udp_hdr* udp, rte_mbuf** copy) {
  *copy = nullptr;
  PortCounters& c = sides_[in].counters;
  const std::size_t total = rte_be_to_cpu_16(ip->total_length);
  const std::size_t udp_len = rte_be_to_cpu_16(udp->dgram_len);
  if (udp_len < sizeof(rte_udp_hdr) || udp_len > total - ihl) return drop(c, c.bad_ip, m);
  const std::span<std::byte> datagram(reinterpret_cast<std::byte*>(udp + 1), udp_len - sizeof(rte_udp_hdr));
  if (check_datagram(datagram) != ParseError::kNone) {
    bump(c.malformed);
    rte_pktmbuf_free(m);
    return -1;
  }
  return in == 0 ? from_client(m, eth, ip, ihl, udp, datagram) : from_node(m, eth, ip, ihl, udp, datagram, copy);
}

int VisibilityPlane::from_client(rte_mbuf* m, rte_ether_hdr* eth, rte_ipv4_hdr* ip, std::size_t ihl,
                                 rte_udp_hdr* udp, std::span<std::byte> datagram) {
  PortCounters& c = sides_[0].counters;
  if (rte_be_to_cpu_16(udp->dst_port) != routing_.service_port) return drop(c, c.not_for_switch, m);
  const auto op = static_cast<Op>(std::to_integer<std::uint8_t>(datagram[kOpAt]));
  const std::string_view key = packet_key(datagram);
  const std::size_t at = visibility_offset(datagram);
  SlotKey sk;
  if (at != 0) {
    const VisibilityHeader v = load_visibility(datagram.data() + at);
    sk = SlotKey{v.slot, v.fingerprint};
  } else {
    sk = slot_key(key);
  }
  if (op == Op::kSync) {
    if (at == 0) return drop(c, c.malformed, m);
    return sync(0, m, eth, ip, udp, datagram, at);
  }
  std::uint16_t to = 0;
  if (op == Op::kLogAppend || op == Op::kLogRead) {
    to = routing_.data_nodes[data_node_of(sk.slot, static_cast<std::uint32_t>(routing_.data_nodes.size()))];
    if (op == Op::kLogAppend && at != 0) {
      // The epoch, echoed in the reply (data_node/handler.cc). While
      // recovering, 0 (never an epoch): such a write may be in the log
      // before a metadata node's sync step, which applies it, and its copy
      // would never come, so its reply is never stored, even after.
      VisibilityHeader v = load_visibility(datagram.data() + at);
      v.aux = recovering() ? 0 : routing_.epoch;
      store_visibility(datagram.data() + at, v);
    }
    bump(counters_.to_data_nodes);
  } else {
    if ((op == Op::kMetaGet || op == Op::kSidxRead) && recovering()) {
      // Recovering: a metadata node may not yet hold a write an earlier
      // switch committed (its copy lost with that switch). The client
      // times out and retries (section V-F: operations fail and are
      // retried until the switch is back).
      bump(counters_.recovering_reads_dropped);
      rte_pktmbuf_free(m);
      return -1;
    }
    if (op == Op::kMetaGet && routing_.visibility && at != 0) {
      if (const auto meta = table_.on_read(sk.slot, sk.fingerprint)) {
        // Answered here (section III-A, read operations): the reply leaves
        // on the port the request came in on, from the service port.
        Packet reply;
        reply.op = Op::kReply;
        reply.seq = (static_cast<std::uint64_t>(be32(datagram.data() + 8)) << 32) | be32(datagram.data() + 12);
        reply.key.assign(key);
        reply.value.assign(reinterpret_cast<const char*>(meta->data()), meta->size());
        reply.visibility = VisibilityHeader{sk.slot, VisState::kSwitchRead, sk.fingerprint, 0, 0};
        if (!write_datagram(m, ip, ihl, udp, datagram.size(), encode_packet(reply))) return drop(c, c.no_room, m);
        swap_ports(udp);
        translate(eth, ip, udp, false, sides_[0]);
        bump(counters_.switch_reads);
        return 0;
      }
    }
    if (op == Op::kSidxRead && routing_.visibility && at != 0) {
      if (const auto part = table_.on_partial_read(sk.slot, sk.fingerprint)) {
        // A partial write in flight (section III-C): never an answer on its
        // own; the read goes on to the metadata node carrying it, which
        // merges it into the whole entry.
        Packet read;
        if (parse_packet(datagram, &read) != ParseError::kNone) return drop(c, c.malformed, m);
        read.value.assign(reinterpret_cast<const char*>(part->metadata.data()), part->metadata.size());
        read.visibility->state = VisState::kPartial;
        read.visibility->ts = part->ts;
        if (!write_datagram(m, ip, ihl, udp, datagram.size(), encode_packet(read))) return drop(c, c.no_room, m);
        bump(counters_.partial_reads);
      }
    }
    to = metadata_port(key);
    bump(counters_.to_metadata_nodes);
  }
  udp->dst_port = rte_cpu_to_be_16(to);
  translate(eth, ip, udp, false, sides_[1]);
  return 1;
}

int VisibilityPlane::from_node(rte_mbuf* m, rte_ether_hdr* eth, rte_ipv4_hdr* ip, std::size_t ihl,
                               rte_udp_hdr* udp, std::span<std::byte> datagram, rte_mbuf** copy) {
  const auto op = static_cast<Op>(std::to_integer<std::uint8_t>(datagram[kOpAt]));
  const std::size_t at = visibility_offset(datagram);
  if (op == Op::kSync) {
    if (at == 0 || rte_be_to_cpu_16(udp->dst_port) != routing_.service_port) {
      return drop(sides_[1].counters, sides_[1].counters.malformed, m);
    }
    return sync(1, m, eth, ip, udp, datagram, at);
  }
  if (op == Op::kClear) {
    if (at != 0) {
      const VisibilityHeader v = load_visibility(datagram.data() + at);
      table_.on_clear(v.slot, v.ts);
      bump(counters_.clears);
      // A batched CLEAR: further (slot u16, ts u32) pairs in the value
      // (protocol/visibility.h); a value of another length is ignored.
      const std::size_t key_len = be16(datagram.data() + kKeyLenAt);
      const std::size_t value_len = be32(datagram.data() + kValueLenAt);
      if (value_len % kClearEntryBytes == 0) {
        const std::byte* p = datagram.data() + kHeaderBytes + key_len;
        for (std::size_t i = 0; i < value_len; i += kClearEntryBytes) table_.on_clear(be16(p + i), be32(p + i + 2));
        bump(counters_.clears, value_len / kClearEntryBytes);
      }
    }
    rte_pktmbuf_free(m);
    return -1;
  }
  const std::uint16_t from = rte_be_to_cpu_16(udp->src_port);
  const auto status = static_cast<Status>(std::to_integer<std::uint8_t>(datagram[kStatusAt]));
  if (op == Op::kReply && status == Status::kOk && at != 0) {
    VisibilityHeader v = load_visibility(datagram.data() + at);
    const std::size_t key_len = be16(datagram.data() + kKeyLenAt);
    const std::size_t value_len = be32(datagram.data() + kValueLenAt);
    const std::span<const std::byte> value(datagram.data() + kHeaderBytes + key_len, value_len);
    const bool partial = v.state == VisState::kPartial;
    if ((partial || (v.state == VisState::kNone && value_len == kLogLocationBytes)) && v.ts != 0 &&
        is_port_of(routing_.data_nodes, from)) {
      // A data-write reply (LOG_APPEND's: the only data-node reply with a
      // timestamp and a location; or, from a --secondary-index data node,
      // with kPartial and the partial entry, section III-C). Whatever
      // happens below, kPartial never reaches the client: it reads
      // anything but kStored as "phase 2".
      bump(counters_.write_replies);
      if (partial && !routing_.visibility) {
        v.state = VisState::kNone;
        store_visibility(datagram.data() + at, v);
      }
      if (routing_.visibility && (recovering() || v.aux != routing_.epoch)) {
        // Not stored: recovering, or the request went through an earlier
        // switch (whose MaxTs this table does not have). Phase 2.
        table_.note_unstored_reply(v.slot, v.ts);
        bump(recovering() ? counters_.recovering_fallbacks : counters_.other_epoch);
        v.state = VisState::kFallback;
        store_visibility(datagram.data() + at, v);
      } else if (routing_.visibility) {
        const WriteOutcome outcome = table_.on_write_reply(v.slot, v.fingerprint, v.ts, value, partial);
        v.state = outcome == WriteOutcome::kStored ? VisState::kStored : VisState::kFallback;
        store_visibility(datagram.data() + at, v);
        if (outcome == WriteOutcome::kStored) {
          const std::string_view key(reinterpret_cast<const char*>(datagram.data()) + kHeaderBytes, key_len);
          const std::size_t udp_offset = static_cast<std::size_t>(reinterpret_cast<std::byte*>(udp) -
                                                                  rte_pktmbuf_mtod(m, std::byte*));
          *copy = async_copy(m, udp_offset, datagram.size(), metadata_port(key));
        }
      }
    } else if (v.state == VisState::kNone && value_len == kLogLocationBytes &&
               is_port_of(routing_.metadata_nodes, from) && routing_.visibility) {
      // A META_GET reply. If the slot holds a write of this key, answer
      // from the slot: the reply may carry a phase-2 write whose META_PUT
      // reply is still held here (not committed), and a later read would
      // see the slot's older one. Not in the paper (its switch checks reads
      // on the way in only); the model checker found the non-monotonic read
      // (tests/offload/test_switch_visibility_model.cc).
      if (const auto meta = table_.on_read(v.slot, v.fingerprint)) {
        v.state = VisState::kSwitchRead;
        if (meta->size() == value_len) {
          std::memcpy(datagram.data() + kHeaderBytes + key_len, meta->data(), meta->size());
          store_visibility(datagram.data() + at, v);
        } else {
          Packet reply;
          if (parse_packet(datagram, &reply) != ParseError::kNone) {
            rte_pktmbuf_free(m);
            return -1;
          }
          reply.value.assign(reinterpret_cast<const char*>(meta->data()), meta->size());
          reply.visibility = v;
          if (!write_datagram(m, ip, ihl, udp, datagram.size(), encode_packet(reply))) {
            return drop(sides_[1].counters, sides_[1].counters.no_room, m);
          }
        }
        bump(counters_.reply_rechecks);
      }
    } else if (v.state == VisState::kNone && v.ts != 0 && value_len == 0 &&
               is_port_of(routing_.metadata_nodes, from) && routing_.visibility &&
               !table_.release_fallback(v.slot, v.ts)) {
      // A META_PUT reply newer than the slot's write: a read would still
      // see the slot, so the write may not commit yet (section III-B).
      // Back to the metadata node, which resends it.
      const offload::switch_visibility::SlotState slot = table_.slot(v.slot);
      Packet held;
      if (parse_packet(datagram, &held) != ParseError::kNone) {
        rte_pktmbuf_free(m);
        return -1;
      }
      held.visibility->state = VisState::kHeld;
      held.visibility->aux = slot.cur_ts;
      held.value.assign(reinterpret_cast<const char*>(slot.metadata.data()), slot.metadata.size());
      if (!write_datagram(m, ip, ihl, udp, datagram.size(), encode_packet(held))) {
        return drop(sides_[1].counters, sides_[1].counters.no_room, m);
      }
      swap_ports(udp);
      translate(eth, ip, udp, false, sides_[1]);
      bump(counters_.held);
      return 1;
    }
  }
  // To the client, as if from the one service port.
  udp->src_port = rte_cpu_to_be_16(routing_.service_port);
  translate(eth, ip, udp, false, sides_[0]);
  return 0;
}

rte_mbuf* VisibilityPlane::async_copy(rte_mbuf* m, std::size_t udp_offset, std::size_t datagram_bytes,
                                      std::uint16_t to_port) {
  rte_mbuf* c = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);
  if (c == nullptr) {
    bump(counters_.copy_failed);
    return nullptr;
  }
  auto* eth = rte_pktmbuf_mtod(c, rte_ether_hdr*);
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(eth + 1);
  auto* udp = reinterpret_cast<rte_udp_hdr*>(rte_pktmbuf_mtod(c, std::byte*) + udp_offset);
  const std::span<std::byte> datagram(reinterpret_cast<std::byte*>(udp + 1), datagram_bytes);
  // The same fields as the reply (key, location, slot, fingerprint, ts):
  // only the op and the state change.
  datagram[kOpAt] = std::byte{static_cast<std::uint8_t>(Op::kMetaAsync)};
  const std::size_t at = visibility_offset(datagram);
  VisibilityHeader v = load_visibility(datagram.data() + at);
  v.state = VisState::kNone;
  store_visibility(datagram.data() + at, v);
  udp->src_port = rte_cpu_to_be_16(routing_.service_port);
  udp->dst_port = rte_cpu_to_be_16(to_port);
  translate(eth, ip, udp, false, sides_[1]);
  bump(counters_.async_copies);
  return c;
}

Json VisibilityPlane::json() const {
  const auto c = table_.counters();
  const auto u = table_.usage();
  const auto l = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  Json j = Json::object();
  j["backend"] = "switch_visibility";
  j["visibility"] = routing_.visibility;
  j["slots"] = table_.slots();
  j["slots_used"] = u.used;
  j["register_bytes_used"] = u.hardware_bytes;
  j["stored"] = c.stored;
  j["slot_busy"] = c.slot_busy;
  j["stale"] = c.stale;
  j["too_large"] = c.too_large;
  j["cleared"] = c.cleared;
  j["clear_ignored"] = c.clear_ignored;
  j["read_hits"] = c.read_hits;
  j["read_misses"] = c.read_misses;
  j["held"] = c.held;
  j["released"] = c.released;
  j["partial_stored"] = c.partial_stored;
  j["partial_reads"] = c.partial_reads;
  j["to_data_nodes"] = l(counters_.to_data_nodes);
  j["to_metadata_nodes"] = l(counters_.to_metadata_nodes);
  j["write_replies"] = l(counters_.write_replies);
  j["async_copies"] = l(counters_.async_copies);
  j["copy_failed"] = l(counters_.copy_failed);
  j["clears"] = l(counters_.clears);
  j["reply_rechecks"] = l(counters_.reply_rechecks);
  j["epoch"] = routing_.epoch;
  j["recovering"] = recovering();
  const std::int64_t ready = ready_us_.load(), synced = sync_us_.load();
  j["recovered_ms"] = ready < 0 ? -1.0 : static_cast<double>(ready) / 1000.0;
  j["sync_ms"] = synced < 0 ? -1.0 : static_cast<double>(synced) / 1000.0;
  j["syncs"] = l(counters_.syncs);
  j["client_syncs"] = l(counters_.client_syncs);
  j["recovering_fallbacks"] = l(counters_.recovering_fallbacks);
  j["other_epoch"] = l(counters_.other_epoch);
  j["recovering_reads_dropped"] = l(counters_.recovering_reads_dropped);
  return j;
}

}  // namespace forein::net::sw
