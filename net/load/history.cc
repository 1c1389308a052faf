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
  out += op.write ? " W " : " R ";
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
  return out;
}

namespace {

template <typename T>
bool number(std::string_view s, T* out) {
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
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
  if (f.size() != 8) return fail("want 8 fields, got " + std::to_string(f.size()));
  HistoryOp op;
  if (!number(f[0], &op.slot)) return fail("bad slot");
  if (f[1] != "W" && f[1] != "R") return fail("kind is not W or R");
  op.write = f[1] == "W";
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
  if (!op.write && op.outcome == HistoryOp::Outcome::kOk && op.version == HistoryOp::kNoVersion) {
    return fail("an ok read names no version");
  }
  return op;
}

HistoryWriter::HistoryWriter(const std::string& path, const std::string& header) : path_(path) {
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) throw std::runtime_error("--history " + path + ": " + std::strerror(errno));
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  std::fprintf(file_, "# %s\n# slot kind key version invoke_ns response_ns outcome resends\n", header.c_str());
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
