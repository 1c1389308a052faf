#include "agent_client.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace forein::net {

namespace {

constexpr int kMaxMessageBytes = 256 << 20;

std::string as_string(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// Codes that mean the agent's state disagrees with ours: publish the whole
// image, do not retry the batch.
bool needs_publish(grpc::StatusCode code) {
  return code == grpc::StatusCode::NOT_FOUND || code == grpc::StatusCode::FAILED_PRECONDITION ||
         code == grpc::StatusCode::INVALID_ARGUMENT ||
         code == grpc::StatusCode::RESOURCE_EXHAUSTED;
}

}  // namespace

AgentClient::AgentClient(std::string target, std::string token, std::chrono::milliseconds deadline)
    : target_(std::move(target)), token_(std::move(token)), deadline_(deadline) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  // Reconnect quickly after an agent restart.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 20);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 20);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  channel_ = grpc::CreateCustomChannel(target_, grpc::InsecureChannelCredentials(), args);
  stub_ = control::SwitchAgent::NewStub(channel_);
}

void AgentClient::prepare(grpc::ClientContext* ctx) const {
  ctx->set_deadline(std::chrono::system_clock::now() + deadline_);
  if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
}

grpc::Status AgentClient::apply_batch(std::uint64_t index_id, std::string_view backend,
                                      const offload::ChangeBatch& batch,
                                      std::uint64_t* image_version) const {
  control::BatchRequest req;
  req.set_index_id(index_id);
  req.set_backend(std::string(backend));
  req.set_batch(as_string(batch.bytes));
  req.set_records(batch.records);
  control::BatchReply reply;
  grpc::ClientContext ctx;
  prepare(&ctx);
  const grpc::Status s = batch.kind == offload::BatchKind::kInstall
                             ? stub_->InstallBatch(&ctx, req, &reply)
                             : stub_->RemoveBatch(&ctx, req, &reply);
  if (s.ok() && image_version != nullptr) *image_version = reply.image_version();
  return s;
}

grpc::Status AgentClient::publish_image(std::uint64_t index_id, std::string_view backend,
                                        std::span<const std::byte> image,
                                        std::uint64_t version) const {
  control::PublishImageRequest req;
  req.set_index_id(index_id);
  req.set_backend(std::string(backend));
  req.set_image(as_string(image));
  req.set_image_version(version);
  control::PublishImageReply reply;
  grpc::ClientContext ctx;
  prepare(&ctx);
  return stub_->PublishImage(&ctx, req, &reply);
}

grpc::Status AgentClient::fetch_image(std::uint64_t index_id, FetchedImage* out) const {
  control::FetchImageRequest req;
  req.set_index_id(index_id);
  control::FetchImageReply reply;
  grpc::ClientContext ctx;
  prepare(&ctx);
  const grpc::Status s = stub_->FetchImage(&ctx, req, &reply);
  if (s.ok()) {
    out->bytes.resize(reply.image().size());
    if (!reply.image().empty()) std::memcpy(out->bytes.data(), reply.image().data(), reply.image().size());
    out->version = reply.image_version();
    out->backend = reply.backend();
  }
  return s;
}

grpc::Status AgentClient::clear(std::uint64_t index_id, std::uint64_t* cleared) const {
  control::ClearRequest req;
  req.set_index_id(index_id);
  return send_clear(req, cleared);
}

grpc::Status AgentClient::clear_all(std::uint64_t* cleared) const {
  control::ClearRequest req;
  req.set_all(true);
  return send_clear(req, cleared);
}

grpc::Status AgentClient::send_clear(const control::ClearRequest& req, std::uint64_t* cleared) const {
  control::ClearReply reply;
  grpc::ClientContext ctx;
  prepare(&ctx);
  const grpc::Status s = stub_->Clear(&ctx, req, &reply);
  if (s.ok() && cleared != nullptr) *cleared = reply.cleared();
  return s;
}

grpc::Status AgentClient::stats(control::StatsReply* out) const {
  control::StatsRequest req;
  grpc::ClientContext ctx;
  prepare(&ctx);
  return stub_->Stats(&ctx, req, out);
}

grpc::Status AgentClient::health(AgentHealth* out) const {
  control::HealthRequest req;
  control::HealthReply reply;
  grpc::ClientContext ctx;
  prepare(&ctx);
  const grpc::Status s = stub_->Health(&ctx, req, &reply);
  if (s.ok()) {
    out->instance_id = reply.instance_id();
    out->uptime_ms = reply.uptime_ms();
  }
  return s;
}

