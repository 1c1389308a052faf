#include "client.h"

#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_pause.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <optional>

#include "common/json.h"
#include "cpu_time.h"
#include "gen_limits.h"
#include "load/workload.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "server_stats.h"
#include "dpdk/back_off.h"

namespace forein::net::swgen {
namespace {

using Clock = std::chrono::steady_clock;

// A SCAN reply entry of the data set: u16 key length, u32 value length,
// an 8-byte key, a 16-byte value (protocol/packet.h, protocol/dataset.h).
constexpr std::size_t kEntryHeader = 6, kKeyBytes = 8, kValueBytes = 16;


std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// One request in flight.
struct Slot {
  std::uint64_t seq = 0;
  std::uint64_t key = 0;  // dataset index
  std::int64_t sent_ns = 0;
  bool used = false;
};

class Client {
 public:
  Client(const GenOptions& o, const Ports& ports, const Addresses& a)
      : o_(o), port_(ports.port[0]), pool_(ports.pool), addr_(a), probe_(a), request_(a, o.scan) {
    load::WorkloadGenerator draw(load::Workload::kC, o.dist, o.keys, o.theta, o.seed);
    keys_.resize(kKeyRing);
    for (auto& k : keys_) k = draw.draw_key();
    // Room for the window several times over, so a slow request (not yet
    // timed out) rarely blocks the seqs behind it.
    slots_.resize(std::bit_ceil(std::max<std::size_t>(1024, std::size_t{o.window} * 4)));
    mask_ = slots_.size() - 1;
  }

  // Rounds of kProbeKeys GETs spread over the keys until a round comes back
  // whole and right (and, with stats, the server counted them hinted).
  bool probe(ServerStats* stats, std::uint32_t timeout_ms) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    const unsigned count = static_cast<unsigned>(std::min<std::uint64_t>(kProbeKeys, o_.keys));
    while (Clock::now() < deadline) {
      const std::uint64_t round = ++probe_rounds_;
      const std::uint64_t base = kProbeSeq | (round << 16);
      double hinted_before = -1;
      if (stats != nullptr) {
        if (const auto json = stats->query()) hinted_before = json_field(*json, "hinted");
      }
      unsigned sent = 0;
      while (sent < count && Clock::now() < deadline) {
        const unsigned took = send(count - sent, [&](rte_mbuf* m, unsigned i) {
          const unsigned k = sent + i;
          probe_.write(m, base | k, k * o_.keys / count);
        });
        sent += took;
        if (took == 0) forein::net::dpdk::back_off(64);
      }
      unsigned back = 0, idle = 0;
      const auto round_end = std::min(deadline, Clock::now() + std::chrono::milliseconds(200));
      while (back < sent && Clock::now() < round_end) {
        const unsigned got = receive([&](const forein::net::Packet& p) {
          if ((p.seq & kProbeSeq) == 0 || ((p.seq & ~(kProbeSeq | 0xFFFFu)) >> 16) != round) return;
          const std::uint64_t k = (p.seq & 0xFFFFu) * o_.keys / count;
          if (p.status == forein::net::Status::kOk && p.key == forein::net::dataset_key(k) &&
              p.value == forein::net::dataset_value(k)) {
            ++back;
          }
        });
        if (got > 0) {
          idle = 0;
        } else {
          forein::net::dpdk::back_off(++idle);
        }
      }
      if (back == count) {
        if (stats == nullptr) return true;
        if (const auto json = stats->query(); json && hinted_before >= 0 &&
                                              json_field(*json, "hinted") - hinted_before >= count) {
          return true;
        }
      }
      // No path yet (the server has not joined the switch) or no image: ask
      // again in 10 ms.
      const auto pause_end = std::min(deadline, Clock::now() + std::chrono::milliseconds(10));
      unsigned idle2 = 64;
      while (Clock::now() < pause_end) {
        receive([](const forein::net::Packet&) {});
        forein::net::dpdk::back_off(++idle2);
      }
    }
    return false;
  }

