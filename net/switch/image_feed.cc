#include "image_feed.h"

#include <algorithm>
#include <utility>

#include "forein/offload/registry.h"

namespace forein::net::sw {

ImageSource local_images(forein::net::AgentServer& server) {
  return [&server](std::uint64_t index) {
    ShardImage s;
    const forein::offload::BackendInfo* info = nullptr;
    s.image = server.service().image(index, &info);
    s.info = s.image != nullptr ? info : nullptr;
    return s;
  };
}

ShardImage RemoteImages::fetch(std::uint64_t index) {
  ShardImage& held = held_[index];
  forein::net::FetchedImage fetched;
  const forein::offload::BackendInfo* info =
      client_.fetch_image(index, &fetched).ok() ? forein::offload::find_backend(fetched.backend) : nullptr;
  if (info == nullptr) {
    held = ShardImage{};
    return held;
  }
  if (held.info != info || held.image == nullptr || held.image->version != fetched.version ||
      held.image->bytes != fetched.bytes) {
    auto image = std::make_shared<forein::offload::BackendImage>();
    image->bytes = std::move(fetched.bytes);
    image->version = fetched.version;
    held = ShardImage{info, std::move(image)};
  }
  return held;
}

ImageFeed::ImageFeed(ImageSource source, std::uint64_t first_index, std::size_t count,
                     std::chrono::milliseconds period, forein::offload::Published<Image>* out)
    : source_(std::move(source)),
      thread_([this, first_index, count, period, out] { refresh_loop(first_index, count, period, out); }) {}

ImageFeed::~ImageFeed() { stop(); }

void ImageFeed::stop() {
  {
    std::lock_guard lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ImageFeed::refresh_loop(std::uint64_t first_index, std::size_t count, std::chrono::milliseconds period,
                             forein::offload::Published<Image>* out) {
  std::vector<ShardImage> held(count);
  std::unique_lock lock(mu_);
  bool first = true;
  // While the images stay the same the period doubles, up to 80 ms (or the
  // given period, if longer), so an idle switch does not wake 200 times a
  // second; a change brings it back at once.
  auto wait = period;
  while (!done_) {
    lock.unlock();
    std::vector<ShardImage> now(count);
    bool changed = first;
    for (std::size_t i = 0; i < count; ++i) {
      now[i] = source_(first_index + i);
      changed = changed || now[i].image != held[i].image || now[i].info != held[i].info;
    }
    if (changed) {
      auto next = std::make_shared<Image>();
      next->shards = now;
      out->publish(std::move(next));
      held = std::move(now);
      first = false;
      wait = period;
    } else {
      wait = std::min(wait * 2, std::max(period, std::chrono::milliseconds(80)));
    }
    lock.lock();
    cv_.wait_for(lock, wait, [&] { return done_; });
  }
}

}  // namespace forein::net::sw
