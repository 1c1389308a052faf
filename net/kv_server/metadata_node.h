// forein-kv-server --mode metadata: Switch-delta's metadata node (paper
// 002, sections III-A, III-B, III-D, III-E; docs/network.md, "Metadata
// mode (Switch-delta)"). The tree maps key -> StampedLocation (where the
// newest write of the key lives in the data nodes' logs, and its
// timestamp); one event loop on one socket serves
//
//   META_GET    the stored location (kNotFound: none);
//   META_PUT    phase 2 of a write the switch did not take: applied at
//               once (critical path), then the reply;
//   META_ASYNC  the switch's copy of a write it took: deferred, applied in
//               sorted, prefetched batches (deferred_batch.h), each
//               followed by a CLEAR of its slot to the sender;
//   held reply  a META_PUT reply the switch turned back (state kHeld):
//               the deferred updates first, a CLEAR if the slot's write
//               is applied, and the reply sent again after a short delay;
//   STATS       the counters.
//
// Several metadata nodes (--shard I/K --keys N) split the keys as the
// switch's --metadata-nodes ports do (shard_of over N): each serves and
// applies only its own keys (META_* for another node's key: BAD_REQUEST,
// counted in not_owned). The clearing rule: (slot, ts) names exactly one
// log entry, so a node CLEARs (slot, ts) only for an entry whose key it
// owns and that it has applied; entries of other nodes' keys only move
// its log cursors on. A slot is therefore never cleared before the one
// node that answers its key's reads holds the write.
//
// It starts by replaying every data node's log (log_catchup.h) and, while
// it runs, fetches each log every visibility timeout to apply META_ASYNC
// copies the network lost (and clear the slots they left valid).
//
// --secondary-index (metadata_node_sidx.cc, secondary_index.h): the tree
// holds the secondary index instead; META_PUT and META_ASYNC carry a
// SidxEntry (primary key, secondary key) whose slot is the secondary
// key's, SIDX_READ (merging the partial entry the switch attached) takes
// META_GET's place, and the logs' entries carry the secondary key.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "forein/tree.h"
#include "kv_server/deferred_batch.h"
#include "kv_server/log_catchup.h"
#include "kv_server/metadata_index.h"
#include "kv_server/options.h"
#include "kv_server/secondary_index.h"
#include "kv_server/stats.h"
#include "common/udp_address.h"
#include "protocol/packet.h"

namespace forein::net::kv {

// Written by the event loop only; read by it (STATS) and after it stopped.
struct MetadataCounters {
  std::uint64_t meta_get = 0;
  std::uint64_t meta_put = 0;
  std::uint64_t meta_async = 0;
  std::uint64_t bad_async = 0;        // META_ASYNC copies that failed the checks (dropped)
  std::uint64_t clears_sent = 0;
  std::uint64_t batches = 0;          // deferred batches applied
  std::uint64_t batched_updates = 0;  // META_ASYNC copies applied in them
  std::uint64_t combined = 0;         // ... superseded by a newer one of the key in the same batch
  std::uint64_t applied = 0;          // tree puts, every source
  std::uint64_t ignored_older = 0;    // updates the apply rule made no-ops
  std::uint64_t held_bounces = 0;     // held META_PUT replies the switch turned back
  std::uint64_t resent = 0;           // ... sent again
  std::uint64_t replayed = 0;         // log entries applied at start-up
  std::uint64_t skipped = 0;          // log entries whose key the tree cannot hold
  std::uint64_t clear_datagrams = 0;  // CLEAR datagrams (a deferred batch's CLEARs share them)
  std::uint64_t recv_calls = 0;       // recvmmsg calls (the last of each drain finds none)
  std::uint64_t send_calls = 0;       // sendmmsg calls
  std::uint64_t datagrams_sent = 0;   // datagrams they sent
  std::uint64_t not_owned = 0;        // META_* requests for a key another metadata node owns (refused)
  // Switch-crash recovery (sync_step()): probes sent, sync steps done
  // (one per new switch epoch) and failed (a data node did not answer),
  // entries they applied, and the last one's duration.
  std::uint64_t sync_probes = 0;
  std::uint64_t syncs = 0;
  std::uint64_t sync_failed = 0;
  std::uint64_t sync_applied = 0;
  double last_sync_ms = 0;
  // --secondary-index: SIDX_READs served (refused ones too), and those
  // whose attached partial entry was not applied here yet (merged).
  std::uint64_t sidx_reads = 0;
  std::uint64_t sidx_partial_merged = 0;
};

class MetadataNode {
 public:
  using Clock = std::chrono::steady_clock;
  // A held reply goes back to the switch this long after it bounced.
  static constexpr std::chrono::microseconds kResendDelay{100};
  // Datagrams read per wake-up before the deferred batch and the timers
  // get their turn.
  static constexpr int kDrainLimit = 1024;
  // SYNC probes to --switch this often (switch-crash recovery: a restarted
  // switch answers with a new epoch; docs/network.md, "Switch-crash
  // recovery").
  static constexpr std::chrono::milliseconds kSyncProbeInterval{10};

