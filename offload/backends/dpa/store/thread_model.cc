#include "forein/dpa/thread_model.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <utility>

namespace forein::offload::dpa {

ThreadLoad::ThreadLoad(std::size_t traversers) : threads_(traversers) {
  if (traversers == 0) throw std::invalid_argument("dpa thread model: needs at least one traverser");
}

void ThreadLoad::add(std::size_t traverser, const OpCost& cost, bool spillable) {
  Thread& t = threads_.at(traverser);
  t.cost += cost;
  ++t.ops;
  total_ += cost;
  ++ops_;
  if (!spillable) return;
  t.spillable_cost += cost;
  ++t.spillable_ops;
  if (cost.hot_hits == 0) {
    uncached_cost_ += cost;
    ++uncached_ops_;
  }
}

void ThreadLoad::add_unrouted(const OpCost& cost) { total_ += cost; }

void ThreadLoad::set_shares(std::vector<double> shares) {
  if (shares.size() != threads_.size()) throw std::invalid_argument("dpa thread model: one share per traverser");
  shares_ = std::move(shares);
}

namespace {

// A thread's busy time and its spillable part, for all ops() operations.
struct Busy {
  double all = 0, spillable = 0, spillable_ops = 0;
};

std::vector<Busy> busy_times(const ThreadLoad& load, const ModelConfig& config) {
  const auto& threads = load.threads();
  std::vector<Busy> b(threads.size());
  const double ops = static_cast<double>(load.ops());
  // The routed operations' mean cost: for a thread with a share but no sample.
  std::uint64_t routed_ops = 0;
  OpCost routed, spillable;
  std::uint64_t spillable_ops = 0;
  for (const auto& t : threads) {
    routed_ops += t.ops;
    routed += t.cost;
    spillable += t.spillable_cost;
    spillable_ops += t.spillable_ops;
  }
  for (std::size_t i = 0; i < threads.size(); ++i) {
    const auto& t = threads[i];
    if (load.shares().empty()) {
      b[i] = {modelled_latency_ns(t.cost, config), modelled_latency_ns(t.spillable_cost, config),
              static_cast<double>(t.spillable_ops)};
      continue;
    }
    const double requests = load.shares()[i] * ops;  // this thread's expected operations
    if (t.ops > 0) {
      const double scale = requests / static_cast<double>(t.ops);
      b[i] = {modelled_latency_ns(t.cost, config) * scale, modelled_latency_ns(t.spillable_cost, config) * scale,
              static_cast<double>(t.spillable_ops) * scale};
    } else if (routed_ops > 0) {
      const double scale = requests / static_cast<double>(routed_ops);
      b[i] = {modelled_latency_ns(routed, config) * scale, modelled_latency_ns(spillable, config) * scale,
              static_cast<double>(spillable_ops) * scale};
    }
  }
  return b;
}

// Clients move GETs off threads busier than `level` (3.1.3). Returns the
// busy times after the move, or nothing when the others cannot absorb it.
struct Spill {
  bool feasible = false;
  std::vector<double> busy;
  double moved_ops = 0;
};

Spill spill_to(const std::vector<Busy>& b, double level, double moved_cost_ns) {
  Spill s;
  double added = 0, room = 0;
  for (const Busy& t : b) {
    if (t.all > level) {
      const double excess = t.all - level;
      if (excess > t.spillable + 1e-9) return s;  // not enough GETs to move
      const double mean = t.spillable / t.spillable_ops;
      s.moved_ops += excess / mean;
      added += excess / mean * moved_cost_ns;
    } else {
      room += level - t.all;
    }
  }
  if (added > room + 1e-9) return s;
  s.feasible = true;
  s.busy.reserve(b.size());
  for (const Busy& t : b) {
    s.busy.push_back(t.all > level ? level : t.all + (room > 0 ? added * (level - t.all) / room : 0));
  }
  return s;
}

}  // namespace

ThreadFigures thread_figures(const ThreadLoad& load, const ModelConfig& config) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  ThreadFigures f;
  const std::vector<Busy> b = busy_times(load, config);
  for (const Busy& t : b) f.owner_busy_ns.push_back(t.all);
  f.busy_ns = f.owner_busy_ns;
  const double ops = static_cast<double>(load.ops());
  const double sum = std::accumulate(f.owner_busy_ns.begin(), f.owner_busy_ns.end(), 0.0);
  const double busiest = *std::max_element(f.owner_busy_ns.begin(), f.owner_busy_ns.end());
  f.mean_owner_busy_ns = sum / static_cast<double>(b.size());
  f.imbalance = f.mean_owner_busy_ns > 0 ? busiest / f.mean_owner_busy_ns : 1;
  f.owner_bound = busiest > 0 ? ops / (busiest * 1e-9) : kInf;
  f.balanced_bound = sum > 0 ? ops * static_cast<double>(b.size()) / (sum * 1e-9) : kInf;
  f.bound = f.owner_bound;
  const bool can_spill = config.spill_overloaded && load.ops() > 0 && busiest > f.mean_owner_busy_ns &&
                         std::any_of(b.begin(), b.end(), [](const Busy& t) { return t.spillable_ops > 0; });
  if (!can_spill) return f;
  // A moved GET skips the cache: it costs what the run's uncached GETs cost.
  const OpCost& moved = load.uncached_spillable_ops() > 0 ? load.uncached_spillable_cost() : load.total();
  const double moved_ops = static_cast<double>(load.uncached_spillable_ops() > 0 ? load.uncached_spillable_ops()
                                                                                  : load.ops());
  const double moved_cost_ns = modelled_latency_ns(moved, config) / moved_ops;
  // The lowest feasible level: feasibility only grows with the level.
  double lo = 0, hi = busiest;
  for (int i = 0; i < 100 && hi - lo > 1e-6 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (spill_to(b, mid, moved_cost_ns).feasible ? hi : lo) = mid;
  }
  const Spill s = spill_to(b, hi, moved_cost_ns);
  if (!s.feasible) return f;
  f.busy_ns = s.busy;
  f.spilled_fraction = ops > 0 ? s.moved_ops / ops : 0;
  const double after = *std::max_element(f.busy_ns.begin(), f.busy_ns.end());
  f.bound = after > 0 ? ops / (after * 1e-9) : kInf;
  return f;
}

