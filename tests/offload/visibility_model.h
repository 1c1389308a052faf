// A model of Switch-delta's whole protocol (paper 002, III-A, III-B, III-E)
// around the real switch_visibility VisibilityTable, for exhaustive
// (breadth-first, with state hashing) and random-walk exploration in
// tests/offload/test_switch_visibility_model.cc. Test code only.
//
// Actors:
//   data node      one timestamp counter per slot (keys sharing a slot
//                  share it, III-B); a log of (key, ts) entries; location =
//                  log index + 1 (the metadata a write carries);
//   switch         the VisibilityTable (or a deliberately wrong variant);
//   metadata node  key -> (location, ts), applied only if ts is newer;
//                  after applying an async copy it sends CLEAR(slot, ts);
//                  the switch acknowledges every CLEAR (CLEAR_ACK); a
//                  catch-up step after a timeout applies the log entries it
//                  has not applied (once their write reply has passed the
//                  switch: the timeout, 100 RTTs in the paper, III-E, is
//                  longer than a round trip) and sends their CLEARs, and
//                  re-sends a CLEAR whose acknowledgement is lost; a held
//                  META_PUT reply comes back to it carrying the slot's
//                  CurTs: it sends CLEAR for that entry if it has applied
//                  it (and no CLEAR for it is outstanding) and resends the
//                  reply;
//   several metadata nodes (Config::metadata_nodes, KeyDef::owner): each
//                  key has one owner, which alone receives its META_ASYNC,
//                  META_PUT, META_GET and held replies and applies it; each
//                  node catches up on its own (a step per node), and
//                  applies and CLEARs only entries of keys it owns; a held
//                  reply makes it CLEAR only an entry of its own keys (the
//                  clearing rule, docs/network.md "Several metadata
//                  nodes"). The metadata state (meta_loc/meta_ts per key)
//                  is the owner's;
//   clients        each runs a script of writes and reads, one at a time.
//                  Write: LOG_APPEND -> the reply passes the switch: stored
//                  => committed (and a META_ASYNC copy goes to the metadata
//                  node); otherwise phase 2: META_PUT -> its reply passes
//                  the switch: released => committed, held => bounced to
//                  the metadata node. Read: META_GET passes the switch
//                  (valid slot with the key's fingerprint => its location),
//                  else the metadata node answers; then LOG_READ at the
//                  data node checks the key: mismatch => retry.
// A message passing the switch and arriving at the client is one step (the
// commit point is then as early as it can be, which only makes check 1
// stricter). Messages in flight are a multiset: any one may be delivered
// next (reordering everywhere). Faults, within budgets: drop or duplicate
// a META_ASYNC copy or a CLEAR.
//
// Checks:
//   1 a read never returns a write older (by timestamp) than the newest
//     write of that key committed before the read started (kStaleRead);
//     and, stronger (kNonMonotonicRead, reported on its own), nor older
//     than what a read of that key that completed before it started
//     returned;
//   2 in a terminal state (nothing in flight, every client done, nothing to
//     catch up), the metadata node holds every key's newest committed write;
//   3 in a terminal state no slot is valid; and from every reachable state
//     a terminal state is reachable (a held reply is eventually released);
//   4 a valid slot is never overwritten by a data-write reply.
//
// Partial writes (section III-C; KeyDef::set): a set key's entry is a set
// of members, as a secondary key's list of primary keys (section VI-B);
// each write of it adds one member, named by its log entry (a primary key
// written once: one moving between secondary keys, and the client's
// validation of such moves, are not modelled), with a timestamp from the
// slot's counter (the product's data node has one counter for all writes:
// the same order within a slot, which is all the table compares). The
// write's reply is stored in the switch as a partial entry under the rules
// of a full write (on_write_reply(..., partial = true): only in an empty
// slot with ts > MaxTs, else phase 2, held while an older write sits in
// the slot); the metadata node adds a member it applies (copy, META_PUT,
// catch-up, sync) to the key's set. A read of a set key (SIDX_READ) passes
// the switch: if on_partial_read() hits, the partial entry rides along to
// the metadata node, which merges it into the set and answers the whole
// set (its catch-up record is untouched: the attached entry names no log
// position, so the copy or the catch-up still applies and CLEARs it);
// else the node answers its set. The answer goes straight to the client
// (recheck_read_reply plays no part). Checks, in place of 1 and 2:
//   1s a read's set holds every member committed before the read started
//      (kMissingMember) and only members written to that key
//      (kPhantomMember); and (kNonMonotonicRead) every member a read of
//      the key completed before it started returned;
//   2s in a terminal state the metadata node's set holds every committed
//      member (kLostWrite).
// One metadata node only (the product's --secondary-index needs --shard
// 1/1), at most 8 writes in all (a set is a byte of log-entry bits).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "forein/switch_visibility/visibility_table.h"

