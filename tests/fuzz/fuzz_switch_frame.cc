// libFuzzer target: forein-switch's per-frame decision (net/switch/
// forward.cc, frames.cc, fattree_stage.cc) on any frame, from either port,
// in every routing mode (one server or three, hints on or off, the whole
// walk or one chain stage), with an arbitrary image for switch_lpm or
// fattree. No crash, no access outside the mbuf (ASan), no undefined
// behaviour (UBSan); a frame sent on is a frame the switch may send: IPv4
// to the other side's peer, lengths consistent with the mbuf.
//
// Input: byte 0 picks the mode, bytes 1-2 the image length n, then n bytes
// of image, then the frame. With the top bit of byte 2 set, the frame goes
// through Switch-delta's plane instead (--backend switch_visibility, one
// forwarder kept across inputs so its visibility table fills, tiny, so
// slots are shared; table on or off by mode bit 1): the same checks, plus
// the META_ASYNC copy it may make. The EAL starts once, without hugepages, PCI or
// shared files; frames live in mbufs of a real DPDK pool.
#include <rte_eal.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dpdk/eal.h"
#include "forein/offload/registry.h"
#include "forward.h"
#include "image.h"
#include "ports.h"

namespace {

namespace sw = forein::net::sw;

rte_mempool* pool = nullptr;

void require(bool ok) {
  if (!ok) std::abort();
}

void start_eal() {
  // The switch's own EAL defaults (a file prefix of this process's own),
  // smaller, and quiet.
  std::vector<std::string> args = forein::net::dpdk::default_eal_args("fuzz_switch_frame", "fuzz-switch");
  args.insert(args.end(), {"--log-level=1", "--no-telemetry"});
  require(forein::net::dpdk::start_eal(std::move(args)));
  pool = rte_pktmbuf_pool_create("fuzz_pool", 256, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  require(pool != nullptr);
}

void init_sides(sw::Side sides[2]) {
  for (int i = 0; i < 2; ++i) {
    sides[i].port = static_cast<std::uint16_t>(i);
    sides[i].iface = i == 0 ? "client" : "server";
    sides[i].kernel_ip = (10u << 24) | (77u << 16) | (static_cast<std::uint32_t>(i) << 8) | 1u;
    sides[i].switch_ip = sides[i].kernel_ip + 1;
    sides[i].kernel_mac = rte_ether_addr{{0x02, 0, 0, 0, 0, static_cast<std::uint8_t>(i + 1)}};
    sides[i].switch_mac = rte_ether_addr{{0x02, 0xF0, 0xE1, 0x5C, 0, static_cast<std::uint8_t>(i + 1)}};
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (pool == nullptr) start_eal();
  if (size < 3) return 0;
  const std::uint8_t mode = data[0];
  const bool visibility = (data[2] & 0x80) != 0;
  const std::size_t image_len =
      std::min<std::size_t>(data[1] | (std::size_t{static_cast<std::uint8_t>(data[2] & 0x7F)} << 8), size - 3);
  const std::uint8_t* frame = data + 3 + image_len;
  const std::size_t frame_len = size - 3 - image_len;
  if (frame_len > RTE_MBUF_DEFAULT_DATAROOM) return 0;

  sw::Routing routing;
  if (mode & 1) {
    routing.servers = {9001, 9002, 9003};
    routing.keys = 1 + (mode >> 4) * 1000;
  }
  routing.hints = (mode & 2) == 0;
  routing.stage = static_cast<int>((mode >> 2) & 3) - 1;  // -1 all, 0 core, 1 aggregation, 2 edge
  auto image = std::make_shared<sw::Image>();
  const forein::offload::BackendInfo* info = forein::offload::find_backend(mode & 0x80 ? "fattree" : "switch_lpm");
  require(info != nullptr);
  for (std::size_t i = 0; i < (routing.servers.empty() ? 1 : routing.servers.size()); ++i) {
    auto bytes = std::make_shared<forein::offload::BackendImage>();
    bytes->bytes.assign(reinterpret_cast<const std::byte*>(data + 3),
                        reinterpret_cast<const std::byte*>(data + 3 + image_len));
    image->shards.push_back(sw::ShardImage{info, std::move(bytes)});
  }
  forein::offload::Published<sw::Image> published(std::move(image));
  static sw::Side visibility_sides[2];
  static std::unique_ptr<sw::Forwarder> visibility_forward[2];  // table on, off
  sw::Side local_sides[2];
  sw::Side* sides = visibility ? visibility_sides : local_sides;
  std::unique_ptr<sw::Forwarder> local;
  sw::Forwarder* forwarder = nullptr;
  if (visibility) {
    auto& f = visibility_forward[(mode >> 1) & 1];
    if (f == nullptr) {
      init_sides(visibility_sides);
      sw::VisibilityRouting v;
      v.data_nodes = {7001, 7002};
      v.metadata_nodes = {8001, 8002, 8003};
      v.keys = 1000;
      v.visibility = (mode & 2) == 0;
      v.slots = 16;
      // A fixed epoch (not a random one): runs repeat, and the seeds' SYNCs
      // from 8001-8003 (fuzz_switch_frame_seeds.cc) end the recovering state.
      v.epoch = 0x5EED5EED;
      f = std::make_unique<sw::Forwarder>(visibility_sides, std::move(v));
    }
    forwarder = f.get();
  } else {
    init_sides(local_sides);
    local = std::make_unique<sw::Forwarder>(local_sides, &published, routing);
    forwarder = local.get();
  }
  sw::Forwarder& forward = *forwarder;

  const int in = (mode >> 6) & 1;
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  require(m != nullptr);
  char* room = rte_pktmbuf_append(m, static_cast<std::uint16_t>(frame_len));
  require(frame_len == 0 || room != nullptr);
  if (frame_len > 0) std::memcpy(room, frame, frame_len);
  const int out = forward.handle(in, m);
  if (rte_mbuf* copy = forward.take_copy()) {
    // A META_ASYNC copy: IPv4 to the server side's peer, lengths that fit.
    const auto* eth = rte_pktmbuf_mtod(copy, const rte_ether_hdr*);
    require(copy->data_len >= sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr));
    const auto* ip = reinterpret_cast<const rte_ipv4_hdr*>(eth + 1);
    require(rte_be_to_cpu_32(ip->dst_addr) == sides[1].kernel_ip);
    require(sizeof(rte_ether_hdr) + rte_be_to_cpu_16(ip->total_length) <= copy->data_len);
    rte_pktmbuf_free(copy);
  }
  if (out < 0) return 0;  // dropped: the forwarder freed it
  // Sent on: an ARP answer back out of the same port, or IPv4 to the other
  // side's peer with lengths that fit the mbuf.
  require(out == in || out == 1 - in);
  const auto* eth = rte_pktmbuf_mtod(m, const rte_ether_hdr*);
  // Switch-delta's plane also answers (META_GET from a slot) or turns back
  // (a held META_PUT reply) IPv4 out of the port it came in on.
  const bool ipv4_back = visibility && out == in && eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
  if (out != in || ipv4_back) {
    require(m->data_len >= sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr));
    require(eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4));
    const auto* ip = reinterpret_cast<const rte_ipv4_hdr*>(eth + 1);
    require(rte_be_to_cpu_32(ip->dst_addr) == sides[out].kernel_ip);
    require(sizeof(rte_ether_hdr) + rte_be_to_cpu_16(ip->total_length) <= m->data_len);
  }
  rte_pktmbuf_free(m);
  return 0;
}
