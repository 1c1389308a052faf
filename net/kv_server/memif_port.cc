#include "kv_server/memif_port.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_prefetch.h>
#include <rte_cycles.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <optional>
#include <cstring>
#include <exception>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kv_server/memif_frames.h"
#include "protocol/packet.h"
#include "dpdk/back_off.h"
#include "dpdk/eal.h"

namespace forein::net::kv {

namespace {

constexpr std::uint16_t kDescriptors = 512;
constexpr unsigned kPoolSize = 4095;
constexpr std::uint16_t kBurst = 32;
constexpr unsigned kSpinPolls = 1u << 16;  // --memif-core: empty polls before sleeping
// Port-level drops beyond the frame verdicts.
constexpr std::size_t kNotSent = kFrameVerdicts;      // tx ring stayed full
constexpr std::size_t kNoMbuf = kFrameVerdicts + 1;   // no mbuf for a reply frame
constexpr std::size_t kBadFrame = kFrameVerdicts + 2; // chained mbuf (never from memif's 2 KiB slots)
constexpr std::size_t kDropKinds = kFrameVerdicts + 3;
constexpr const char* kDropNames[kDropKinds] = {"",        "not_ipv4", "arp",     "bad_ip",  "not_for_server",
                                                "fragment", "not_udp",  "bad_udp", "tx_full", "no_mbuf",
                                                "bad_frame"};

std::uint64_t load(const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); }
void bump(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }

}  // namespace

bool have_memif_port() { return true; }

struct MemifPort::Impl {
  Impl(const MemifConfig& c, PacketHandler& h, ServerStats& s) : config(c), handler(h), stats(s) {}
  ~Impl();
  void open();
  void poll();
  void check_link();
  // Answers the request in m: true when the reply was written into m
  // itself (a GET, run to completion: the caller transmits m with the
  // burst); false when m is done with (dropped, or answered by send()).
  bool serve(rte_mbuf* m);
  bool send(const Frames& frames);
  void transmit(rte_mbuf** mbufs, std::uint16_t count);

  MemifConfig config;
  PacketHandler& handler;
  ServerStats& stats;
  bool eal = false;
  bool port_open = false;
  std::uint16_t port = 0;
  rte_mempool* pool = nullptr;
  UdpEndpoint self;  // our MAC and address (the port: per reply)
  std::atomic<bool> stopping{false};
  std::thread thread;
  std::uint16_t ip_id = 0;  // poll thread only
  Packet request;
  Frames frames;
  std::string value;  // the GETs' reply values (poll thread only)

  std::atomic<bool> link_up{false};
  std::atomic<bool> pinned{false};  // the poll thread runs on config.core alone
  clockid_t clock{};                   // the poll thread's CPU-time clock
  std::atomic<bool> thread_clock{false};  // clock is set
  std::optional<std::chrono::steady_clock::time_point> down_since;  // poll thread only
  std::atomic<std::uint64_t> rx{0}, tx{0}, replies{0}, fragments_sent{0}, rejoins{0};
  // TSC cycles the poll thread spent on non-empty bursts (receive to the
  // last transmit): its work without the idle polls; bursts.
  std::atomic<std::uint64_t> busy_cycles{0}, bursts{0};
  std::array<std::atomic<std::uint64_t>, kDropKinds> drops{};
};

