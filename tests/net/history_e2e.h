// For the Switch-delta e2e tests: a temporary directory for forein-load
// --history files, and check_load_history(path): the real run's history
// must be linearizable (history_check.h), and corrupted copies of that
// same history - a stale read (a read given a version superseded before
// it started) and a missed write (a write's acknowledgement moved before
// a read that returned an older version) - must not be: the negative
// controls, showing the check can fail on this run's data.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "history_check.h"

namespace forein::testing {

class HistoryDir {
 public:
  HistoryDir() {
    char dir[] = "/tmp/forein-history-XXXXXX";
    if (::mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = dir;
  }
  ~HistoryDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  HistoryDir(const HistoryDir&) = delete;
  HistoryDir& operator=(const HistoryDir&) = delete;
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The checks above, as Catch assertions; prints one summary line each.
// min_reads: the history must hold at least that many ok reads (a check
// of an empty history proves nothing). extra: operations on the load's
// keys made outside forein-load during its run (a test's own writes, with
// steady_clock/CLOCK_MONOTONIC ns times), part of the history checked.
inline void check_load_history(const std::string& path, std::uint64_t min_reads = 100,
                               const std::vector<HistoryOp>& extra = {}) {
  LoadHistory h = read_history(path);
  h.ops.insert(h.ops.end(), extra.begin(), extra.end());
  const HistoryCheck real = check_history(h.ops);
  std::printf("history %s (%s): %s\n", path.c_str(), h.header.c_str(), real.summary().c_str());
  INFO(real.summary() << "\n" << real.explanation);
  CHECK(real.linearizable);
  CHECK(real.reads >= min_reads);
  CHECK(real.writes >= min_reads);

  auto stale = h.ops;
  std::optional<std::string> why_stale = corrupt_stale_read(&stale);
  if (!why_stale) {
    // No read after an acknowledged write of its key: say so, and give a
    // read a version never written instead.
    std::printf("  stale-read control: no read follows an acknowledged write of its key; a version never "
                "written instead\n");
    why_stale = corrupt_unwritten_version(&stale);
  }
  INFO("stale-read control: " << why_stale.value_or("none found"));
  REQUIRE(why_stale);  // any history with an ok read has one
  const HistoryCheck bad_stale = check_history(stale);
  std::printf("  negative control, %s: %s\n", why_stale->c_str(), bad_stale.summary().c_str());
  CHECK(!bad_stale.linearizable);
  CHECK(!bad_stale.unknown);

  auto missed = h.ops;
  const std::optional<std::string> why_missed = corrupt_missed_write(&missed);
  if (why_missed) {
    const HistoryCheck bad_missed = check_history(missed);
    std::printf("  negative control, %s: %s\n", why_missed->c_str(), bad_missed.summary().c_str());
    INFO("missed-write control: " << *why_missed);
    CHECK(!bad_missed.linearizable);
    CHECK(!bad_missed.unknown);
  } else {
    std::printf("  missed-write control: no read overlapping a write returned an older settled version\n");
  }
}

}  // namespace forein::testing
