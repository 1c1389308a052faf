#include "agent_service.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "forein/error.h"
#include "forein/offload/registry.h"

namespace forein::net {

namespace {

std::uint64_t random_instance_id() {
  std::random_device rd;
  std::uint64_t id = 0;
  while (id == 0) id = (std::uint64_t{rd()} << 32) ^ rd();
  return id;
}

// A gRPC message is bounded too; images are bounded by their backend.
constexpr int kMaxMessageBytes = 256 << 20;

}  // namespace

struct AgentService::Index {
  const offload::BackendInfo* info = nullptr;
  std::unique_ptr<offload::Backend> backend;
  // Set by PublishImage when the device cannot hold that image (it is not
  // the empty device's): FetchImage returns it and batches are refused
  // until the next publish, since the device does not know its records.
  std::shared_ptr<const offload::BackendImage> published;
  std::uint64_t version_base = 0;  // added to the device's own version
  std::uint64_t batches_applied = 0;
  std::uint64_t batches_refused = 0;

  std::shared_ptr<const offload::BackendImage> image() const {
    return published != nullptr ? published : backend->device().load_image();
  }
  std::uint64_t version() const {
    return published != nullptr ? published->version
                                : version_base + backend->device().load_image()->version;
  }
};

AgentService::AgentService(AgentOptions options)
    : options_(std::move(options)),
      instance_id_(random_instance_id()),
      started_(std::chrono::steady_clock::now()) {}

AgentService::~AgentService() = default;

std::shared_ptr<const offload::BackendImage> AgentService::image(
    std::uint64_t index_id, const offload::BackendInfo** info) {
  std::lock_guard lock(mu_);
  const auto it = indexes_.find(index_id);
  if (it == indexes_.end()) {
    if (info != nullptr) *info = nullptr;
    return nullptr;
  }
  if (info != nullptr) *info = it->second->info;
  return it->second->image();
}

grpc::Status AgentService::admit(const grpc::ServerContext* ctx) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  if (options_.token.empty()) return grpc::Status::OK;
  const std::string expected = "Bearer " + options_.token;
  const auto& md = ctx->client_metadata();
  const auto it = md.find("authorization");
  if (it != md.end() && std::string_view(it->second.data(), it->second.size()) == expected) {
    return grpc::Status::OK;
  }
  auth_failures_.fetch_add(1, std::memory_order_relaxed);
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong bearer token");
}

grpc::Status AgentService::apply_batch(const grpc::ServerContext* ctx,
                                       const control::BatchRequest* req, offload::BatchKind kind,
                                       control::BatchReply* reply) {
  if (grpc::Status s = admit(ctx); !s.ok()) return s;
  const offload::BackendInfo* info = offload::find_backend(req->backend());
  if (info == nullptr) {
    malformed_batches_.fetch_add(1, std::memory_order_relaxed);
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "unknown offload backend '" + req->backend() +
                            "'; registered backends: " + offload::registered_backend_names());
  }
  std::lock_guard lock(mu_);
  const auto it = indexes_.find(req->index_id());
  if (it == indexes_.end()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "no index " + std::to_string(req->index_id()) +
                            " on this agent: publish its image first");
  }
  Index& index = *it->second;
  if (index.info != info) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "index " + std::to_string(req->index_id()) + " is held by backend '" +
                            index.info->name + "', not '" + req->backend() + "'");
  }
  if (index.published != nullptr) {
    ++index.batches_refused;
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "index " + std::to_string(req->index_id()) +
                            " holds a published image that batches cannot extend: publish again");
  }
  offload::ChangeBatch batch;
  batch.kind = kind;
  batch.records = req->records();
  const std::string& bytes = req->batch();
  batch.bytes.resize(bytes.size());
  if (!bytes.empty()) std::memcpy(batch.bytes.data(), bytes.data(), bytes.size());
  const offload::BackendStatus status = index.backend->device().apply(batch);
  switch (status) {
    case offload::BackendStatus::kOk:
      ++index.batches_applied;
      reply->set_image_version(index.version());
      return grpc::Status::OK;
    case offload::BackendStatus::kCapacityExceeded:
      ++index.batches_refused;
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "batch does not fit the device; nothing changed");
    case offload::BackendStatus::kInvalidEntry:
      break;
  }
  ++index.batches_refused;
  malformed_batches_.fetch_add(1, std::memory_order_relaxed);
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "malformed batch; nothing changed");
}

grpc::Status AgentService::InstallBatch(grpc::ServerContext* ctx, const control::BatchRequest* req,
                                        control::BatchReply* reply) {
  return apply_batch(ctx, req, offload::BatchKind::kInstall, reply);
}

grpc::Status AgentService::RemoveBatch(grpc::ServerContext* ctx, const control::BatchRequest* req,
                                       control::BatchReply* reply) {
  return apply_batch(ctx, req, offload::BatchKind::kRemove, reply);
}

