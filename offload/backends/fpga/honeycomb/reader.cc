// Honeycomb's read algorithm (reader.h): one implementation for CPU threads
// and the accelerator model. Every byte comes through MemoryPort::read in
// the paper's units (first 512 B, one sorted segment, the log block's bytes
// in use), so the accelerator can charge PCIe and its cache per read.
//
// Robustness: the bytes may be torn or garbage (a broken port, a test), so
// every length and offset is checked against the node, old-version chains
// and descents are bounded, a forward scan never revisits a LID, and output
// keys must strictly ascend. A corrupt node ends the request with what it
// has.
#include "forein/fpga/reader.h"

#include <memory>
#include <unordered_set>

#include "fpga/honeycomb/node_layout.h"

namespace forein::offload::fpga {
namespace {

// Old-version chains grow by one per merge or split below a node (a root
// that is the root of many splits), so a long-lived snapshot may walk far;
// the bound only stops cycles in corrupt bytes.
constexpr int kMaxOldVersions = 1 << 16;
constexpr int kMaxLevels = 32;
constexpr std::size_t kMaxLeafVisits = std::size_t{1} << 22;

// One node version as this request sees it.
struct NodeView {
  Lid lid = kNoLid;
  NodeAddress address = nullptr;
  layout::Image image;
  layout::Segments segs;
  std::vector<bool> segment_read;
  std::unique_ptr<layout::LeafMerger> merger;  // leaves, once the log is read
  const layout::Header& header() const { return image.header; }
};

class Request {
 public:
  Request(MemoryPort& port, Version rv, ReadTrace* trace) : port_(port), rv_(rv), trace_(trace) {}

  // lid's version at rv: the buffer this request first saw for lid (the
  // node address table), then old-version pointers while version > rv.
  std::unique_ptr<NodeView> open(Lid lid, bool interior_expected) {
    NodeAddress address = nat(lid);
    if (address == nullptr) return nullptr;
    auto view = std::make_unique<NodeView>();
    view->lid = lid;
    bool interior = interior_expected;
    for (int hops = 0;; ++hops) {
      view->address = address;
      if (!read(*view, interior, Block::kFirst, 0, kFirstBlockBytes)) return nullptr;
      view->image.header = layout::decode_header(view->image.bytes.data());
      const layout::Header& h = view->image.header;
      if (!h.plausible()) return nullptr;
      interior = h.interior();
      if (h.version <= rv_) break;
      if (hops == kMaxOldVersions || h.old_version == 0) return nullptr;  // nothing old enough
      address = reinterpret_cast<NodeAddress>(static_cast<std::uintptr_t>(h.old_version));
      if (trace_ != nullptr) ++trace_->old_versions;
    }
    auto segs = layout::parse_shortcuts(view->image);
    if (!segs) return nullptr;
    view->segs = std::move(*segs);
    view->segment_read.assign(view->segs.count(), false);
    if (trace_ != nullptr) ++(view->header().interior() ? trace_->interior_nodes : trace_->leaves);
    return view;
  }

  bool read_segment(NodeView& view, std::size_t i) {
    if (i >= view.segs.count()) return false;
    if (view.segment_read[i]) return true;
    const std::uint32_t start = view.segs.start(i), end = view.segs.end(i);
    if (end < start) return false;
    if (end > start && !read(view, view.header().interior(), Block::kSegment, start, end - start)) return false;
    view.segment_read[i] = true;
    return true;
  }

  layout::LeafMerger* merger(NodeView& view) {
    if (!view.merger) {
      const layout::Header& h = view.header();
      if (h.size > h.sorted_end && !read(view, false, Block::kLog, h.sorted_end, h.size - h.sorted_end)) {
        return nullptr;
      }
      std::vector<layout::LogEntry> log = layout::parse_log(view.image);
      if (trace_ != nullptr) trace_->log_items += static_cast<std::uint32_t>(log.size());
      view.merger = std::make_unique<layout::LeafMerger>(view.image, std::move(log), rv_);
    }
    return view.merger.get();
  }

  // The live keys of leaf segment i at rv, in order.
  std::vector<layout::LeafItem> segment_items(NodeView& view, std::size_t i, bool* ok) {
    layout::LeafMerger* m = merger(view);
    if (m == nullptr || !read_segment(view, i)) {
      *ok = false;
      return {};
    }
    return m->merge(view.segs, i, i, ok);
  }

  Version rv() const { return rv_; }

 private:
  NodeAddress nat(Lid lid) {
    for (const auto& [l, a] : nat_) {
      if (l == lid) return a;
    }
    NodeAddress a = port_.translate(lid);
    if (a != nullptr) nat_.emplace_back(lid, a);
    return a;
  }