namespace forein::testing::visibility_model {

using offload::switch_visibility::SlotState;
using offload::switch_visibility::VisibilityTable;
using offload::switch_visibility::WriteOutcome;

// Deliberate bugs, so the checker is shown to catch them.
enum class Variant : std::uint8_t {
  kCorrect,
  kOverwriteValid,   // table: a newer reply overwrites a valid slot
  kClearIgnoresTs,   // table: CLEAR clears a valid slot whatever its CurTs
  kReleaseAlways,    // table: fallback replies are never held
  kNoCatchUp,        // metadata node: no catch-up after a timeout
  kTooLargeKeepsMax,  // table: kTooLarge leaves MaxTs as it was
  kForeignCatchUp,   // several metadata nodes: a node's catch-up also CLEARs entries of keys another node
                     // owns (applied only in its own index, which never answers those keys)
  kForeignBounce,    // several metadata nodes: a held reply makes its node CLEAR the slot's entry of another
                     // node's key (its log cursor has passed it) whether or not the owner applied it
  kRestartNoSync,    // switch restart: the new switch serves at once, no metadata node syncs first
  kRestartNoEpoch,   // switch restart: a write reply of a request the old switch forwarded may be stored
  kPartialAnswered,  // partial writes: the switch answers a set read from the partial slot alone
  kPartialOverwrite, // partial writes: a newer partial write of the same fingerprint overwrites a valid partial slot
  kPartialNoApply,   // partial writes: the metadata node answers a set read without merging the attached entry
  kPartialMarksApplied,  // partial writes: the merge of an attached entry counts as applying it (catch-up skips it)
};

enum Kind : int {
  kStaleRead,        // check 1: older than a write committed before the read
  kNonMonotonicRead, // check 1: older than a read completed before the read
  kLostWrite,        // check 2
  kSlotLeftValid,    // check 3, terminal state
  kNoWayOut,         // check 3: a state from which no terminal state is reachable
  kStuck,            // a terminal state with a client not done
  kOverwrite,        // check 4
  kMissingMember,    // check 1s: a set read misses a member committed before it started
  kPhantomMember,    // check 1s: a set read returns a member never written to its key
  kKinds,
};

inline const char* kind_name(int k) {
  static const char* names[] = {"stale read",     "non-monotonic read", "lost write", "slot left valid",
                                "no way out",     "stuck",              "valid slot overwritten",
                                "missing member", "phantom member"};
  return names[k];
}

struct KeyDef {
  std::uint16_t slot = 0;
  std::uint32_t fingerprint = 0;
  std::uint8_t owner = 0;  // the metadata node owning the key (< Config::metadata_nodes)
  bool set = false;        // a set key: partial writes add members (III-C)
};

struct Op {
  bool write = false;
  std::uint8_t key = 0;
  bool large = false;  // a write whose metadata is over the slot's bytes
};

struct Config {
  std::string name;
  std::vector<KeyDef> keys;
  std::vector<std::vector<Op>> clients;
  int drops = 0;       // META_ASYNC or CLEAR messages dropped, at most
  int duplicates = 0;  // META_ASYNC or CLEAR messages duplicated, at most
  Variant variant = Variant::kCorrect;
  std::uint32_t table_slots = 2;
  std::size_t max_metadata = 4;
  // The metadata node's answer to a read passes the switch on its way back,
  // and the switch answers from the slot if it is valid with the key's
  // fingerprint (not in the paper; see the monotonic-read test).
  bool recheck_read_reply = false;
  // Metadata nodes; each key's owner is KeyDef::owner.
  std::uint8_t metadata_nodes = 1;
  // Switch restarts, at most (switch-crash recovery, docs/network.md): the
  // table reset (MaxTs 0), the META_ASYNC copies and CLEARs in flight lost,
  // other messages delayed across it (they pass the new switch); a new
  // epoch; the switch recovering (no reply stored, reads wait) until every
  // metadata node's sync step (every log entry of its keys applied).
  int restarts = 0;
};

inline Op W(std::uint8_t key, bool large = false) { return Op{true, key, large}; }
inline Op R(std::uint8_t key) { return Op{false, key, false}; }

enum MsgType : std::uint8_t {
  kLogAppend,   // client -> data node: c, a = key
  kWriteReply,  // data node -> switch -> client: c, a = entry
  kMetaAsync,   // switch -> metadata node: a = entry
  kClear,       // metadata node -> switch: a = entry
  kClearAck,    // switch -> metadata node: a = entry
  kMetaPut,     // client -> metadata node: c, a = entry
  kPutReply,    // metadata node -> switch -> client: c, a = entry
  kBounce,      // switch -> metadata node (held reply): c, a = entry, b = the slot's CurTs
  kMetaGet,     // client -> switch: c, a = key
  kMnGet,       // switch -> metadata node: c, a = key
  kLogRead,     // -> data node -> client: c, a = key, b = location
  kMnReply,     // metadata node -> switch (recheck_read_reply only): c, a = key, b = location
  kSidxRead,    // client -> switch, a set key: c, a = key
  kMnSidx,      // switch -> metadata node: c, a = key, b = the attached partial entry + 1 (0: none)
};

inline constexpr std::uint8_t kNoEpoch = 0xFF;  // a LOG_APPEND forwarded while the switch recovers

struct Msg {
  std::uint8_t type = 0, c = 0, a = 0, b = 0;
  auto operator<=>(const Msg&) const = default;
};

inline constexpr std::uint8_t kSlotFull = 1, kSlotPartial = 2;  // Slot::valid

struct Slot {
  std::uint8_t valid = 0;  // 0 empty, kSlotFull, kSlotPartial
  std::uint32_t fp = 0, cur = 0, max = 0;
  std::uint8_t meta = 0;  // location stored (entry + 1); 0 for empty metadata
  bool operator==(const Slot&) const = default;
};

struct Entry {
  std::uint8_t key = 0, ts = 0;
  std::uint8_t seen = 0;     // its write reply has passed the switch
  std::uint8_t applied = 0;  // the metadata node applied it
  std::uint8_t clear = 0;    // metadata node's CLEAR: 0 none, 1 sent and not acknowledged, 2 acknowledged
  std::uint8_t foreign = 0;  // kForeignCatchUp: a node not owning the key sent a CLEAR for it
};

struct Client {
  std::uint8_t pc = 0;     // next op
  std::uint8_t busy = 0;   // an op in progress
  std::uint8_t floor_commit = 0, floor_read = 0;  // a read's floors, taken when it started
  std::uint8_t floor_set = 0, floor_read_set = 0;  // a set read's: committed members, members read
};

struct State {
  std::vector<Slot> slots;
  std::vector<std::uint8_t> ts_counter;  // per slot
  std::vector<Entry> log;
  std::vector<std::uint8_t> meta_loc, meta_ts;  // metadata node, per key
  std::vector<std::uint8_t> committed_ts;       // ghost: newest committed write's ts, per key
  std::vector<std::uint8_t> read_ts;            // ghost: newest ts a completed read returned, per key
  // Set keys, a bit per log entry: the metadata node's set; ghosts: the
  // committed members, the members completed reads returned.
  std::vector<std::uint8_t> meta_set, committed_set, read_set;
  std::vector<Client> clients;
  std::vector<Msg> msgs;  // sorted: a multiset
  std::uint8_t drops = 0, duplicates = 0;  // used
  std::uint8_t restarts = 0;    // used; also the switch's epoch
  std::uint8_t recovering = 0;  // the switch waits for the metadata nodes' sync steps
  std::uint8_t synced = 0;      // bit n: metadata node n synced for this epoch

