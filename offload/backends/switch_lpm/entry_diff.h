// The difference between the entry set the backend will hold and a newly
// computed one.
//
// An entry is identified by its layer class (bottom line or upper: main and
// hot leaves share one table) and its prefix. A changed target (node or
// level) is an install that replaces the old one in place; a version-only
// change is not pushed, since hosts validate ranges, not versions, and a
// split would otherwise reinstall every prefix of the node.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "switch_lpm/lpm_entry.h"

namespace forein::offload {

inline bool is_bottom_line(const LpmEntry& e) { return e.layer == Layer::kBottomLine; }

// The diff order: bottom line first, then by prefix_less.
bool entry_key_less(const LpmEntry& a, const LpmEntry& b);
bool same_entry_key(const LpmEntry& a, const LpmEntry& b);
// Sorts into diff order and keeps the first of equal keys.
void sort_entries(std::vector<LpmEntry>& entries);

struct EntryDiff {
  std::vector<LpmEntry> install;  // new keys and changed targets
  std::vector<LpmEntry> remove;   // keys no longer wanted
  std::size_t new_keys = 0;       // installs that add a key (not replace one)
};

// Both inputs in diff order with distinct keys.
EntryDiff diff_entries(std::span<const LpmEntry> before, std::span<const LpmEntry> after);

}  // namespace forein::offload
