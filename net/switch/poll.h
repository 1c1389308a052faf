// forein-switch's data plane loop on the main thread.
#pragma once

#include <atomic>

#include "forward.h"
#include "ports.h"

namespace forein::net::sw {

// Polls both ports in bursts, sends each frame where `forward` says, until
// `stop` is set; backs off when both ports are idle.
void poll_ports(Side sides[2], Forwarder& forward, const std::atomic<bool>& stop);

}  // namespace forein::net::sw