  std::string encode() const {
    std::string s;
    auto put = [&](const void* p, std::size_t n) { s.append(static_cast<const char*>(p), n); };
    for (const Slot& x : slots) {
      put(&x.valid, 1);
      put(&x.fp, 4);
      put(&x.cur, 4);
      put(&x.max, 4);
      put(&x.meta, 1);
    }
    put(ts_counter.data(), ts_counter.size());
    s.push_back(static_cast<char>(log.size()));
    for (const Entry& e : log) put(&e, sizeof e);
    put(meta_loc.data(), meta_loc.size());
    put(meta_ts.data(), meta_ts.size());
    put(committed_ts.data(), committed_ts.size());
    put(read_ts.data(), read_ts.size());
    put(meta_set.data(), meta_set.size());
    put(committed_set.data(), committed_set.size());
    put(read_set.data(), read_set.size());
    for (const Client& c : clients) put(&c, sizeof c);
    s.push_back(static_cast<char>(msgs.size()));
    for (const Msg& m : msgs) put(&m, sizeof m);
    s.push_back(static_cast<char>(drops));
    s.push_back(static_cast<char>(duplicates));
    s.push_back(static_cast<char>(restarts));
    s.push_back(static_cast<char>(recovering));
    s.push_back(static_cast<char>(synced));
    return s;
  }
};

struct Finding {
  int kind = 0;
  std::string what;
  std::vector<std::string> trace;
};

// The protocol: successors of a state, with the checks on each transition.
class Protocol {
 public:
  explicit Protocol(Config config) : cfg_(std::move(config)), table_(cfg_.table_slots, cfg_.max_metadata) {
    for (const KeyDef& k : cfg_.keys) {
      if (k.owner >= cfg_.metadata_nodes) throw std::invalid_argument("visibility model: a key's owner is not a node");
    }
    if (std::any_of(cfg_.keys.begin(), cfg_.keys.end(), [](const KeyDef& k) { return k.set; })) {
      if (cfg_.metadata_nodes != 1) throw std::invalid_argument("visibility model: set keys need one metadata node");
      std::size_t writes = 0;
      for (const auto& script : cfg_.clients) {
        writes += static_cast<std::size_t>(
            std::count_if(script.begin(), script.end(), [](const Op& o) { return o.write; }));
      }
      if (writes > 8) throw std::invalid_argument("visibility model: set keys allow at most 8 writes (a byte of bits)");
    }
  }

  const Config& config() const { return cfg_; }

  State initial() const {
    State s;
    s.slots.assign(cfg_.table_slots, Slot{});
    s.ts_counter.assign(cfg_.table_slots, 0);
    const std::size_t k = cfg_.keys.size();
    s.meta_loc.assign(k, 0);
    s.meta_ts.assign(k, 0);
    s.committed_ts.assign(k, 0);
    s.read_ts.assign(k, 0);
    s.meta_set.assign(k, 0);
    s.committed_set.assign(k, 0);
    s.read_set.assign(k, 0);
    s.clients.assign(cfg_.clients.size(), Client{});
    return s;
  }

  struct Step {
    State next;
    std::string label;
    std::vector<std::pair<int, std::string>> violations;
  };

  // Every enabled step.
  std::vector<Step> successors(const State& s) {
    std::vector<Step> out;
    // Clients start their next op.
    for (std::size_t c = 0; c < s.clients.size(); ++c) {
      const Client& cl = s.clients[c];
      if (cl.busy || cl.pc >= cfg_.clients[c].size()) continue;
      const Op& op = cfg_.clients[c][cl.pc];
      Step st{s, "", {}};
      Client& n = st.next.clients[c];
      n.busy = 1;
      if (op.write) {
        // b: the switch's epoch (none while it recovers: such a write may be
        // in the log before the sync step applies it, its reply is never stored).
        send(st.next, Msg{kLogAppend, u8(c), op.key, s.recovering ? kNoEpoch : s.restarts});
        st.label = "client " + std::to_string(c) + " writes " + key_name(op.key) + (op.large ? " (large)" : "");
      } else if (cfg_.keys[op.key].set) {
        n.floor_set = s.committed_set[op.key];
        n.floor_read_set = s.read_set[op.key];
        send(st.next, Msg{kSidxRead, u8(c), op.key, 0});
        st.label = "client " + std::to_string(c) + " reads set " + key_name(op.key);
      } else {
        n.floor_commit = s.committed_ts[op.key];
        n.floor_read = s.read_ts[op.key];
        send(st.next, Msg{kMetaGet, u8(c), op.key, 0});
        st.label = "client " + std::to_string(c) + " reads " + key_name(op.key);
      }
      out.push_back(std::move(st));
    }
    // Deliver any message in flight (each distinct one once).
    for (std::size_t i = 0; i < s.msgs.size(); ++i) {
      if (i > 0 && s.msgs[i] == s.msgs[i - 1]) continue;
      // A recovering switch drops reads; the client retries (here: the
      // read waits until the switch has recovered).
      if (s.recovering && (s.msgs[i].type == kMetaGet || s.msgs[i].type == kSidxRead)) continue;
      Step st{s, "", {}};
      st.next.msgs.erase(st.next.msgs.begin() + static_cast<std::ptrdiff_t>(i));
      deliver(st, s.msgs[i]);
      out.push_back(std::move(st));
    }
    // Faults on the asynchronous path.
    for (std::size_t i = 0; i < s.msgs.size(); ++i) {
      if (i > 0 && s.msgs[i] == s.msgs[i - 1]) continue;
      const Msg m = s.msgs[i];
      if (m.type != kMetaAsync && m.type != kClear) continue;
      if (s.drops < cfg_.drops) {
        Step st{s, "drop " + msg_name(m), {}};
        st.next.msgs.erase(st.next.msgs.begin() + static_cast<std::ptrdiff_t>(i));
        ++st.next.drops;
        out.push_back(std::move(st));
      }
      if (s.duplicates < cfg_.duplicates) {
        Step st{s, "duplicate " + msg_name(m), {}};
        send(st.next, m);
        ++st.next.duplicates;
        out.push_back(std::move(st));
      }
    }
    // The switch restarts (within the budget).
    if (s.restarts < cfg_.restarts) {
      Step st{s, "switch restarts (table empty, copies and CLEARs in flight lost)", {}};
      State& n = st.next;
      ++n.restarts;
      n.slots.assign(cfg_.table_slots, Slot{});
      std::erase_if(n.msgs, [](const Msg& m) { return m.type == kMetaAsync || m.type == kClear || m.type == kClearAck; });
      n.recovering = cfg_.variant == Variant::kRestartNoSync ? 0 : 1;
      n.synced = 0;
      out.push_back(std::move(st));
    }
    // Each metadata node's sync step with the recovering switch: every log
    // entry of its keys applied, then it counts as synced.
    for (std::uint8_t n = 0; n < cfg_.metadata_nodes && s.recovering; ++n) {
      if ((s.synced >> n & 1) != 0) continue;
      Step st{s, "metadata node " + std::to_string(n) + " syncs with the new switch", {}};
      State& x = st.next;
      for (std::size_t e = 0; e < x.log.size(); ++e) {
        if (owner(x.log[e].key) == n && !x.log[e].applied) apply(x, e);
      }
      x.synced = static_cast<std::uint8_t>(x.synced | 1u << n);
      if (x.synced == (1u << cfg_.metadata_nodes) - 1) {
        x.recovering = 0;
        st.label += "; the switch has recovered";
      }
      out.push_back(std::move(st));
    }
    // Each metadata node's catch-up after a timeout.
    for (std::uint8_t n = 0; n < cfg_.metadata_nodes; ++n) {
      if (cfg_.variant == Variant::kNoCatchUp || !catch_up_due(s, n)) continue;
      Step st{s, cfg_.metadata_nodes == 1 ? "metadata node catches up (timeout)"
                                          : "metadata node " + std::to_string(n) + " catches up (timeout)",
              {}};
      catch_up(st.next, n);
      out.push_back(std::move(st));
    }
    return out;
  }