  // The measured run (--seconds or --count), then until every request is
  // answered or lost.
  void run() {
    const std::int64_t start = now_ns();
    const std::int64_t end = start + static_cast<std::int64_t>(o_.seconds * 1e9);
    const std::int64_t timeout = std::int64_t{o_.timeout_ms} * 1000000;
    latencies_us_.reserve(o_.count > 0 ? o_.count : 1u << 20);
    unsigned idle = 0;
    bool measuring = true;
    for (;;) {
      const std::int64_t now = now_ns();
      if (measuring && (o_.count > 0 ? t_.sent >= o_.count : now >= end)) {
        measuring = false;
        seconds_ = static_cast<double>(now - start) / 1e9;
        window_ = t_;
      }
      expire(now, timeout);
      if (!measuring && in_flight_ == 0) break;
      unsigned sent = 0;
      if (measuring) {
        std::uint64_t room = std::min<std::uint64_t>(o_.burst, o_.window - std::min<std::uint64_t>(in_flight_, o_.window));
        if (o_.count > 0) room = std::min(room, o_.count - t_.sent);
        room = std::min<std::uint64_t>(room, slots_.size() - (next_ - oldest_));  // no slot reused while in use
        const std::uint64_t first = next_;
        sent = send(static_cast<unsigned>(room), [&](rte_mbuf* m, unsigned i) {
          const std::uint64_t seq = first + i;
          request_.write(m, seq, keys_[seq & (kKeyRing - 1)]);
        });
        for (unsigned i = 0; i < sent; ++i) {
          const std::uint64_t seq = first + i;
          slots_[seq & mask_] = Slot{seq, keys_[seq & (kKeyRing - 1)], now, true};
        }
        next_ += sent;
        t_.sent += sent;
        in_flight_ += sent;
      }
      const unsigned got = receive([&](const forein::net::Packet& p) { on_reply(p); });
      if (sent + got > 0) {
        idle = 0;
      } else if (in_flight_ > 0) {
        // Requests in flight: the switch and the server are working on
        // them; a sleep (the kernel's timer slack is ~50 us) would idle all.
        forein::net::dpdk::wait_in_flight(++idle);
      } else {
        forein::net::dpdk::back_off(++idle);
      }
    }
  }

  std::string report(double gen_cpu, double switch_cpu, double server_cpu, const std::string& stats_before,
                     const std::string& stats_after) {
    const double ops = seconds_ > 0 ? static_cast<double>(window_.ok) / seconds_ : 0;
    Json s = Json::object();
    s["mode"] = "client";
    s["op"] = o_.scan > 0 ? "scan" : "get";  // what the run sent (the probes are GETs)
    if (o_.scan > 0) s["scan"] = o_.scan;    // entries each SCAN wants
    s["sent"] = t_.sent;
    s["replies"] = t_.replies;
    s["ok"] = t_.ok;
    s["wrong"] = t_.wrong;
    s["unmatched"] = t_.unmatched;
    s["lost"] = t_.lost;
    s["seconds"] = json_fixed(seconds_, 3);
    s["window_ok"] = window_.ok;
    s["entries"] = t_.entries;
    s["ops_per_s"] = json_fixed(ops, 3);
    s["p50_us"] = json_fixed(percentile(0.50), 3);
    s["p99_us"] = json_fixed(percentile(0.99), 3);
    s["p999_us"] = json_fixed(percentile(0.999), 3);
    s["keys"] = o_.keys;
    s["dist"] = o_.dist == forein::net::load::Distribution::kZipf ? "zipf" : "uniform";
    s["burst"] = o_.burst;
    s["window"] = o_.window;
    s["timeout_ms"] = o_.timeout_ms;
    s["probe_rounds"] = probe_rounds_;
    s["gen_cpu_s"] = json_fixed(gen_cpu, 3);
    if (switch_cpu >= 0) s["switch_cpu_s"] = json_fixed(switch_cpu, 3);
    if (server_cpu >= 0) s["server_cpu_s"] = json_fixed(server_cpu, 3);
    if (!stats_before.empty() && !stats_after.empty()) {
      // The server's counters over the run (and the drain): its kernel
      // port's own STATS requests aside.
      Json server = Json::object();
      const char* fields[] = {"requests", "get", "scan", "hinted", "hint_hits", "secondary_hits", "fallbacks",
                              "tree_operations", "nodes_visited", "move_rights", "drops"};
      for (const char* f : fields) server[f] = json_whole(json_field(stats_after, f) - json_field(stats_before, f));
      // The memif poll thread's busy time (receive to last transmit of its
      // non-empty bursts, idle polls excluded), when the server has a memif port.
      const double busy0 = json_field(stats_before, "memif", "busy_us");
      const double busy1 = json_field(stats_after, "memif", "busy_us");
      if (busy0 >= 0 && busy1 >= 0) server["memif_busy_us"] = json_whole(busy1 - busy0);
      s["server"] = std::move(server);
    }
    return json_line(s);
  }

