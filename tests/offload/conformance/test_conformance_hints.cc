// Conformance 1: a backend's hints never change a result on the engine tree.
//
// For every backend of conformance_backends() (the registered ones, then any
// a test file adds): a tree wired to an OffloadManager over Backend(info)
// takes a random stream of puts, erases, gets and scans (growth, churn and
// heavy-delete phases, so leaves split and merge), checked against a
// std::map oracle. Every operation carries hints from
// one of five sources:
//   (a) the manager's hints, refreshed and flushed every few hundred ops;
//   (b) stale hints: captured for a pool of keys, used thousands of writes
//       later (after splits and merges);
//   (c) random garbage StartHints (page 0, huge pages, pages just past the
//       store's end, kNoPage, wrong levels and versions);
//   (d) info.hint() over a garbage image: random bytes, the real image with
//       random byte flips, the real image's first bytes then random bytes;
//   (e) no hint.
// Zero mismatches; tree->check() passes. A backend without kStartHints
// (none, switch_visibility) never returns a hint: from the manager, stale,
// or over garbage images. FOREIN_CONFORMANCE_OPS=<n> raises
// the operation count per backend; FOREIN_SEED=<n> replays.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "conformance_fixture.h"
#include "support/model.h"
#include "support/rng.h"
#include "support/seed.h"

