// The checker of linearizability.h: Porcupine's depth-first search with
// memoization, over KvState.
#include "fpga/linearizability.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <tuple>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace forein::testing::lin {

namespace {

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t entry_hash(std::string_view key, const std::optional<std::string>& value) {
  const std::uint64_t k = std::hash<std::string_view>{}(key);
  const std::uint64_t v =
      value ? std::hash<std::string_view>{}(*value) : 0x5bd1e9955bd1e995ULL;  // tombstone
  return mix(k ^ mix(v + 1));
}

std::string printable(std::string_view s) {
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\') {
      out += c;
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  return out;
}

std::string items_text(const std::vector<KV>& items, bool truncated) {
  constexpr std::size_t kShown = 12;
  std::string out = "{";
  for (std::size_t i = 0; i < items.size() && i < kShown; ++i) {
    if (i > 0) out += ", ";
    out += printable(items[i].key) + "=" + printable(items[i].value);
  }
  if (items.size() > kShown) out += ", ... " + std::to_string(items.size()) + " items";
  out += "}";
  if (truncated) out += " (truncated)";
  return out;
}

// What the model's answer to a SCAN has that the recorded one lacks and
// the other way round.
std::string scan_difference(const std::vector<KV>& model, bool truncated, const Operation& op) {
  if (model.size() <= 12 && op.items.size() <= 12) {
    return "model returns " + items_text(model, op.check_truncated && truncated);
  }
  auto less = [](const KV& a, const KV& b) {
    return std::tie(a.key, a.value) < std::tie(b.key, b.value);
  };
  std::vector<KV> want = model, got = op.items, missing, extra;
  std::sort(want.begin(), want.end(), less);
  std::sort(got.begin(), got.end(), less);
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(),
                      std::back_inserter(missing), less);
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(),
                      std::back_inserter(extra), less);
  std::string out = "model returns " + std::to_string(model.size()) + " items";
  if (!missing.empty()) out += "; not returned: " + items_text(missing, false);
  if (!extra.empty()) out += "; returned, not in the model: " + items_text(extra, false);
  if (op.check_truncated && truncated != op.truncated) {
    out += std::string("; model truncated: ") + (truncated ? "yes" : "no");
  }
  return out;
}

const char* kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kGet: return "GET";
    case OpKind::kScan: return "SCAN";
    case OpKind::kPut: return "PUT";
    case OpKind::kUpdate: return "UPDATE";
    case OpKind::kDelete: return "DELETE";
    case OpKind::kUpsert: return "UPSERT";
  }
  return "?";
}

bool is_read(OpKind kind) { return kind == OpKind::kGet || kind == OpKind::kScan; }

}  // namespace

std::string describe(const Operation& op) {
  std::ostringstream out;
  out << "c" << op.client << " " << kind_name(op.kind) << " ";
  switch (op.kind) {
    case OpKind::kGet:
    case OpKind::kDelete: out << printable(op.key); break;
    case OpKind::kScan:
      out << "[" << printable(op.key) << ", " << printable(op.hi) << "]";
      if (op.max_items != 0) out << " max " << op.max_items;
      break;
    case OpKind::kPut:
    case OpKind::kUpdate:
    case OpKind::kUpsert: out << printable(op.key) << "=" << printable(op.value); break;
  }
  if (op.pending) {
    out << " -> (pending) [" << op.invoke << ", -]";
    return out.str();
  }
  out << " -> ";
  switch (op.kind) {
    case OpKind::kGet: out << (op.found ? printable(*op.found) : std::string("(absent)")); break;
    case OpKind::kScan: out << items_text(op.items, op.check_truncated && op.truncated); break;
    case OpKind::kPut:
    case OpKind::kUpdate:
    case OpKind::kDelete: out << (op.changed ? "true" : "false"); break;
    case OpKind::kUpsert: out << "ok"; break;
  }
  out << " [" << op.invoke << ", " << op.response << "]";
  return out.str();
}

// --- KvState ----------------------------------------------------------------