  const ClientTally& tally() const { return t_; }

 private:
  // Sends up to n GETs written by write(mbuf, i); the number the port took.
  template <typename Write>
  unsigned send(unsigned n, Write&& write) {
    std::array<rte_mbuf*, kMaxBurst> mbufs{};
    n = std::min(n, kMaxBurst);
    if (n == 0 || rte_pktmbuf_alloc_bulk(pool_, mbufs.data(), n) != 0) return 0;
    for (unsigned i = 0; i < n; ++i) write(mbufs[i], i);
    const std::uint16_t sent = rte_eth_tx_burst(port_, 0, mbufs.data(), static_cast<std::uint16_t>(n));
    for (unsigned i = sent; i < n; ++i) rte_pktmbuf_free(mbufs[i]);
    return sent;
  }

  // A burst from the client side: each well-formed REPLY (Ethernet/IPv4/UDP
  // from the switch's C.2 to our C.1, a protocol datagram) to on_reply;
  // anything else is counted wrong. The number of frames.
  template <typename OnReply>
  unsigned receive(OnReply&& on_reply) {
    std::array<rte_mbuf*, kMaxBurst> rx{};
    const std::uint16_t n = rte_eth_rx_burst(port_, 0, rx.data(), kMaxBurst);
    for (std::uint16_t i = 0; i < n; ++i) {
      const auto datagram = udp_datagram(rx[i], addr_.client_switch, addr_.client_peer, ~0u);
      if (datagram && forein::net::parse_packet(*datagram, &packet_) == forein::net::ParseError::kNone &&
          packet_.op == forein::net::Op::kReply) {
        on_reply(packet_);
      } else {
        ++t_.wrong;
      }
      rte_pktmbuf_free(rx[i]);
    }
    return n;
  }

  void on_reply(const forein::net::Packet& p) {
    if ((p.seq & kProbeSeq) != 0) return;  // a late probe
    Slot& s = slots_[p.seq & mask_];
    if (!s.used || s.seq != p.seq) {
      ++t_.wrong;
      ++t_.unmatched;
      return;
    }
    s.used = false;
    --in_flight_;
    ++t_.replies;
    if (o_.scan > 0 ? scan_right(p, s.key)
                    : p.status == forein::net::Status::kOk && p.key == forein::net::dataset_key(s.key) &&
                          p.value == forein::net::dataset_value(s.key)) {
      ++t_.ok;
      latencies_us_.push_back(static_cast<float>(static_cast<double>(now_ns() - s.sent_ns) / 1e3));
    } else {
      ++t_.wrong;
    }
  }

