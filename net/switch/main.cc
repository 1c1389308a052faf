// forein-switch: the DPDK data plane (docs/network.md, "forein-switch").
//
//   forein-switch [--agent-listen HOST:PORT] [--agent-token T] [--index ID]
//                 [--client-iface NAME] [--server-iface NAME]
//                 [--client-net A.B.C] [--server-net A.B.C] [-- EAL ARGS...]
//
// Two DPDK ports, each a TAP device (net_tap) whose kernel side gets
// A.B.C.1/24 while the switch answers ARP for A.B.C.2: clients send to the
// client side's .2, the switch forwards to the server side's .1 (the kernel
// UDP forein-kv-server listening there) with its own server-side .2 as the
// source, and maps the replies back. Requests get the hint trailer from
// the backend image the in-process agent holds; a miss forwards unchanged.
//
// Prints `listening HOST:PORT` (the agent) and `ready` once serving;
// SIGINT/SIGTERM stop it and it prints its counters as one JSON line.
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rte_arp.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_udp.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "agent_service.h"
#include "forein/key.h"
#include "forein/offload/backend.h"
#include "forein/offload/published.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"

namespace {

using forein::net::Op;

constexpr std::uint16_t kBurst = 32;
constexpr std::uint16_t kDescriptors = 512;
constexpr unsigned kPoolSize = 4095;

std::atomic<bool> g_stop{false};

struct Options {
  std::string agent_listen = "127.0.0.1:50052";
  std::string token;
  std::uint64_t index = forein::net::kDatasetIndexId;
  std::string iface[2] = {"fswc0", "fsws0"};
  std::string net[2] = {"10.77.0", "10.77.1"};
  std::vector<std::string> eal;  // after `--`: replaces the default EAL options
  bool eal_given = false;
};

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: forein-switch [--agent-listen HOST:PORT] [--agent-token T] [--index ID]\n"
               "                     [--client-iface NAME] [--server-iface NAME]\n"
               "                     [--client-net A.B.C] [--server-net A.B.C] [-- EAL ARGS...]\n"
               "  --agent-listen HOST:PORT  the in-process agent's gRPC address (default 127.0.0.1:50052)\n"
               "  --agent-token T           bearer token (default $FOREIN_AGENT_TOKEN)\n"
               "  --index ID                the agent's index whose image hints requests (default 0)\n"
               "  --client-iface NAME       TAP device of the client side (default fswc0)\n"
               "  --server-iface NAME       TAP device of the server side (default fsws0)\n"
               "  --client-net A.B.C        client side /24: kernel A.B.C.1, switch A.B.C.2 (default 10.77.0)\n"
               "  --server-net A.B.C        server side /24: kernel A.B.C.1 (the server), switch A.B.C.2\n"
               "                            (default 10.77.1)\n"
               "  -- EAL ARGS               replace the default EAL options (--no-huge --no-pci -m 256\n"
               "                            --file-prefix forein-switch-PID -l 0); the two --vdev are added\n"
               "Prints `listening HOST:PORT` and `ready` when serving; SIGINT/SIGTERM stop it and print\n"
               "its counters as one JSON line.\n");
}

// Per port, written by the data plane only (relaxed), read by anyone.
struct PortCounters {
  std::atomic<std::uint64_t> rx{0}, forwarded{0}, hinted{0}, misses{0}, malformed{0}, dropped{0},
      arp_replies{0};
  // dropped, by reason
  std::atomic<std::uint64_t> not_ipv4{0}, bad_ip{0}, not_for_switch{0}, no_room{0}, tx_full{0};
};

