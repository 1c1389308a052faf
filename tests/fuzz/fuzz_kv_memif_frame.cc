// libFuzzer target: forein-kv-server's memif frame parser and reply
// builder (net/kv_server/memif_frames.h) on any bytes. No crash, no read
// outside the frame (ASan), no undefined behaviour (UBSan); a frame taken
// as a datagram has its payload inside the frame, and a reply built for
// that payload parses back, frame by frame, as what was sent (one frame)
// or as fragments (refused by the parser, which reassembles nothing).
//
// Each input is tried twice: as it is, and with the Ethernet type, IPv4
// version, protocol, lengths, destination and header checksum forced and
// the UDP checksum cleared, so most mutations reach the checks behind them.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "kv_server/memif_frames.h"

namespace {

using namespace forein::net::kv;

void require(bool ok) {
  if (!ok) std::abort();
}

constexpr std::uint32_t kOurIp = (10u << 24) | (77u << 16) | (1u << 8) | 1u;  // 10.77.1.1 (no-kernel-traffic: a frame parsed in user space)

void try_frame(std::span<const std::byte> frame) {
  UdpFrame got;
  if (parse_udp_frame(frame, kOurIp, &got) != FrameVerdict::kDatagram) return;
  require(got.payload.data() >= frame.data() &&
          got.payload.data() + got.payload.size() <= frame.data() + frame.size());
  require(got.to.ip == kOurIp);
  // Answer it with its own payload, as the server answers any request.
  Frames reply;
  require(build_udp_frames(got.to, got.from, got.payload, 7, &reply));
  std::size_t at = 0;
  for (const std::size_t n : reply.sizes) {
    const std::span<const std::byte> f(reply.bytes.data() + at, n);
    at += n;
    UdpFrame back;
    const FrameVerdict v = parse_udp_frame(f, got.from.ip, &back);
    if (reply.fragments == 0) {
      require(v == FrameVerdict::kDatagram || got.from.ip == kOurIp);
      if (v == FrameVerdict::kDatagram) {
        require(back.payload.size() == got.payload.size());
        require(back.from.port == got.to.port && back.to.port == got.from.port);
      }
    } else {
      require(v != FrameVerdict::kDatagram);
    }
  }
  require(at == reply.bytes.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> frame(reinterpret_cast<const std::byte*>(data), size);
  try_frame(frame);
  if (size < kEthernetBytes + kIpv4Bytes + kUdpBytes) return 0;
  std::vector<std::byte> fixed(frame.begin(), frame.end());
  std::byte* ip = fixed.data() + kEthernetBytes;
  fixed[12] = std::byte{0x08};
  fixed[13] = std::byte{0x00};
  ip[0] = std::byte{0x45};
  for (int i = 0; i < 4; ++i) ip[16 + i] = static_cast<std::byte>(kOurIp >> (24 - 8 * i));
  // Lengths that fit the frame, unless the input asks for a fragment.
  const std::size_t total = std::min<std::size_t>(size - kEthernetBytes, 65535);
  ip[2] = static_cast<std::byte>(total >> 8);
  ip[3] = static_cast<std::byte>(total & 0xFF);
  if ((static_cast<unsigned>(ip[6]) & 0x20) == 0) ip[6] = ip[7] = std::byte{0};
  ip[9] = std::byte{17};
  const std::size_t udp_len = total - kIpv4Bytes;
  ip[kIpv4Bytes + 4] = static_cast<std::byte>(udp_len >> 8);
  ip[kIpv4Bytes + 5] = static_cast<std::byte>(udp_len & 0xFF);
  ip[10] = ip[11] = std::byte{0};
  const std::uint16_t ck = internet_checksum(std::span<const std::byte>(ip, kIpv4Bytes));
  ip[10] = static_cast<std::byte>(ck >> 8);
  ip[11] = static_cast<std::byte>(ck & 0xFF);
  ip[kIpv4Bytes + 6] = ip[kIpv4Bytes + 7] = std::byte{0};
  try_frame(fixed);
  return 0;
}
