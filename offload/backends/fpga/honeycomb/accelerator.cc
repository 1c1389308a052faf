// The Accelerator: AcceleratorLink over AcceleratorCore, requests run by
// RequestEngine's workers through an AcceleratorPort each.
#include "forein/fpga/accelerator.h"

#include <exception>
#include <future>
#include <memory>

#include "fpga/honeycomb/accelerator_port.h"
#include "fpga/honeycomb/request_engine.h"

namespace forein::offload::fpga {

struct Accelerator::Impl {
  explicit Impl(const AcceleratorOptions& options) : core(options), engine(options.workers) {}

  // Registers a request, then takes its root and read version (after
  // registering, so nothing it can reach is freed: request_engine.h), and
  // queues run(port) for a worker. A root newer than rv is read through
  // its old-version pointer like any node (section 3.2).
  template <typename Run>
  void submit(Run run) {
    const std::uint64_t seq = engine.begin();
    const AcceleratorCore::Root root = core.root();
    const Version rv = core.grv.load(std::memory_order_acquire);
    engine.enqueue(seq, [this, root, rv, run = std::move(run)]() mutable {
      AcceleratorPort port(core, root, rv);
      run(port);
    });
  }

  // One request's read; the outcome is the value or what the reader threw.
  std::optional<std::string> get(AcceleratorPort& port, const std::string& key) {
    ReadTrace trace;
    std::optional<std::string> value = honeycomb_get(port, key, port.read_version(), &trace);
    core.record(false, value ? 1 : 0, trace, port.latency_ns(),
                reply_wire_bytes(value ? 1 : 0, value ? key.size() + value->size() : 0));
    return value;
  }
  ScanResult scan(AcceleratorPort& port, const std::string& lo, const std::string& hi,
                  std::size_t max_items) {
    ReadTrace trace;
    ScanResult result = honeycomb_scan(port, lo, hi, port.read_version(), max_items, &trace);
    std::uint64_t payload = 0;
    for (const Item& item : result.items) payload += item.key.size() + item.value.size();
    core.record(true, result.items.size(), trace, port.latency_ns(),
                reply_wire_bytes(result.items.size(), payload));
    return result;
  }

  AcceleratorCore core;
  RequestEngine engine;  // last: its workers stop before core goes
};

Accelerator::Accelerator(AcceleratorOptions options) : impl_(std::make_unique<Impl>(options)) {}

Accelerator::~Accelerator() { impl_->engine.drain(); }

void Accelerator::map(Lid lid, NodeAddress address) { impl_->core.map(lid, address); }
void Accelerator::unmap(Lid lid) { impl_->core.unmap(lid); }
void Accelerator::set_read_version(Version grv) { impl_->core.set_read_version(grv); }
Version Accelerator::current_read_version() { return impl_->core.grv.load(std::memory_order_acquire); }
void Accelerator::set_root(Lid root, std::uint32_t height) { impl_->core.set_root(root, height); }
std::uint64_t Accelerator::newest_sequence() { return impl_->engine.newest_sequence(); }
std::uint64_t Accelerator::oldest_sequence() { return impl_->engine.oldest_sequence(); }

// The callback forms report a failed read (a malformed node, say) as an
// empty result; the synchronous forms rethrow it. A synchronous call must
// not be made from a completion callback (it would wait on its own worker).
void Accelerator::submit_get(std::string key, GetDone done) {
  Impl* impl = impl_.get();
  impl->submit([impl, key = std::move(key), done = std::move(done)](AcceleratorPort& port) {
    std::optional<std::string> value;
    try {
      value = impl->get(port, key);
    } catch (...) {
      value.reset();
    }
    done(std::move(value));
  });
}

void Accelerator::submit_scan(std::string lo, std::string hi, std::size_t max_items,
                              ScanDone done) {
  Impl* impl = impl_.get();
  impl->submit([impl, lo = std::move(lo), hi = std::move(hi), max_items,
                done = std::move(done)](AcceleratorPort& port) {
    ScanResult result;
    try {
      result = impl->scan(port, lo, hi, max_items);
    } catch (...) {
      result = ScanResult{};
    }
    done(std::move(result));
  });
}

std::optional<std::string> Accelerator::get(std::string_view key) {
  auto promise = std::make_shared<std::promise<std::optional<std::string>>>();
  auto future = promise->get_future();
  Impl* impl = impl_.get();
  impl->submit([impl, key = std::string(key), promise](AcceleratorPort& port) {
    try {
      promise->set_value(impl->get(port, key));
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  });
  return future.get();
}

ScanResult Accelerator::scan(std::string_view lo, std::string_view hi, std::size_t max_items) {
  auto promise = std::make_shared<std::promise<ScanResult>>();
  auto future = promise->get_future();
  Impl* impl = impl_.get();
  impl->submit([impl, lo = std::string(lo), hi = std::string(hi), max_items,
                promise](AcceleratorPort& port) {
    try {
      promise->set_value(impl->scan(port, lo, hi, max_items));
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  });
  return future.get();
}

void Accelerator::drain() { impl_->engine.drain(); }

AcceleratorStats Accelerator::stats() const { return impl_->core.stats(); }
AcceleratorModel Accelerator::model() const { return impl_->core.model(); }
const AcceleratorOptions& Accelerator::options() const { return impl_->core.options; }
void Accelerator::reset_stats() { impl_->core.reset_stats(); }

}  // namespace forein::offload::fpga
