// forein-load --remote-read (docs/remote-read.md, "The client"; Fat-B+Tree's
// RDMA mode): the client walks the remote tree itself, one READ per node,
// over UDP to forein-mem-server (directly, or through forein-switch).
//
// Each lookup's first READ is a start READ (kReadStart) of the root: a
// switch with an image for the key's memory node replaces its address with
// the deepest node its image resolves (fattree) or its hinted node
// (switch_lpm); without a switch, or with --hints off, it reads the root.
// The walk (remote/walk.h) goes on from whatever node came back: checked
// like any node, a wrong or stale one costs a restart from the root, never
// a wrong answer. Updates are PUTs to the tree's owner (the memory node's
// CPU), as in the paper.
//
// One thread per walk in flight (--outstanding), each with its own socket,
// walkers (one per memory node: --shards) and workload generator; a READ
// waits for its reply up to --timeout-ms and is resent up to --retries
// times, then fails (the walk restarts, or gives up after its READ budget).
#pragma once

#include "load/options.h"
#include "load/report.h"

namespace forein::net::load {

// Throws std::runtime_error if it cannot start (address, sockets, no
// memory node answers the header READ).
RunReport run_remote_read(const LoadOptions& options);

}  // namespace forein::net::load
