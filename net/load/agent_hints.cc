#include "load/agent_hints.h"

#include <utility>

#include "forein/key.h"
#include "forein/offload/registry.h"

namespace forein::net::load {

namespace {

// Each fetch is bounded well below a second, so a dead agent costs the
// fetch thread at most this much and never delays the engine.
constexpr std::chrono::milliseconds kFetchDeadline{500};

}  // namespace

AgentHints::AgentHints(std::string target, std::string token, std::uint64_t index_id,
                       std::chrono::milliseconds period)
    : client_(std::move(target), std::move(token), kFetchDeadline),
      index_id_(index_id),
      period_(period),
      image_(std::make_shared<const Image>()),
      held_(image_.load()) {
  fetch_once();  // the first requests already carry hints when the agent has an image
  thread_ = std::thread([this] { run(); });
}

AgentHints::~AgentHints() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::optional<StartHints> AgentHints::hint(std::string_view key) const {
  return image_.read([&](const Image& img) -> std::optional<StartHints> {
    if (img.backend == nullptr) return std::nullopt;
    const StartHints h = img.backend->hint(img.bytes, word_of(key));
    if (!h.primary.present() && !h.secondary.present()) return std::nullopt;
    return h;
  });
}

void AgentHints::fetch_once() {
  FetchedImage fetched;
  const grpc::Status status = client_.fetch_image(index_id_, &fetched);
  const offload::BackendInfo* backend = status.ok() ? offload::find_backend(fetched.backend) : nullptr;
  if (backend == nullptr) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    if (held_->backend != nullptr) {
      held_ = std::make_shared<const Image>();
      image_.publish(held_);
    }
    return;
  }
  fetches_.fetch_add(1, std::memory_order_relaxed);
  if (held_->backend == backend && held_->version == fetched.version && held_->bytes == fetched.bytes) {
    return;  // unchanged
  }
  auto next = std::make_shared<Image>();
  next->backend = backend;
  next->bytes = std::move(fetched.bytes);
  next->version = fetched.version;
  held_ = std::move(next);
  image_.publish(held_);
}

void AgentHints::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (wake_.wait_for(lock, period_, [this] { return stop_; })) return;
    lock.unlock();
    fetch_once();
    lock.lock();
  }
}

}  // namespace forein::net::load