  bool read(NodeView& view, bool interior, Block block, std::uint32_t offset, std::uint32_t length) {
    if (offset > kNodeBytes || length > kNodeBytes - offset) return false;
    NodeRead r{view.lid, view.address, interior, block, offset, length};
    port_.read(r, view.image.bytes.data() + offset);
    if (trace_ != nullptr) {
      ++trace_->reads;
      trace_->bytes += length;
    }
    return true;
  }

  MemoryPort& port_;
  Version rv_;
  ReadTrace* trace_;
  std::vector<std::pair<Lid, NodeAddress>> nat_;  // small: one entry per node visited
};

// Root to the leaf whose range holds lo.
std::unique_ptr<NodeView> descend(Request& req, MemoryPort& port, std::string_view lo) {
  std::unique_ptr<NodeView> node = req.open(port.root(), true);
  for (int depth = 0; node && node->header().interior(); ++depth) {
    if (depth == kMaxLevels) return nullptr;
    const std::size_t seg = node->segs.find(lo);
    if (!req.read_segment(*node, seg)) return nullptr;
    std::vector<layout::SortedItem> items;
    layout::parse_segment(node->image, node->segs, seg, items);
    Lid child = seg == 0 ? node->header().leftmost : kNoLid;
    for (const auto& it : items) {
      if (it.key > lo) break;
      child = it.child;
    }
    if (child == kNoLid) return nullptr;
    const std::uint8_t level = node->header().level;
    node = req.open(child, level > 1);
    if (node && node->header().level + 1 != level) return nullptr;
  }
  return node;
}

struct Found {
  std::size_t segment;
  std::string key;
};

// The last live key <= bound in segments [0, from] of a leaf.
std::optional<Found> last_live_at_most(Request& req, NodeView& leaf, std::string_view bound,
                                       std::size_t from) {
  for (std::size_t a = from + 1; a-- > 0;) {
    bool ok = true;
    const auto items = req.segment_items(leaf, a, &ok);
    for (std::size_t i = items.size(); i-- > 0;) {
      if (items[i].live && items[i].key <= bound) return Found{a, std::string(items[i].key)};
    }
    if (!ok) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

ScanResult honeycomb_scan(MemoryPort& port, std::string_view lo, std::string_view hi, Version rv,
                          std::size_t max_items, ReadTrace* trace) {
  ScanResult result;
  Request req(port, rv, trace);
  std::unique_ptr<NodeView> leaf = descend(req, port, lo);
  if (!leaf || leaf->header().interior()) return result;

  // Predecessor: the largest live key <= lo, in this leaf or (when lo's
  // leaf holds none: deleted keys, a separator with no item) to the left.
  std::optional<Found> start = last_live_at_most(req, *leaf, lo, leaf->segs.find(lo));
  std::unordered_set<Lid> walked{leaf->lid};
  for (std::size_t hops = 0; !start && leaf->header().left != kNoLid && hops < kMaxLeafVisits; ++hops) {
    if (!walked.insert(leaf->header().left).second) break;  // a cycle: corrupt bytes
    auto left = req.open(leaf->header().left, false);
    if (!left || left->header().interior()) break;
    leaf = std::move(left);
    start = last_live_at_most(req, *leaf, lo, leaf->segs.count() - 1);
  }

  // Forward from Ks (or from the first key if none is <= lo) to hi.
  std::size_t seg = start ? start->segment : 0;
  std::optional<std::string> last;
  std::unordered_set<Lid> visited{leaf->lid};
  for (std::size_t visits = 0; visits < kMaxLeafVisits; ++visits) {
    bool ok = true;
    const auto items = req.segment_items(*leaf, seg, &ok);
    for (const auto& it : items) {
      if (!it.live) continue;
      if (start && it.key < start->key) continue;
      if (last && it.key <= *last) continue;  // only on corrupt bytes
      if (it.key > hi) return result;
      if (max_items != 0 && result.items.size() == max_items) {
        result.truncated = true;
        return result;
      }
      result.items.push_back({std::string(it.key), std::string(it.value)});
      last = result.items.back().key;
    }
    if (!ok) return result;
    if (++seg < leaf->segs.count()) continue;
    const Lid right = leaf->header().right;
    if (right == kNoLid || !visited.insert(right).second) return result;
    leaf = req.open(right, false);
    if (!leaf || leaf->header().interior()) return result;
    seg = 0;
  }
  return result;
}

std::optional<std::string> honeycomb_get(MemoryPort& port, std::string_view key, Version rv,
                                         ReadTrace* trace) {
  ScanResult r = honeycomb_scan(port, key, key, rv, 0, trace);
  for (Item& it : r.items) {
    if (it.key == key) return std::move(it.value);
  }
  return std::nullopt;
}

}  // namespace forein::offload::fpga
