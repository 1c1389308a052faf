#include "load/workload.h"

#include <numeric>

namespace forein::net::load {

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::kRead: return "read";
    case OpKind::kUpdate: return "update";
    case OpKind::kInsert: return "insert";
    case OpKind::kScan: return "scan";
    case OpKind::kRmw: return "rmw";
    case OpKind::kDelete: return "delete";
    case OpKind::kWrite: return "write";
  }
  return "?";
}

Mix mix_for(Workload w) {
  Mix m;
  auto set = [&](OpKind k, unsigned p) { m.percent[static_cast<std::size_t>(k)] = p; };
  switch (w) {
    case Workload::kA: set(OpKind::kRead, 50); set(OpKind::kUpdate, 50); break;
    case Workload::kB: set(OpKind::kRead, 95); set(OpKind::kUpdate, 5); break;
    case Workload::kC: set(OpKind::kRead, 100); break;
    case Workload::kD: set(OpKind::kRead, 95); set(OpKind::kInsert, 5); break;
    case Workload::kE: set(OpKind::kScan, 95); set(OpKind::kInsert, 5); break;
    case Workload::kF: set(OpKind::kRead, 50); set(OpKind::kRmw, 50); break;
    case Workload::kGetPutDel:
      set(OpKind::kRead, 90); set(OpKind::kInsert, 5); set(OpKind::kDelete, 5); break;
    case Workload::kWriteOnly: set(OpKind::kWrite, 100); break;
    case Workload::kWriteHeavy:
    case Workload::kSecondaryIndex: set(OpKind::kRead, 50); set(OpKind::kWrite, 50); break;
  }
  return m;
}

WorkloadGenerator::WorkloadGenerator(Workload w, Distribution d, std::uint64_t keys, double theta,
                                     std::uint64_t seed)
    : mix_(mix_for(w)), dist_(d), keys_(keys), next_insert_(keys), rng_(seed) {
  if (d != Distribution::kUniform && keys > 1) {
    zipf_ = std::make_unique<forein::testing::ZipfGenerator>(keys, theta);
  }
  // An odd multiplier near keys * golden ratio, coprime with keys: a
  // bijection of [0, keys) that spreads consecutive ranks apart.
  if (keys > 2) {
    std::uint64_t m = static_cast<std::uint64_t>(static_cast<double>(keys) * 0.6180339887) | 1;
    while (std::gcd(m, keys) != 1) m += 2;
    multiplier_ = m % keys;
  }
}

std::uint64_t WorkloadGenerator::draw_key() {
  if (keys_ == 1) return 0;
  switch (dist_) {
    case Distribution::kUniform:
      return std::uniform_int_distribution<std::uint64_t>(0, keys_ - 1)(rng_);
    case Distribution::kZipf:
      return scatter((*zipf_)(rng_));
    case Distribution::kLatest: {
      const std::uint64_t newest = next_insert_ - 1;
      return newest - (*zipf_)(rng_);  // rank < keys_ <= newest + 1
    }
  }
  return 0;
}

WorkloadGenerator::WorkloadGenerator(const WorkloadGenerator& other, std::uint64_t seed)
    : mix_(other.mix_),
      dist_(other.dist_),
      keys_(other.keys_),
      next_insert_(other.next_insert_),
      multiplier_(other.multiplier_),
      rng_(seed),
      zipf_(other.zipf_ ? std::make_unique<forein::testing::ZipfGenerator>(*other.zipf_) : nullptr) {}

Operation WorkloadGenerator::next() {
  unsigned roll = std::uniform_int_distribution<unsigned>(0, 99)(rng_);
  std::size_t k = 0;
  while (k + 1 < kOpKinds && roll >= mix_.percent[k]) roll -= mix_.percent[k++];
  Operation op;
  op.kind = static_cast<OpKind>(k);
  if (op.kind == OpKind::kInsert) {
    op.key = next_insert_++;
  } else {
    op.key = draw_key();
  }
  if (op.kind == OpKind::kScan) {
    op.scan_len = std::uniform_int_distribution<std::uint32_t>(1, kMaxScanLength)(rng_);
  }
  return op;
}

}  // namespace forein::net::load