void bump(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// The image the data plane reads (lock-free, Published), refreshed from the agent.
struct Image {
  const forein::offload::BackendInfo* info = nullptr;
  std::shared_ptr<const forein::offload::BackendImage> image;
};

struct Side {
  std::uint16_t port = 0;
  std::string iface;
  std::uint32_t kernel_ip = 0;  // host order: A.B.C.1
  std::uint32_t switch_ip = 0;  // A.B.C.2
  rte_ether_addr kernel_mac{};
  rte_ether_addr switch_mac{};
  PortCounters counters;
};

bool parse_net(const std::string& s, std::uint32_t* base) {
  in_addr a{};
  if (inet_pton(AF_INET, (s + ".0").c_str(), &a) != 1) return false;
  *base = ntohl(a.s_addr);
  return true;
}

std::string ip_string(std::uint32_t host_order) {
  in_addr a{htonl(host_order)};
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

// The kernel side of a TAP device: address, netmask, up; its MAC.
bool configure_iface(Side& side) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, side.iface.c_str(), IFNAMSIZ - 1);
  auto set_addr = [&](unsigned long req, std::uint32_t v) {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(v);
    std::memcpy(&ifr.ifr_addr, &sin, sizeof sin);
    return ::ioctl(fd, req, &ifr) == 0;
  };
  bool ok = set_addr(SIOCSIFADDR, side.kernel_ip) && set_addr(SIOCSIFNETMASK, 0xFFFFFF00u);
  if (ok) ok = ::ioctl(fd, SIOCGIFFLAGS, &ifr) == 0;
  if (ok) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
    ok = ::ioctl(fd, SIOCSIFFLAGS, &ifr) == 0;
  }
  if (ok) ok = ::ioctl(fd, SIOCGIFHWADDR, &ifr) == 0;
  if (ok) std::memcpy(side.kernel_mac.addr_bytes, ifr.ifr_hwaddr.sa_data, RTE_ETHER_ADDR_LEN);
  if (!ok) std::fprintf(stderr, "forein-switch: configuring %s: %s\n", side.iface.c_str(), std::strerror(errno));
  ::close(fd);
  // Best effort: no IPv6 chatter on the device.
  if (std::FILE* f = std::fopen(("/proc/sys/net/ipv6/conf/" + side.iface + "/disable_ipv6").c_str(), "w")) {
    std::fputs("1", f);
    std::fclose(f);
  }
  return ok;
}

bool start_port(std::uint16_t port, rte_mempool* pool) {
  rte_eth_conf conf{};
  if (rte_eth_dev_configure(port, 1, 1, &conf) != 0) return false;
  std::uint16_t rxd = kDescriptors, txd = kDescriptors;
  if (rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd) != 0) return false;
  const int socket = rte_eth_dev_socket_id(port);
  const unsigned sock = socket < 0 ? 0u : static_cast<unsigned>(socket);
  if (rte_eth_rx_queue_setup(port, 0, rxd, sock, nullptr, pool) != 0) return false;
  if (rte_eth_tx_queue_setup(port, 0, txd, sock, nullptr) != 0) return false;
  if (rte_eth_dev_start(port) != 0) return false;
  rte_eth_promiscuous_enable(port);  // best effort
  return true;
}

