// forein-load against a real forein-kv-server on loopback: every workload
// for 2 seconds with --verify; its last line is one JSON object with
// wrong == 0 and ops > 0. Each workload gets a fresh server (--verify
// knows the data set and this client's writes, not an earlier client's).
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "child_process.h"

namespace {

using forein::testing::ChildProcess;
using forein::testing::json_number;
using forein::testing::last_line;

}  // namespace

TEST_CASE("forein-load --verify against forein-kv-server: every workload", "[load][program]") {
  const std::string keys = "20000";
  struct Run {
    const char* workload;
    const char* dist;
  };
  for (const Run& run : {Run{"a", "zipf"}, Run{"b", "zipf"}, Run{"c", "uniform"}, Run{"d", "latest"},
                         Run{"e", "zipf"}, Run{"f", "zipf"}, Run{"getputdel", "zipf"}}) {
    INFO("workload " << run.workload << " dist " << run.dist);
    ChildProcess server(FOREIN_KV_SERVER_BIN, {"--listen", "127.0.0.1:0", "--keys", keys});
    const int ready = forein::testing::ready_port(server);
    REQUIRE(ready > 0);
    const std::string port = std::to_string(ready);
    ChildProcess load(FOREIN_LOAD_BIN, {"--target", "127.0.0.1:" + port, "--keys", keys, "--workload",
                                 run.workload, "--dist", run.dist, "--zipf", "0.99", "--seconds", "2",
                                 "--outstanding", "8", "--timeout-ms", "500", "--retries", "5",
                                 "--verify", "--seed", "7"});
    const std::string out = load.read_all();
    const int rc = load.wait_exit();
    const std::string json = last_line(out);
    INFO(out);
    REQUIRE(json.front() == '{');
    REQUIRE(json.back() == '}');
    CHECK(rc == 0);
    CHECK(json_number(json, "wrong") == 0);
    CHECK(json_number(json, "ops") > 0);
    CHECK(json_number(json, "verified") > 0);
    CHECK(json_number(json, "errors") == 0);
    CHECK(json_number(json, "seed") == 7);
    for (const char* field : {"ops_per_s", "p50_us", "p99_us", "p999_us", "timeouts", "reads"}) {
      CHECK(json.find(std::string("\"") + field + "\":") != std::string::npos);
    }
  }
}

namespace {

// forein-load --verify for 2 seconds (Zipf 0.99) against a fresh
// forein-kv-server started with server_args, load_args added to the
// client's; its JSON line checked (wrong 0, errors 0) and returned with the
// server's exit line.
std::pair<std::string, std::string> verified_run(std::vector<std::string> server_args, const char* workload,
                                                 const std::vector<std::string>& load_args) {
  server_args.insert(server_args.begin(), {"--listen", "127.0.0.1:0", "--keys", "20000"});
  ChildProcess server(FOREIN_KV_SERVER_BIN, server_args);
  const int ready = forein::testing::ready_port(server);
  REQUIRE(ready > 0);
  std::vector<std::string> args = {"--target", "127.0.0.1:" + std::to_string(ready), "--keys", "20000",
                                   "--workload", workload, "--dist", "zipf", "--zipf", "0.99",
                                   "--seconds", "2", "--outstanding", "8", "--timeout-ms", "500",
                                   "--retries", "5", "--verify"};
  args.insert(args.end(), load_args.begin(), load_args.end());
  ChildProcess load(FOREIN_LOAD_BIN, args);
  const std::string out = load.read_all();
  const int rc = load.wait_exit();
  const std::string json = last_line(out);
  INFO(out);
  REQUIRE(json.front() == '{');
  CHECK(rc == 0);
  CHECK(json_number(json, "wrong") == 0);
  CHECK(json_number(json, "verified") > 0);
  CHECK(json_number(json, "errors") == 0);
  return {json, forein::testing::stop_json(server)};
}

}  // namespace

TEST_CASE("forein-load --verify against forein-kv-server --engine honeycomb", "[load][program][honeycomb]") {
  for (const char* workload : {"a", "c", "e", "getputdel"}) {
    INFO("workload " << workload);
    verified_run({"--engine", "honeycomb"}, workload, {"--seed", "9"});
  }
}

TEST_CASE("forein-load --verify --route-by-key against forein-kv-server --engine dpa",
          "[load][program][dpa]") {
  for (const char* workload : {"a", "c", "e", "getputdel"}) {
    INFO("workload " << workload);
    const auto [json, stats] =
        verified_run({"--engine", "dpa", "--threads", "3"}, workload, {"--seed", "11", "--route-by-key", "3"});
    CHECK(json_number(json, "route_by_key") == 3);
    // Every request went to its key's port: none misrouted.
    INFO(stats);
    CHECK(json_number(stats, "misrouted") == 0);
    CHECK(json_number(stats, "requests") > 0);
  }
}

TEST_CASE("forein-load: bad flags exit 2 with a message", "[load][program]") {
  for (std::vector<std::string> args : {std::vector<std::string>{"--keys", "10", "--workload", "a"},
                                        {"--target", "127.0.0.1:1", "--keys", "10", "--workload", "z"},
                                        {"--target", "127.0.0.1:1", "--keys", "10", "--workload", "a",
                                         "--dist", "pareto"},
                                        {"--target", "127.0.0.1:1", "--keys", "10", "--workload", "a",
                                         "--route-by-key", "0"},
                                        {"--target", "127.0.0.1:65535", "--keys", "10", "--workload", "a",
                                         "--route-by-key", "2"},
                                        {"--target", "127.0.0.1:1", "--keys", "10", "--workload", "write-only",
                                         "--route-by-key", "2"}}) {
    ChildProcess load(FOREIN_LOAD_BIN, args);
    const std::string out = load.read_all();
    CHECK(load.wait_exit() == 2);
    CHECK(out.empty());  // the message goes to stderr
  }
}