KvState::KvState(std::shared_ptr<const InitialMap> initial) : initial_(std::move(initial)) {
  if (!initial_) initial_ = std::make_shared<const InitialMap>();
}

const std::string* KvState::get(std::string_view key) const {
  if (auto it = overlay_.find(key); it != overlay_.end()) {
    return it->second ? &*it->second : nullptr;
  }
  if (auto it = initial_->find(key); it != initial_->end()) return &it->second;
  return nullptr;
}

void KvState::set(std::string_view key, std::optional<std::string_view> value) {
  const auto base = initial_->find(key);
  const bool same_as_initial = value ? (base != initial_->end() && base->second == *value)
                                     : base == initial_->end();
  auto it = overlay_.find(key);
  if (it != overlay_.end()) hash_ ^= entry_hash(it->first, it->second);
  if (same_as_initial) {
    if (it != overlay_.end()) overlay_.erase(it);
    return;
  }
  std::optional<std::string> stored;
  if (value) stored.emplace(*value);
  hash_ ^= entry_hash(key, stored);
  if (it != overlay_.end()) {
    it->second = std::move(stored);
  } else {
    overlay_.emplace(std::string(key), std::move(stored));
  }
}

void KvState::scan(std::string_view lo, std::string_view hi, std::size_t max_items,
                   std::vector<KV>* items, bool* truncated) const {
  items->clear();
  *truncated = false;
  // Ks: the largest live key <= lo.
  const std::string* ks = nullptr;
  for (auto o = overlay_.upper_bound(lo); o != overlay_.begin();) {
    --o;
    if (o->second) {
      ks = &o->first;
      break;
    }
  }
  for (auto b = initial_->upper_bound(lo); b != initial_->begin();) {
    --b;
    if (ks != nullptr && b->first <= *ks) break;
    if (overlay_.find(b->first) == overlay_.end()) {
      ks = &b->first;
      break;
    }
  }
  const std::string_view start = ks != nullptr ? std::string_view(*ks) : lo;
  auto bi = initial_->lower_bound(start);
  auto oi = overlay_.lower_bound(start);
  while (bi != initial_->end() || oi != overlay_.end()) {
    const std::string* key;
    const std::string* value;
    if (oi == overlay_.end() || (bi != initial_->end() && bi->first < oi->first)) {
      key = &bi->first;
      value = &bi->second;
      ++bi;
    } else {
      if (bi != initial_->end() && bi->first == oi->first) ++bi;
      key = &oi->first;
      value = oi->second ? &*oi->second : nullptr;
      ++oi;
    }
    if (value == nullptr) continue;
    if (*key > hi) break;
    if (max_items != 0 && items->size() == max_items) {
      *truncated = true;
      break;
    }
    items->push_back({*key, *value});
  }
}

void KvState::apply(Operation& op) {
  const std::string* current = get(op.key);
  switch (op.kind) {
    case OpKind::kGet:
      op.found = current ? std::optional<std::string>(*current) : std::nullopt;
      break;
    case OpKind::kScan: scan(op.key, op.hi, op.max_items, &op.items, &op.truncated); break;
    case OpKind::kPut:
      op.changed = current == nullptr;
      if (op.changed) set(op.key, op.value);
      break;
    case OpKind::kUpdate:
      op.changed = current != nullptr;
      if (op.changed) set(op.key, op.value);
      break;
    case OpKind::kDelete:
      op.changed = current != nullptr;
      if (op.changed) set(op.key, std::nullopt);
      break;
    case OpKind::kUpsert: set(op.key, op.value); break;
  }
}