  // A SCAN's reply from dataset_key(start): status ok, the start key, and
  // exactly the data set's entries from it on, min(--scan, keys - start) of
  // them (dataset_key(start + i), dataset_value(start + i)), no kFlagMore.
  // parse_packet has checked that the entries fill the value area; they
  // are compared in place (no copies), as the GET check compares one value.
  bool scan_right(const forein::net::Packet& p, std::uint64_t start) {
    const std::uint64_t want = std::min<std::uint64_t>(o_.scan, o_.keys - start);
    if (p.status != forein::net::Status::kOk || p.more || p.count != want || p.key != forein::net::dataset_key(start)) {
      return false;
    }
    const auto* b = reinterpret_cast<const unsigned char*>(p.value.data());
    const std::size_t n = p.value.size();
    std::size_t at = 0;
    for (std::uint64_t i = 0; i < want; ++i) {
      if (n - at < kEntryHeader + kKeyBytes + kValueBytes) return false;
      const std::size_t key_len = (std::size_t{b[at]} << 8) | b[at + 1];
      std::uint64_t value_len = 0, key = 0;
      for (int j = 2; j < 6; ++j) value_len = (value_len << 8) | b[at + static_cast<std::size_t>(j)];
      if (key_len != kKeyBytes || value_len != kValueBytes) return false;
      at += kEntryHeader;
      for (std::size_t j = 0; j < kKeyBytes; ++j) key = (key << 8) | b[at + j];
      if (key != start + i) return false;
      at += kKeyBytes;
      const std::string value = forein::net::dataset_value(start + i);
      if (std::memcmp(b + at, value.data(), kValueBytes) != 0) return false;
      at += kValueBytes;
    }
    if (at != n) return false;
    t_.entries += want;
    return true;
  }

  // Frees answered slots at the window's tail and counts requests older
  // than the timeout as lost (sent in seq order, so the oldest goes first).
  void expire(std::int64_t now, std::int64_t timeout) {
    while (oldest_ < next_) {
      Slot& s = slots_[oldest_ & mask_];
      if (s.used) {
        if (now - s.sent_ns <= timeout) break;
        s.used = false;
        --in_flight_;
        ++t_.lost;
      }
      ++oldest_;
    }
  }

  double percentile(double q) {
    if (latencies_us_.empty()) return 0;
    const std::size_t at = std::min(latencies_us_.size() - 1, static_cast<std::size_t>(q * static_cast<double>(latencies_us_.size())));
    std::nth_element(latencies_us_.begin(), latencies_us_.begin() + static_cast<std::ptrdiff_t>(at), latencies_us_.end());
    return latencies_us_[at];
  }

  const GenOptions& o_;
  std::uint16_t port_;
  rte_mempool* pool_;
  const Addresses& addr_;
  RequestFrame probe_;    // GETs (the probes)
  RequestFrame request_;  // the run's: GETs, or SCANs of --scan entries
  std::vector<std::uint64_t> keys_;
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::uint64_t next_ = 0;    // the next seq to send
  std::uint64_t oldest_ = 0;  // every seq below is answered or lost
  std::uint64_t in_flight_ = 0;
  ClientTally t_, window_;
  double seconds_ = 0;
  std::vector<float> latencies_us_;
  forein::net::Packet packet_;  // reused: parse_packet assigns into its strings
  unsigned probe_rounds_ = 0;
};

}  // namespace

int run_client(const GenOptions& o, const Ports& ports, const Addresses& addresses) {
  std::optional<ServerStats> stats;
  if (!o.server_stats.empty()) {
    stats.emplace(o.server_stats);
    if (!stats->ok()) return 1;
  }
  Client client(o, ports, addresses);
  if (!client.probe(o.wait_hints ? &*stats : nullptr, o.probe_timeout_ms)) {
    std::fprintf(stderr, "forein-switch-gen: no %s after %u ms of probes\n",
                 o.wait_hints ? "right REPLYs counted hinted by the server" : "right REPLYs through the switch",
                 o.probe_timeout_ms);
    return 1;
  }
  std::string before, after;
  if (stats) before = stats->query().value_or("");
  const int self = static_cast<int>(::getpid());
  const double gen0 = process_cpu_seconds(self);
  const double switch0 = o.switch_pid > 0 ? process_cpu_seconds(o.switch_pid) : -1;
  const double server0 = o.server_pid > 0 ? process_cpu_seconds(o.server_pid) : -1;
  client.run();
  const double gen_cpu = process_cpu_seconds(self) - gen0;
  const double switch_cpu = switch0 >= 0 ? process_cpu_seconds(o.switch_pid) - switch0 : -1;
  const double server_cpu = server0 >= 0 ? process_cpu_seconds(o.server_pid) - server0 : -1;
  if (stats) after = stats->query().value_or("");
  std::printf("%s\n", client.report(gen_cpu, switch_cpu, server_cpu, before, after).c_str());
  std::fflush(stdout);
  return 0;
}

}  // namespace forein::net::swgen
