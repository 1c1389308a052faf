#include "load/verify.h"

#include <algorithm>

#include "protocol/dataset.h"
#include "protocol/visibility.h"

namespace forein::net::load {

Verifier::WriteId Verifier::begin_write(std::uint64_t key, std::int64_t version) {
  const WriteId id = next_id_++;
  history_[key].writes.push_back(Write{id, version, ++now_});
  write_key_.emplace(id, key);
  max_written_ = std::max(max_written_, key);
  return id;
}

Verifier::Write* Verifier::find(WriteId id, History** h) {
  const auto k = write_key_.find(id);
  if (k == write_key_.end()) return nullptr;
  *h = &history_[k->second];
  for (Write& w : (*h)->writes) {
    if (w.id == id) return &w;
  }
  return nullptr;
}

void Verifier::write_resent(WriteId id) {
  History* h = nullptr;
  if (Write* w = find(id, &h)) w->resent = true;
}

void Verifier::write_acked(WriteId id) {
  History* h = nullptr;
  Write* w = find(id, &h);
  if (w == nullptr) return;
  w->acked = ++now_;
  h->first_ack = std::min(h->first_ack, w->acked);
  write_key_.erase(id);
  prune(*h);
}

void Verifier::write_failed(WriteId id) {
  // It may have landed or may still land: it stays a candidate for good.
  History* h = nullptr;
  if (Write* w = find(id, &h)) w->resent = true;
  write_key_.erase(id);
}

Verifier::Ticket Verifier::begin_read() {
  const Ticket t = ++now_;
  reads_in_flight_.insert(t);
  return t;
}

void Verifier::end_read(Ticket r0) {
  const auto it = reads_in_flight_.find(r0);
  if (it != reads_in_flight_.end()) reads_in_flight_.erase(it);
}

// Drops writes superseded for every read that is or will be in flight.
void Verifier::prune(History& h) {
  const Ticket horizon = reads_in_flight_.empty() ? now_ + 1 : *reads_in_flight_.begin();
  Ticket newest_settled_start = 0;
  bool any = false;
  for (const Write& w : h.writes) {
    if (w.acked != kNever && w.acked < horizon && w.issued >= newest_settled_start) {
      newest_settled_start = w.issued;
      any = true;
    }
  }
  if (!any) return;
  std::erase_if(h.writes, [&](const Write& w) {
    return w.settled() < newest_settled_start && write_key_.count(w.id) == 0;
  });
}

std::size_t Verifier::tracked_writes() const {
  std::size_t n = 0;
  for (const auto& [k, h] : history_) n += h.writes.size();
  return n;
}

bool Verifier::allowed(std::uint64_t key, std::int64_t version, Ticket r0, Ticket r1) const {
  const std::int64_t original = key < keys_ ? 0 : kAbsent;
  const auto it = history_.find(key);
  if (it == history_.end()) return version == original;
  const History& h = it->second;
  if (version == original && h.first_ack >= r0) return true;
  for (const Write& w : h.writes) {
    if (w.version != version || w.issued >= r1) continue;
    bool superseded = false;
    for (const Write& v : h.writes) {
      if (v.issued > w.settled() && v.acked < r0) {
        superseded = true;
        break;
      }
    }
    if (!superseded) return true;
  }
  return false;
}

bool Verifier::value_allowed(std::uint64_t key, const std::string& value, Ticket r0, Ticket r1) const {
  if (key < keys_ && value == dataset_value(key, 0) && allowed(key, 0, r0, r1)) return true;
  const auto it = history_.find(key);
  if (it == history_.end()) return false;
  for (const Write& w : it->second.writes) {
    if (w.version >= 1 && w.issued < r1 &&
        value == dataset_value(key, static_cast<std::uint32_t>(w.version)) &&
        allowed(key, w.version, r0, r1)) {
      return true;
    }
  }
  return false;
}

bool Verifier::check_get(std::uint64_t key, Ticket r0, const std::optional<std::string>& value) {
  const Ticket r1 = ++now_;
  if (!value) return may_be_absent(key, r0, r1);
  return value_allowed(key, *value, r0, r1);
}

bool Verifier::check_record(std::uint64_t key, Ticket r0, std::string_view record, std::string* why) {
  const Ticket r1 = ++now_;
  const auto version = record_version(record, key);
  if (!version) {
    std::string head(record.substr(0, 32));
    for (char& c : head) {
      if (c < 0x20 || c > 0x7e) c = '.';
    }
    *why = "not a record of key " + std::to_string(key) + " (" + std::to_string(record.size()) + " bytes: " +
           head + ")";
    return false;
  }
  if (!allowed(key, *version, r0, r1)) {
    *why = "key " + std::to_string(key) + " version " + std::to_string(*version) +
           (*version == 0 ? " (the preloaded record) after a newer write committed"
                          : " is stale (a newer write committed before the read) or was never written");
    return false;
  }
  return true;
}

bool Verifier::check_scan(std::uint64_t start_key, std::uint32_t count, Ticket r0,
                          const std::vector<ScanEntry>& entries, bool more, std::string* why) {
  const Ticket r1 = ++now_;
  if (entries.size() > count) {
    *why = "more entries than asked for";
    return false;
  }
  // Keys in [from, to) were skipped: each must be allowed to be absent.
  auto gap_ok = [&](std::uint64_t from, std::uint64_t to) {
    for (std::uint64_t k = from; k < to; ++k) {
      if (!may_be_absent(k, r0, r1)) {
        *why = "key " + std::to_string(k) + " skipped";
        return false;
      }
    }
    return true;
  };
  std::uint64_t next = start_key;  // the smallest key the next entry may have
  for (const ScanEntry& e : entries) {
    std::uint64_t k = 0;
    if (!dataset_index(e.key, &k)) {
      *why = "entry key is not 8 bytes";
      return false;
    }
    if (k < next) {
      *why = "entry key " + std::to_string(k) + " out of order";
      return false;
    }
    if (!gap_ok(next, k)) return false;
    if (!value_allowed(k, e.value, r0, r1)) {
      *why = "wrong value for key " + std::to_string(k);
      return false;
    }
    next = k + 1;
  }
  if (entries.size() < count && !more) {
    // Nothing that must be present may follow.
    const std::uint64_t end = std::max(keys_, max_written_ + 1);
    if (next < end && !gap_ok(next, end)) return false;
  }
  return true;
}

}  // namespace forein::net::load
