#include "sidx_history_check.h"

#include <algorithm>
#include <chrono>
#include <charconv>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "protocol/secondary_index.h"

namespace forein::testing {

namespace {

using net::load::SidxMember;

constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();

bool ok(const HistoryOp& op) { return op.outcome == HistoryOp::Outcome::kOk; }
bool sidx_read(const HistoryOp& op) { return op.sidx && !op.write; }

// A write of one primary key as the rules see it; the preloaded record is
// version 0, invoked and settled at time 0.
struct Write {
  std::uint64_t invoke = 0;
  std::uint64_t settled = 0;  // acknowledged and never resent; else kNever
  std::uint64_t superseded = kNever;  // the first acknowledgement of a write invoked after `settled`
  std::uint32_t version = 0;
  std::uint64_t secondary = 0;
};

bool possibly_current(const Write& w, std::uint64_t r0, std::uint64_t r1) {
  return w.invoke < r1 && w.superseded >= r0;
}

// The history's writes by primary key, with when each is superseded.
class Writes {
 public:
  Writes(const std::vector<HistoryOp>& ops, const SidxRun& run) : run_(run) {
    for (const HistoryOp& op : ops) {
      if (!op.sidx || !op.write || op.version < 0) continue;
      auto& ws = by_key_[op.key];
      if (ws.empty()) ws.push_back(preload(op.key));
      Write w;
      w.invoke = op.invoke_ns;
      w.settled = ok(op) && op.resends == 0 ? op.response_ns : kNever;
      w.version = static_cast<std::uint32_t>(op.version);
      w.secondary = op.secondary;
      ws.push_back(w);
      acks_[op.key];  // every written key has a list, maybe empty
      if (ok(op)) acks_[op.key].push_back({op.invoke_ns, op.response_ns});
      naming_[op.secondary].push_back(op.key);
    }
    for (auto& [key, ws] : by_key_) {
      std::sort(ws.begin(), ws.end(), [](const Write& a, const Write& b) { return a.invoke < b.invoke; });
      // Acknowledged writes by invocation, with the earliest
      // acknowledgement among those invoked at or after each.
      auto& acks = acks_[key];
      std::sort(acks.begin(), acks.end());
      std::vector<std::uint64_t> suffix_min(acks.size() + 1, kNever);
      for (std::size_t k = acks.size(); k-- > 0;) suffix_min[k] = std::min(suffix_min[k + 1], acks[k].second);
      auto& prefix = prefix_max_superseded_[key];
      prefix.assign(1, 0);
      for (Write& w : ws) {
        if (w.settled != kNever) {
          const auto after = std::upper_bound(acks.begin(), acks.end(), std::make_pair(w.settled, kNever));
          w.superseded = suffix_min[static_cast<std::size_t>(after - acks.begin())];
        }
        prefix.push_back(std::max(prefix.back(), w.superseded));
        by_version_.emplace(std::make_pair(key, w.version), &w);
      }
    }
  }

  // The write of key with version, or nullptr.
  const Write* find(std::uint64_t key, std::uint32_t version) {
    const auto it = by_version_.find({key, version});
    if (it != by_version_.end()) return it->second;
    if (version != 0 || key >= run_.keys || by_key_.count(key) != 0) return nullptr;
    unwritten_preload_ = preload(key);
    return &unwritten_preload_;
  }

  // Whether every write of key possibly current during [r0, r1] names j.
  bool all_current_name(std::uint64_t key, std::uint64_t j, std::uint64_t r0, std::uint64_t r1) const {
    const auto it = by_key_.find(key);
    if (it == by_key_.end()) return key < run_.keys && net::secondary_index_of(key, 0, run_.secondary_keys) == j;
    const auto& ws = it->second;
    const auto& prefix = prefix_max_superseded_.at(key);
    // Writes before the first one still possibly current are all
    // superseded by r0: skip them (a hot key has many).
    const auto first = std::lower_bound(prefix.begin() + 1, prefix.end(), r0);
    bool any = false;
    for (std::size_t k = static_cast<std::size_t>(first - prefix.begin()) - 1; k < ws.size() && ws[k].invoke < r1;
         ++k) {
      if (!possibly_current(ws[k], r0, r1)) continue;
      if (ws[k].secondary != j) return false;
      any = true;
    }
    return any;
  }