ModelFigures model_figures(const ThreadLoad& load, const ModelConfig& config) {
  ModelConfig c = config;
  c.traversers = load.traversers();
  ModelFigures f = model_figures(load.total(), load.ops(), c);
  if (load.ops() == 0) return f;
  const ThreadFigures t = thread_figures(load, c);
  f.traverser_bound = t.bound;
  f.owner_bound = t.owner_bound;
  f.imbalance = t.imbalance;
  f.spilled_fraction = t.spilled_fraction;
  f.bottleneck = t.bound < 0.97 * t.balanced_bound ? kImbalance : kTraversers;
  apply_shared_bounds(load.total(), load.ops(), c, f);
  return f;
}

// ---- Queues ----

namespace {

double frame_bytes(std::size_t payload) {
  // Ethernet's 64-byte minimum frame (headers + payload + FCS) plus the
  // preamble and gap in kFrameOverheadBytes.
  constexpr std::size_t kOnWireExtra = 8 + 12;  // preamble, inter-frame gap
  const std::size_t frame = std::max<std::size_t>(64, kFrameOverheadBytes - kOnWireExtra + payload);
  return static_cast<double>(frame + kOnWireExtra);
}

}  // namespace

double wire_ns(std::size_t response_pairs) {
  const double request = frame_bytes(kRequestPayloadBytes);
  const double response = frame_bytes(response_pairs <= 1 ? kRequestPayloadBytes
                                                          : kRequestPayloadBytes + response_pairs * kPairBytes);
  return (request + response) * 8 / kLinkBitsPerSecond * 1e9;
}

LowLoadLatency low_load_latency(const ThreadLoad& load, std::size_t response_pairs, const ModelConfig& config) {
  LowLoadLatency l;
  if (load.ops() == 0) return l;
  // The routed operations only: unrouted work (stitches) is no request's wait.
  OpCost routed;
  for (const auto& t : load.threads()) routed += t.cost;
  l.dpa_ns = modelled_latency_ns(routed, config) / static_cast<double>(load.ops());
  l.packet_ns = 1e9 / packet_ceiling_ops_per_second(config.card);
  l.wire_ns = wire_ns(response_pairs);
  return l;
}

std::vector<QueuePoint> queue_sweep(const ThreadLoad& load, const std::vector<std::uint64_t>& in_flight,
                                    double think_ns, const ModelConfig& config) {
  std::vector<QueuePoint> out;
  if (load.ops() == 0 || in_flight.empty()) return out;
  const ThreadFigures t = thread_figures(load, config);
  // Demands per request (ns): each thread's busy time spread over all
  // requests (its visit ratio times its service time), then the engine's.
  struct Station {
    double demand = 0, queue = 0, response = 0;
  };
  std::vector<Station> stations;
  stations.reserve(t.busy_ns.size() + 1);
  for (const double b : t.busy_ns) stations.push_back({b / static_cast<double>(load.ops())});
  stations.push_back({1e9 / packet_ceiling_ops_per_second(config.card)});
  const std::size_t threads = t.busy_ns.size();
  std::size_t next = 0;
  for (std::uint64_t n = 1; n <= in_flight.back(); ++n) {
    double total = think_ns;
    for (Station& s : stations) {
      s.response = s.demand * (1 + s.queue);
      total += s.response;
    }
    const double x = static_cast<double>(n) / total;  // requests per ns
    for (Station& s : stations) s.queue = x * s.response;
    while (next < in_flight.size() && in_flight[next] == n) {
      QueuePoint p;
      p.in_flight = n;
      p.ops_per_second = x * 1e9;
      p.response_ns = total;
      for (std::size_t i = 0; i < threads; ++i) p.busiest_queue = std::max(p.busiest_queue, stations[i].queue);
      p.rx_overflow = p.busiest_queue > static_cast<double>(kReceiveQueuePackets);
      out.push_back(p);
      ++next;
    }
  }
  return out;
}

}  // namespace forein::offload::dpa
