// dpa store: traverser contexts and epoch-based reclamation from their
// packet counters (DPA-Store 3.2.3: "using all DPA threads' incoming and
// outgoing packet counters to compute a global epoch value").
//
// A request runs in one traverser context and holds its mutex throughout
// (a DPA thread serves one request at a time), counting `in` when it
// starts and `out` when it ends. A node retired after the CONNECT that
// unlinked it is freed once every context has finished the request it was
// serving at retirement (out >= the in seen then): a request that starts
// later reads the new pointers and cannot reach it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "dpa/store/dpa_memory.h"
#include "dpa/store/hot_cache.h"
#include "dpa/store/nic_layout.h"

namespace forein::offload::dpa::detail {

struct TraverserContext {
  TraverserContext(std::uint64_t seed, double admit_probability) : cache(seed, admit_probability) {}
  std::mutex mutex;
  HotCache cache;  // guarded by mutex
  std::atomic<std::uint64_t> in{0}, out{0};
};

// One request in a context: locks it and moves its packet counters.
class RequestScope {
 public:
  explicit RequestScope(TraverserContext& context) : context_(context), lock_(context.mutex) {
    context_.in.fetch_add(1);
  }
  ~RequestScope() { context_.out.fetch_add(1); }
  RequestScope(const RequestScope&) = delete;
  RequestScope& operator=(const RequestScope&) = delete;

 private:
  TraverserContext& context_;
  std::lock_guard<std::mutex> lock_;
};

class Epochs {
 public:
  Epochs(const std::vector<std::unique_ptr<TraverserContext>>& contexts, DpaMemory& memory,
         std::atomic<std::uint64_t>& host_bytes)
      : contexts_(contexts), memory_(memory), host_bytes_(host_bytes) {}
  ~Epochs() { free_all(); }

  // After the CONNECT that made node unreachable for new requests.
  void retire(NicNode* node);
  // Frees every retired node all contexts have moved past; how many.
  std::size_t reclaim();
  void free_all();

  std::uint64_t retired() const { return retired_count_.load(); }
  std::uint64_t reclaimed() const { return reclaimed_count_.load(); }
  std::uint64_t pending_bytes() const;

 private:
  struct Retired {
    NicNode* node;
    std::vector<std::uint64_t> in_seen;  // each context's `in` at retirement
  };
  void free_node(NicNode* node);

  const std::vector<std::unique_ptr<TraverserContext>>& contexts_;
  DpaMemory& memory_;
  std::atomic<std::uint64_t>& host_bytes_;
  mutable std::mutex mutex_;
  std::vector<Retired> retired_;
  std::atomic<std::uint64_t> retired_count_{0}, reclaimed_count_{0};
};

}  // namespace forein::offload::dpa::detail
