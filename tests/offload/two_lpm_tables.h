// The switch_lpm reference the image is measured and tested against: the
// two LPM tables of the old SwitchLpmBackend, looked up one by one.
#pragma once

#include <cstddef>
#include <vector>

#include "forein/node_interval.h"
#include "forein/offload/backend.h"
#include "switch_lpm/lpm_entry.h"
#include "switch_lpm/lpm_table.h"

namespace forein::offload::testing {

// The reference: the two LPM tables looked up one by one (LpmTable over
// LpmSnapshot), with switch_lpm's rule: primary = the upper table's match
// (secondary: the bottom line's), else the bottom line's.
class TwoTables {
 public:
  explicit TwoTables(std::size_t capacity) : upper_(capacity), bottom_(capacity) {}
  BackendStatus install(const std::vector<LpmEntry>& entries) {
    std::vector<LpmEntry> up, bot;
    for (const LpmEntry& e : entries) (e.layer == Layer::kBottomLine ? bot : up).push_back(e);
    if ((!up.empty() && upper_.install(up) != LpmStatus::kOk) ||
        (!bot.empty() && bottom_.install(bot) != LpmStatus::kOk)) {
      return BackendStatus::kInvalidEntry;
    }
    return BackendStatus::kOk;
  }
  StartHints hint_for_word(Word w) const {
    const auto up = upper_.lookup(w), bot = bottom_.lookup(w);
    auto hint = [](const LpmAction& a) { return forein::Hint{a.node, a.level, a.version_tag}; };
    StartHints h;
    if (up) {
      h.primary = hint(*up);
      if (bot) h.secondary = hint(*bot);
    } else if (bot) {
      h.primary = hint(*bot);
    }
    return h;
  }
  std::size_t host_bytes() const { return upper_.usage().bytes + bottom_.usage().bytes; }

 private:
  LpmTable upper_, bottom_;
};

}  // namespace forein::offload::testing