bool KvState::step(const Operation& op, std::string* why) {
  const std::string* current = get(op.key);
  auto current_text = [&] {
    return current ? printable(op.key) + "=" + printable(*current)
                   : printable(op.key) + " absent";
  };
  switch (op.kind) {
    case OpKind::kGet: {
      if (op.pending) return true;
      const bool ok = current ? (op.found && *op.found == *current) : !op.found;
      if (!ok && why) *why = "model has " + current_text();
      return ok;
    }
    case OpKind::kScan: {
      if (op.pending) return true;
      std::vector<KV> items;
      bool truncated = false;
      scan(op.key, op.hi, op.max_items, &items, &truncated);
      const bool ok = items == op.items && (!op.check_truncated || truncated == op.truncated);
      if (!ok && why) *why = scan_difference(items, truncated, op);
      return ok;
    }
    case OpKind::kPut:
    case OpKind::kUpdate:
    case OpKind::kDelete: {
      const bool changes = (op.kind == OpKind::kPut) == (current == nullptr);
      if (!op.pending && op.changed != changes) {
        if (why) *why = "model has " + current_text() + " (result would be " + (changes ? "true" : "false") + ")";
        return false;
      }
      if (changes) {
        if (op.kind == OpKind::kDelete) {
          set(op.key, std::nullopt);
        } else {
          set(op.key, op.value);
        }
      }
      return true;
    }
    case OpKind::kUpsert: set(op.key, op.value); return true;
  }
  return false;
}

bool KvState::operator==(const KvState& other) const { return overlay_ == other.overlay_; }

std::vector<KV> KvState::items() const {
  std::vector<KV> out;
  bool truncated = false;
  // Everything: scan from the smallest possible key to a key above all.
  std::string top;
  if (!initial_->empty()) top = initial_->rbegin()->first;
  if (!overlay_.empty()) top = std::max(top, overlay_.rbegin()->first);
  scan("", top, 0, &out, &truncated);
  return out;
}

// --- check --------------------------------------------------------------------

namespace {

class Search {
 public:
  Search(const History& history, std::shared_ptr<const InitialMap> initial,
         const CheckOptions& options)
      : history_(history), initial_(std::move(initial)), options_(options) {}

  CheckResult run();

 private:
  struct Frame {
    int entry;
    KvState state;
  };
  struct CacheEntry {
    std::vector<std::uint64_t> bits;
    KvState state;
  };

  void lift(int e) {
    const int r = match_[e];
    remove(e);
    remove(r);
  }
  void unlift(int e) {
    const int r = match_[e];
    restore(r);
    restore(e);
  }
  void remove(int e) {
    next_[prev_[e]] = next_[e];
    if (next_[e] >= 0) prev_[next_[e]] = prev_[e];
  }
  void restore(int e) {
    next_[prev_[e]] = e;
    if (next_[e] >= 0) prev_[next_[e]] = e;
  }
  bool remember(const KvState& state) {
    const std::uint64_t h = bits_hash_ ^ mix(state.hash() + 0x51);
    auto& bucket = cache_[h];
    for (const CacheEntry& c : bucket) {
      if (c.bits == bits_ && c.state == state) return false;
    }
    bucket.push_back({bits_, state});
    ++cache_entries_;
    return true;
  }
  void set_bit(std::size_t j) {
    bits_[j / 64] |= std::uint64_t{1} << (j % 64);
    bits_hash_ ^= op_hash_[j];
  }
  void clear_bit(std::size_t j) {
    bits_[j / 64] &= ~(std::uint64_t{1} << (j % 64));
    bits_hash_ ^= op_hash_[j];
  }
  std::string explain(const std::vector<std::size_t>& prefix, std::vector<std::size_t>* unplaced);

  const History& history_;
  std::shared_ptr<const InitialMap> initial_;
  CheckOptions options_;