  // Resolves --data-nodes and --switch (std::runtime_error if one does
  // not resolve). stats_json renders the STATS reply.
  MetadataNode(const ServerOptions& options, Tree& tree, ServerStats& stats,
               std::function<std::string()> stats_json);
  ~MetadataNode();
  MetadataNode(const MetadataNode&) = delete;
  MetadataNode& operator=(const MetadataNode&) = delete;

  // Start-up and crash recovery: every data node's log applied. Throws
  // RecoveryError when a data node does not answer.
  void recover();

  // The event loop on the bound socket fd until stop_fd is readable.
  void run(int fd, int stop_fd);

  // Its members of the stats object ("mode":"metadata" first), as an
  // object the server appends to it.
  Json json() const;

 private:
  struct Outgoing {
    std::vector<std::byte> bytes;
    UdpAddress to;
  };
  struct Resend {
    Clock::time_point due;
    Outgoing datagram;
  };

  void handle(const Packet& request, const UdpAddress& from);
  void meta_get(const Packet& request, const UdpAddress& from);
  void meta_put(const Packet& request, const UdpAddress& from);
  void meta_async(const Packet& request, const UdpAddress& from);
  void held_bounce(const Packet& reply, const UdpAddress& from);
  // The switch's SYNC answer: a new epoch (a restarted switch) -> the
  // sync step (section III-E): the deferred batch applied, then every
  // data node's log from its cursor to its end applied at once (slots
  // cleared as in catch-up), then a probe naming the epoch (the switch
  // takes it as done).
  void sync_step(const Packet& answer, const UdpAddress& from);
  void send_sync_probe();
  // --shard I/K: whether this node owns the key (every key when K is 1).
  bool owns(std::string_view key) const;
  std::string not_owned_text() const;
  // A META_PUT/META_ASYNC checked into *out; else the reason.
  bool check_update(const Packet& request, MetaUpdate* out, std::string* error) const;
  // Applies the deferred batch and sends its CLEARs.
  void flush_deferred();
  // apply() with the counters and the applied-id tracking.
  void apply_update(std::uint16_t node, std::string_view key, const StampedLocation& s);
  // A log entry (start-up, catch-up, sync step) applied in either mode.
  void apply_log_entry(std::uint16_t node, const FetchedLogEntry& e);
  // The slot a log entry's write used: the key's, or --secondary-index
  // the secondary key's.
  SlotKey entry_slot(const FetchedLogEntry& e) const;

  // --secondary-index (metadata_node_sidx.cc).
  bool check_sidx_update(const Packet& request, MetaUpdate* out, std::string* error) const;
  void sidx_meta_put(const Packet& request, const UdpAddress& from);
  void sidx_meta_async(const Packet& request, const UdpAddress& from);
  void sidx_read(const Packet& request, const UdpAddress& from);
  // Whether the held reply's slot entry (a SidxEntry, CurTs aux) is applied
  // (or superseded by a newer write of its primary key).
  bool sidx_slot_applied(const Packet& held);
  // Applies a checked update and records it processed (its META_PUT,
  // META_ASYNC or log entry came, so the catch-up need not clear its slot).
  ApplyResult sidx_apply(const MetaUpdate& u, std::string* stale);
  // The same record for an update a deferred batch combined away.
  void sidx_processed(const MetaUpdate& u);
  // The old composite keys phase-2 META_PUTs left for after their replies.
  void erase_stale();
  void refuse(const Packet& request, const UdpAddress& from, const std::string& why);
  void count_apply(ApplyResult r);
  Packet clear_packet(std::uint16_t slot, std::uint32_t fingerprint, std::uint32_t ts, std::uint64_t seq) const;
  void queue(const Packet& p, const UdpAddress& to);
  void reply(const Packet& p, const UdpAddress& to);  // queue() plus the reply counters
  // Sends the queued datagrams (sendmmsg).
  void send_queued();
  void run_timers(Clock::time_point now);

  ServerOptions options_;
  ServerStats& stats_;
  std::function<std::string()> stats_json_;
  MetadataIndex index_;
  std::unique_ptr<SecondaryIndex> sidx_;  // --secondary-index: serves instead of index_
  // --secondary-index: the timestamps of the writes whose META_PUT or
  // META_ASYNC (or log entry) was applied. The data node stamps every
  // write from one counter, so a timestamp names one log entry; the
  // catch-up passes these over instead of clearing their slots again.
  OwnedApplied sidx_processed_;
  std::vector<std::string> stale_;  // composite keys to delete after the replies
  LogCatchup catchup_;
  DeferredBatch deferred_;
  UdpAddress configured_switch_;  // --switch
  UdpAddress switch_;             // the last META_ASYNC or held reply's sender, else --switch
  std::deque<Resend> resends_;    // due times ascending (one delay for all)
  std::vector<Outgoing> out_;     // queued, sent by send_queued()
  MetadataCounters counters_;
  int fd_ = -1;
  std::uint32_t synced_epoch_ = 0;  // the switch epoch last synced for (0: none)
  Clock::time_point next_probe_{};
};

}  // namespace forein::net::kv