namespace {

using forein::Direction;
using forein::Hint;
using forein::KeyBound;
using forein::PageId;
using forein::ScanSpec;
using forein::StartHints;
using forein::Word;
using forein::word_of;
using forein::testing::Entries;
using forein::testing::Model;
using forein::testing::model_scan;
using forein::testing::Rng;
using namespace forein::offload;
using namespace forein::offload::conformance;

constexpr std::int64_t kKeySpace = 12000;
constexpr std::int64_t kStride = 7;
constexpr std::size_t kPoolSize = 256;
constexpr std::uint64_t kPoolPeriod = 3000;   // ops between stale-pool captures
constexpr std::uint64_t kSettlePeriod = 400;  // ops between manager refresh+flush

enum Source { kManager, kStale, kGarbageHints, kGarbageImage, kNoHint, kSources };
constexpr std::array<const char*, kSources> kSourceNames = {"manager", "stale", "garbage hints",
                                                           "garbage image", "no hint"};

std::string random_value(Rng& rng) {
  std::string v(20 + rng.below(380), '\0');
  for (auto& c : v) c = static_cast<char>(rng.below(256));
  return v;
}

Hint garbage_hint(Rng& rng, PageId page_count) {
  Hint h;
  switch (rng.below(6)) {
    case 0: h.node = 0; break;
    case 1: h.node = static_cast<PageId>(rng.next()); break;
    case 2: h.node = page_count + static_cast<PageId>(rng.below(4)); break;
    case 3: h.node = forein::kNoPage; break;
    default: h.node = static_cast<PageId>(rng.below(page_count + 1)); break;
  }
  h.level = static_cast<std::uint16_t>(rng.chance(1, 8) ? rng.next() : rng.below(5));
  h.version = rng.next();
  return h;
}

// A garbage image derived from the real one (or not).
std::vector<std::byte> garbage_image(Rng& rng, const std::vector<std::byte>& real) {
  std::vector<std::byte> out;
  switch (rng.below(3)) {
    case 0:  // random bytes
      out.resize(rng.below(2 * real.size() + 256));
      for (auto& b : out) b = static_cast<std::byte>(rng.below(256));
      break;
    case 1: {  // the real image with byte flips
      out = real;
      if (out.empty()) break;
      const std::uint64_t flips = 1 + rng.below(16);
      for (std::uint64_t i = 0; i < flips; ++i) out[rng.below(out.size())] = static_cast<std::byte>(rng.below(256));
      break;
    }
    default: {  // the real header, then random bytes of the same total length
      out = real;
      for (std::size_t i = std::min<std::size_t>(out.size(), 8 + rng.below(64)); i < out.size(); ++i) {
        out[i] = static_cast<std::byte>(rng.below(256));
      }
      break;
    }
  }
  return out;
}

struct Run {
  std::uint64_t mismatches = 0;
  std::array<std::uint64_t, kSources> ops{};
  std::uint64_t manager_hints_present = 0;  // source (a) ops whose primary hint was present
  std::uint64_t device_hints_present = 0;   // sources (a), (b), (d): any hint present
  std::uint64_t scans = 0;
};

void run_backend(const BackendInfo& info, std::uint64_t seed, std::uint64_t total_ops) {
  Rng rng(seed);
  ConformanceTree t(info);
  Model model;
  {
    std::vector<std::pair<std::string, std::string>> items;
    for (std::int64_t i = 0; i < kKeySpace; i += 3) {
      items.emplace_back(int_key(i * kStride), random_value(rng));
    }
    t.tree->bulk_load(items);
    model.insert(items.begin(), items.end());
  }
  t.settle();

  auto random_key = [&] {
    // Mostly keys of the key space; sometimes keys between and beyond them.
    const std::int64_t i = static_cast<std::int64_t>(rng.below(kKeySpace));
    return int_key(rng.chance(1, 10) ? i * kStride + static_cast<std::int64_t>(rng.below(kStride))
                                     : i * kStride);
  };

  std::vector<std::pair<std::string, StartHints>> pool;
  auto capture_pool = [&] {
    pool.clear();
    for (std::size_t i = 0; i < kPoolSize; ++i) {
      std::string key = random_key();
      // Raw device hints half the time: no invalid-node filter at all.
      const StartHints h = rng.chance(1, 2) ? t.manager.hint(key) : t.backend.hint(key);
      pool.emplace_back(std::move(key), h);
    }
  };
  capture_pool();
  std::vector<std::byte> bad_image = garbage_image(rng, t.image_bytes());

  Run run;
  for (std::uint64_t op = 0; op < total_ops; ++op) {
    if (op % kSettlePeriod == 0) t.settle();
    if (op % kPoolPeriod == kPoolPeriod / 2) capture_pool();  // used until the next capture
    if (op % 97 == 0) bad_image = garbage_image(rng, t.image_bytes());

    const auto source = static_cast<Source>(rng.below(kSources));
    ++run.ops[source];
    std::string key;
    StartHints hints;
    switch (source) {
      case kManager:
        key = random_key();
        hints = t.manager.hint(key);
        run.manager_hints_present += hints.primary.present();
        break;
      case kStale: {
        const auto& [k, h] = pool[rng.below(pool.size())];
        key = k;
        hints = h;
        break;
      }
      case kGarbageHints: {
        key = random_key();
        const PageId pages = static_cast<PageId>(t.tree->store().page_count());
        hints = StartHints{garbage_hint(rng, pages), garbage_hint(rng, pages)};
        break;
      }
      case kGarbageImage:
        key = random_key();
        hints = info.hint(bad_image, word_of(key));
        break;
      default:
        key = random_key();
        break;
    }
    if (source == kManager || source == kStale || source == kGarbageImage) {
      run.device_hints_present += hints.primary.present() || hints.secondary.present();
    }
    const StartHints* hp = source == kNoHint ? nullptr : &hints;

    // Phases: grow, churn, shrink (merges), churn.
    const std::uint64_t phase = op * 4 / total_ops;
    const std::uint64_t put_percent = phase == 0 ? 60 : phase == 2 ? 10 : 35;
    const std::uint64_t erase_percent = phase == 0 ? 10 : phase == 2 ? 65 : 35;
    const std::uint64_t dice = rng.below(100);
    if (dice < put_percent) {
      const std::string value = random_value(rng);
      const bool fresh = t.tree->put(key, value, hp);
      const bool want = model.find(key) == model.end();
      model[key] = value;
      if (fresh != want) {
        ++run.mismatches;
        UNSCOPED_INFO("put " << kSourceNames[source] << " op " << op << ": new " << fresh);
      }
    } else if (dice < put_percent + erase_percent) {
      const bool erased = t.tree->erase(key, hp);
      const bool want = model.erase(key) == 1;
      if (erased != want) {
        ++run.mismatches;
        UNSCOPED_INFO("erase " << kSourceNames[source] << " op " << op << ": erased " << erased);
      }
    } else if (dice < 95) {
      std::string got;
      const bool found = t.tree->get(key, &got, hp);
      const auto it = model.find(key);
      if (found != (it != model.end()) || (found && got != it->second)) {
        ++run.mismatches;
        UNSCOPED_INFO("get " << kSourceNames[source] << " op " << op << ": found " << found);
      }
    } else {
      // The hint belongs to the scan's starting key.
      ScanSpec spec;
      spec.direction = rng.chance(1, 2) ? Direction::kForward : Direction::kBackward;
      KeyBound start{key, rng.chance(1, 2)};
      if (spec.direction == Direction::kForward) {
        spec.lower = start;
        if (rng.chance(1, 2)) spec.upper = KeyBound{random_key(), rng.chance(1, 2)};
      } else {
        spec.upper = start;
        if (rng.chance(1, 2)) spec.lower = KeyBound{random_key(), rng.chance(1, 2)};
      }
      const std::size_t limit = 1 + rng.below(60);
      Entries got;
      t.tree->scan(
          spec,
          [&](std::string_view k, std::string_view v) {
            got.emplace_back(std::string(k), std::string(v));
            return got.size() < limit;
          },
          hp);
      ++run.scans;
      if (got != model_scan(model, spec, limit)) {
        ++run.mismatches;
        UNSCOPED_INFO("scan " << kSourceNames[source] << " op " << op << ": " << got.size() << " entries");
      }
    }
    if (op % 5000 == 4999) t.tree->check();
  }

  const forein::TreeStats ts = t.tree->stats();
  std::cout << "  " << info.name << ": " << total_ops << " ops (";
  for (int s = 0; s < kSources; ++s) std::cout << (s ? ", " : "") << kSourceNames[s] << " " << run.ops[s];
  std::cout << "), " << run.scans << " scans; manager hints present " << run.manager_hints_present
            << "; tree hinted " << ts.hinted << " hits " << ts.hint_hits << " secondary "
            << ts.secondary_hits << " fallbacks " << ts.fallbacks << ", height " << t.tree->height()
            << ", " << t.tree->size() << " keys\n";

  CHECK(run.mismatches == 0);
  REQUIRE_NOTHROW(t.tree->check());
  CHECK(t.tree->size() == model.size());
  Entries all;
  t.tree->scan(ScanSpec{}, [&](std::string_view k, std::string_view v) {
    all.emplace_back(std::string(k), std::string(v));
    return true;
  });
  CHECK(all == Entries(model.begin(), model.end()));
  for (int s = 0; s < kSources; ++s) CHECK(run.ops[s] > 0);
  // A backend that declares start hints gives some; one that does not gives none.
  if ((info.capabilities & kStartHints) != 0) {
    CHECK(run.manager_hints_present > 0);
    CHECK(ts.hint_hits > 0);
  } else {
    // Never a hint: from the manager, stale, or from garbage images.
    CHECK(run.manager_hints_present == 0);
    CHECK(run.device_hints_present == 0);
  }
}

}  // namespace

TEST_CASE("conformance: hints never change a result on the engine tree", "[conformance][hints]") {
  const std::uint64_t seed = forein::testing::test_seed("conformance hints");
  const std::uint64_t ops = forein::testing::ops_from_env("FOREIN_CONFORMANCE_OPS", 25000);
  REQUIRE(!conformance_backends().empty());
  std::uint64_t index = 0;
  for (const BackendInfo* info : conformance_backends()) {
    DYNAMIC_SECTION(info->name) {
      run_backend(*info, seed + index, ops);
    }
    ++index;
  }
}
