#include "kv_server/secondary_index.h"

namespace forein::net::kv {

namespace {

constexpr std::size_t kTsBytes = 4;

void put_be32(std::string* out, std::uint32_t v) {
  for (int b = 0; b < 4; ++b) out->push_back(static_cast<char>(v >> (24 - 8 * b)));
}

std::uint32_t load_be32(std::string_view s) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < kTsBytes; ++i) v = (v << 8) | static_cast<unsigned char>(s[i]);
  return v;
}

// "S", u16 length, the secondary key: every composite key of it starts so.
std::string composite_prefix(std::string_view secondary) {
  std::string out;
  out.reserve(3 + secondary.size() + kTsBytes + 16);
  out.push_back('S');
  out.push_back(static_cast<char>(secondary.size() >> 8));
  out.push_back(static_cast<char>(secondary.size()));
  out.append(secondary);
  return out;
}

}  // namespace

std::string SecondaryIndex::composite_key(std::string_view secondary, std::uint32_t ts, std::string_view primary) {
  std::string out = composite_prefix(secondary);
  put_be32(&out, ~ts);  // newest first within the secondary key
  out.append(primary);
  return out;
}

std::string SecondaryIndex::reverse_key(std::string_view primary) {
  std::string out;
  out.reserve(1 + primary.size());
  out.push_back('P');
  out.append(primary);
  return out;
}

std::string SecondaryIndex::too_long(std::string_view primary, std::string_view secondary) const {
  const std::size_t composite = 3 + secondary.size() + kTsBytes + primary.size();
  if (secondary.size() > 0xFFFF || composite > tree_.max_key_size()) {
    return "keys too long for the secondary index: the composite key would be " + std::to_string(composite) +
           " bytes, the tree holds at most " + std::to_string(tree_.max_key_size());
  }
  if (kTsBytes + secondary.size() > tree_.max_value_size()) {
    return "secondary key longer than " + std::to_string(tree_.max_value_size() - kTsBytes) + " bytes";
  }
  return {};
}

std::optional<SecondaryIndex::Newest> SecondaryIndex::lookup(std::string_view primary) {
  std::string value;
  if (!tree_.get(reverse_key(primary), &value) || value.size() < kTsBytes) return std::nullopt;
  return Newest{value.substr(kTsBytes), load_be32(value)};
}

ApplyResult SecondaryIndex::apply(std::string_view primary, std::string_view secondary, std::uint32_t ts,
                                  std::string* stale) {
  // One writer (the metadata node's event loop): no lock between the
  // read and the puts.
  const std::optional<Newest> old = lookup(primary);
  if (old && old->ts >= ts) return ApplyResult::kIgnoredOlder;
  if (tree_.insert(composite_key(secondary, ts, primary), "")) ++composites_;
  std::string value;
  value.reserve(kTsBytes + secondary.size());
  put_be32(&value, ts);
  value.append(secondary);
  if (tree_.put(reverse_key(primary), value)) ++primaries_;
  if (old) {
    std::string composite = composite_key(old->secondary, old->ts, primary);
    if (stale != nullptr) {
      *stale = std::move(composite);
    } else {
      erase_stale(composite);
    }
  }
  return ApplyResult::kApplied;
}

void SecondaryIndex::erase_stale(std::string_view composite) {
  if (tree_.erase(composite)) {
    --composites_;
    ++stale_deleted_;
  }
}

std::vector<SecondaryIndex::Member> SecondaryIndex::read(std::string_view secondary, std::size_t count, bool* more) {
  std::vector<Member> out;
  *more = false;
  const std::string prefix = composite_prefix(secondary);
  ScanSpec spec;
  spec.lower = KeyBound{prefix, true};
  spec.expected_rows = count + 1;
  tree_.scan(spec, [&](std::string_view key, std::string_view) {
    if (key.size() <= prefix.size() + kTsBytes || key.substr(0, prefix.size()) != prefix) return false;
    if (out.size() == count) {
      *more = true;
      return false;
    }
    out.push_back({std::string(key.substr(prefix.size() + kTsBytes)), ~load_be32(key.substr(prefix.size()))});
    return true;
  });
  return out;
}

}  // namespace forein::net::kv