  // Checks 2 and 3 (first part) on a state with no successor.
  std::vector<std::pair<int, std::string>> terminal_checks(const State& s) const {
    std::vector<std::pair<int, std::string>> v;
    for (std::size_t c = 0; c < s.clients.size(); ++c) {
      if (s.clients[c].busy || s.clients[c].pc < cfg_.clients[c].size()) {
        v.emplace_back(kStuck, "client " + std::to_string(c) + " never finishes");
      }
    }
    for (std::size_t k = 0; k < cfg_.keys.size(); ++k) {
      if (cfg_.keys[k].set) {
        const auto lost = static_cast<std::uint8_t>(s.committed_set[k] & ~s.meta_set[k]);
        if (lost != 0) {
          v.emplace_back(kLostWrite, "metadata node's set of " + key_name(static_cast<std::uint8_t>(k)) +
                                         " lacks committed members " + members(lost));
        }
        continue;
      }
      if (s.meta_ts[k] != s.committed_ts[k]) {
        v.emplace_back(kLostWrite, "metadata node holds ts " + std::to_string(s.meta_ts[k]) + " for " +
                                       key_name(static_cast<std::uint8_t>(k)) + ", newest committed ts " +
                                       std::to_string(s.committed_ts[k]));
      }
    }
    for (std::size_t i = 0; i < s.slots.size(); ++i) {
      if (s.slots[i].valid) {
        v.emplace_back(kSlotLeftValid, "slot " + std::to_string(i) + " still valid (CurTs " +
                                           std::to_string(s.slots[i].cur) + ")");
      }
    }
    return v;
  }

  std::string describe(const State& s) const {
    std::ostringstream o;
    o << "slots:";
    for (const Slot& x : s.slots) {
      o << " [" << (x.valid == kSlotPartial ? "partial" : x.valid ? "valid" : "empty") << " fp " << x.fp << " cur "
        << x.cur << " max " << x.max
        << " loc " << int(x.meta) << "]";
    }
    o << "; log:";
    for (std::size_t e = 0; e < s.log.size(); ++e) {
      o << " " << e + 1 << "=" << key_name(s.log[e].key) << "@" << int(s.log[e].ts) << (s.log[e].applied ? "a" : "")
        << "c" << int(s.log[e].clear);
    }
    o << "; metadata node:";
    for (std::size_t k = 0; k < s.meta_loc.size(); ++k) {
      o << " " << key_name(static_cast<std::uint8_t>(k));
      if (cfg_.keys[k].set) {
        o << "->" << members(s.meta_set[k]);
      } else {
        o << "->" << int(s.meta_loc[k]) << "@" << int(s.meta_ts[k]);
      }
    }
    o << "; in flight:";
    for (const Msg& m : s.msgs) o << " " << msg_name(m);
    return o.str();
  }

 private:
  static std::uint8_t u8(std::size_t v) { return static_cast<std::uint8_t>(v); }

  std::string key_name(std::uint8_t k) const { return std::string(1, static_cast<char>('A' + k)); }

  // A set of members (log-entry bits) as {e1,e3}.
  static std::string members(std::uint8_t set) {
    std::string s = "{";
    for (int e = 0; e < 8; ++e) {
      if ((set >> e & 1) == 0) continue;
      if (s.size() > 1) s += ",";
      s += "e" + std::to_string(e + 1);
    }
    return s + "}";
  }

  std::string msg_name(const Msg& m) const {
    static const char* names[] = {"LOG_APPEND", "WRITE_REPLY", "META_ASYNC", "CLEAR",    "CLEAR_ACK", "META_PUT",
                                  "PUT_REPLY",  "BOUNCE",      "META_GET",   "MN_GET",   "LOG_READ",  "MN_REPLY",
                                  "SIDX_READ",  "MN_SIDX"};
    std::string s = names[m.type];
    s += "(";
    switch (m.type) {
      case kLogAppend:
      case kMetaGet:
      case kSidxRead:
      case kMnGet: s += "c" + std::to_string(m.c) + "," + key_name(m.a); break;
      case kMetaAsync:
      case kClear:
      case kClearAck: s += "e" + std::to_string(m.a + 1); break;
      case kBounce: s += "c" + std::to_string(m.c) + ",e" + std::to_string(m.a + 1) + ",cur" + std::to_string(m.b); break;
      case kLogRead:
      case kMnReply: s += "c" + std::to_string(m.c) + "," + key_name(m.a) + ",loc" + std::to_string(m.b); break;
      case kMnSidx:
        s += "c" + std::to_string(m.c) + "," + key_name(m.a) + (m.b != 0 ? ",+e" + std::to_string(m.b) : "");
        break;
      default: s += "c" + std::to_string(m.c) + ",e" + std::to_string(m.a + 1); break;
    }
    return s + ")";
  }

