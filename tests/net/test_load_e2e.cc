// forein-load against a real forein-kv-server on loopback: every workload
// for 2 seconds with --verify; its last line is one JSON object with
// wrong == 0 and ops > 0. Each workload gets a fresh server (--verify
// knows the data set and this client's writes, not an earlier client's).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

// A child process with its stdout on a pipe; killed if still running when
// the test leaves (a failed REQUIRE included).
struct Child {
  Child(std::string bin, std::vector<std::string> args) {
    int out[2];
    REQUIRE(pipe(out) == 0);
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      dup2(out[1], 1);
      close(out[0]);
      close(out[1]);
      std::vector<char*> argv;
      argv.push_back(bin.data());
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(bin.c_str(), argv.data());
      _exit(127);
    }
    close(out[1]);
    out_ = fdopen(out[0], "r");
  }
  ~Child() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (out_ != nullptr) std::fclose(out_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  std::string line() {
    std::string s;
    char buf[4096];
    while (std::fgets(buf, sizeof buf, out_) != nullptr) {
      s += buf;
      if (!s.empty() && s.back() == '\n') break;
    }
    return s;
  }
  std::string rest() {
    std::string s;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, out_)) > 0) s.append(buf, n);
    return s;
  }
  int wait_exit() {
    int status = 0;
    waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  pid_t pid = -1;
  std::FILE* out_ = nullptr;
};

std::string last_line(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// The integer field `name` of a flat JSON object; -1 if absent.
long long json_int(const std::string& json, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  const auto at = json.find(key);
  if (at == std::string::npos) return -1;
  return std::stoll(json.substr(at + key.size()));
}

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
    Child server(FOREIN_KV_SERVER_BIN, {"--listen", "127.0.0.1:0", "--keys", keys});
    const std::string ready = server.line();
    REQUIRE(ready.rfind("ready ", 0) == 0);
    const std::string port = std::to_string(std::stoi(ready.substr(6)));
    Child load(FOREIN_LOAD_BIN, {"--target", "127.0.0.1:" + port, "--keys", keys, "--workload",
                                 run.workload, "--dist", run.dist, "--zipf", "0.99", "--seconds", "2",
                                 "--outstanding", "8", "--timeout-ms", "500", "--retries", "5",
                                 "--verify", "--seed", "7"});
    const std::string out = load.rest();
    const int rc = load.wait_exit();
    const std::string json = last_line(out);
    INFO(out);
    REQUIRE(json.front() == '{');
    REQUIRE(json.back() == '}');
    CHECK(rc == 0);
    CHECK(json_int(json, "wrong") == 0);
    CHECK(json_int(json, "ops") > 0);
    CHECK(json_int(json, "verified") > 0);
    CHECK(json_int(json, "errors") == 0);
    CHECK(json_int(json, "seed") == 7);
    for (const char* field : {"ops_per_s", "p50_us", "p99_us", "p999_us", "timeouts", "reads"}) {
      CHECK(json.find(std::string("\"") + field + "\":") != std::string::npos);
    }
  }
}

TEST_CASE("forein-load: bad flags exit 2 with a message", "[load][program]") {
  for (std::vector<std::string> args : {std::vector<std::string>{"--keys", "10", "--workload", "a"},
                                        {"--target", "127.0.0.1:1", "--keys", "10", "--workload", "z"},
                                        {"--target", "127.0.0.1:1", "--keys", "10", "--workload", "a",
                                         "--dist", "pareto"}}) {
    Child load(FOREIN_LOAD_BIN, args);
    const std::string out = load.rest();
    CHECK(load.wait_exit() == 2);
    CHECK(out.empty());  // the message goes to stderr
  }
}