grpc::Status AgentService::PublishImage(grpc::ServerContext* ctx,
                                        const control::PublishImageRequest* req,
                                        control::PublishImageReply* /*reply*/) {
  if (grpc::Status s = admit(ctx); !s.ok()) return s;
  const offload::BackendInfo* info = offload::find_backend(req->backend());
  if (info == nullptr) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "unknown offload backend '" + req->backend() +
                            "'; registered backends: " + offload::registered_backend_names());
  }
  // Only the size is checked; hosts validate every hint they read.
  const std::size_t limit = info->max_image_bytes(info->default_capacity);
  if (req->image().size() > limit) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "image of " + std::to_string(req->image().size()) +
                            " bytes exceeds the backend's " + std::to_string(limit));
  }
  auto index = std::make_unique<Index>();
  index->info = info;
  index->backend = std::make_unique<offload::Backend>(*info);
  const std::shared_ptr<const offload::BackendImage> empty = index->backend->device().load_image();
  const std::string& bytes = req->image();
  const bool is_empty_device =
      bytes.size() == empty->bytes.size() &&
      (bytes.empty() || std::memcmp(bytes.data(), empty->bytes.data(), bytes.size()) == 0);
  if (is_empty_device) {
    // The empty device's own image: batches apply from here on.
    index->version_base = req->image_version() - empty->version;
  } else {
    auto image = std::make_shared<offload::BackendImage>();
    image->bytes.resize(bytes.size());
    std::memcpy(image->bytes.data(), bytes.data(), bytes.size());
    image->version = req->image_version();
    index->published = std::move(image);
  }
  std::lock_guard lock(mu_);
  indexes_[req->index_id()] = std::move(index);
  return grpc::Status::OK;
}

grpc::Status AgentService::FetchImage(grpc::ServerContext* ctx,
                                      const control::FetchImageRequest* req,
                                      control::FetchImageReply* reply) {
  if (grpc::Status s = admit(ctx); !s.ok()) return s;
  std::shared_ptr<const offload::BackendImage> image;
  std::uint64_t version = 0;
  {
    std::lock_guard lock(mu_);
    const auto it = indexes_.find(req->index_id());
    if (it == indexes_.end()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          "no index " + std::to_string(req->index_id()) + " on this agent");
    }
    image = it->second->image();
    version = it->second->version();
    reply->set_backend(it->second->info->name);
  }
  reply->set_image(reinterpret_cast<const char*>(image->bytes.data()), image->bytes.size());
  reply->set_image_version(version);
  return grpc::Status::OK;
}

grpc::Status AgentService::Clear(grpc::ServerContext* ctx, const control::ClearRequest* req,
                                 control::ClearReply* reply) {
  if (grpc::Status s = admit(ctx); !s.ok()) return s;
  std::lock_guard lock(mu_);
  if (req->all()) {
    reply->set_cleared(indexes_.size());
    indexes_.clear();
  } else {
    reply->set_cleared(indexes_.erase(req->index_id()));
  }
  return grpc::Status::OK;
}

grpc::Status AgentService::Stats(grpc::ServerContext* ctx, const control::StatsRequest* /*req*/,
                                 control::StatsReply* reply) {
  if (grpc::Status s = admit(ctx); !s.ok()) return s;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, index] : indexes_) {
      control::IndexStats* st = reply->add_indexes();
      st->set_index_id(id);
      st->set_backend(index->info->name);
      const offload::BackendUsage usage = index->backend->usage();
      const std::shared_ptr<const offload::BackendImage> image = index->image();
      const std::uint64_t capacity = index->backend->config().capacity;
      const std::vector<offload::UsageRow> rows =
          offload::image_usage(*index->info, image->bytes, capacity);
      // A published image's records are read off its bytes (the device is empty).
      const std::uint64_t used = index->published != nullptr
                                     ? index->info->records(image->bytes).size()
                                     : usage.used;
      st->set_used(used);
      st->set_capacity(usage.capacity);
      st->set_unit(usage.unit);
      for (const offload::UsageRow& r : rows) {
        control::UsageRow* row = st->add_image_usage();
        row->set_device(r.device);
        row->set_resource(r.resource);
        row->set_unit(r.unit);
        row->set_used(r.used);
        row->set_capacity(r.capacity);
      }
      st->set_image_version(index->version());
      st->set_batches_applied(index->batches_applied);
      st->set_batches_refused(index->batches_refused);
      st->set_hint_lookups(options_.hint_lookups ? options_.hint_lookups(id) : 0);
      st->set_published_image(index->published != nullptr);
      st->set_image_bytes(image->bytes.size());
    }
  }
  reply->set_calls(calls_.load(std::memory_order_relaxed));
  reply->set_auth_failures(auth_failures_.load(std::memory_order_relaxed));
  reply->set_malformed_batches(malformed_batches_.load(std::memory_order_relaxed));
  if (options_.port_stats) options_.port_stats(reply);
  return grpc::Status::OK;
}

grpc::Status AgentService::Health(grpc::ServerContext* ctx, const control::HealthRequest* /*req*/,
                                  control::HealthReply* reply) {
  if (grpc::Status s = admit(ctx); !s.ok()) return s;
  reply->set_instance_id(instance_id_);
  reply->set_uptime_ms(static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                            started_)
          .count()));
  return grpc::Status::OK;
}

bool is_loopback_listen(std::string_view listen) {
  const std::size_t colon = listen.rfind(':');
  std::string host(colon == std::string_view::npos ? listen : listen.substr(0, colon));
  if (host == "localhost") return true;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  // 127.0.0.0/8 and ::1, as addresses, however written.
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return ::inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

AgentServer::AgentServer(const std::string& listen, AgentOptions options) {
  if (!is_loopback_listen(listen) && options.token.empty()) {
    throw std::invalid_argument("forein-agent: listening on " + listen +
                                " (not loopback) needs a bearer token (FOREIN_AGENT_TOKEN, or the program's "
                                "token flag: forein-agent --token, forein-switch --agent-token)");
  }
  service_ = std::make_unique<AgentService>(std::move(options));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(service_.get());
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    server_.reset();
    throw std::runtime_error("forein-agent: cannot listen on " + listen);
  }
}

AgentServer::~AgentServer() { shutdown(); }

void AgentServer::shutdown() {
  std::call_once(shutdown_once_, [this] {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    }
  });
}

void AgentServer::wait() {
  if (server_ != nullptr) server_->Wait();
}

}  // namespace forein::net