  static void send(State& s, Msg m) { s.msgs.insert(std::upper_bound(s.msgs.begin(), s.msgs.end(), m), m); }

  std::uint16_t slot_of_key(std::uint8_t k) const { return cfg_.keys[k].slot; }
  std::size_t slot_index(std::uint16_t slot) const { return slot % cfg_.table_slots; }

  // ---- the switch: the real table, loaded with the state's registers ----

  // Loads s.slots into the real table through its own rules only.
  void load(const State& s) {
    table_.reset();
    for (std::size_t i = 0; i < s.slots.size(); ++i) {
      const Slot& x = s.slots[i];
      const auto slot = static_cast<std::uint16_t>(i);
      const std::byte m{x.meta};
      const std::span<const std::byte> meta = x.meta != 0 ? std::span<const std::byte>(&m, 1) : std::span<const std::byte>{};
      if (x.valid) {
        (void)table_.on_write_reply(slot, x.fp, x.cur, meta, x.valid == kSlotPartial);
        if (x.max > x.cur) (void)table_.on_write_reply(slot, ~x.fp, x.max, {});
      } else if (x.max > 0) {
        (void)table_.on_write_reply(slot, x.fp, x.max, meta);
        (void)table_.on_clear(slot, x.max);
        // CurTs of an empty slot is not part of the rules; keep the state's.
      }
    }
  }

  void store(State& s) const {
    for (std::size_t i = 0; i < s.slots.size(); ++i) {
      const SlotState t = table_.slot(static_cast<std::uint16_t>(i));
      Slot& x = s.slots[i];
      x.valid = !t.valid ? 0 : t.partial ? kSlotPartial : kSlotFull;
      x.max = t.max_ts;
      if (t.valid) {
        x.fp = t.fingerprint;
        x.cur = t.cur_ts;
        x.meta = t.metadata.empty() ? 0 : static_cast<std::uint8_t>(t.metadata[0]);
      } else {
        // Canonical empty slot: only MaxTs matters to the rules.
        x.fp = 0;
        x.cur = 0;
        x.meta = 0;
      }
    }
  }

  WriteOutcome switch_write(State& s, std::uint16_t slot, std::uint32_t fp, std::uint32_t ts, std::uint8_t loc,
                            bool large, bool partial, std::vector<std::pair<int, std::string>>& v) {
    const std::size_t i = slot_index(slot);
    const Slot before = s.slots[i];
    WriteOutcome r;
    if (cfg_.variant == Variant::kPartialOverwrite && partial && !large && before.valid == kSlotPartial &&
        before.fp == fp && ts > before.max) {
      s.slots[i] = Slot{kSlotPartial, fp, ts, ts, loc};  // the wrong rule: the older member leaves the switch
      r = WriteOutcome::kStored;
    } else if (cfg_.variant == Variant::kOverwriteValid && !large) {
      Slot& x = s.slots[i];
      if (ts > x.max) {
        x = Slot{1, fp, ts, ts, loc};
        r = WriteOutcome::kStored;
      } else {
        r = WriteOutcome::kStale;
      }
    } else {
      load(s);
      std::vector<std::byte> meta(large ? cfg_.max_metadata + 1 : 1, std::byte{loc});
      r = table_.on_write_reply(slot, fp, ts, meta, partial);
      store(s);
      if (r == WriteOutcome::kTooLarge && cfg_.variant == Variant::kTooLargeKeepsMax) s.slots[i].max = before.max;
    }
    if (r == WriteOutcome::kStored && before.valid) {
      v.emplace_back(kOverwrite, "a write reply with ts " + std::to_string(ts) + " overwrote valid slot " +
                                     std::to_string(i) + " (CurTs " + std::to_string(before.cur) + ")");
    }
    return r;
  }

  void switch_clear(State& s, std::uint16_t slot, std::uint32_t ts) {
    const std::size_t i = slot_index(slot);
    if (cfg_.variant == Variant::kClearIgnoresTs) {
      Slot& x = s.slots[i];
      if (x.valid) x = Slot{0, 0, 0, x.max, 0};
      return;
    }
    load(s);
    (void)table_.on_clear(slot, ts);
    store(s);
  }

  std::uint8_t switch_read(State& s, std::uint16_t slot, std::uint32_t fp) {
    load(s);
    const auto hit = table_.on_read(slot, fp);
    store(s);
    if (!hit) return 0;
    return hit->empty() ? 0 : static_cast<std::uint8_t>((*hit)[0]);
  }

  // A set read passing the switch: the partial entry's location, 0 on a miss.
  std::uint8_t switch_partial_read(State& s, std::uint16_t slot, std::uint32_t fp) {
    load(s);
    const auto hit = table_.on_partial_read(slot, fp);
    store(s);
    if (!hit) return 0;
    return hit->metadata.empty() ? 0 : static_cast<std::uint8_t>(hit->metadata[0]);
  }

  bool switch_release(State& s, std::uint16_t slot, std::uint32_t ts) {
    if (cfg_.variant == Variant::kReleaseAlways) return true;
    load(s);
    const bool r = table_.release_fallback(slot, ts);
    store(s);
    return r;
  }

  // ---- metadata node ----

  void apply(State& s, std::size_t e) const {
    Entry& x = s.log[e];
    x.applied = 1;
    if (cfg_.keys[x.key].set) {
      merge(s, e);
      return;
    }
    if (x.ts > s.meta_ts[x.key]) {
      s.meta_ts[x.key] = x.ts;
      s.meta_loc[x.key] = static_cast<std::uint8_t>(e + 1);
    }
  }

  // A member into its key's set: every way the metadata node applies a
  // set key's entry, and the partial entry a read brings (which alone
  // leaves `applied`, the catch-up's record, as it was).
  static void merge(State& s, std::size_t e) {
    s.meta_set[s.log[e].key] = static_cast<std::uint8_t>(s.meta_set[s.log[e].key] | 1u << e);
  }

