// The gRPC control plane (net/agent, docs/network.md): a real agent on
// loopback (in-process AgentServer on port 0, and forein-agent as a child
// process), batches planned by a real manager over an engine tree, the
// security rules, and AgentMirror healing an agent restart. No sleeps as
// synchronization: conditions are polled with a deadline.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "agent_client.h"
#include "agent_service.h"
#include "child_process.h"
#include "support/seed.h"
#include "forein/key.h"
#include "forein/offload/manager.h"
#include "forein/offload/registry.h"
#include "forein/page_store.h"
#include "forein/tree.h"

namespace {

using forein::net::AgentClient;
using forein::net::AgentMirror;
using forein::net::AgentServer;
using forein::net::FetchedImage;
namespace offload = forein::offload;

std::string loopback(int port) { return "127.0.0.1:" + std::to_string(port); }

using forein::testing::eventually;

// Records every batch the manager applies, for forwarding by hand.
class BatchLog final : public offload::ApplyListener {
 public:
  void on_applied(const offload::ChangeBatch& batch, offload::BackendStatus status) override {
    if (status == offload::BackendStatus::kOk) batches.push_back(batch);
  }
  std::vector<offload::ChangeBatch> batches;
};

// A tree wired to a manager over a registered backend (manual refresh).
struct Local {
  explicit Local(const std::string& backend_name, std::uint64_t index_id = 7)
      : backend(offload::backend_by_name(backend_name)),
        manager(backend, options(index_id)) {
    forein::TreeOptions tree_options;
    tree_options.observer = &manager;
    tree_options.index_id = index_id;
    tree = forein::Tree::create(std::make_unique<forein::MemoryPageStore>(4096), tree_options);
    manager.attach(*tree);
  }
  ~Local() { manager.detach(); }
  static offload::ManagerOptions options(std::uint64_t index_id) {
    offload::ManagerOptions o;
    o.index_id = index_id;
    o.sample_rate = 1;
    return o;
  }
  std::vector<std::byte> image() const { return backend.device().load_image()->bytes; }

  offload::Backend backend;
  offload::OffloadManager manager;
  std::unique_ptr<forein::Tree> tree;
};

void put_range(forein::Tree& tree, std::int64_t from, std::int64_t to) {
  for (std::int64_t i = from; i < to; ++i) tree.put(forein::encode_int64(i), "v" + std::to_string(i));
}

FetchedImage fetch(const AgentClient& client, std::uint64_t index) {
  FetchedImage image;
  const grpc::Status s = client.fetch_image(index, &image);
  INFO(s.error_message());
  REQUIRE(s.ok());
  return image;
}

}  // namespace

TEST_CASE("agent: a real manager's batches give the local image byte for byte", "[agent]") {
  AgentServer server("127.0.0.1:0");
  AgentClient client(loopback(server.port()));
  for (const char* name : {"switch_lpm", "fattree", "none"}) {
    SECTION(name) {
      Local local(name);
      BatchLog log;
      const auto initial = local.manager.set_apply_listener(&log);
      REQUIRE(client.publish_image(7, name, initial->bytes, initial->version).ok());
      CHECK(fetch(client, 7).bytes == local.image());

      std::mt19937_64 rng(42);
      std::size_t forwarded = 0;
      for (int round = 0; round < 8; ++round) {
        // Grow, then shrink: splits, merges, installs and removals.
        if (round < 5) {
          put_range(*local.tree, round * 3000, (round + 1) * 3000);
        } else {
          for (int i = 0; i < 4000; ++i) local.tree->erase(forein::encode_int64(static_cast<std::int64_t>(rng() % 15000)));
        }
        for (int i = 0; i < 2000; ++i) local.manager.record_access(rng() % 15000);
        local.manager.refresh();
        local.manager.flush();
        for (; forwarded < log.batches.size(); ++forwarded) {
          const grpc::Status s = client.apply_batch(7, name, log.batches[forwarded]);
          INFO(s.error_message());
          REQUIRE(s.ok());
        }
        const FetchedImage remote = fetch(client, 7);
        CHECK(remote.backend == name);
        CHECK(remote.bytes == local.image());
      }
      if (std::string(name) != "none") CHECK(forwarded > 0);
      local.manager.set_apply_listener(nullptr);

      forein::control::v1::StatsReply stats;
      REQUIRE(client.stats(&stats).ok());
      REQUIRE(stats.indexes_size() == 1);
      CHECK(stats.indexes(0).backend() == name);
      CHECK(stats.indexes(0).batches_applied() == forwarded);
      CHECK(stats.indexes(0).used() == local.backend.usage().used);
      CHECK(stats.indexes(0).unit() == local.backend.usage().unit);
      CHECK(stats.indexes(0).image_usage_size() >= 1);
      REQUIRE(client.clear_all().ok());
    }
  }
}

