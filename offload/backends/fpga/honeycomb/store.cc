// Honeycomb's store: construction, the CPU port, reads, bulk load,
// reclamation and stats (store.h). The write path is in store_writes.cc.
#include <algorithm>
#include <cstring>
#include <new>

#include "forein/error.h"
#include "fpga/honeycomb/store_impl.h"

namespace forein::offload::fpga {

NodeAddress CpuPort::translate(Lid lid) { return table_.translate(lid); }
void CpuPort::read(const NodeRead& read, std::byte* out) {
  copy_node_bytes(read.address, read.offset, read.length, out);
}
Lid CpuPort::root() { return root_word_.load(std::memory_order_seq_cst) & kMaxLid; }
Version CpuPort::read_version() { return versions_.read_version(); }

StoreCore::StoreCore(StoreOptions o, AcceleratorLink* l)
    : options(o),
      link(l),
      table(l),
      versions(o.mvcc, o.release_out_of_order_for_testing, l),
      epochs(l, [this](const Retired& r) { free_retired(r); }) {
  if (options.log_block_bytes < 32 || options.log_block_bytes > kNodeBytes / 2) {
    throw InvalidArgument("honeycomb: log_block_bytes must be in [32, 4096]");
  }
  // An empty tree is one empty leaf.
  std::byte* leaf = new_buffer();
  layout::write_header(leaf, layout::Header{});
  const Lid lid = table.allocate();
  table.map(lid, leaf);
  set_root(lid, 1);
}

StoreCore::~StoreCore() {
  // No request runs now: free what is retired (here, while the table and
  // counters are alive), then every buffer still mapped.
  epochs.free_all();
  table.for_each([this](Lid, NodeAddress a) { delete_buffer(const_cast<std::byte*>(a)); });
  for (std::byte* b : pool) ::operator delete(b, std::align_val_t{64});
}

void StoreCore::set_root(Lid lid, std::uint32_t h) {
  root_word.store(pack_root(lid, h), std::memory_order_seq_cst);
  if (link != nullptr) link->set_root(lid, h);
}

std::byte* StoreCore::new_buffer() {
  std::byte* b = nullptr;
  {
    std::lock_guard lock(pool_mutex);
    if (!pool.empty()) {
      b = pool.back();
      pool.pop_back();
    }
  }
  if (b == nullptr) b = static_cast<std::byte*>(::operator new(kNodeBytes, std::align_val_t{64}));
  std::memset(b, 0, kNodeBytes);
  buffers.fetch_add(1, std::memory_order_relaxed);
  return b;
}

void StoreCore::delete_buffer(std::byte* buffer) {
  buffers.fetch_sub(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(pool_mutex);
    if (pool.size() < kPoolBuffers) {
      pool.push_back(buffer);
      return;
    }
  }
  ::operator delete(buffer, std::align_val_t{64});
}

void StoreCore::free_retired(const Retired& r) {
  if (r.lid != kNoLid) table.free(r.lid);
  delete_buffer(r.buffer);
  freed.fetch_add(1, std::memory_order_relaxed);
}

void StoreCore::maybe_collect() {
  // The out-of-order test variant can move GRV backwards, so a request may
  // follow old-version pointers to any retired buffer: keep them all.
  if (options.release_out_of_order_for_testing) return;
  if (writes_since_gc.fetch_add(1, std::memory_order_relaxed) % 64 == 63) epochs.collect();
}

Store::Store(StoreOptions options, AcceleratorLink* link) : impl_(std::make_unique<Impl>(options, link)) {}
Store::~Store() = default;

namespace {

void check_key(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeyBytes) {
    throw InvalidArgument("honeycomb: keys must be 1.." + std::to_string(kMaxKeyBytes) + " bytes");
  }
}
void check_value(std::string_view value) {
  if (value.size() > kMaxValueBytes) {
    throw InvalidArgument("honeycomb: values must be at most " + std::to_string(kMaxValueBytes) + " bytes");
  }
}

// Groups items into nodes of at most `budget` sorted-block bytes (at least
// one item each).
template <class Size>
std::vector<std::pair<std::size_t, std::size_t>> pack(std::size_t n, std::size_t budget, Size size) {
  std::vector<std::pair<std::size_t, std::size_t>> groups;
  std::size_t begin = 0, bytes = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t s = size(i);
    if (i > begin && bytes + s > budget) {
      groups.emplace_back(begin, i);
      begin = i;
      bytes = 0;
    }
    bytes += s;
  }
  if (begin < n) groups.emplace_back(begin, n);
  return groups;
}

}  // namespace