  static void send_clear(State& s, std::size_t e) {
    s.log[e].clear = 1;
    send(s, Msg{kClear, 0, u8(e), 0});
  }

  static bool in_flight(const State& s, std::uint8_t type, std::uint8_t a) {
    for (const Msg& m : s.msgs) {
      if (m.type == type && m.a == a) return true;
    }
    return false;
  }

  static bool clear_lost(const State& s, std::size_t e) {
    return s.log[e].clear == 1 && !in_flight(s, kClear, u8(e)) && !in_flight(s, kClearAck, u8(e));
  }

  std::uint8_t owner(std::size_t key) const { return cfg_.keys[key].owner; }

  // kForeignCatchUp: node n's catch-up would CLEAR entry e of a key it
  // does not own (once: the wrong rule, not an endless loop).
  bool foreign_due(const State& s, std::size_t e, std::uint8_t n) const {
    const Entry& x = s.log[e];
    return cfg_.variant == Variant::kForeignCatchUp && owner(x.key) != n && x.seen && !x.applied && !x.foreign;
  }

  // Node n: entries of its keys whose write reply passed the switch and
  // that it has not applied, or whose CLEAR was lost.
  bool catch_up_due(const State& s, std::uint8_t n) const {
    for (std::size_t e = 0; e < s.log.size(); ++e) {
      if (foreign_due(s, e, n)) return true;
      if (owner(s.log[e].key) != n) continue;
      if ((s.log[e].seen && !s.log[e].applied) || clear_lost(s, e)) return true;
    }
    return false;
  }

  void catch_up(State& s, std::uint8_t n) const {
    for (std::size_t e = 0; e < s.log.size(); ++e) {
      if (foreign_due(s, e, n)) {
        // The wrong rule: applied in node n's own index (which no read of
        // the key consults) and cleared from the switch.
        s.log[e].foreign = 1;
        send(s, Msg{kClear, 0, u8(e), 0});
        continue;
      }
      if (owner(s.log[e].key) != n) continue;  // another node's key: its cursor only
      if (s.log[e].seen && !s.log[e].applied) {
        apply(s, e);
        if (s.log[e].clear != 1) send_clear(s, e);
      } else if (clear_lost(s, e)) {
        send_clear(s, e);
      }
    }
  }

  void commit(State& s, std::size_t c, std::size_t e) {
    const Entry& x = s.log[e];
    if (cfg_.keys[x.key].set) {
      s.committed_set[x.key] = static_cast<std::uint8_t>(s.committed_set[x.key] | 1u << e);
    } else {
      s.committed_ts[x.key] = std::max(s.committed_ts[x.key], x.ts);
    }
    finish(s, c);
  }

  static void finish(State& s, std::size_t c) {
    s.clients[c].busy = 0;
    ++s.clients[c].pc;
  }

  void complete_read(Step& st, std::size_t c, std::uint8_t key, std::uint8_t ts) {
    State& s = st.next;
    const Client& cl = s.clients[c];
    if (ts < cl.floor_commit) {
      st.violations.emplace_back(kStaleRead, "client " + std::to_string(c) + " read " + key_name(key) + "@" +
                                                 std::to_string(ts) + " after a write @" +
                                                 std::to_string(cl.floor_commit) + " had committed");
    }
    if (ts < cl.floor_read) {
      st.violations.emplace_back(kNonMonotonicRead, "client " + std::to_string(c) + " read " + key_name(key) +
                                                        "@" + std::to_string(ts) + " after a read had returned @" +
                                                        std::to_string(cl.floor_read));
    }
    s.read_ts[key] = std::max(s.read_ts[key], ts);
    s.clients[c].floor_commit = 0;
    s.clients[c].floor_read = 0;
    finish(s, c);
  }

  // Check 1s on a set read's answer.
  void complete_set_read(Step& st, std::size_t c, std::uint8_t key, std::uint8_t set) {
    State& s = st.next;
    const Client& cl = s.clients[c];
    const std::string who = "client " + std::to_string(c) + " read set " + key_name(key) + " = " + members(set);
    if (const auto missing = static_cast<std::uint8_t>(cl.floor_set & ~set); missing != 0) {
      st.violations.emplace_back(kMissingMember,
                                 who + ", missing " + members(missing) + ", committed before it started");
    }
    for (std::size_t e = 0; e < 8; ++e) {
      if ((set >> e & 1) != 0 && (e >= s.log.size() || s.log[e].key != key)) {
        st.violations.emplace_back(kPhantomMember, who + ": e" + std::to_string(e + 1) + " was never written to it");
      }
    }
    if (const auto unseen = static_cast<std::uint8_t>(cl.floor_read_set & ~set); unseen != 0) {
      st.violations.emplace_back(kNonMonotonicRead,
                                 who + ", missing " + members(unseen) + ", which a read completed before it returned");
    }
    s.read_set[key] = static_cast<std::uint8_t>(s.read_set[key] | set);
    s.clients[c].floor_set = 0;
    s.clients[c].floor_read_set = 0;
    finish(s, c);
  }

