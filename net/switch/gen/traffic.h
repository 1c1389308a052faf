// forein-switch-gen's traffic: garbage, probes until the switch forwards
// (and hints), then GETs in bursts with a bounded window, counted as they
// come back out of the switch's server side.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "frames.h"
#include "options.h"
#include "ports.h"

namespace forein::net::swgen {

struct Tally {
  std::uint64_t sent = 0;      // GETs the client memif accepted
  std::uint64_t received = 0;  // frames out of the switch's server side (probes aside)
  std::uint64_t valid = 0;     // of those: well-formed, our seq with its key
  std::uint64_t hinted = 0;    // of the valid: with the hint trailer
};

struct RunResult {
  Tally window;                // within the measured window
  Tally total;                 // after the drain
  double seconds = 0;          // the window's length
  bool stalled = false;        // --count: the window stayed full for a second (frames lost)
};

struct GarbageSent {
  std::uint64_t random = 0, truncated = 0, wrong_version = 0;  // client side (+ random, truncated on the server side)
};

class Traffic {
 public:
  Traffic(const GenOptions& o, const Ports& ports, const Addresses& addresses);

  // --garbage N: N random and N truncated frames into each port, N GETs of
  // a wrong version into the client side.
  GarbageSent send_garbage(unsigned n);

  // Rounds of GETs for keys spread over [0, keys) until one round comes
  // back whole (and hinted, with need_hints); false after the timeout.
  bool probe(bool need_hints, std::uint32_t timeout_ms);
  unsigned probe_rounds() const { return probe_rounds_; }

  // The measured run: --seconds (or --count), then a drain of up to 2 s.
  RunResult run();

 private:
  // Receives a burst from the server side into tally (probe replies go to
  // on_probe instead); frames on the client side are freed. The number of
  // frames seen.
  template <typename OnProbe>
  unsigned receive(Tally& tally, OnProbe&& on_probe);
  // Sends up to n frames written by write(mbuf, i); the number the port took.
  template <typename Write>
  unsigned send(int side, unsigned n, Write&& write);

  const GenOptions& o_;
  const Ports& ports_;
  const Addresses& addr_;
  RequestFrame request_;
  std::vector<std::uint64_t> keys_;  // drawn ahead: GET seq s asks for keys_[s & mask]
  unsigned probe_rounds_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace forein::net::swgen
