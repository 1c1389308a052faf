// The switch agent (docs/network.md, "forein-agent" and "Control plane
// (gRPC)"): the SwitchAgent service of proto/forein/control/v1/control.proto.
// Per index id it holds one offload Backend (registry: backend_by_name)
// whose Device applies the manager's batches all or nothing, and the image
// the device publishes; PublishImage replaces the image whole (a restart
// heal). Until the DPDK switch embeds it, the standalone forein-agent runs
// it for tests.
//
// Security: a token, when set, must come with every call as the metadata
// `authorization: Bearer <token>` (else UNAUTHENTICATED, counted).
// AgentServer refuses to listen on anything but loopback without a token.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <grpcpp/grpcpp.h>

#include "forein/control/v1/control.grpc.pb.h"
#include "forein/offload/backend.h"

namespace forein::net {

namespace control = ::forein::control::v1;

struct AgentOptions {
  std::string token;  // empty: no authentication (loopback only)
  // Hint lookups answered for an index (Stats' hint_lookups); unset: 0.
  // forein-switch counts the ones its data plane makes.
  std::function<std::uint64_t(std::uint64_t index_id)> hint_lookups = nullptr;
  // Adds the data plane's port counters to a Stats reply (forein-switch);
  // unset: none.
  std::function<void(control::StatsReply* reply)> port_stats = nullptr;
};

class AgentService final : public control::SwitchAgent::Service {
 public:
  explicit AgentService(AgentOptions options = {});
  ~AgentService() override;

  grpc::Status InstallBatch(grpc::ServerContext* ctx, const control::BatchRequest* req,
                            control::BatchReply* reply) override;
  grpc::Status RemoveBatch(grpc::ServerContext* ctx, const control::BatchRequest* req,
                           control::BatchReply* reply) override;
  grpc::Status PublishImage(grpc::ServerContext* ctx, const control::PublishImageRequest* req,
                            control::PublishImageReply* reply) override;
  grpc::Status FetchImage(grpc::ServerContext* ctx, const control::FetchImageRequest* req,
                          control::FetchImageReply* reply) override;
  grpc::Status Clear(grpc::ServerContext* ctx, const control::ClearRequest* req,
                     control::ClearReply* reply) override;
  grpc::Status Stats(grpc::ServerContext* ctx, const control::StatsRequest* req,
                     control::StatsReply* reply) override;
  grpc::Status Health(grpc::ServerContext* ctx, const control::HealthRequest* req,
                      control::HealthReply* reply) override;

  // Random per instance (never 0): a client that sees it change knows the
  // agent restarted and lost its images.
  std::uint64_t instance_id() const { return instance_id_; }

  // The index's current image and its backend (*info), or nullptr (and
  // *info nullptr) when the agent holds no such index. Takes the agent's
  // lock briefly (a batch may hold it while it applies): a data plane
  // polls it from a control thread and republishes the image to its
  // readers (forein-switch, net/switch).
  std::shared_ptr<const offload::BackendImage> image(std::uint64_t index_id,
                                                     const offload::BackendInfo** info);

 private:
  struct Index;

  // Counts the call; UNAUTHENTICATED (counted) without the token.
  grpc::Status admit(const grpc::ServerContext* ctx);
  grpc::Status apply_batch(const grpc::ServerContext* ctx, const control::BatchRequest* req,
                           offload::BatchKind kind, control::BatchReply* reply);

  const AgentOptions options_;
  const std::uint64_t instance_id_;
  const std::chrono::steady_clock::time_point started_;
  std::atomic<std::uint64_t> calls_{0};
  std::atomic<std::uint64_t> auth_failures_{0};
  std::atomic<std::uint64_t> malformed_batches_{0};

  std::mutex mu_;  // one batch at a time, per agent
  std::map<std::uint64_t, std::unique_ptr<Index>> indexes_;  // guarded by mu_
};

// "127.0.0.1:PORT", "localhost:PORT", "[::1]:PORT": the only addresses an
// agent listens on without a token.
bool is_loopback_listen(std::string_view listen);

// The service served by gRPC on one address.
class AgentServer {
 public:
  // listen: HOST:PORT (port 0: a free one, see port()). Throws
  // std::invalid_argument for a non-loopback address without a token and
  // std::runtime_error when the address cannot be bound.
  AgentServer(const std::string& listen, AgentOptions options = {});
  ~AgentServer();  // shutdown()
  AgentServer(const AgentServer&) = delete;
  AgentServer& operator=(const AgentServer&) = delete;

  int port() const { return port_; }
  AgentService& service() { return *service_; }
  // Stops accepting calls, finishes the ones in flight (bounded), returns.
  void shutdown();
  // Blocks until shutdown() (from another thread).
  void wait();

 private:
  std::unique_ptr<AgentService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::once_flag shutdown_once_;
};

}  // namespace forein::net