  void deliver(Step& st, const Msg& m) {
    State& s = st.next;
    st.label = "deliver " + msg_name(m);
    const std::size_t c = m.c;
    switch (m.type) {
      case kLogAppend: {  // data node: timestamp, log entry, reply
        const std::uint16_t slot = slot_of_key(m.a);
        const std::size_t i = slot_index(slot);
        const std::uint8_t ts = ++s.ts_counter[i];
        s.log.push_back(Entry{m.a, ts, 0, 0, 0, 0});
        send(s, Msg{kWriteReply, m.c, u8(s.log.size() - 1), m.b});  // the epoch echoed
        break;
      }
      case kWriteReply: {  // passes the switch, arrives at the client
        const std::size_t e = m.a;
        Entry& x = s.log[e];
        x.seen = 1;
        const Op& op = cfg_.clients[c][s.clients[c].pc];
        const KeyDef& k = cfg_.keys[x.key];
        WriteOutcome r;
        if (s.recovering || (m.b != s.restarts && cfg_.variant != Variant::kRestartNoEpoch)) {
          // Recovering, or a request the old switch forwarded: not stored,
          // MaxTs raised (VisibilityTable::note_unstored_reply).
          load(s);
          table_.note_unstored_reply(k.slot, x.ts);
          store(s);
          r = WriteOutcome::kStale;
          st.label += s.recovering ? " (switch recovering)" : " (an earlier epoch's)";
        } else {
          r = switch_write(s, k.slot, k.fingerprint, x.ts, u8(e + 1), op.large, k.set, st.violations);
        }
        if (r == WriteOutcome::kStored) {
          send(s, Msg{kMetaAsync, 0, u8(e), 0});
          commit(s, c, e);
          st.label += ": stored, committed";
        } else {
          send(s, Msg{kMetaPut, m.c, u8(e), 0});
          st.label += r == WriteOutcome::kSlotBusy ? ": slot busy, phase 2"
                      : r == WriteOutcome::kStale  ? ": stale, phase 2"
                                                   : ": too large, phase 2";
        }
        break;
      }
      case kMetaAsync: {
        const std::size_t e = m.a;
        apply(s, e);
        // The copy proves the entry was stored: it needs a CLEAR.
        if (s.log[e].clear != 1) send_clear(s, e);
        break;
      }
      case kClear: {
        const std::size_t e = m.a;
        switch_clear(s, slot_of_key(s.log[e].key), s.log[e].ts);
        send(s, Msg{kClearAck, 0, m.a, 0});
        break;
      }
      case kClearAck: {
        Entry& x = s.log[m.a];
        if (x.clear == 1) x.clear = 2;
        break;
      }
      case kMetaPut: {
        apply(s, m.a);
        send(s, Msg{kPutReply, m.c, m.a, 0});
        break;
      }
      case kPutReply: {  // passes the switch: released to the client, or held
        const std::size_t e = m.a;
        const std::uint16_t slot = slot_of_key(s.log[e].key);
        if (switch_release(s, slot, s.log[e].ts)) {
          commit(s, c, e);
          st.label += ": released, committed";
        } else {
          const Slot& x = s.slots[slot_index(slot)];
          send(s, Msg{kBounce, m.c, m.a, u8(x.cur)});
          st.label += ": held";
        }
        break;
      }
      case kBounce: {  // the held write's key's owner: clear the slot's entry if it is one of its keys
                       // and applied, resend the reply
        const std::uint16_t slot = slot_of_key(s.log[m.a].key);
        const std::uint8_t node = owner(s.log[m.a].key);
        for (std::size_t f = 0; f < s.log.size(); ++f) {
          const Entry& y = s.log[f];
          if (slot_index(slot_of_key(y.key)) != slot_index(slot) || y.ts != m.b) continue;
          if (cfg_.variant == Variant::kForeignBounce && owner(y.key) != node && y.seen && !y.foreign) {
            s.log[f].foreign = 1;  // the wrong rule
            send(s, Msg{kClear, 0, u8(f), 0});
            continue;
          }
          if (owner(y.key) == node && y.applied && y.clear != 1) {
            send_clear(s, f);
          }
        }
        send(s, Msg{kPutReply, m.c, m.a, 0});
        break;
      }
      case kMetaGet: {  // passes the switch: its metadata, or on to the metadata node
        const KeyDef& k = cfg_.keys[m.a];
        const std::uint8_t loc = switch_read(s, k.slot, k.fingerprint);
        if (loc != 0) {
          send(s, Msg{kLogRead, m.c, m.a, loc});
          st.label += ": switch hit";
        } else {
          send(s, Msg{kMnGet, m.c, m.a, 0});
          st.label += ": to the metadata node";
        }
        break;
      }
      case kMnGet: {
        const std::uint8_t loc = s.meta_loc[m.a];
        if (cfg_.recheck_read_reply) {
          send(s, Msg{kMnReply, m.c, m.a, loc});
        } else if (loc == 0) {
          complete_read(st, c, m.a, 0);  // the key's initial value
        } else {
          send(s, Msg{kLogRead, m.c, m.a, loc});
        }
        break;
      }
      case kMnReply: {  // passes the switch: the slot's metadata wins if it is the key's
        const KeyDef& k = cfg_.keys[m.a];
        std::uint8_t loc = switch_read(s, k.slot, k.fingerprint);
        if (loc != 0) {
          st.label += ": switch hit";
        } else {
          loc = m.b;
        }
        if (loc == 0) {
          complete_read(st, c, m.a, 0);
        } else {
          send(s, Msg{kLogRead, m.c, m.a, loc});
        }
        break;
      }
      case kSidxRead: {  // passes the switch: a partial entry of the key rides along to the metadata node
        const KeyDef& k = cfg_.keys[m.a];
        const std::uint8_t loc = switch_partial_read(s, k.slot, k.fingerprint);
        if (loc != 0 && cfg_.variant == Variant::kPartialAnswered) {
          complete_set_read(st, c, m.a, static_cast<std::uint8_t>(1u << (loc - 1)));  // the wrong rule
          st.label += ": answered from the partial slot alone";
        } else {
          send(s, Msg{kMnSidx, m.c, m.a, loc});
          st.label += loc != 0 ? ": partial entry attached" : ": to the metadata node";
        }
        break;
      }
      case kMnSidx: {  // merge the attached entry (III-C), then answer the whole set
        if (m.b != 0 && cfg_.variant != Variant::kPartialNoApply) merge(s, m.b - 1u);
        if (m.b != 0 && cfg_.variant == Variant::kPartialMarksApplied) s.log[m.b - 1u].applied = 1;  // the wrong rule
        complete_set_read(st, c, m.a, s.meta_set[m.a]);
        break;
      }
      case kLogRead: {  // data node checks the key; the value arrives at the client
        const Entry& x = s.log[m.b - 1];
        if (x.key != m.a) {
          send(s, Msg{kMetaGet, m.c, m.a, 0});  // another key's entry: retry
          st.label += ": key mismatch, retry";
        } else {
          complete_read(st, c, m.a, x.ts);
        }
        break;
      }
    }
  }

