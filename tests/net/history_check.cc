#include "history_check.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "fpga/linearizability.h"

namespace forein::testing {

namespace {

bool ok(const HistoryOp& op) { return op.outcome == HistoryOp::Outcome::kOk; }

std::string show(const HistoryOp& op) { return net::load::format_history_line(op); }

}  // namespace

LoadHistory read_history(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("history " + path + ": cannot open");
  LoadHistory h;
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (h.header.empty()) h.header = line.size() > 2 ? line.substr(2) : "";
      continue;
    }
    std::string why;
    auto op = net::load::parse_history_line(line, &why);
    if (!op) throw std::runtime_error("history " + path + ":" + std::to_string(n) + ": " + why);
    h.ops.push_back(*op);
  }
  return h;
}

std::string HistoryCheck::summary() const {
  std::ostringstream out;
  out << (linearizable ? "linearizable" : unknown ? "unknown (search bound)" : "NOT linearizable") << ": " << ops
      << " ops (" << writes << " writes, " << failed_writes << " failed/pending, " << resent_writes << " resent, " << reads << " reads) over "
      << keys << " keys, " << steps << " steps, " << seconds << " s";
  return out.str();
}

HistoryCheck check_history(const std::vector<HistoryOp>& ops, std::uint64_t max_steps) {
  namespace lin = forein::testing::lin;
  HistoryCheck c;
  lin::History h;
  h.reserve(ops.size());
  auto initial = std::make_shared<lin::InitialMap>();
  for (const HistoryOp& op : ops) {
    if (op.sidx) continue;  // secondary-index lines: sidx_history_check.h
    ++c.ops;
    lin::Operation l;
    l.client = static_cast<int>(op.slot);
    l.key = std::to_string(op.key);
    l.invoke = op.invoke_ns;
    // The checker wants response > invoke; ns clocks make them differ.
    l.response = std::max(op.response_ns, op.invoke_ns + 1);
    if (op.write) {
      ++c.writes;
      l.kind = lin::OpKind::kUpsert;
      l.value = std::to_string(op.version);
      l.pending = !ok(op);
      if (l.pending) ++c.failed_writes;
    } else {
      if (!ok(op)) continue;  // no answer: no constraint
      ++c.reads;
      l.kind = lin::OpKind::kGet;
      l.found = op.version == HistoryOp::kBadRecord ? std::string("bad record") : std::to_string(op.version);
    }
    (*initial)[l.key] = "0";
    if (op.write && op.resends > 0) {
      // A resent LOG_APPEND's late copy: the version may come back later.
      ++c.resent_writes;
      lin::Operation again = l;
      again.pending = true;
      h.push_back(std::move(again));
    }
    h.push_back(std::move(l));
  }
  c.keys = initial->size();
  lin::CheckOptions options;
  options.partition_by_key = true;
  options.max_steps = max_steps;
  const auto t0 = std::chrono::steady_clock::now();
  const lin::CheckResult r = lin::check(h, initial, options);
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  c.linearizable = r.linearizable();
  c.unknown = r.outcome == lin::CheckResult::Outcome::kUnknown;
  c.steps = r.steps;
  if (!c.linearizable) c.explanation = r.explanation;
  return c;
}

std::optional<std::string> corrupt_stale_read(std::vector<HistoryOp>* ops) {
  // Per key, the ok writes in invocation order.
  std::map<std::uint64_t, std::vector<std::size_t>> writes;
  for (std::size_t i = 0; i < ops->size(); ++i) {
    if ((*ops)[i].write && ok((*ops)[i])) writes[(*ops)[i].key].push_back(i);
  }
  std::optional<std::size_t> fallback_read;
  auto clean = [&](std::size_t w) { return (*ops)[w].resends == 0; };  // no late copy
  for (std::size_t r = 0; r < ops->size(); ++r) {
    HistoryOp& R = (*ops)[r];
    if (R.write || !ok(R)) continue;
    const auto it = writes.find(R.key);
    if (it == writes.end()) continue;
    // W1 superseded before R: some W2 with W2.invoke > W1.response and
    // W2.response < R.invoke. Take the latest-answered such W1.
    std::optional<std::size_t> best;
    for (std::size_t w1 : it->second) {
      const HistoryOp& W1 = (*ops)[w1];
      if (!clean(w1) || W1.response_ns >= R.invoke_ns || W1.version == R.version) continue;
      const bool superseded = std::any_of(it->second.begin(), it->second.end(), [&](std::size_t w2) {
        const HistoryOp& W2 = (*ops)[w2];
        return W2.invoke_ns > W1.response_ns && W2.response_ns < R.invoke_ns;
      });
      if (superseded && (!best || (*ops)[*best].response_ns < W1.response_ns)) best = w1;
    }
    if (best) {
      const std::string before = show(R);
      R.version = (*ops)[*best].version;
      return "read " + before + " now returns version " + std::to_string(R.version) + " of write " +
             show((*ops)[*best]) + ", superseded before the read was invoked";
    }
    if (!fallback_read && R.version != 0 &&
        std::any_of(it->second.begin(), it->second.end(),
                    [&](std::size_t w) { return (*ops)[w].response_ns < R.invoke_ns; })) {
      fallback_read = r;
    }
  }
  if (fallback_read) {
    HistoryOp& R = (*ops)[*fallback_read];
    const std::string before = show(R);
    R.version = 0;
    return "no write of a read's key was superseded before the read: read " + before +
           " now returns the preloaded version 0, although a write of its key was acknowledged before it";
  }
  return std::nullopt;
}

std::optional<std::string> corrupt_missed_write(std::vector<HistoryOp>* ops) {
  std::map<std::int64_t, std::size_t> by_version;  // ok writes
  for (std::size_t i = 0; i < ops->size(); ++i) {
    if ((*ops)[i].write && ok((*ops)[i])) by_version[(*ops)[i].version] = i;
  }
  for (std::size_t w = 0; w < ops->size(); ++w) {
    HistoryOp& W = (*ops)[w];
    if (!W.write || !ok(W)) continue;
    for (std::size_t r = 0; r < ops->size(); ++r) {
      const HistoryOp& R = (*ops)[r];
      if (R.write || !ok(R) || R.key != W.key || R.version < 0 || R.version == W.version) continue;
      if (!(W.invoke_ns + 1 < R.invoke_ns && R.invoke_ns <= W.response_ns)) continue;
      bool older = R.version == 0;
      if (!older) {
        const auto v = by_version.find(R.version);
        older = v != by_version.end() && (*ops)[v->second].resends == 0 &&
                (*ops)[v->second].response_ns < W.invoke_ns;
      }
      if (!older) continue;
      const std::string before = show(W);
      W.response_ns = R.invoke_ns - 1;
      return "write " + before + " now answered at " + std::to_string(W.response_ns) + ", before read " + show(R) +
             " was invoked; the read returned an older version";
    }
  }
  return std::nullopt;
}

std::optional<std::string> corrupt_unwritten_version(std::vector<HistoryOp>* ops) {
  std::int64_t top = 0;
  for (const HistoryOp& op : *ops) {
    if (op.write) top = std::max(top, op.version);
  }
  for (HistoryOp& R : *ops) {
    if (R.write || !ok(R)) continue;
    const std::string before = show(R);
    R.version = top + 1000;
    return "read " + before + " now returns version " + std::to_string(R.version) + ", which no write has";
  }
  return std::nullopt;
}

}  // namespace forein::testing