AgentMirror::AgentMirror(offload::OffloadManager& manager, std::uint64_t index_id,
                         std::string backend, AgentClient client, AgentMirrorOptions options)
    : manager_(manager),
      index_id_(index_id),
      backend_(std::move(backend)),
      client_(std::move(client)),
      options_(options) {
  std::shared_ptr<const offload::BackendImage> image = manager_.set_apply_listener(this);
  {
    std::lock_guard lock(mu_);
    // A batch applied since the listener was set brought a newer image.
    if (!seen_apply_) latest_ = std::move(image);
  }
  thread_ = std::thread([this] { run(); });
}

AgentMirror::~AgentMirror() {
  manager_.set_apply_listener(nullptr);
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void AgentMirror::on_applied(const offload::ChangeBatch& batch, offload::BackendStatus status) {
  // Under the control plane's lock: nothing else applies to the device now.
  if (status != offload::BackendStatus::kOk) return;  // the local device did not change
  std::shared_ptr<const offload::BackendImage> image = manager_.backend().device().load_image();
  auto copy = std::make_shared<const offload::ChangeBatch>(batch);
  {
    std::lock_guard lock(mu_);
    seen_apply_ = true;
    latest_ = std::move(image);
    // Queued even while a publish is pending: the thread drops the batches
    // its image holds when it takes the image.
    if (queue_.size() >= options_.max_pending) {
      queue_.clear();
      need_publish_ = true;
      ++publish_gen_;
    } else {
      queue_.push_back(Item{std::move(copy)});
    }
  }
  wake_.notify_all();
}

bool AgentMirror::back_off(std::unique_lock<std::mutex>& lock) {
  backoff_ = std::clamp(backoff_ * 2, options_.min_backoff, options_.max_backoff);
  wake_.wait_for(lock, backoff_, [&] { return stop_; });
  return !stop_;
}

void AgentMirror::run() {
  using clock = std::chrono::steady_clock;
  auto next_health = clock::now() + options_.health_period;
  std::unique_lock lock(mu_);
  while (!stop_) {
    wake_.wait_until(lock, next_health,
                     [&] { return stop_ || need_publish_ || !queue_.empty(); });
    if (stop_) break;

    if (need_publish_) {
      // The whole local image replaces the agent's; batches queued so far
      // are in it.
      queue_.clear();
      const std::shared_ptr<const offload::BackendImage> image = latest_;
      const std::uint64_t gen = publish_gen_;
      lock.unlock();
      AgentHealth health;
      grpc::Status s = client_.health(&health);
      if (s.ok()) s = client_.publish_image(index_id_, backend_, image->bytes, image->version);
      lock.lock();
      if (s.ok()) {
        if (publish_gen_ == gen) need_publish_ = false;
        known_instance_ = health.instance_id;
        backoff_ = std::chrono::milliseconds{0};
        ++stats_.publishes;
        stats_.published = true;
        next_health = clock::now() + options_.health_period;
      } else {
        ++stats_.retries;
        stats_.last_error = "publish: " + s.error_message();
        if (!back_off(lock)) break;
      }
      continue;
    }

    if (!queue_.empty()) {
      const std::shared_ptr<const offload::ChangeBatch> batch = queue_.front().batch;
      lock.unlock();
      const grpc::Status s = client_.apply_batch(index_id_, backend_, *batch);
      lock.lock();
      if (s.ok()) {
        // A publish queued meanwhile (overflow) has cleared the queue.
        if (!queue_.empty() && queue_.front().batch == batch) queue_.pop_front();
        ++stats_.batches_forwarded;
        backoff_ = std::chrono::milliseconds{0};
      } else if (needs_publish(s.error_code())) {
        stats_.last_error = "batch: " + s.error_message();
        ++stats_.heals;
        need_publish_ = true;
        ++publish_gen_;
      } else {
        // Lost or failed (unavailable, deadline, unauthenticated ...):
        // retry after a backoff, unless the agent restarted meanwhile.
        ++stats_.retries;
        stats_.last_error = "batch: " + s.error_message();
        if (!back_off(lock)) break;
        lock.unlock();
        AgentHealth health;
        const grpc::Status hs = client_.health(&health);
        lock.lock();
        if (hs.ok() && health.instance_id != known_instance_) {
          ++stats_.heals;
          need_publish_ = true;
          ++publish_gen_;
        }
      }
      continue;
    }

    if (clock::now() >= next_health) {
      lock.unlock();
      AgentHealth health;
      const grpc::Status hs = client_.health(&health);
      lock.lock();
      if (hs.ok() && health.instance_id != known_instance_) {
        ++stats_.heals;
        stats_.published = false;
        need_publish_ = true;
        ++publish_gen_;
      } else if (!hs.ok()) {
        stats_.last_error = "health: " + hs.error_message();
      }
      next_health = clock::now() + options_.health_period;
    }
  }
}

AgentMirrorStats AgentMirror::stats() const {
  std::lock_guard lock(mu_);
  AgentMirrorStats s = stats_;
  s.pending = queue_.size() + (need_publish_ ? 1 : 0);
  return s;
}

}  // namespace forein::net