  Config cfg_;
  VisibilityTable table_;
};

struct Result {
  std::uint64_t states = 0;
  std::uint64_t transitions = 0;
  std::uint64_t terminal = 0;
  std::size_t max_depth = 0;
  std::array<std::uint64_t, kKinds> count{};
  std::array<Finding, kKinds> first{};
  bool found(int k) const { return count[k] > 0; }
  // No finding of any kind (monotonic reads included, or not).
  bool clean(bool monotonic_reads = true) const {
    for (int k = 0; k < kKinds; ++k) {
      if (count[k] != 0 && (monotonic_reads || k != kNonMonotonicRead)) return false;
    }
    return true;
  }
};

// Breadth-first over every reachable state (shortest counterexamples),
// then the liveness check: every state reaches a terminal one.
inline Result explore(const Config& config, std::uint64_t max_states = 20'000'000) {
  Protocol p(config);
  Result r;
  std::unordered_map<std::string, std::uint32_t> ids;
  std::vector<std::uint32_t> parent;
  std::vector<std::string> label;
  std::vector<std::uint32_t> depth;
  std::vector<std::uint32_t> edge_from, edge_to;
  std::vector<char> is_terminal;
  std::deque<std::pair<std::uint32_t, State>> frontier;

  auto trace_of = [&](std::uint32_t id) {
    std::vector<std::string> t;
    while (id != 0) {
      t.push_back(label[id]);
      id = parent[id];
    }
    std::reverse(t.begin(), t.end());
    return t;
  };
  auto record = [&](int kind, const std::string& what, std::uint32_t at, const std::string& step) {
    if (r.count[kind]++ == 0) {
      r.first[kind].kind = kind;
      r.first[kind].what = what;
      r.first[kind].trace = trace_of(at);
      if (!step.empty()) r.first[kind].trace.push_back(step);
    }
  };

  const State init = p.initial();
  ids.emplace(init.encode(), 0);
  parent.push_back(0);
  label.emplace_back("start");
  depth.push_back(0);
  is_terminal.push_back(0);
  frontier.emplace_back(0, init);
  while (!frontier.empty()) {
    auto [id, s] = std::move(frontier.front());
    frontier.pop_front();
    std::vector<Protocol::Step> next = p.successors(s);
    if (next.empty()) {
      ++r.terminal;
      is_terminal[id] = 1;
      for (const auto& [kind, what] : p.terminal_checks(s)) record(kind, what + "; " + p.describe(s), id, "");
      continue;
    }
    for (Protocol::Step& st : next) {
      ++r.transitions;
      for (const auto& [kind, what] : st.violations) record(kind, what, id, st.label);
      const auto [it, fresh] = ids.emplace(st.next.encode(), static_cast<std::uint32_t>(parent.size()));
      edge_from.push_back(id);
      edge_to.push_back(it->second);
      if (!fresh) continue;
      parent.push_back(id);
      label.push_back(st.label);
      depth.push_back(depth[id] + 1);
      is_terminal.push_back(0);
      r.max_depth = std::max<std::size_t>(r.max_depth, depth.back());
      if (parent.size() > max_states) throw std::runtime_error("visibility model: state space over the bound");
      frontier.emplace_back(it->second, std::move(st.next));
    }
  }
  r.states = parent.size();

  // Liveness: backwards from the terminal states over reversed edges.
  const std::size_t n = parent.size();
  std::vector<std::uint32_t> start(n + 1, 0);
  for (const std::uint32_t to : edge_to) ++start[to + 1];
  for (std::size_t i = 0; i < n; ++i) start[i + 1] += start[i];
  std::vector<std::uint32_t> rev(edge_to.size());
  {
    std::vector<std::uint32_t> fill(start.begin(), start.end() - 1);
    for (std::size_t k = 0; k < edge_to.size(); ++k) rev[fill[edge_to[k]]++] = edge_from[k];
  }
  std::vector<char> reaches(n, 0);
  std::vector<std::uint32_t> work;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (is_terminal[i]) {
      reaches[i] = 1;
      work.push_back(i);
    }
  }
  while (!work.empty()) {
    const std::uint32_t v = work.back();
    work.pop_back();
    for (std::uint32_t k = start[v]; k < start[v + 1]; ++k) {
      const std::uint32_t u = rev[k];
      if (!reaches[u]) {
        reaches[u] = 1;
        work.push_back(u);
      }
    }
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    if (!reaches[i]) record(kNoWayOut, "no terminal state is reachable from here", i, "");
  }
  return r;
}

// Random walks (for configurations too large to enumerate): each walk picks
// uniformly among the enabled steps until a terminal state; a walk longer
// than max_steps counts as kNoWayOut.
inline Result random_walks(const Config& config, std::uint64_t seed, std::uint64_t walks,
                           std::size_t max_steps = 20000) {
  Protocol p(config);
  Result r;
  std::mt19937_64 rng(seed);
  for (std::uint64_t w = 0; w < walks; ++w) {
    State s = p.initial();
    std::vector<std::string> trace;
    std::size_t steps = 0;
    for (;; ++steps) {
      std::vector<Protocol::Step> next = p.successors(s);
      ++r.states;
      if (next.empty()) {
        ++r.terminal;
        for (const auto& [kind, what] : p.terminal_checks(s)) {
          if (r.count[kind]++ == 0) r.first[kind] = Finding{kind, what + "; " + p.describe(s), trace};
        }
        break;
      }
      if (steps == max_steps) {
        if (r.count[kNoWayOut]++ == 0) {
          r.first[kNoWayOut] = Finding{kNoWayOut, "walk longer than " + std::to_string(max_steps) + " steps", {}};
        }
        break;
      }
      Protocol::Step& st = next[rng() % next.size()];
      ++r.transitions;
      if (trace.size() < 400) trace.push_back(st.label);
      for (const auto& [kind, what] : st.violations) {
        if (r.count[kind]++ == 0) r.first[kind] = Finding{kind, what, trace};
      }
      s = std::move(st.next);
    }
    r.max_depth = std::max(r.max_depth, steps);
  }
  return r;
}

inline std::string report(const Result& r) {
  std::ostringstream o;
  for (int k = 0; k < kKinds; ++k) {
    if (r.count[k] == 0) continue;
    o << "  " << kind_name(k) << ": " << r.count[k] << " times; first: " << r.first[k].what << "\n    trace:";
    for (const std::string& step : r.first[k].trace) o << "\n      " << step;
    o << "\n";
  }
  return o.str();
}

}  // namespace forein::testing::visibility_model
