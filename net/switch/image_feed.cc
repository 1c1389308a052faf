#include "image_feed.h"

#include <chrono>
#include <utility>

namespace forein::net::sw {

ImageFeed::ImageFeed(forein::net::AgentServer& server, std::uint64_t index, forein::offload::Published<Image>* out)
    : thread_([this, &server, index, out] { refresh_loop(server, index, out); }) {}

ImageFeed::~ImageFeed() { stop(); }

void ImageFeed::stop() {
  {
    std::lock_guard lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ImageFeed::refresh_loop(forein::net::AgentServer& server, std::uint64_t index,
                             forein::offload::Published<Image>* out) {
  std::shared_ptr<const forein::offload::BackendImage> held;
  const forein::offload::BackendInfo* held_info = nullptr;
  std::unique_lock lock(mu_);
  while (!done_) {
    lock.unlock();
    const forein::offload::BackendInfo* info = nullptr;
    auto img = server.service().image(index, &info);
    if (img != held || info != held_info) {
      auto next = std::make_shared<Image>();
      next->info = img != nullptr ? info : nullptr;
      next->image = img;
      out->publish(std::move(next));
      held = std::move(img);
      held_info = info;
    }
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(5), [&] { return done_; });
  }
}

}  // namespace forein::net::sw
