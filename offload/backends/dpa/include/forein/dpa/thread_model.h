// dpa store: the traversers and their queues (DPA-Store 3.1, 3.1.3, 4.2.3,
// 4.2.4), from counted work.
//
// The paper's traversers do not share the load evenly by construction:
// "packet matching rules ... map each of the listening UDP ports to a
// designated DPA thread" and "clients use the same key hashing" (3.1), so
// a request runs on its key's thread, and under skew "some traverse
// threads receive a disproportionate share of requests, leading to longer
// wait times in the DPA queues" (4.2.4). ThreadLoad records which thread
// each operation went to (traverser_of, as the store routes it) and what
// it cost; a thread's busy time is the sum of its operations' modelled
// latencies (model.h), and the traverser bound is ops / the busiest
// thread's busy time.
//
// Overload: "if the response rate on a client exceeds a threshold, the
// clients can gradually send GET requests to different traverser threads
// using an alternative hashing scheme ... the client removes the hash
// metadata from the request, bypassing the cache" (3.1.3). With
// ModelConfig::spill_overloaded, GETs move off the busiest threads onto the
// least busy until no thread is busier than a level T (the lowest level the
// others can absorb), each moved GET costing what an uncached GET cost in
// the same run. The level and the amount moved are computed, not assumed.
//
// Queues: a closed system of the paper's clients (6 nodes x 31 threads x a
// queue depth, 4.2.3), each request visiting the packet engine (service:
// 1 / the ping ceiling, 4.2.9) and its traverser (service: the thread's
// mean modelled latency, visited with the thread's share of requests),
// solved exactly by mean value analysis: throughput, response time (their
// product is the requests in flight: Little's law) and each thread's mean
// queue against its 256-packet receive queue (3.1.3).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "forein/dpa/model.h"

namespace forein::offload::dpa {

class ThreadLoad {
 public:
  struct Thread {
    OpCost cost;                    // what its operations cost
    std::uint64_t ops = 0;
    OpCost spillable_cost;          // of those, the GETs clients could move (3.1.3)
    std::uint64_t spillable_ops = 0;
  };

  explicit ThreadLoad(std::size_t traversers);

  // One operation served by `traverser`. Spillable: a GET, which clients
  // may send to another thread when this one is overwhelmed (3.1.3).
  void add(std::size_t traverser, const OpCost& cost, bool spillable = false);
  // Work done on the operations' behalf by no traverser (stitches,
  // amortized): counted in the totals, on no thread.
  void add_unrouted(const OpCost& cost);
  // The request distribution's share of each traverser (summing to 1),
  // when the caller knows it: a thread's busy time is then its share of
  // all operations times its sampled mean cost, so a finite sample's
  // noise does not pass for imbalance. Without shares, the sampled sums.
  void set_shares(std::vector<double> shares);

  std::size_t traversers() const { return threads_.size(); }
  std::uint64_t ops() const { return ops_; }
  const OpCost& total() const { return total_; }
  const std::vector<Thread>& threads() const { return threads_; }
  const std::vector<double>& shares() const { return shares_; }
  // The spillable operations no hot-cache hit answered: what a moved GET
  // costs on a thread that skips the cache.
  const OpCost& uncached_spillable_cost() const { return uncached_cost_; }
  std::uint64_t uncached_spillable_ops() const { return uncached_ops_; }

 private:
  std::vector<Thread> threads_;
  std::vector<double> shares_;
  OpCost total_;
  std::uint64_t ops_ = 0;
  OpCost uncached_cost_;
  std::uint64_t uncached_ops_ = 0;
};

struct ThreadFigures {
  std::vector<double> owner_busy_ns;  // per thread, every request on its key's thread
  std::vector<double> busy_ns;        // after spilling (= owner_busy_ns when nothing moved)
  double mean_owner_busy_ns = 0;
  double imbalance = 1;         // busiest owner busy time / the mean
  double owner_bound = 0;       // ops/s: ops / the busiest owner busy time
  double bound = 0;             // ops/s: ops / the busiest busy time after spilling
  double balanced_bound = 0;    // traversers / mean latency (4.2.6's even sharing)
  double spilled_fraction = 0;  // of all operations
};

ThreadFigures thread_figures(const ThreadLoad& load, const ModelConfig& config = {});

// model.h's figures with the thread model's traverser bound; the
// bottleneck is kImbalance when the busiest thread costs more than 3 % of
// the even-sharing bound.
ModelFigures model_figures(const ThreadLoad& load, const ModelConfig& config = {});

// ---- Queues ----

// Wire time of one request and its response at the link's rate (4.1), with
// frame sizes that are estimates (types.h); `pairs` in the response.
double wire_ns(std::size_t response_pairs);

// One request alone: its modelled DPA time, the packet engine's time per
// request (1 / the ping ceiling: the paper gives a rate, not a latency, so
// this is a lower bound) and the wire. Switch, propagation and the
// clients' stack are not in the paper and not here.
struct LowLoadLatency {
  double dpa_ns = 0, packet_ns = 0, wire_ns = 0;
  double total_ns() const { return dpa_ns + packet_ns + wire_ns; }
};
LowLoadLatency low_load_latency(const ThreadLoad& load, std::size_t response_pairs,
                                const ModelConfig& config = {});

struct QueuePoint {
  std::uint64_t in_flight = 0;
  double ops_per_second = 0;
  double response_ns = 0;     // in_flight / throughput (Little's law)
  double busiest_queue = 0;   // mean requests at the busiest thread, in service included
  bool rx_overflow = false;   // busiest_queue above the 256-packet receive queue (3.1.3)
};

// Mean value analysis of the closed system for each of `in_flight`
// (ascending): the traversers (demand: busy_ns / ops each, after
// spilling), the packet engine, and `think_ns` of fixed delay (the wire).
std::vector<QueuePoint> queue_sweep(const ThreadLoad& load, const std::vector<std::uint64_t>& in_flight,
                                    double think_ns, const ModelConfig& config = {});

}  // namespace forein::offload::dpa
