#include "traffic.h"

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_pause.h>

#include <algorithm>
#include <array>
#include <chrono>

#include "gen_limits.h"
#include "load/workload.h"
#include "dpdk/back_off.h"

namespace forein::net::swgen {
namespace {

using Clock = std::chrono::steady_clock;


double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

Traffic::Traffic(const GenOptions& o, const Ports& ports, const Addresses& addresses)
    : o_(o), ports_(ports), addr_(addresses), request_(addresses), rng_(o.seed) {
  // The same key draw as forein-load (uniform, or Zipf ranks scattered over
  // the keys), made ahead so the send loop only copies.
  load::WorkloadGenerator draw(load::Workload::kC, o.dist, o.keys, o.theta, o.seed);
  keys_.resize(kKeyRing);
  for (auto& k : keys_) k = draw.draw_key();
}

template <typename Write>
unsigned Traffic::send(int side, unsigned n, Write&& write) {
  std::array<rte_mbuf*, kMaxBurst> mbufs{};
  n = std::min(n, kMaxBurst);
  if (n == 0 || rte_pktmbuf_alloc_bulk(ports_.pool, mbufs.data(), n) != 0) return 0;
  for (unsigned i = 0; i < n; ++i) write(mbufs[i], i);
  const std::uint16_t sent = rte_eth_tx_burst(ports_.port[side], 0, mbufs.data(), static_cast<std::uint16_t>(n));
  for (unsigned i = sent; i < n; ++i) rte_pktmbuf_free(mbufs[i]);
  return sent;
}

template <typename OnProbe>
unsigned Traffic::receive(Tally& tally, OnProbe&& on_probe) {
  std::array<rte_mbuf*, kMaxBurst> rx{};
  // Nothing should come back on the client side (no server answers here);
  // whatever does is freed.
  const std::uint16_t stray = rte_eth_rx_burst(ports_.port[0], 0, rx.data(), kMaxBurst);
  for (std::uint16_t i = 0; i < stray; ++i) rte_pktmbuf_free(rx[i]);
  const std::uint16_t n = rte_eth_rx_burst(ports_.port[1], 0, rx.data(), kMaxBurst);
  for (std::uint16_t i = 0; i < n; ++i) {
    const Forwarded f = check_forwarded(rx[i], addr_);
    rte_pktmbuf_free(rx[i]);
    if (f.valid && (f.seq & kProbeSeq) != 0) {
      on_probe(f);
      continue;
    }
    ++tally.received;
    if (f.valid && f.key == keys_[f.seq & (kKeyRing - 1)]) {
      ++tally.valid;
      if (f.hinted) ++tally.hinted;
    }
  }
  return stray + n;
}

GarbageSent Traffic::send_garbage(unsigned n) {
  GarbageSent g;
  // Every frame must be taken: retry what a full ring refused.
  auto send_all = [&](int side, auto&& write) {
    for (unsigned done = 0; done < n;) {
      const unsigned took = send(side, n - done, [&](rte_mbuf* m, unsigned i) { write(m, done + i); });
      done += took;
      if (took == 0) forein::net::dpdk::back_off(64);
    }
    return static_cast<std::uint64_t>(n);
  };
  for (int side = 1; side >= 0; --side) {
    g.random += send_all(side, [&](rte_mbuf* m, unsigned) { write_random_frame(m, rng_); });
    g.truncated += send_all(side, [&](rte_mbuf* m, unsigned) {
      write_truncated_ipv4(m, addr_.gen_mac[side], addr_.switch_mac[side]);
    });
  }
  g.wrong_version = send_all(0, [&](rte_mbuf* m, unsigned i) { request_.write_wrong_version(m, i); });
  return g;
}

bool Traffic::probe(bool need_hints, std::uint32_t timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  const unsigned count = static_cast<unsigned>(std::min<std::uint64_t>(kProbeKeys, o_.keys));
  Tally ignored;
  while (Clock::now() < deadline) {
    const std::uint64_t round = ++probe_rounds_;
    const std::uint64_t base = kProbeSeq | (round << 16);
    unsigned sent = 0;
    while (sent < count && Clock::now() < deadline) {
      const unsigned took = send(0, count - sent, [&](rte_mbuf* m, unsigned i) {
        const unsigned k = sent + i;
        request_.write(m, base | k, k * o_.keys / count);
      });
      sent += took;
      if (took == 0) forein::net::dpdk::back_off(64);
    }
    unsigned back = 0, hinted = 0, idle = 0;
    // A round waits up to 200 ms for its frames; late ones of older rounds
    // are ignored.
    const auto round_end = std::min(deadline, Clock::now() + std::chrono::milliseconds(200));
    while (back < sent && Clock::now() < round_end) {
      const unsigned got = receive(ignored, [&](const Forwarded& f) {
        if ((f.seq & ~(kProbeSeq | 0xFFFFu)) >> 16 != round) return;
        ++back;
        if (f.hinted) ++hinted;
      });
      if (got > 0) {
        idle = 0;
      } else {
        forein::net::dpdk::back_off(++idle);
      }
    }
    if (back == count && (!need_hints || hinted == count)) return true;
    // The switch has no image yet (or no path): ask again in 10 ms.
    const auto pause_end = std::min(deadline, Clock::now() + std::chrono::milliseconds(10));
    unsigned idle2 = 64;
    while (Clock::now() < pause_end) {
      receive(ignored, [](const Forwarded&) {});
      forein::net::dpdk::back_off(++idle2);
    }
  }
  return false;
}

RunResult Traffic::run() {
  RunResult r;
  Tally t;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.seconds));
  auto progress = start;  // last time a frame came back
  unsigned idle = 0;
  for (;;) {
    const auto now = Clock::now();
    if (o_.count > 0 ? t.sent >= o_.count : now >= end) break;
    const std::uint64_t in_flight = t.sent - t.received;
    std::uint64_t room = o_.burst;
    if (o_.count > 0) room = std::min(room, o_.count - t.sent);
    if (o_.window > 0) room = in_flight >= o_.window ? 0 : std::min<std::uint64_t>(room, o_.window - in_flight);
    const std::uint64_t first = t.sent;
    const unsigned sent = send(0, static_cast<unsigned>(room), [&](rte_mbuf* m, unsigned i) {
      const std::uint64_t seq = first + i;
      request_.write(m, seq, keys_[seq & (kKeyRing - 1)]);
    });
    t.sent += sent;
    const unsigned got = receive(t, [](const Forwarded&) {});
    if (got > 0) progress = now;
    if (o_.count > 0 && room == 0 && now - progress > std::chrono::seconds(1)) {
      r.stalled = true;  // frames lost: the window never reopens
      break;
    }
    if (sent + got > 0) {
      idle = 0;
    } else if (t.sent > t.received) {
      // GETs in flight: the switch is working on them and will send soon;
      // a sleep here (the kernel's timer slack is ~50 us) would idle both.
      rte_pause();
    } else {
      forein::net::dpdk::back_off(++idle);
    }
  }
  r.seconds = seconds_since(start);
  r.window = t;
  // Drain: until every GET is back, 100 ms pass without one, or 2 s.
  const auto drain_end = Clock::now() + std::chrono::seconds(2);
  auto last = Clock::now();
  idle = 0;
  while (t.received < t.sent && Clock::now() < drain_end && Clock::now() - last < std::chrono::milliseconds(100)) {
    if (receive(t, [](const Forwarded&) {}) > 0) {
      last = Clock::now();
      idle = 0;
    } else {
      forein::net::dpdk::back_off(++idle);
    }
  }
  r.total = t;
  return r;
}

}  // namespace forein::net::swgen
