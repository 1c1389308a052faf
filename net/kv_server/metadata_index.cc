#include "kv_server/metadata_index.h"

#include <string>

namespace forein::net::kv {

std::optional<StampedLocation> MetadataIndex::lookup(std::string_view key) {
  std::string value;
  if (!tree_.get(key, &value)) return std::nullopt;
  return decode_stamped(value);
}

ApplyResult MetadataIndex::apply(std::string_view key, const StampedLocation& update) {
  // One writer (the metadata node's event loop), so the read and the put
  // need no lock between them.
  if (const std::optional<StampedLocation> stored = lookup(key); stored && stored->ts >= update.ts) {
    return ApplyResult::kIgnoredOlder;
  }
  tree_.put(key, encode_stamped(update));
  return ApplyResult::kApplied;
}

}  // namespace forein::net::kv
