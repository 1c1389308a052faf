// switch_sync.h: the Switch-delta fault tests' view of a switch's
// recovery (docs/network.md, "Switch-crash recovery"): a SYNC sent from
// the client side, which the switch answers with how many metadata nodes
// it still waits for before it serves again (0: recovered) and its epoch.
#pragma once

#include <catch2/catch.hpp>

#include "child_process.h"
#include "protocol/packet.h"
#include "protocol/visibility.h"
#include "udp_client.h"

namespace forein::testing {

// The metadata nodes the switch behind `via` still waits for; wait: poll
// until 0 (eventually()'s deadline), failing the test if it never is.
inline long long switch_pending_syncs(UdpClient& via, bool wait) {
  long long pending = -1;
  const auto ask = [&] {
    net::Packet p = request(net::Op::kSync, "");
    p.visibility = net::VisibilityHeader{0, net::VisState::kNone, 0, 0, 0};
    const net::Packet r = via.call(p);
    REQUIRE(r.op == net::Op::kSync);
    REQUIRE(r.visibility);
    REQUIRE(r.visibility->ts == 1);
    REQUIRE(r.visibility->aux != 0);  // the switch's epoch
    pending = r.visibility->fingerprint;
    return pending == 0;
  };
  if (wait) {
    CHECK(eventually(ask));
  } else {
    ask();
  }
  return pending;
}

}  // namespace forein::testing