TEST_CASE("agent: malformed batches, unknown backends and indexes change nothing", "[agent]") {
  AgentServer server("127.0.0.1:0");
  AgentClient client(loopback(server.port()));
  Local local("switch_lpm");
  BatchLog log;
  local.manager.set_apply_listener(&log);
  REQUIRE(client.publish_image(7, "switch_lpm", local.image(), 0).ok());
  put_range(*local.tree, 0, 5000);
  local.manager.refresh();
  local.manager.flush();
  local.manager.set_apply_listener(nullptr);
  REQUIRE(!log.batches.empty());
  for (const auto& b : log.batches) REQUIRE(client.apply_batch(7, "switch_lpm", b).ok());
  const FetchedImage before = fetch(client, 7);
  REQUIRE(before.bytes == local.image());

  // Garbage and truncated batches.
  offload::ChangeBatch garbage = log.batches.front();
  std::mt19937_64 rng(7);
  for (auto& byte : garbage.bytes) byte = static_cast<std::byte>(rng());
  grpc::Status s = client.apply_batch(7, "switch_lpm", garbage);
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  offload::ChangeBatch truncated = log.batches.front();
  truncated.bytes.resize(truncated.bytes.size() - 5);
  s = client.apply_batch(7, "switch_lpm", truncated);
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  const FetchedImage after = fetch(client, 7);
  CHECK(after.bytes == before.bytes);
  CHECK(after.version == before.version);

  // Unknown backend: the registered ones are listed.
  s = client.apply_batch(7, "no_such_backend", log.batches.front());
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(s.error_message().find("switch_lpm") != std::string::npos);
  s = client.publish_image(8, "no_such_backend", {}, 0);
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  // Another backend than the index's.
  s = client.apply_batch(7, "fattree", log.batches.front());
  CHECK(s.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  // An index the agent does not hold.
  s = client.apply_batch(99, "switch_lpm", log.batches.front());
  CHECK(s.error_code() == grpc::StatusCode::NOT_FOUND);
  FetchedImage none;
  CHECK(client.fetch_image(99, &none).error_code() == grpc::StatusCode::NOT_FOUND);
  // An image over the backend's size bound.
  const offload::BackendInfo& info = offload::backend_by_name("switch_lpm");
  const std::vector<std::byte> huge(info.max_image_bytes(info.default_capacity) + 1);
  CHECK(client.publish_image(7, "switch_lpm", huge, 1).error_code() ==
        grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(fetch(client, 7).bytes == before.bytes);

  forein::control::v1::StatsReply stats;
  REQUIRE(client.stats(&stats).ok());
  CHECK(stats.malformed_batches() == 3);
  CHECK(stats.indexes(0).batches_refused() == 2);

  // A published image is returned as is; batches cannot extend it.
  std::vector<std::byte> junk(64, std::byte{0x5a});
  REQUIRE(client.publish_image(7, "switch_lpm", junk, 41).ok());
  const FetchedImage published = fetch(client, 7);
  CHECK(published.bytes == junk);
  CHECK(published.version == 41);
  CHECK(client.apply_batch(7, "switch_lpm", log.batches.front()).error_code() ==
        grpc::StatusCode::FAILED_PRECONDITION);
  std::uint64_t cleared = 0;
  REQUIRE(client.clear(7, &cleared).ok());
  CHECK(cleared == 1);
  CHECK(client.fetch_image(7, &none).error_code() == grpc::StatusCode::NOT_FOUND);
}

TEST_CASE("agent: a token is required off loopback and checked when set", "[agent][security]") {
  CHECK(forein::net::is_loopback_listen("127.0.0.1:0"));
  CHECK(forein::net::is_loopback_listen("[::1]:5"));
  CHECK_FALSE(forein::net::is_loopback_listen("0.0.0.0:0"));
  CHECK_THROWS_AS(AgentServer("0.0.0.0:0"), std::invalid_argument);

  for (const char* listen : {"0.0.0.0:0", "127.0.0.1:0"}) {
    SECTION(listen) {
      AgentServer server(listen, forein::net::AgentOptions{"s3cret"});
      const std::string target = loopback(server.port());
      forein::net::AgentHealth health;
      CHECK(AgentClient(target).health(&health).error_code() == grpc::StatusCode::UNAUTHENTICATED);
      CHECK(AgentClient(target, "wrong").health(&health).error_code() ==
            grpc::StatusCode::UNAUTHENTICATED);
      CHECK(AgentClient(target, "wrong").publish_image(1, "none", {}, 0).error_code() ==
            grpc::StatusCode::UNAUTHENTICATED);
      const AgentClient good(target, "s3cret");
      REQUIRE(good.health(&health).ok());
      CHECK(health.instance_id == server.service().instance_id());
      FetchedImage image;
      CHECK(good.fetch_image(1, &image).error_code() == grpc::StatusCode::NOT_FOUND);
      forein::control::v1::StatsReply stats;
      REQUIRE(good.stats(&stats).ok());
      CHECK(stats.auth_failures() == 3);
      CHECK(stats.calls() == 6);
    }
  }
}

namespace {

// forein-agent as a child process; it prints `listening HOST:PORT`, then `ready`.
forein::testing::ChildProcess spawn_agent(std::vector<std::string> args) {
  return forein::testing::ChildProcess(FOREIN_AGENT_BIN, std::move(args));
}

}  // namespace

TEST_CASE("forein-agent: listening, ready, serves, SIGTERM stops it cleanly", "[agent][program]") {
  using forein::testing::ready_port;
  {
    auto agent = spawn_agent({"--listen", "127.0.0.1:0"});
    const int port = ready_port(agent);
    REQUIRE(port > 0);
    const AgentClient client(loopback(port));
    forein::net::AgentHealth health;
    REQUIRE(client.health(&health).ok());
    CHECK(health.instance_id != 0);
    agent.signal(SIGTERM);
    CHECK(agent.wait_exit() == 0);
  }
  {
    // Not loopback and no token: refused.
    auto agent = spawn_agent({"--listen", "0.0.0.0:0"});
    CHECK_FALSE(agent.read_line().has_value());
    CHECK(agent.wait_exit() == 1);
  }
  {
    auto agent = spawn_agent({"--listen", "0.0.0.0:0", "--token", "t0k"});
    const int port = ready_port(agent);
    REQUIRE(port > 0);
    forein::net::AgentHealth health;
    CHECK(AgentClient(loopback(port)).health(&health).error_code() ==
          grpc::StatusCode::UNAUTHENTICATED);
    CHECK(AgentClient(loopback(port), "t0k").health(&health).ok());
    agent.signal(SIGINT);
    CHECK(agent.wait_exit() == 0);
  }
}

TEST_CASE("AgentMirror: writers and refreshes converge; an agent restart is healed",
          "[agent][mirror][concurrent]") {
  for (const char* name : {"switch_lpm", "fattree"}) {
    SECTION(name) {
      auto server = std::make_unique<AgentServer>("127.0.0.1:0");
      const int port = server->port();
      const AgentClient probe(loopback(port), {}, std::chrono::milliseconds(500));
      Local local(name);
      forein::net::AgentMirrorOptions options;
      options.health_period = std::chrono::milliseconds(20);
      AgentMirror mirror(local.manager, 7, name, AgentClient(loopback(port), {}, std::chrono::milliseconds(500)),
                         options);

      auto converged = [&] {
        FetchedImage remote;
        return probe.fetch_image(7, &remote).ok() && remote.bytes == local.image() &&
               mirror.stats().pending == 0;
      };
      // Writers on the tree while this thread refreshes.
      auto write_phase = [&](std::int64_t base) {
        std::atomic<bool> done{false};
        std::vector<std::thread> writers;
        for (int w = 0; w < 2; ++w) {
          writers.emplace_back([&, w] {
            for (std::int64_t i = 0; i < 4000; ++i) {
              local.tree->put(forein::encode_int64(base + i * 2 + w), "v");
              local.manager.record_access(static_cast<forein::Word>(base + i));
            }
          });
        }
        std::thread refresher([&] {
          while (!done.load()) {
            local.manager.refresh();
            local.manager.flush();
          }
        });
        for (auto& t : writers) t.join();
        done.store(true);
        refresher.join();
        local.manager.refresh();
        local.manager.flush();
      };

      // The mirror's first publish is the empty device's image, which
      // batches extend; waiting for it makes the batches below forwarded
      // rather than folded into a later, non-empty image.
      REQUIRE(eventually([&] { return mirror.stats().published; }));
      write_phase(0);
      REQUIRE(eventually(converged));
      const auto before = mirror.stats();
      CHECK(before.batches_forwarded > 0);
      // More than max_pending batches queued while the mirror is starved
      // (a loaded machine) are healed by one more publish: also correct.
      CHECK(before.publishes >= 1);

      // Restart the agent (a new instance on the same port) mid-way.
      const std::uint64_t old_instance = server->service().instance_id();
      server.reset();
      write_phase(8000);
      server = std::make_unique<AgentServer>(loopback(port));
      CHECK(server->service().instance_id() != old_instance);
      REQUIRE(eventually(converged));
      write_phase(16000);
      REQUIRE(eventually(converged));
      const auto after = mirror.stats();
      CHECK(after.heals >= 1);
      CHECK(after.publishes >= 2);
    }
  }
}

TEST_CASE("agent: thousands of mutated batches per backend: no crash, refusals counted, it keeps serving",
          "[agent][garbage]") {
  const std::uint64_t seed = forein::testing::test_seed("agent garbage batches");
  std::mt19937_64 rng(seed);
  AgentServer server("127.0.0.1:0");
  AgentClient client(loopback(server.port()));
  std::uint64_t expected_malformed = 0;
  for (const char* name : {"switch_lpm", "fattree"}) {
    INFO(name);
    Local local(name);
    BatchLog log;
    local.manager.set_apply_listener(&log);
    REQUIRE(client.publish_image(7, name, local.image(), 0).ok());
    put_range(*local.tree, 0, 3000);
    local.manager.refresh();
    local.manager.flush();
    local.manager.set_apply_listener(nullptr);
    REQUIRE(!log.batches.empty());
    std::size_t accepted = 0, invalid = 0, full = 0;
    for (int i = 0; i < 1500; ++i) {
      offload::ChangeBatch b = log.batches[rng() % log.batches.size()];
      switch (rng() % 4) {
        case 0:  // truncated
          b.bytes.resize(b.bytes.empty() ? 0 : rng() % b.bytes.size());
          break;
        case 1:  // bytes flipped
          for (int f = 0; f < 1 + static_cast<int>(rng() % 8) && !b.bytes.empty(); ++f) {
            b.bytes[rng() % b.bytes.size()] ^= static_cast<std::byte>(1 + rng() % 255);
          }
          break;
        case 2:  // wrong record count
          b.records += 1 + rng() % 3;
          break;
        default:  // random bytes
          for (auto& byte : b.bytes) byte = static_cast<std::byte>(rng());
      }
      const grpc::Status s = client.apply_batch(7, name, b);
      if (s.ok()) {
        ++accepted;
      } else if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
        ++invalid;
      } else {
        INFO(s.error_message());
        REQUIRE(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
        ++full;
      }
    }
    expected_malformed += invalid;
    std::printf("  %s: 1500 mutated batches: %zu accepted as valid records, %zu malformed, %zu over capacity\n",
                name, accepted, invalid, full);
    CHECK(invalid > 1000);
    // It still serves: the real batches apply again and the image is read.
    REQUIRE(client.clear(7).ok());
    REQUIRE(client.publish_image(7, name, Local(name).image(), 0).ok());
    for (const auto& b : log.batches) REQUIRE(client.apply_batch(7, name, b).ok());
    CHECK(fetch(client, 7).bytes == local.image());
    REQUIRE(client.clear(7).ok());
  }
  forein::control::v1::StatsReply stats;
  REQUIRE(client.stats(&stats).ok());
  CHECK(stats.malformed_batches() == expected_malformed);
}
