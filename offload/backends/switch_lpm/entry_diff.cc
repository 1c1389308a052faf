#include "switch_lpm/entry_diff.h"

#include <algorithm>

namespace forein::offload {

bool entry_key_less(const LpmEntry& a, const LpmEntry& b) {
  const bool ab = is_bottom_line(a), bb = is_bottom_line(b);
  if (ab != bb) return ab;
  return prefix_less(a.prefix, b.prefix);
}

bool same_entry_key(const LpmEntry& a, const LpmEntry& b) {
  return is_bottom_line(a) == is_bottom_line(b) && a.prefix == b.prefix;
}

void sort_entries(std::vector<LpmEntry>& entries) {
  std::stable_sort(entries.begin(), entries.end(), entry_key_less);
  entries.erase(std::unique(entries.begin(), entries.end(), same_entry_key), entries.end());
}

EntryDiff diff_entries(std::span<const LpmEntry> before, std::span<const LpmEntry> after) {
  EntryDiff diff;
  std::size_t i = 0, j = 0;
  while (i < before.size() || j < after.size()) {
    if (j == after.size() || (i < before.size() && entry_key_less(before[i], after[j]))) {
      diff.remove.push_back(before[i++]);
    } else if (i == before.size() || entry_key_less(after[j], before[i])) {
      diff.install.push_back(after[j++]);
      ++diff.new_keys;
    } else {
      if (before[i].node != after[j].node || before[i].level != after[j].level) {
        diff.install.push_back(after[j]);
      }
      ++i;
      ++j;
    }
  }
  return diff;
}

}  // namespace forein::offload