// RFC 1624 incremental update of a one's complement checksum for a 32-bit
// field changing from old_v to new_v (both network order).
std::uint16_t cksum_adjust(std::uint16_t cksum, std::uint32_t old_v, std::uint32_t new_v) {
  std::uint32_t sum = static_cast<std::uint16_t>(~cksum);
  sum += static_cast<std::uint16_t>(~(old_v >> 16)) + static_cast<std::uint16_t>(~(old_v & 0xFFFF));
  sum += (new_v >> 16) + (new_v & 0xFFFF);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

class DataPlane {
 public:
  DataPlane(Side* sides, forein::offload::Published<Image>* image)
      : sides_(sides), image_(image) {}

  std::atomic<std::uint64_t> lookups{0};

  void run() {
    std::array<rte_mbuf*, kBurst> rx{};
    std::array<rte_mbuf*, kBurst> out[2]{};  // per destination port
    unsigned idle = 0;
    while (!g_stop.load(std::memory_order_relaxed)) {
      unsigned got = 0;
      for (int in = 0; in < 2; ++in) {
        Side& side = sides_[in];
        const std::uint16_t n = rte_eth_rx_burst(side.port, 0, rx.data(), kBurst);
        got += n;
        if (n == 0) continue;
        bump(side.counters.rx, n);
        std::uint16_t count[2] = {0, 0};
        for (std::uint16_t i = 0; i < n; ++i) {
          const int dest = handle(in, rx[i]);
          if (dest < 0) continue;  // freed
          out[dest][count[dest]++] = rx[i];
        }
        for (int d = 0; d < 2; ++d) {
          if (count[d] == 0) continue;
          const std::uint16_t sent = rte_eth_tx_burst(sides_[d].port, 0, out[d].data(), count[d]);
          // Forwarded frames count on the port they came in on; ARP
          // replies (dest == in) are counted when made.
          if (d != in) bump(side.counters.forwarded, sent);
          for (std::uint16_t k = sent; k < count[d]; ++k) rte_pktmbuf_free(out[d][k]);
          if (sent < count[d]) {
            bump(side.counters.dropped, count[d] - sent);
            bump(side.counters.tx_full, count[d] - sent);
          }
        }
      }
      // Back off when both ports are idle: a few pause spins, then sleeps
      // doubling from 1 us to 256 us, so the switch shares the cores with
      // the servers and clients (docs/network.md).
      if (got > 0) {
        idle = 0;
      } else if (++idle < 64) {
        rte_pause();
      } else {
        const unsigned shift = std::min(idle - 64, 8u);
        const timespec ts{0, static_cast<long>(1000u << shift)};
        ::nanosleep(&ts, nullptr);
      }
    }
  }

 private:
  // The destination port, or -1 when the frame was dropped (freed).
  int handle(int in, rte_mbuf* m) {
    Side& side = sides_[in];
    PortCounters& c = side.counters;
    auto drop = [&](std::atomic<std::uint64_t>& reason) {
      bump(c.dropped);
      bump(reason);
      rte_pktmbuf_free(m);
      return -1;
    };
    if (m->nb_segs != 1 || m->data_len < sizeof(rte_ether_hdr)) return drop(c.bad_ip);
    auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
    const std::uint16_t type = rte_be_to_cpu_16(eth->ether_type);
    if (type == RTE_ETHER_TYPE_ARP) return arp(in, m);
    if (type != RTE_ETHER_TYPE_IPV4) return drop(c.not_ipv4);
    const std::size_t frame = m->data_len;
    if (frame < sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr)) return drop(c.bad_ip);
    auto* ip = reinterpret_cast<rte_ipv4_hdr*>(eth + 1);
    const std::size_t ihl = static_cast<std::size_t>(ip->version_ihl & 0x0F) * 4;
    const std::size_t total = rte_be_to_cpu_16(ip->total_length);
    if ((ip->version_ihl >> 4) != 4 || ihl < sizeof(rte_ipv4_hdr) || total < ihl ||
        sizeof(rte_ether_hdr) + total > frame) {
      return drop(c.bad_ip);
    }
    if (rte_be_to_cpu_32(ip->dst_addr) != side.switch_ip) return drop(c.not_for_switch);
    // Trim Ethernet padding.
    if (sizeof(rte_ether_hdr) + total < frame) {
      rte_pktmbuf_trim(m, static_cast<std::uint16_t>(frame - sizeof(rte_ether_hdr) - total));
    }
    const int out = 1 - in;
    Side& to = sides_[out];
    const std::uint16_t frag = rte_be_to_cpu_16(ip->fragment_offset);
    const bool fragment = (frag & (RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) != 0;
    const bool first = (frag & RTE_IPV4_HDR_OFFSET_MASK) == 0;
    bool hinted = false;
    rte_udp_hdr* udp = nullptr;
    if (ip->next_proto_id == IPPROTO_UDP && first) {
      if (total < ihl + sizeof(rte_udp_hdr)) return drop(c.bad_ip);
      udp = reinterpret_cast<rte_udp_hdr*>(reinterpret_cast<std::byte*>(ip) + ihl);
    }
    if (in == 0 && udp != nullptr && !fragment) {
      // A request from a client: check, look up, hint.
      const std::size_t udp_len = rte_be_to_cpu_16(udp->dgram_len);
      if (udp_len < sizeof(rte_udp_hdr) || udp_len > total - ihl) return drop(c.bad_ip);
      const std::span<const std::byte> payload(reinterpret_cast<const std::byte*>(udp + 1),
                                               udp_len - sizeof(rte_udp_hdr));
      if (forein::net::check_datagram(payload) != forein::net::ParseError::kNone) {
        bump(c.malformed);
        rte_pktmbuf_free(m);
        return -1;
      }
      const auto op = static_cast<Op>(static_cast<std::uint8_t>(payload[3]));
      if (op == Op::kGet || op == Op::kPut || op == Op::kDelete || op == Op::kScan) {
        const std::string_view key = forein::net::packet_key(payload);
        const forein::StartHints h = image_->read([&](const Image& img) {
          if (img.info == nullptr) return forein::StartHints{};
          return img.info->hint(img.image->bytes, forein::word_of(key));
        });
        bump(lookups);
        if (h.primary.present() || h.secondary.present()) {
          std::vector<std::byte> datagram(payload.begin(), payload.end());
          if (forein::net::set_hint_trailer(datagram, h)) {
            const std::size_t grow = datagram.size() - payload.size();
            if (grow > 0 && rte_pktmbuf_append(m, static_cast<std::uint16_t>(grow)) == nullptr) {
              return drop(c.no_room);
            }
            std::memcpy(udp + 1, datagram.data(), datagram.size());
            udp->dgram_len = rte_cpu_to_be_16(static_cast<std::uint16_t>(sizeof(rte_udp_hdr) + datagram.size()));
            ip->total_length = rte_cpu_to_be_16(static_cast<std::uint16_t>(ihl + sizeof(rte_udp_hdr) + datagram.size()));
            hinted = true;
          }
        }
        bump(hinted ? c.hinted : c.misses);
      }
    }
    // Address translation: in from the client side (to our client-side
    // address) -> out from our server-side address to the server; back the
    // other way.
    const std::uint32_t old_src = ip->src_addr, old_dst = ip->dst_addr;
    const std::uint32_t new_src = rte_cpu_to_be_32(to.switch_ip);
    const std::uint32_t new_dst = rte_cpu_to_be_32(to.kernel_ip);
    ip->src_addr = new_src;
    ip->dst_addr = new_dst;
    ip->hdr_checksum = 0;
    ip->hdr_checksum = rte_ipv4_cksum(ip);
    if (udp != nullptr) {
      // Whole datagrams get a fresh checksum: the kernel may hand the TAP
      // a partial one (checksum offload), which no incremental update fixes.
      // A first fragment cannot be summed here: its sum is adjusted.
      if (!fragment) {
        udp->dgram_cksum = 0;
        const std::uint16_t ck = rte_ipv4_udptcp_cksum(ip, udp);
        udp->dgram_cksum = ck == 0 ? 0xFFFF : ck;
      } else if (udp->dgram_cksum != 0) {
        std::uint16_t ck = cksum_adjust(udp->dgram_cksum, rte_be_to_cpu_32(old_src), rte_be_to_cpu_32(new_src));
        ck = cksum_adjust(ck, rte_be_to_cpu_32(old_dst), rte_be_to_cpu_32(new_dst));
        udp->dgram_cksum = ck == 0 ? 0xFFFF : ck;
      }
    }
    rte_ether_addr_copy(&to.kernel_mac, &eth->dst_addr);
    rte_ether_addr_copy(&to.switch_mac, &eth->src_addr);
    return out;
  }

  // Answers ARP requests for the switch's address on this side (and
  // learns the kernel's MAC); other ARP frames are dropped.
  int arp(int in, rte_mbuf* m) {
    Side& side = sides_[in];
    auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
    if (m->data_len < sizeof(rte_ether_hdr) + sizeof(rte_arp_hdr)) {
      bump(side.counters.dropped);
      bump(side.counters.bad_ip);
      rte_pktmbuf_free(m);
      return -1;
    }
    auto* a = reinterpret_cast<rte_arp_hdr*>(eth + 1);
    if (rte_be_to_cpu_16(a->arp_opcode) != RTE_ARP_OP_REQUEST ||
        rte_be_to_cpu_32(a->arp_data.arp_tip) != side.switch_ip) {
      bump(side.counters.dropped);
      bump(side.counters.not_for_switch);
      rte_pktmbuf_free(m);
      return -1;
    }
    if (rte_be_to_cpu_32(a->arp_data.arp_sip) == side.kernel_ip) {
      rte_ether_addr_copy(&a->arp_data.arp_sha, &side.kernel_mac);
    }
    a->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
    rte_ether_addr_copy(&a->arp_data.arp_sha, &a->arp_data.arp_tha);
    a->arp_data.arp_tip = a->arp_data.arp_sip;
    rte_ether_addr_copy(&side.switch_mac, &a->arp_data.arp_sha);
    a->arp_data.arp_sip = rte_cpu_to_be_32(side.switch_ip);
    rte_ether_addr_copy(&eth->src_addr, &eth->dst_addr);
    rte_ether_addr_copy(&side.switch_mac, &eth->src_addr);
    bump(side.counters.arp_replies);
    return in;
  }

  Side* sides_;
  forein::offload::Published<Image>* image_;
};

std::string counters_json(const Side* sides, std::uint64_t lookups) {
  auto v = [](const std::atomic<std::uint64_t>& a) { return std::to_string(a.load(std::memory_order_relaxed)); };
  std::string s = "{";
  std::uint64_t tot[6] = {0, 0, 0, 0, 0, 0};
  const char* names[2] = {"client", "server"};
  for (int i = 0; i < 2; ++i) {
    const PortCounters& c = sides[i].counters;
    s += "\"" + std::string(names[i]) + "\":{\"iface\":\"" + sides[i].iface + "\",\"rx\":" + v(c.rx) +
         ",\"forwarded\":" + v(c.forwarded) + ",\"hinted\":" + v(c.hinted) + ",\"misses\":" + v(c.misses) +
         ",\"malformed\":" + v(c.malformed) + ",\"dropped\":" + v(c.dropped) +
         ",\"arp_replies\":" + v(c.arp_replies) + ",\"dropped_by_reason\":{\"not_ipv4\":" + v(c.not_ipv4) +
         ",\"bad_ip\":" + v(c.bad_ip) + ",\"not_for_switch\":" + v(c.not_for_switch) +
         ",\"no_room\":" + v(c.no_room) + ",\"tx_full\":" + v(c.tx_full) + "}},";
    const std::atomic<std::uint64_t>* t[6] = {&c.rx, &c.forwarded, &c.hinted, &c.misses, &c.malformed, &c.dropped};
    for (int k = 0; k < 6; ++k) tot[k] += t[k]->load(std::memory_order_relaxed);
  }
  s += "\"rx\":" + std::to_string(tot[0]) + ",\"forwarded\":" + std::to_string(tot[1]) +
       ",\"hinted\":" + std::to_string(tot[2]) + ",\"misses\":" + std::to_string(tot[3]) +
       ",\"malformed\":" + std::to_string(tot[4]) + ",\"dropped\":" + std::to_string(tot[5]) +
       ",\"lookups\":" + std::to_string(lookups) + "}";
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const char* env = std::getenv("FOREIN_AGENT_TOKEN"); env != nullptr) o.token = env;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    }
    if (arg == "--") {
      o.eal_given = true;
      for (++i; i < argc; ++i) o.eal.emplace_back(argv[i]);
      break;
    }
    if (i + 1 < argc) {
      std::string* dst = nullptr;
      if (arg == "--agent-listen") dst = &o.agent_listen;
      else if (arg == "--agent-token") dst = &o.token;
      else if (arg == "--client-iface") dst = &o.iface[0];
      else if (arg == "--server-iface") dst = &o.iface[1];
      else if (arg == "--client-net") dst = &o.net[0];
      else if (arg == "--server-net") dst = &o.net[1];
      if (dst != nullptr) {
        *dst = argv[++i];
        continue;
      }
      if (arg == "--index") {
        char* end = nullptr;
        o.index = std::strtoull(argv[++i], &end, 10);
        if (end != nullptr && *end == '\0') continue;
      }
    }
    std::fprintf(stderr, "forein-switch: unknown or incomplete argument '%s'\n", argv[i]);
    usage(stderr);
    return 2;
  }
  Side sides[2];
  for (int i = 0; i < 2; ++i) {
    std::uint32_t base = 0;
    if (!parse_net(o.net[i], &base) || o.iface[i].empty() || o.iface[i].size() >= IFNAMSIZ) {
      std::fprintf(stderr, "forein-switch: bad network '%s' or interface '%s'\n", o.net[i].c_str(),
                   o.iface[i].c_str());
      return 2;
    }
    sides[i].iface = o.iface[i];
    sides[i].kernel_ip = base + 1;
    sides[i].switch_ip = base + 2;
    sides[i].switch_mac = rte_ether_addr{{0x02, 0xF0, 0xE1, 0x5C, 0x00, static_cast<std::uint8_t>(i + 1)}};
  }
  if (sides[0].kernel_ip == sides[1].kernel_ip) {
    std::fprintf(stderr, "forein-switch: the client and server networks must differ\n");
    return 2;
  }

  // Signals go to one waiting thread (blocked in every other thread,
  // DPDK's and gRPC's included, which inherit the mask).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  cpu_set_t cpus;
  const bool have_cpus = sched_getaffinity(0, sizeof cpus, &cpus) == 0;

  std::vector<std::string> eal = {"forein-switch"};
  if (o.eal_given) {
    eal.insert(eal.end(), o.eal.begin(), o.eal.end());
  } else {
    eal.insert(eal.end(), {"--no-huge", "--no-pci", "-m", "256", "--file-prefix",
                           "forein-switch-" + std::to_string(::getpid()), "-l", "0"});
  }
  eal.push_back("--vdev");
  eal.push_back("net_tap0,iface=" + o.iface[0]);
  eal.push_back("--vdev");
  eal.push_back("net_tap1,iface=" + o.iface[1]);
  std::vector<char*> eal_argv;
  for (auto& a : eal) eal_argv.push_back(a.data());
  rte_openlog_stream(stderr);
  if (rte_eal_init(static_cast<int>(eal_argv.size()), eal_argv.data()) < 0) {
    std::fprintf(stderr, "forein-switch: EAL init failed: %s\n", rte_strerror(rte_errno));
    return 1;
  }
  // EAL pinned this thread to one lcore; on shared cores let it run anywhere.
  if (have_cpus) pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus);

  int rc = 0;
  {
    rte_mempool* pool = rte_pktmbuf_pool_create("fsw_pool", kPoolSize, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                                static_cast<int>(rte_socket_id()));
    const char* names[2] = {"net_tap0", "net_tap1"};
    bool ok = pool != nullptr;
    if (!ok) std::fprintf(stderr, "forein-switch: mbuf pool: %s\n", rte_strerror(rte_errno));
    for (int i = 0; ok && i < 2; ++i) {
      ok = rte_eth_dev_get_port_by_name(names[i], &sides[i].port) == 0 && start_port(sides[i].port, pool) &&
           configure_iface(sides[i]);
      if (!ok) std::fprintf(stderr, "forein-switch: port %s (%s) failed to start\n", names[i], o.iface[i].c_str());
    }
    if (!ok) {
      rte_eal_cleanup();
      return 1;
    }

    forein::offload::Published<Image> image(std::make_shared<const Image>());
    DataPlane plane(sides, &image);
    forein::net::AgentOptions agent_options;
    agent_options.token = o.token;
    const std::uint64_t index = o.index;
    agent_options.hint_lookups = [&plane, index](std::uint64_t id) {
      return id == index ? plane.lookups.load(std::memory_order_relaxed) : 0;
    };
    try {
      forein::net::AgentServer server(o.agent_listen, agent_options);
      // The control thread: republishes the agent's image for the data plane.
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
      std::thread refresher([&] {
        std::shared_ptr<const forein::offload::BackendImage> held;
        const forein::offload::BackendInfo* held_info = nullptr;
        std::unique_lock lock(mu);
        while (!done) {
          lock.unlock();
          const forein::offload::BackendInfo* info = nullptr;
          auto img = server.service().image(index, &info);
          if (img != held || info != held_info) {
            auto next = std::make_shared<Image>();
            next->info = img != nullptr ? info : nullptr;
            next->image = img;
            image.publish(std::move(next));
            held = std::move(img);
            held_info = info;
          }
          lock.lock();
          cv.wait_for(lock, std::chrono::milliseconds(5), [&] { return done; });
        }
      });
      std::thread waiter([&] {
        int sig = 0;
        sigwait(&signals, &sig);
        g_stop.store(true);
      });
      const std::string host = o.agent_listen.substr(0, o.agent_listen.rfind(':'));
      std::fprintf(stderr, "forein-switch: clients send to %s (%s), the server listens on %s (%s)\n",
                   ip_string(sides[0].switch_ip).c_str(), o.iface[0].c_str(), ip_string(sides[1].kernel_ip).c_str(),
                   o.iface[1].c_str());
      std::printf("listening %s:%d\nready\n", host.c_str(), server.port());
      std::fflush(stdout);
      plane.run();
      waiter.join();
      {
        std::lock_guard lock(mu);
        done = true;
      }
      cv.notify_all();
      refresher.join();
      server.shutdown();
      std::printf("%s\n", counters_json(sides, plane.lookups.load()).c_str());
      std::fflush(stdout);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "forein-switch: %s\n", e.what());
      rc = 1;
    }
    for (auto& s : sides) {
      rte_eth_dev_stop(s.port);
      rte_eth_dev_close(s.port);
    }
  }
  rte_eal_cleanup();
  return rc;
}