void Store::bulk_load(std::span<const Item> items, double fill) {
  if (!(fill > 0.05 && fill <= 1.0)) throw InvalidArgument("honeycomb: bulk_load fill must be in (0.05, 1]");
  for (std::size_t i = 0; i < items.size(); ++i) {
    check_key(items[i].key);
    check_value(items[i].value);
    if (i > 0 && !(items[i - 1].key < items[i].key)) {
      throw InvalidArgument("honeycomb: bulk_load items must be sorted and unique");
    }
  }
  Impl& s = *impl_;
  Epochs::Guard guard(s.epochs);
  const Lid old_root = s.root_lid();
  NodeAddress old_buf = s.table.translate(old_root);
  const layout::Header old_h = [&] {
    std::byte h[kHeaderBytes];
    copy_node_bytes(old_buf, 0, kHeaderBytes, h);
    return layout::decode_header(h);
  }();
  if (s.height() != 1 || old_h.size != layout::kSortedStart || s.versions.write_version() != 0 ||
      s.puts.load() != 0) {
    throw InvalidArgument("honeycomb: bulk_load needs an empty store");
  }
  if (items.empty()) return;

  // Leaves: sorted blocks filled to `fill` of the node, leaving the
  // log block's room at least.
  const std::size_t room = kNodeBytes - layout::kSortedStart;
  const std::size_t used = static_cast<std::size_t>(fill * kNodeBytes);
  const std::size_t leaf_budget =
      std::clamp<std::size_t>(used > layout::kSortedStart ? used - layout::kSortedStart : 1, 1,
                              room - std::min(s.options.log_block_bytes, kNodeBytes / 4));
  auto leaf_groups = pack(items.size(), leaf_budget, [&](std::size_t i) {
    return layout::item_bytes({items[i].key, items[i].value, kNoLid}, false);
  });
  std::vector<Lid> lids(leaf_groups.size());
  for (Lid& l : lids) l = s.table.allocate();
  struct Child {
    Lid lid;
    std::string_view first_key;
  };
  std::vector<Child> level;
  for (std::size_t g = 0; g < leaf_groups.size(); ++g) {
    std::vector<layout::BuildItem> b;
    for (std::size_t i = leaf_groups[g].first; i < leaf_groups[g].second; ++i) {
      b.push_back({items[i].key, items[i].value, kNoLid});
    }
    layout::Header h;
    h.left = g > 0 ? lids[g - 1] : kNoLid;
    h.right = g + 1 < lids.size() ? lids[g + 1] : kNoLid;
    std::byte* buf = s.new_buffer();
    if (!layout::build_node(buf, h, b)) throw Error("honeycomb: bulk_load leaf overflow");
    s.table.map(lids[g], buf);
    level.push_back({lids[g], items[leaf_groups[g].first].key});
  }
  // Interior levels upward: leftmost child in the header, then (first key
  // of child i, child i) items.
  std::uint32_t height = 1;
  const std::size_t interior_budget = std::max<std::size_t>(1, static_cast<std::size_t>(fill * room));
  while (level.size() > 1) {
    ++height;
    auto groups = pack(level.size(), interior_budget, [&](std::size_t i) {
      return layout::item_bytes({level[i].first_key, {}, level[i].lid}, true);
    });
    std::vector<Child> up;
    for (auto [begin, end] : groups) {
      std::vector<layout::BuildItem> b;
      for (std::size_t i = begin + 1; i < end; ++i) b.push_back({level[i].first_key, {}, level[i].lid});
      layout::Header h;
      h.type = layout::NodeType::kInterior;
      h.level = static_cast<std::uint8_t>(height - 1);
      h.leftmost = level[begin].lid;
      std::byte* buf = s.new_buffer();
      if (!layout::build_node(buf, h, b)) throw Error("honeycomb: bulk_load interior overflow");
      const Lid lid = s.table.allocate();
      s.table.map(lid, buf);
      up.push_back({lid, level[begin].first_key});
    }
    level = std::move(up);
  }
  s.set_root(level.front().lid, height);
  s.retired.fetch_add(1, std::memory_order_relaxed);
  s.epochs.retire({{const_cast<std::byte*>(old_buf), old_root}});
}

bool Store::put(std::string_view key, std::string_view value) {
  check_key(key);
  check_value(value);
  return impl_->write(WriteOp::kPut, key, value);
}
bool Store::update(std::string_view key, std::string_view value) {
  check_key(key);
  check_value(value);
  return impl_->write(WriteOp::kUpdate, key, value);
}
bool Store::erase(std::string_view key) {
  check_key(key);
  return impl_->write(WriteOp::kErase, key, {});
}
void Store::upsert(std::string_view key, std::string_view value) {
  check_key(key);
  check_value(value);
  impl_->write(WriteOp::kUpsert, key, value);
}

std::optional<std::string> Store::get(std::string_view key) {
  check_key(key);
  Epochs::Guard guard(impl_->epochs);
  return honeycomb_get(impl_->port, key, impl_->versions.read_version());
}

ScanResult Store::scan(std::string_view lo, std::string_view hi, std::size_t max_items) {
  Epochs::Guard guard(impl_->epochs);
  return honeycomb_scan(impl_->port, lo, hi, impl_->versions.read_version(), max_items);
}

MemoryPort& Store::cpu_port() { return impl_->port; }
Version Store::read_version() const { return impl_->versions.read_version(); }
Version Store::write_version() const { return impl_->versions.write_version(); }

void Store::collect_garbage() {
  if (impl_->options.release_out_of_order_for_testing) return;
  impl_->epochs.collect();
}

StoreStats Store::stats() const {
  const Impl& s = *impl_;
  StoreStats st;
  st.puts = s.puts.load();
  st.updates = s.updates.load();
  st.deletes = s.deletes.load();
  st.log_appends = s.log_appends.load();
  st.merges = s.merges.load();
  st.splits = s.splits.load();
  st.restarts = s.restarts.load();
  st.page_table_updates = s.table.updates();
  st.nodes_live = s.table.live();
  st.buffers_retired = s.retired.load();
  st.buffers_freed = s.freed.load();
  st.height = s.height();
  st.bytes_allocated = s.buffers.load() * kNodeBytes;
  return st;
}

std::vector<Item> Store::dump() {
  Epochs::Guard guard(impl_->epochs);
  const std::string hi(kMaxKeyBytes + 1, '\xff');
  return honeycomb_scan(impl_->port, {}, hi, impl_->versions.read_version()).items;
}

}  // namespace forein::offload::fpga