void MemifPort::Impl::open() {
  struct stat st {};
  if (::stat(config.socket.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    throw std::runtime_error("--memif: no memif socket at " + config.socket +
                             " (start forein-switch --server-port memif:" + config.socket + " first)");
  }
  std::vector<std::string> args = dpdk::default_eal_args("forein-kv-server", "forein-kv");
  args.insert(args.end(), {"--vdev", "net_memif0,role=client,id=0,socket-abstract=no,socket=" + config.socket});
  // The workers started later inherit this thread's affinity: start_eal
  // lets it run anywhere again.
  if (!dpdk::start_eal(std::move(args))) {
    throw std::runtime_error(std::string("--memif: EAL init failed: ") + rte_strerror(rte_errno));
  }
  eal = true;

  pool = rte_pktmbuf_pool_create("fkv_pool", kPoolSize, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                 static_cast<int>(rte_socket_id()));
  if (pool == nullptr) throw std::runtime_error(std::string("--memif: mbuf pool: ") + rte_strerror(rte_errno));
  if (rte_eth_dev_get_port_by_name("net_memif0", &port) != 0) {
    throw std::runtime_error("--memif: no net_memif0 port");
  }
  if (!dpdk::configure_port(port, pool, kDescriptors)) {
    throw std::runtime_error("--memif: configuring the memif port failed");
  }
  port_open = true;
  if (rte_eth_dev_start(port) != 0) {
    throw std::runtime_error("--memif: cannot join the memif socket " + config.socket);
  }
  rte_ether_addr mac{};
  rte_eth_macaddr_get(port, &mac);
  std::memcpy(self.mac.data(), mac.addr_bytes, self.mac.size());
  self.ip = config.ip;
}

MemifPort::Impl::~Impl() {
  if (port_open) {
    rte_eth_dev_stop(port);
    rte_eth_dev_close(port);
  }
  if (pool != nullptr) rte_mempool_free(pool);
  if (eal) dpdk::stop_eal();
}

// The link state for the stats; a link down for a second (the switch
// exited) is rejoined by restarting the port, once a second, while a
// socket file is there (a restarted switch serves it again).
void MemifPort::Impl::check_link() {
  rte_eth_link link{};
  const bool up = rte_eth_link_get_nowait(port, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
  link_up.store(up, std::memory_order_relaxed);
  const auto now = std::chrono::steady_clock::now();
  if (up) {
    down_since.reset();
    return;
  }
  if (!down_since) {
    down_since = now;
    return;
  }
  if (now - *down_since < std::chrono::seconds(1)) return;
  down_since = now;
  struct stat st {};
  if (::stat(config.socket.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return;
  rte_eth_dev_stop(port);
  if (rte_eth_dev_start(port) == 0) bump(rejoins);
}

// Run to completion: a burst of up to kBurst frames is received, each
// request answered in turn (a GET's reply written into its own mbuf), and
// the replies leave in one transmit burst; no allocation per request on
// the GET path.
void MemifPort::Impl::poll() {
  pthread_setname_np(pthread_self(), "fkv-memif");
  thread_clock.store(pthread_getcpuclockid(pthread_self(), &clock) == 0);
  if (config.core >= 0) {
    // --memif-core: this thread alone there (main() kept the others off it).
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(static_cast<unsigned>(config.core), &one);
    pinned.store(pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0);
  }
  if (config.nice != std::numeric_limits<int>::min()) {
    // (raising a priority needs CAP_SYS_NICE: without it the thread keeps
    // the others' nice, alone on its core all the same)
    setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), config.nice);
  }
  std::array<rte_mbuf*, kBurst> burst{};
  std::array<rte_mbuf*, kBurst> out{};
  unsigned idle = 0;
  // The link state for the stats (and a rejoin), every 20 ms: by the
  // clock, not the loop count, since a thread that never backs off loops
  // millions of times a second (and memif's link query must not be
  // hammered while the port reconnects).
  const std::uint64_t check_every = rte_get_tsc_hz() / 50;
  std::uint64_t next_check = 0;
  while (!stopping.load(std::memory_order_relaxed)) {
    if (const std::uint64_t now = rte_rdtsc(); now >= next_check) {
      check_link();
      next_check = now + check_every;
    }
    // A memif client also posts its receive buffers here: the switch can
    // send to us only after the first rx_burst.
    const std::uint16_t n = rte_eth_rx_burst(port, 0, burst.data(), kBurst);
    if (n == 0) {
      // On a core of its own (--memif-core) the thread polls without
      // backing off while requests come (gaps up to kSpinPolls polls, a
      // few ms), as a DPDK server does: no sleep's wake-up on the next
      // request, no yield that would hand the core to another process.
      // Idle longer, it sleeps as below: memif's PMD unmaps a link's rings
      // when the switch goes away, under a receive that is running then.
      ++idle;
      if (config.core >= 0 && idle < kSpinPolls) {
        rte_pause();
      } else if (config.core >= 0) {
        const timespec ts{0, static_cast<long>(1000u << std::min(idle - kSpinPolls, 8u))};
        ::nanosleep(&ts, nullptr);
      } else {
        forein::net::dpdk::back_off(idle);
      }
      continue;
    }
    const std::uint64_t start = rte_rdtsc();
    idle = 0;
    bump(rx, n);
    std::uint16_t ready = 0;
    for (std::uint16_t i = 0; i < n; ++i) {
      if (i + 1 < n) rte_prefetch0(rte_pktmbuf_mtod(burst[i + 1], void*));
      if (serve(burst[i])) {
        out[ready++] = burst[i];
      } else {
        rte_pktmbuf_free(burst[i]);
      }
    }
    if (ready > 0) {
      transmit(out.data(), ready);
    }
    bump(busy_cycles, rte_rdtsc() - start);
    bump(bursts);
  }
}

// Sends count reply frames, retrying briefly while the ring to the switch
// is full (the switch may be in its idle back-off); frees what stays.
void MemifPort::Impl::transmit(rte_mbuf** mbufs, std::uint16_t count) {
  std::uint16_t sent = 0;
  for (unsigned attempt = 0; sent < count && attempt < 2000; ++attempt) {
    sent = static_cast<std::uint16_t>(sent + rte_eth_tx_burst(port, 0, mbufs + sent, count - sent));
    if (sent == count) break;
    if (attempt < 64) {
      rte_pause();
    } else {
      const timespec ts{0, 1000};  // up to ~2 ms in all, then give up
      ::nanosleep(&ts, nullptr);
    }
  }
  bump(tx, sent);
  bump(replies, sent);
  if (sent < count) {
    for (std::uint16_t i = sent; i < count; ++i) rte_pktmbuf_free(mbufs[i]);
    bump(drops[kNotSent], count - sent);
    for (std::uint16_t i = sent; i < count; ++i) stats.count_drop(DropReason::kSendFailed);
  }
}

bool MemifPort::Impl::serve(rte_mbuf* m) {
  if (m->nb_segs != 1) {
    bump(drops[kBadFrame]);
    return false;
  }
  const std::span<const std::byte> frame(rte_pktmbuf_mtod(m, const std::byte*), m->data_len);
  UdpFrame in;
  const FrameVerdict v = parse_udp_frame(frame, self.ip, &in);
  if (v != FrameVerdict::kDatagram) {
    bump(drops[static_cast<std::size_t>(v)]);
    return false;
  }
  // From here as a kernel worker: the datagram's counters are the server's.
  stats.count_datagram();
  const ParseError e = parse_packet(in.payload, &request);
  if (e != ParseError::kNone) {
    stats.count_parse_error(e);
    return false;
  }
  if (request.op == Op::kReply || request.op == Op::kError) {
    stats.count_drop(DropReason::kNotRequest);
    return false;
  }
  UdpEndpoint from = self;
  from.port = in.to.port;  // the reply leaves from the port the request came to
  Packet reply;
  Op op = Op::kReply;
  Status status = Status::kOk;
  if (handler.serve_get(request, &op, &status, &value)) {
    // The reply in the request's own buffer (the request is parsed: its
    // key is in `request`), sent with the burst.
    const auto bytes = [](std::string_view s) { return std::as_bytes(std::span<const char>(s.data(), s.size())); };
    m->data_off = RTE_PKTMBUF_HEADROOM;
    const std::span<std::byte> room(rte_pktmbuf_mtod(m, std::byte*), m->buf_len - m->data_off);
    const std::size_t size = write_reply_frame(room, from, in.from, ip_id, static_cast<std::uint8_t>(op),
                                               static_cast<std::uint8_t>(status), request.seq,
                                               bytes(request.key), bytes(value));
    if (size != 0) {
      ++ip_id;
      m->data_len = static_cast<std::uint16_t>(size);
      m->pkt_len = static_cast<std::uint32_t>(size);
      return true;
    }
    // Larger than one frame: as fragments, below.
    reply = make_reply(request, op, status);
    reply.value = value;
  } else {
    reply = handler.handle(request);
  }
  std::vector<std::byte> out;
  try {
    out = encode_packet(reply);
  } catch (const std::exception&) {
    stats.count_drop(DropReason::kSendFailed);
    return false;
  }
  if (!build_udp_frames(from, in.from, out, ip_id++, &frames) || !send(frames)) {
    stats.count_drop(DropReason::kSendFailed);
    return false;
  }
  bump(replies);
  return false;
}

// Copies the frames into mbufs and sends them, retrying briefly while the
// ring to the switch is full (the switch may be in its idle back-off).
bool MemifPort::Impl::send(const Frames& f) {
  std::array<rte_mbuf*, 64> mbufs{};
  std::size_t at = 0;  // byte offset of the next frame
  std::size_t next = 0;
  while (next < f.sizes.size()) {
    const std::size_t count = std::min(mbufs.size(), f.sizes.size() - next);
    if (rte_pktmbuf_alloc_bulk(pool, mbufs.data(), static_cast<unsigned>(count)) != 0) {
      bump(drops[kNoMbuf], f.sizes.size() - next);
      return false;
    }
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t size = f.sizes[next + i];
      char* p = rte_pktmbuf_append(mbufs[i], static_cast<std::uint16_t>(size));
      // Frames are at most 1514 bytes: they fit the pool's 2 KiB buffers.
      if (p != nullptr) std::memcpy(p, f.bytes.data() + at, size);
      at += size;
    }
    std::size_t sent = 0;
    for (unsigned attempt = 0; sent < count && attempt < 2000; ++attempt) {
      sent += rte_eth_tx_burst(port, 0, mbufs.data() + sent, static_cast<std::uint16_t>(count - sent));
      if (sent == count) break;
      if (attempt < 64) {
        rte_pause();
      } else {
        const timespec ts{0, 1000};  // up to ~2 ms in all, then give up
        ::nanosleep(&ts, nullptr);
      }
    }
    bump(tx, sent);
    if (f.fragments > 0) bump(fragments_sent, sent);
    if (sent < count) {
      for (std::size_t i = sent; i < count; ++i) rte_pktmbuf_free(mbufs[i]);
      bump(drops[kNotSent], f.sizes.size() - next - sent);
      return false;
    }
    next += count;
  }
  return true;
}

MemifPort::MemifPort(const MemifConfig& config, PacketHandler& handler, ServerStats& stats)
    : impl_(std::make_unique<Impl>(config, handler, stats)) {
  impl_->open();
}

MemifPort::~MemifPort() { stop(); }

void MemifPort::start() {
  if (impl_->thread.joinable() || impl_->stopping.load()) return;
  impl_->thread = std::thread([this] { impl_->poll(); });
}

void MemifPort::stop() {
  impl_->stopping.store(true);
  if (impl_->thread.joinable()) impl_->thread.join();
}

Json MemifPort::json() const {
  const Impl& p = *impl_;
  std::uint64_t dropped = 0;
  Json reasons = Json::object();
  for (std::size_t i = 1; i < kDropKinds; ++i) {
    const std::uint64_t d = load(p.drops[i]);
    dropped += d;
    reasons[kDropNames[i]] = d;
  }
  Json out = Json::object();
  out["socket"] = p.config.socket;
  out["address"] = p.config.net + ".1";
  out["link"] = p.link_up.load() ? "up" : "down";
  out["rx"] = load(p.rx);
  out["tx"] = load(p.tx);
  out["replies"] = load(p.replies);
  out["rejoins"] = load(p.rejoins);
  out["dropped"] = dropped;
  out["fragments_sent"] = load(p.fragments_sent);
  out["bursts"] = load(p.bursts);
  out["core"] = p.pinned.load() ? p.config.core : -1;
  // The poll thread's CPU time (its idle polls included; not the time
  // other processes held its core, which busy_us counts).
  std::uint64_t cpu_us = 0;
  timespec ts{};
  if (p.thread_clock.load() && clock_gettime(p.clock, &ts) == 0) {
    cpu_us = static_cast<std::uint64_t>(ts.tv_sec) * 1000000u + static_cast<std::uint64_t>(ts.tv_nsec) / 1000u;
  }
  out["thread_cpu_us"] = cpu_us;
  out["busy_us"] = static_cast<std::uint64_t>(static_cast<double>(load(p.busy_cycles)) * 1e6 /
                                              static_cast<double>(rte_get_tsc_hz()));
  out["dropped_by_reason"] = std::move(reasons);
  return out;
}

}  // namespace forein::net::kv
