#include "remote/walk.h"

#include <algorithm>
#include <thread>

namespace forein::net::remote {

const char* to_string(LookupStatus s) {
  switch (s) {
    case LookupStatus::kFound:
      return "found";
    case LookupStatus::kNotFound:
      return "not_found";
    case LookupStatus::kGaveUp:
      return "gave_up";
  }
  return "unknown";
}

void WalkCounters::add(const WalkCounters& o) {
  reads += o.reads;
  bytes += o.bytes;
  failed_reads += o.failed_reads;
  odd_versions += o.odd_versions;
  bad_checksums += o.bad_checksums;
  rejected += o.rejected;
  retries += o.retries;
  fallbacks += o.fallbacks;
  restarts += o.restarts;
  sibling_moves += o.sibling_moves;
  header_reads += o.header_reads;
}

Walker::Walker(ReadFn read, WalkerOptions options)
    : read_(std::move(read)), options_(options), record_(kMaxReadBytes) {}

bool Walker::read(Address a, std::size_t len, std::byte* out, WalkCounters* c) {
  ++c->reads;
  if (!read_(a, len, out)) {
    ++c->failed_reads;
    return false;
  }
  c->bytes += len;
  return true;
}

bool Walker::open() {
  WalkCounters c;
  const bool ok = open_counted(&c);
  totals_.add(c);
  return ok;
}

bool Walker::open_counted(WalkCounters* c) {
  std::byte h[kRegionHeaderBytes];
  for (std::uint32_t t = 0; t < std::max<std::uint32_t>(1, options_.header_tries); ++t) {
    ++c->header_reads;
    if (!read(0, sizeof h, h, c)) continue;
    RegionHeader parsed;
    const Check ck = check_header(h, &parsed);
    if (ck == Check::kOk) {
      header_ = parsed;
      node_.resize(header_.geometry.node_bytes);
      open_ = true;
      stale_ = false;
      return true;
    }
    // The owner rewrites the header on every put: a torn one is retried.
    if (ck == Check::kOddVersion) ++c->odd_versions;
    if (ck == Check::kBadChecksum) ++c->bad_checksums;
    if (ck != Check::kOddVersion && ck != Check::kBadChecksum) {
      ++c->rejected;
      break;  // not a header at all
    }
  }
  return false;
}

std::uint32_t Walker::read_budget() const {
  return options_.max_reads != 0 ? options_.max_reads : 4 * header_.height + 8;
}

LookupResult Walker::lookup(std::uint64_t key, Address hint) {
  LookupResult r;
  WalkCounters& c = r.counters;
  auto finish = [&](LookupStatus s) {
    r.status = s;
    totals_.add(c);
    return r;
  };
  // A stale header still works (the old root reaches every key by moving
  // right), so a failed refresh keeps it.
  if ((!open_ || stale_) && !open_counted(&c) && !open_) return finish(LookupStatus::kGaveUp);

  const Geometry g = header_.geometry;
  const std::uint64_t start_reads = c.reads;
  const std::uint32_t budget = read_budget();
  const std::uint32_t root_level = header_.height - 1;
  bool on_hint = hint != 0;
  Address at = on_hint ? hint : header_.root;
  int expect = on_hint ? -1 : static_cast<int>(root_level);  // -1: a hint's level is unknown
  std::uint32_t run = 0;
  Address last = 0;         // the node READ last
  std::uint32_t again = 0;  // how often it was READ again after a tear
  auto restart = [&] {
    if (on_hint) {
      ++c.fallbacks;
    } else {
      ++c.restarts;
      if (at == header_.root) stale_ = true;  // the root itself did not check: re-read the header next time
    }
    on_hint = false;
    at = header_.root;
    expect = static_cast<int>(root_level);
    run = 0;
  };
  auto count = [&](Check ck) {
    if (ck == Check::kOddVersion) {
      ++c.odd_versions;
    } else if (ck == Check::kBadChecksum) {
      ++c.bad_checksums;
    } else {
      ++c.rejected;
    }
  };

  while (c.reads - start_reads < budget) {
    if (at % 8 != 0 || at < kRegionHeaderBytes || at >= header_.region_bytes) {
      ++c.rejected;  // not where any node can be: no READ
      restart();
      continue;
    }
    if (at != last) {
      last = at;
      again = 0;
    }
    if (!read(at, g.node_bytes, node_.data(), &c)) {
      restart();
      continue;
    }
    NodeView v;
    if (const Check ck = check_node(node_, g, at, &v); ck != Check::kOk) {
      count(ck);
      // Torn by a concurrent rewrite: a checked node pointed here, and
      // nodes never move, so the same READ again will see it whole.
      if ((ck == Check::kOddVersion || ck == Check::kBadChecksum) && !on_hint && again < options_.max_retries) {
        ++again;
        ++c.retries;
        // Let a writer preempted mid-rewrite finish first (over a network
        // the READ's round trip waits anyway; in process this is what
        // keeps a descheduled writer from eating every reader's budget).
        std::this_thread::yield();
        continue;
      }
      restart();
      continue;
    }
    if ((expect >= 0 && v.level != expect) || key < v.lo) {
      ++c.rejected;
      restart();
      continue;
    }
    if (v.above(key)) {
      if (v.right == 0 || ++run > options_.max_sibling_run) {
        ++c.rejected;
        restart();
        continue;
      }
      // The root's level has a right sibling: the root split since open().
      if (!on_hint && v.level == root_level) stale_ = true;
      ++c.sibling_moves;
      at = v.right;
      expect = v.level;
      continue;
    }
    // This node holds the key.
    r.hint_taken = r.hint_taken || on_hint;
    on_hint = false;
    run = 0;
    if (v.level > 0) {
      at = v.ptr(v.child_of(key));
      expect = v.level - 1;
      continue;
    }
    r.leaf = at;
    const std::size_t slot = v.find(key);
    if (slot == v.count) return finish(LookupStatus::kNotFound);
    const Address rec = v.ptr(slot);
    if (rec >= header_.region_bytes) {
      ++c.rejected;
      restart();
      continue;
    }
    // One READ of the header and the longest value the header knows of;
    // a longer value (written since) takes a second.
    const std::uint64_t room = header_.region_bytes - rec;
    std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(kRecordHeaderBytes + header_.max_value_bytes, room));
    if (!read(rec, len, record_.data(), &c)) {
      restart();
      continue;
    }
    RecordView rv;
    Check ck = check_record(std::span<const std::byte>(record_.data(), len), rec, &rv);
    if (ck == Check::kShort && len >= kRecordHeaderBytes && kRecordHeaderBytes + rv.value_len <= room &&
        c.reads - start_reads < budget) {
      len = kRecordHeaderBytes + rv.value_len;
      if (!read(rec, len, record_.data(), &c)) {
        restart();
        continue;
      }
      ck = check_record(std::span<const std::byte>(record_.data(), len), rec, &rv);
    }
    if (ck != Check::kOk || rv.key != key) {
      if (ck == Check::kOk) ck = Check::kBadShape;
      count(ck);
      restart();
      continue;
    }
    r.value.assign(rv.value);
    r.record = rec;
    r.record_version = rv.version;
    return finish(LookupStatus::kFound);
  }
  r.leaf = 0;
  return finish(LookupStatus::kGaveUp);
}

}  // namespace forein::net::remote
