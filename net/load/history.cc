#include "load/history.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace forein::net::load {

const char* to_string(HistoryOp::Outcome o) {
  switch (o) {
    case HistoryOp::Outcome::kOk: return "ok";
    case HistoryOp::Outcome::kFailed: return "failed";
    case HistoryOp::Outcome::kPending: return "pending";
  }
  return "?";
}

std::string format_history_line(const HistoryOp& op) {
  std::string out = std::to_string(op.slot);
  out += op.sidx ? (op.write ? " SW " : " SR ") : (op.write ? " W " : " R ");
  out += std::to_string(op.key);
  out += ' ';
  if (op.version == HistoryOp::kNoVersion) {
    out += '-';
  } else if (op.version == HistoryOp::kBadRecord) {
    out += "bad";
  } else {
    out += std::to_string(op.version);
  }
  out += ' ';
  out += std::to_string(op.invoke_ns);
  out += ' ';
  out += op.outcome == HistoryOp::Outcome::kPending ? std::string("-") : std::to_string(op.response_ns);
  out += ' ';
  out += to_string(op.outcome);
  out += ' ';
  out += std::to_string(op.resends);
  if (op.sidx && op.write) {
    out += ' ';
    out += std::to_string(op.secondary);
  } else if (op.sidx) {
    const bool ok = op.outcome == HistoryOp::Outcome::kOk;
    out += ok ? (op.truncated ? " truncated " : " all ") : " - ";
    if (!ok || op.members.empty()) {
      out += '-';
    } else {
      for (std::size_t m = 0; m < op.members.size(); ++m) {
        if (m > 0) out += ',';
        out += std::to_string(op.members[m].key);
        out += ':';
        out += std::to_string(op.members[m].version);
      }
    }
  }
  return out;
}

namespace {

template <typename T>
bool number(std::string_view s, T* out) {
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// An SR line's LISTING and MEMBERS fields into op (its VERSION must be "-").
template <typename Fail>
std::optional<HistoryOp> parse_sidx_read(std::string_view listing, std::string_view members, HistoryOp op,
                                         const Fail& fail) {
  if (op.version != HistoryOp::kNoVersion) return fail("a secondary-index read's version field is not \"-\"");
  if (op.outcome != HistoryOp::Outcome::kOk) {
    if (listing != "-" || members != "-") return fail("a failed or pending read lists no members");
    return op;
  }
  if (listing != "all" && listing != "truncated") return fail("listing is not all or truncated");
  op.truncated = listing == "truncated";
  if (members == "-") return op;
  std::size_t at = 0;
  for (;;) {
    const std::size_t comma = members.find(',', at);
    const std::string_view item = members.substr(at, comma == std::string_view::npos ? members.npos : comma - at);
    const std::size_t colon = item.find(':');
    SidxMember m;
    if (colon == std::string_view::npos || !number(item.substr(0, colon), &m.key) ||
        !number(item.substr(colon + 1), &m.version)) {
      return fail("a member is not KEY:VERSION");
    }
    op.members.push_back(m);
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  return op;
}

}  // namespace

std::optional<HistoryOp> parse_history_line(std::string_view line, std::string* why) {
  std::vector<std::string_view> f;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    if (i == line.size()) break;
    const std::size_t j = line.find(' ', i);
    const std::size_t end = j == std::string_view::npos ? line.size() : j;
    f.push_back(line.substr(i, end - i));
    i = end;
  }
  auto fail = [&](const std::string& w) -> std::optional<HistoryOp> {
    *why = w + ": \"" + std::string(line.substr(0, 120)) + "\"";
    return std::nullopt;
  };
  if (f.size() < 2) return fail("want 8 fields, got " + std::to_string(f.size()));
  HistoryOp op;
  if (f[1] != "W" && f[1] != "R" && f[1] != "SW" && f[1] != "SR") return fail("kind is not W, R, SW or SR");
  op.write = f[1] == "W" || f[1] == "SW";
  op.sidx = f[1] == "SW" || f[1] == "SR";
  const std::size_t want = !op.sidx ? 8 : op.write ? 9 : 10;
  if (f.size() != want) {
    return fail("want " + std::to_string(want) + " fields for " + std::string(f[1]) + ", got " +
                std::to_string(f.size()));
  }
  if (!number(f[0], &op.slot)) return fail("bad slot");
  if (!number(f[2], &op.key)) return fail("bad key");
  if (f[3] == "-") {
    op.version = HistoryOp::kNoVersion;
  } else if (f[3] == "bad") {
    op.version = HistoryOp::kBadRecord;
  } else {
    std::uint32_t v = 0;
    if (!number(f[3], &v)) return fail("bad version");
    op.version = v;
  }
  if (!number(f[4], &op.invoke_ns)) return fail("bad invoke time");
  if (f[6] == "ok") {
    op.outcome = HistoryOp::Outcome::kOk;
  } else if (f[6] == "failed") {
    op.outcome = HistoryOp::Outcome::kFailed;
  } else if (f[6] == "pending") {
    op.outcome = HistoryOp::Outcome::kPending;
  } else {
    return fail("outcome is not ok, failed or pending");
  }
  if (op.outcome == HistoryOp::Outcome::kPending) {
    if (f[5] != "-") return fail("a pending operation has no response time");
  } else if (!number(f[5], &op.response_ns) || op.response_ns < op.invoke_ns) {
    return fail("bad response time");
  }
  if (!number(f[7], &op.resends)) return fail("bad resend count");
  if (op.write && op.version < 0) return fail("a write names no version");
  if (op.sidx && !op.write) return parse_sidx_read(f[8], f[9], std::move(op), fail);
  if (!op.write && op.outcome == HistoryOp::Outcome::kOk && op.version == HistoryOp::kNoVersion) {
    return fail("an ok read names no version");
  }
  if (op.sidx && !number(f[8], &op.secondary)) return fail("bad secondary key");
  return op;
}

HistoryWriter::HistoryWriter(const std::string& path, const std::string& header) : path_(path) {
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) throw std::runtime_error("--history " + path + ": " + std::strerror(errno));
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  std::fprintf(file_, "# %s\n# slot kind key version invoke_ns response_ns outcome resends [secondary | listing members]\n",
               header.c_str());
}

HistoryWriter::~HistoryWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void HistoryWriter::add(const HistoryOp& op) {
  const std::string line = format_history_line(op);
  std::fprintf(file_, "%s\n", line.c_str());
  ++lines_;
}

void HistoryWriter::close() {
  if (file_ == nullptr) return;
  const bool bad = std::ferror(file_) != 0;
  const int rc = std::fclose(file_);
  file_ = nullptr;
  if (bad || rc != 0) throw std::runtime_error("--history " + path_ + ": write failed: " + std::strerror(errno));
}

}  // namespace forein::net::load