  std::vector<std::size_t> ops_;  // local op j -> history index
  // Events 0..2n-1 (op j: call 2j, return 2j+1 before sorting) and the
  // head sentinel; linked in time order.
  std::vector<int> event_op_, match_, prev_, next_;
  std::vector<bool> is_call_;
  int head_ = 0;
  std::vector<std::uint64_t> bits_;
  std::uint64_t bits_hash_ = 0;
  std::vector<std::uint64_t> op_hash_;
  std::unordered_map<std::uint64_t, std::vector<CacheEntry>> cache_;
  std::uint64_t cache_entries_ = 0;
};

CheckResult Search::run() {
  CheckResult result;
  for (std::size_t i = 0; i < history_.size(); ++i) {
    const Operation& op = history_[i];
    if (op.pending && is_read(op.kind)) continue;  // dropped
    if (!op.pending && op.response <= op.invoke) {
      throw std::invalid_argument("linearizability check: response before invocation: " +
                                  describe(op));
    }
    ops_.push_back(i);
  }
  const std::size_t n = ops_.size();
  std::size_t completed = 0;
  for (std::size_t j = 0; j < n; ++j) completed += history_[ops_[j]].pending ? 0 : 1;

  // Events sorted by time; pending responses after everything.
  constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();
  struct Ev {
    std::uint64_t time;
    std::size_t op;
    bool call;
  };
  std::vector<Ev> evs;
  evs.reserve(2 * n);
  for (std::size_t j = 0; j < n; ++j) {
    const Operation& op = history_[ops_[j]];
    evs.push_back({op.invoke, j, true});
    evs.push_back({op.pending ? kNever : op.response, j, false});
  }
  std::stable_sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) {
    if (a.time != b.time) return a.time < b.time;
    return a.call && !b.call;  // equal times (hand-made histories): call first
  });
  const int total = static_cast<int>(2 * n);
  head_ = total;
  event_op_.assign(total + 1, -1);
  match_.assign(total + 1, -1);
  is_call_.assign(total + 1, false);
  prev_.assign(total + 1, -1);
  next_.assign(total + 1, -1);
  std::vector<int> call_of(n, -1);
  for (int e = 0; e < total; ++e) {
    event_op_[e] = static_cast<int>(evs[e].op);
    is_call_[e] = evs[e].call;
    if (evs[e].call) {
      call_of[evs[e].op] = e;
    } else {
      match_[call_of[evs[e].op]] = e;
    }
  }
  // Linked list: head -> 0 -> 1 -> ... -> total-1.
  next_[head_] = total > 0 ? 0 : -1;
  for (int e = 0; e < total; ++e) {
    prev_[e] = e == 0 ? head_ : e - 1;
    next_[e] = e + 1 < total ? e + 1 : -1;
  }
  bits_.assign((n + 63) / 64 + 1, 0);
  std::mt19937_64 rng(0x1234567);
  op_hash_.resize(n);
  for (auto& h : op_hash_) h = rng();

  KvState state(initial_);
  std::vector<Frame> calls;
  std::vector<std::size_t> best;  // local op ids
  std::size_t linearized_completed = 0;
  std::uint64_t steps = 0;
  int entry = next_[head_];
  auto stack_ops = [&] {
    std::vector<std::size_t> out;
    for (const Frame& f : calls) out.push_back(static_cast<std::size_t>(event_op_[f.entry]));
    return out;
  };
  auto to_history = [&](const std::vector<std::size_t>& local) {
    std::vector<std::size_t> out;
    for (std::size_t j : local) out.push_back(ops_[j]);
    return out;
  };

  while (true) {
    if (linearized_completed == completed) {
      result.outcome = CheckResult::Outcome::kLinearizable;
      result.order = to_history(stack_ops());
      break;
    }
    if (++steps > options_.max_steps) {
      result.outcome = CheckResult::Outcome::kUnknown;
      result.order = to_history(best);
      result.explanation = "gave up after " + std::to_string(options_.max_steps) +
                           " steps (longest linearizable prefix " +
                           std::to_string(best.size()) + " operations)";
      break;
    }
    if (entry >= 0 && is_call_[entry]) {
      const std::size_t j = static_cast<std::size_t>(event_op_[entry]);
      const Operation& op = history_[ops_[j]];
      KvState next_state = state;
      if (next_state.step(op)) {
        set_bit(j);
        if (remember(next_state)) {
          calls.push_back({entry, std::move(state)});
          state = std::move(next_state);
          lift(entry);
          if (!op.pending) ++linearized_completed;
          entry = next_[head_];
          continue;
        }
        clear_bit(j);
      }
      entry = next_[entry];
      continue;
    }
    // A response whose operation is not linearized (or the end): backtrack.
    if (calls.size() > best.size() || (best.empty() && calls.empty())) best = stack_ops();
    if (calls.empty()) {
      result.outcome = CheckResult::Outcome::kNotLinearizable;
      break;
    }
    Frame top = std::move(calls.back());
    calls.pop_back();
    const std::size_t j = static_cast<std::size_t>(event_op_[top.entry]);
    state = std::move(top.state);
    clear_bit(j);
    unlift(top.entry);
    if (!history_[ops_[j]].pending) --linearized_completed;
    entry = next_[top.entry];
  }
  result.steps = steps;
  result.cache_entries = cache_entries_;
  if (result.outcome == CheckResult::Outcome::kNotLinearizable) {
    result.order = to_history(best);
    result.explanation = explain(result.order, &result.unplaced);
  }
  return result;
}