  // The primary keys some write (the preload included) put under j.
  std::vector<std::uint64_t> keys_naming(std::uint64_t j) {
    if (preloaded_.empty() && run_.keys > 0) {
      preloaded_.resize(run_.secondary_keys);
      for (std::uint64_t i = 0; i < run_.keys; ++i) {
        preloaded_[net::secondary_index_of(i, 0, run_.secondary_keys)].push_back(i);
      }
    }
    std::vector<std::uint64_t> out;
    if (j < preloaded_.size()) out = preloaded_[j];
    if (const auto it = naming_.find(j); it != naming_.end()) out.insert(out.end(), it->second.begin(), it->second.end());
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  const std::unordered_map<std::uint64_t, std::vector<Write>>& by_key() const { return by_key_; }

 private:
  Write preload(std::uint64_t key) const {
    Write w;
    w.secondary = net::secondary_index_of(key, 0, run_.secondary_keys);
    return w;
  }

  struct PairHash {
    std::size_t operator()(const std::pair<std::uint64_t, std::uint32_t>& p) const {
      return std::hash<std::uint64_t>()(p.first * 0x9E3779B97F4A7C15ull ^ p.second);
    }
  };

  SidxRun run_;
  std::unordered_map<std::uint64_t, std::vector<Write>> by_key_;
  std::unordered_map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> acks_;
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> prefix_max_superseded_;
  std::unordered_map<std::pair<std::uint64_t, std::uint32_t>, const Write*, PairHash> by_version_;
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> naming_;
  std::vector<std::vector<std::uint64_t>> preloaded_;
  Write unwritten_preload_;
};

std::string show(const HistoryOp& op) {
  std::string s = net::load::format_history_line(op);
  return s.size() > 160 ? s.substr(0, 157) + "..." : s;
}

// Rule (1) for member m of read R; empty if it holds.
std::string member_problem(Writes& writes, const HistoryOp& R, const SidxMember& m) {
  const std::string what = "key " + std::to_string(m.key) + " version " + std::to_string(m.version);
  const Write* w = writes.find(m.key, m.version);
  if (w == nullptr) return what + ": no write of the key has that version";
  if (w->secondary != R.key) return what + ": that write names secondary key " + std::to_string(w->secondary);
  if (w->invoke >= R.response_ns) return what + ": that write was invoked after the read ended";
  if (w->superseded < R.invoke_ns) {
    return what + ": overwritten (a later write acknowledged at " + std::to_string(w->superseded) +
           ") before the read started";
  }
  return {};
}

bool lists(const HistoryOp& R, std::uint64_t key) {
  return std::any_of(R.members.begin(), R.members.end(), [&](const SidxMember& m) { return m.key == key; });
}

}  // namespace

std::optional<SidxRun> sidx_run_of(const std::string& header) {
  SidxRun run;
  bool keys = false, secondary = false;
  std::istringstream in(header);
  std::string word;
  while (in >> word) {
    const auto eq = word.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = word.substr(0, eq);
    std::uint64_t* out = name == "keys" ? &run.keys : name == "secondary_keys" ? &run.secondary_keys : nullptr;
    if (out == nullptr) continue;
    const char* b = word.data() + eq + 1;
    const char* e = word.data() + word.size();
    const auto [p, ec] = std::from_chars(b, e, *out);
    if (ec != std::errc() || p != e) return std::nullopt;
    (name == "keys" ? keys : secondary) = true;
  }
  if (!keys || !secondary || run.secondary_keys == 0) return std::nullopt;
  return run;
}

bool is_sidx_history(const std::vector<HistoryOp>& ops) {
  return std::any_of(ops.begin(), ops.end(), [](const HistoryOp& op) { return op.sidx; });
}

std::string SidxCheck::summary() const {
  std::ostringstream out;
  out << (ok ? "reads see every acknowledged write" : "VIOLATED (" + std::to_string(violations) + ")") << ": "
      << writes << " writes (" << failed_writes << " failed/pending, " << resent_writes << " resent), " << reads
      << " reads (" << truncated_reads << " truncated), " << members << " members kept, " << required
      << " required members found, " << seconds << " s";
  return out.str();
}

SidxCheck check_sidx_history(const std::vector<HistoryOp>& ops, const SidxRun& run) {
  const auto t0 = std::chrono::steady_clock::now();
  SidxCheck c;
  Writes writes(ops, run);
  auto violation = [&](const HistoryOp& R, const std::string& why) {
    if (++c.violations <= 5) c.explanation += "read " + show(R) + ": " + why + "\n";
  };
  for (const HistoryOp& op : ops) {
    if (!op.sidx) continue;
    if (op.write) {
      ++c.writes;
      if (!ok(op)) ++c.failed_writes;
      if (op.resends > 0) ++c.resent_writes;
      continue;
    }
    if (!ok(op)) continue;  // no answer: no constraint
    ++c.reads;
    if (op.truncated) ++c.truncated_reads;
    c.members += op.members.size();
    for (const SidxMember& m : op.members) {
      if (std::string why = member_problem(writes, op, m); !why.empty()) violation(op, why);
    }
    if (op.truncated) continue;
    for (std::uint64_t i : writes.keys_naming(op.key)) {
      if (!writes.all_current_name(i, op.key, op.invoke_ns, op.response_ns)) continue;
      if (lists(op, i)) {
        ++c.required;
      } else {
        violation(op, "key " + std::to_string(i) +
                          " missing: every write of it that could be current during the read names this secondary key");
      }
    }
  }
  c.ok = c.violations == 0;
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

std::optional<std::string> corrupt_sidx_missing_member(std::vector<HistoryOp>* ops, const SidxRun& run) {
  Writes writes(*ops, run);
  for (const bool truncated : {false, true}) {
    for (HistoryOp& R : *ops) {
      if (!sidx_read(R) || !ok(R) || R.truncated != truncated) continue;
      for (std::size_t m = 0; m < R.members.size(); ++m) {
        const SidxMember member = R.members[m];
        if (!writes.all_current_name(member.key, R.key, R.invoke_ns, R.response_ns)) continue;
        const std::string before = show(R);
        R.members.erase(R.members.begin() + static_cast<std::ptrdiff_t>(m));
        R.truncated = false;
        return "read " + before + " loses member " + std::to_string(member.key) + ":" +
               std::to_string(member.version) + (truncated ? " and is marked all" : "") +
               "; every write of that key that could be current names its secondary key";
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> corrupt_sidx_overwritten_member(std::vector<HistoryOp>* ops, const SidxRun& run) {
  Writes writes(*ops, run);
  // Ok reads by secondary key, by invocation.
  std::unordered_map<std::uint64_t, std::map<std::uint64_t, std::size_t>> reads;
  for (std::size_t r = 0; r < ops->size(); ++r) {
    const HistoryOp& R = (*ops)[r];
    if (sidx_read(R) && ok(R)) reads[R.key].emplace(R.invoke_ns, r);
  }
  std::optional<std::pair<std::uint64_t, Write>> pick;  // the first such write by key, for a stable choice
  std::size_t pick_read = 0;
  for (const auto& [key, ws] : writes.by_key()) {
    for (const Write& w : ws) {
      if (w.superseded == kNever) continue;
      const auto it = reads.find(w.secondary);
      if (it == reads.end()) continue;
      const auto after = it->second.upper_bound(w.superseded);
      if (after == it->second.end()) continue;
      if (!pick || key < pick->first) {
        pick = {key, w};
        pick_read = after->second;
      }
      break;
    }
  }
  if (!pick) return std::nullopt;
  HistoryOp& R = (*ops)[pick_read];
  const std::string before = show(R);
  const SidxMember stale{pick->first, pick->second.version};
  auto it = std::find_if(R.members.begin(), R.members.end(), [&](const SidxMember& m) { return m.key == stale.key; });
  if (it != R.members.end()) {
    *it = stale;
  } else {
    R.members.push_back(stale);
  }
  return "read " + before + " now lists " + std::to_string(stale.key) + ":" + std::to_string(stale.version) +
         ", a write of its secondary key overwritten at " + std::to_string(pick->second.superseded) +
         ", before the read started";
}

std::optional<std::string> corrupt_sidx_unwritten_version(std::vector<HistoryOp>* ops) {
  std::int64_t top = 0;
  for (const HistoryOp& op : *ops) {
    if (op.sidx && op.write) top = std::max(top, op.version);
  }
  for (HistoryOp& R : *ops) {
    if (!sidx_read(R) || !ok(R) || R.members.empty()) continue;
    const std::string before = show(R);
    R.members.front().version = static_cast<std::uint32_t>(top + 1000);
    return "read " + before + " now lists version " + std::to_string(top + 1000) + " of key " +
           std::to_string(R.members.front().key) + ", which no write has";
  }
  return std::nullopt;
}

}  // namespace forein::testing
