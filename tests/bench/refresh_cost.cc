// What one offload refresh costs on the engine tree (docs/offload.md, "Idle
// cost"): the median time of a refresh with nothing changed (skipped), one
// after sampled accesses only (planned from kept key words), and one after
// a new key (planned; only the changed leaf's words read again), besides a
// full read of the key words and the first plan. Single-threaded, in
// process; keys 0, 7, 14, ... as 8-byte integers, 16-byte values.
//
//   refresh_cost [backend (switch_lpm)] [keys (1000000)] [repetitions (9)]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "forein/key.h"
#include "forein/offload/backend.h"
#include "forein/offload/manager.h"
#include "forein/offload/registry.h"
#include "forein/offload/tree_source.h"
#include "forein/page_store.h"
#include "forein/tree.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_of(const std::function<void()>& fn) {
  const auto start = Clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace forein;
  using namespace forein::offload;
  const std::string name = argc > 1 ? argv[1] : "switch_lpm";
  const std::int64_t keys = argc > 2 ? std::atoll(argv[2]) : 1000000;
  const int reps = argc > 3 ? std::max(1, std::atoi(argv[3])) : 9;

  Backend backend(backend_for_lookups(name));
  OffloadManager manager(backend);
  TreeOptions to;
  to.observer = &manager;
  auto tree = Tree::create(std::make_unique<MemoryPageStore>(), to);
  std::vector<std::pair<std::string, std::string>> rows;
  rows.reserve(static_cast<std::size_t>(keys));
  for (std::int64_t i = 0; i < keys; ++i) rows.emplace_back(encode_int64(7 * i), std::string(16, 'v'));
  tree->bulk_load(rows);
  rows.clear();

  std::vector<double> scan;
  for (int r = 0; r < reps; ++r) {
    TreeIndexSource fresh(*tree);  // nothing kept: every leaf read
    scan.push_back(ms_of([&] { fresh.for_each_word([](Word) { return true; }); }));
  }
  manager.attach(*tree);
  const double first = ms_of([&] { manager.refresh(); });
  // Refreshes until one is skipped: the samples' weight has decayed to 0.
  auto settle = [&] {
    for (int i = 0; i < 100; ++i) {
      const std::uint64_t skipped = manager.stats().skipped_refreshes;
      manager.refresh();
      if (manager.stats().skipped_refreshes > skipped) return;
    }
    std::fprintf(stderr, "refresh_cost: refreshes kept planning\n");
    std::exit(1);
  };
  std::vector<double> idle, sampled, inserted;
  for (int r = 0; r < reps; ++r) {
    settle();
    idle.push_back(ms_of([&] { manager.refresh(); }));
    manager.record_access(word_of(encode_int64(7 * ((r * 7919) % keys))));
    sampled.push_back(ms_of([&] { manager.refresh(); }));
    settle();
    tree->put(encode_int64(7 * ((r * 104729) % keys) + 3), "new");
    inserted.push_back(ms_of([&] { manager.refresh(); }));
  }
  const ManagerStats s = manager.stats();
  manager.detach();
  std::printf("backend %s, %lld keys, medians of %d\n", name.c_str(), static_cast<long long>(keys), reps);
  std::printf("  read every key word:               %9.3f ms\n", median(scan));
  std::printf("  first refresh (plan, words read):  %9.3f ms\n", first);
  std::printf("  refresh, nothing changed:          %9.4f ms\n", median(idle));
  std::printf("  refresh after samples only:        %9.3f ms\n", median(sampled));
  std::printf("  refresh after one new key:         %9.3f ms\n", median(inserted));
  std::printf("  refreshes %llu, plans %llu, skipped %llu\n", static_cast<unsigned long long>(s.refreshes),
              static_cast<unsigned long long>(s.plans), static_cast<unsigned long long>(s.skipped_refreshes));
  return 0;
}