std::string Search::explain(const std::vector<std::size_t>& prefix,
                            std::vector<std::size_t>* unplaced) {
  std::ostringstream out;
  std::size_t completed = 0;
  for (std::size_t i : ops_) completed += history_[i].pending ? 0 : 1;
  out << "not linearizable: " << history_.size() << " operations (" << completed
      << " completed); the longest linearizable prefix found has " << prefix.size() << ":\n";
  KvState state(initial_);
  std::vector<bool> placed(history_.size(), false);
  for (std::size_t k = 0; k < prefix.size(); ++k) {
    const Operation& op = history_[prefix[k]];
    out << "  " << (k + 1) << ". " << describe(op) << "\n";
    state.step(op);
    placed[prefix[k]] = true;
  }
  // The first response not placed bounds what can come next.
  std::uint64_t bound = std::numeric_limits<std::uint64_t>::max();
  for (std::size_t i : ops_) {
    if (!placed[i] && !history_[i].pending) bound = std::min(bound, history_[i].response);
  }
  out << "then none of these can come next (the first is the earliest response not placed):\n";
  std::vector<std::size_t> candidates;
  for (std::size_t i : ops_) {
    if (!placed[i] && history_[i].invoke < bound) candidates.push_back(i);
  }
  std::sort(candidates.begin(), candidates.end(), [&](std::size_t a, std::size_t b) {
    const Operation& x = history_[a];
    const Operation& y = history_[b];
    const std::uint64_t rx = x.pending ? std::numeric_limits<std::uint64_t>::max() : x.response;
    const std::uint64_t ry = y.pending ? std::numeric_limits<std::uint64_t>::max() : y.response;
    return rx != ry ? rx < ry : x.invoke < y.invoke;
  });
  for (std::size_t i : candidates) {
    KvState s = state;
    std::string why;
    const bool fits = s.step(history_[i], &why);
    out << "  " << describe(history_[i]) << "    "
        << (fits ? std::string("(fits here, but no linearization follows)") : why) << "\n";
    unplaced->push_back(i);
  }
  return out.str();
}

}  // namespace

CheckResult check(const History& history, std::shared_ptr<const InitialMap> initial,
                  const CheckOptions& options) {
  const bool scans = std::any_of(history.begin(), history.end(),
                                 [](const Operation& op) { return op.kind == OpKind::kScan; });
  if (!options.partition_by_key || scans) {
    Search search(history, std::move(initial), options);
    return search.run();
  }
  std::map<std::string, std::vector<std::size_t>> by_key;
  for (std::size_t i = 0; i < history.size(); ++i) by_key[history[i].key].push_back(i);
  CheckResult all;
  for (const auto& [key, indices] : by_key) {
    History part;
    for (std::size_t i : indices) part.push_back(history[i]);
    Search search(part, initial, options);
    CheckResult r = search.run();
    all.steps += r.steps;
    all.cache_entries += r.cache_entries;
    for (std::size_t& i : r.order) i = indices[i];
    for (std::size_t& i : r.unplaced) i = indices[i];
    if (!r.linearizable()) {
      r.explanation = "key " + printable(key) + ": " + r.explanation;
      r.steps = all.steps;
      r.cache_entries = all.cache_entries;
      return r;
    }
    all.order.insert(all.order.end(), r.order.begin(), r.order.end());
  }
  return all;
}

}  // namespace forein::testing::lin
