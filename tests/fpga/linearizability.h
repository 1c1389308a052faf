// A linearizability checker for ordered key-value stores with Honeycomb's
// semantics (docs/fpga.md; shared/papers/003_a83c9de61e1029db.txt, 3.2-3.5).
//
// Algorithm: Wing & Gong's search as improved by Lowe and by Porcupine
// (Athalye): events (invocations and responses) in time order in a doubly
// linked list; depth-first, linearize any operation whose invocation comes
// before the first pending response (lift it out of the list), backtrack
// when a response is reached with its operation not yet linearized;
// memoize (set of linearized operations, model state) so a configuration
// is explored once.
//
// The sequential model is an ordered map:
//   PUT      inserts only if the key is absent; result: inserted
//   UPDATE   only if present; result: changed
//   DELETE   only if present; result: changed
//   UPSERT   PUT or UPDATE, whichever applies; no result
//   GET      the value or nothing
//   SCAN(lo, hi, max_items): every live item with key in [Ks, hi],
//            ascending, where Ks is the largest live key <= lo (if none,
//            from the first key >= lo); at most max_items (0: all) and
//            `truncated` set when the range held more (compared unless
//            check_truncated is false).
// Model state = an immutable initial map shared by every state + a small
// overlay of differences from it (kept canonical: an entry equal to the
// initial map's is removed), with a hash kept incrementally, so a large
// preloaded store costs nothing per state.
//
// Pending operations (invoked, never returned): writes may be linearized
// anywhere after their invocation or dropped; pending reads are dropped.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace forein::testing::lin {

enum class OpKind : std::uint8_t { kGet, kScan, kPut, kUpdate, kDelete, kUpsert };

struct KV {
  std::string key;
  std::string value;
  bool operator==(const KV&) const = default;
};

struct Operation {
  int client = 0;  // for the explanation only
  OpKind kind = OpKind::kGet;
  std::string key;            // SCAN: lo
  std::string hi;             // SCAN only
  std::string value;          // PUT, UPDATE, UPSERT
  std::size_t max_items = 0;  // SCAN: 0 = no limit
  // Results (ignored while pending).
  bool pending = false;
  bool changed = false;               // PUT, UPDATE, DELETE
  std::optional<std::string> found;   // GET
  std::vector<KV> items;              // SCAN
  bool truncated = false;             // SCAN
  bool check_truncated = true;        // SCAN
  // Times from one global counter (Clock): taken before the call and after
  // it returned / completed.
  std::uint64_t invoke = 0;
  std::uint64_t response = 0;
};

using History = std::vector<Operation>;
using InitialMap = std::map<std::string, std::string, std::less<>>;

// The global counter for invoke/response times.
class Clock {
 public:
  std::uint64_t now() { return now_.fetch_add(1, std::memory_order_seq_cst) + 1; }

 private:
  std::atomic<std::uint64_t> now_{0};
};

// One state of the sequential model.
class KvState {
 public:
  explicit KvState(std::shared_ptr<const InitialMap> initial);

  const std::string* get(std::string_view key) const;  // null: absent
  void set(std::string_view key, std::optional<std::string_view> value);
  void scan(std::string_view lo, std::string_view hi, std::size_t max_items,
            std::vector<KV>* items, bool* truncated) const;

  // Applies `op` and fills its results as the model would.
  void apply(Operation& op);
  // Whether `op`'s recorded results are what the model gives from this
  // state (a pending write accepts any result); if so, applies it.
  // `why` (may be null) gets the model's answer on a mismatch.
  bool step(const Operation& op, std::string* why = nullptr);

  std::uint64_t hash() const { return hash_; }
  std::size_t overlay_size() const { return overlay_.size(); }
  bool operator==(const KvState& other) const;  // same initial map assumed
  std::vector<KV> items() const;                // every live item (tests)

 private:
  using Overlay = std::map<std::string, std::optional<std::string>, std::less<>>;
  std::shared_ptr<const InitialMap> initial_;
  Overlay overlay_;  // differences from *initial_ (nullopt: deleted)
  std::uint64_t hash_ = 0;
};

struct CheckOptions {
  // Give up (outcome kUnknown) after this many model steps.
  std::uint64_t max_steps = 20'000'000;
  // With no SCAN in the history, check each key's operations on their own
  // (linearizability is local: Herlihy & Wing). `order` is then the keys'
  // linearizations one after another, not one order of the whole history.
  bool partition_by_key = false;
};

struct CheckResult {
  enum class Outcome { kLinearizable, kNotLinearizable, kUnknown };
  Outcome outcome = Outcome::kLinearizable;
  bool linearizable() const { return outcome == Outcome::kLinearizable; }
  // kLinearizable: a linearization (indices into the history; pending
  // operations left out were dropped). Otherwise the longest linearizable
  // prefix found.
  std::vector<std::size_t> order;
  // Otherwise: the operations that could come next after that prefix (the
  // first response not linearized and every operation invoked before it)
  // and none of which leads to a linearization.
  std::vector<std::size_t> unplaced;
  std::string explanation;  // readable: prefix, model state, unplaced ops
  std::uint64_t steps = 0;
  std::uint64_t cache_entries = 0;
};

CheckResult check(const History& history, std::shared_ptr<const InitialMap> initial,
                  const CheckOptions& options = {});

// "c2 PUT k=v -> true [5,9]" and the like.
std::string describe(const Operation& op);

}  // namespace forein::testing::lin
