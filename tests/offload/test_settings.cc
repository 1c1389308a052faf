// Backends' own settings (BackendConfig::settings, BackendInfo::settings):
// parsed from name=value text, validated by the backend, read with their
// defaults. Hosts never name a backend's setting; these tests use
// switch_lpm's and fattree's, the backends that declare some.
#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "forein/error.h"
#include "forein/offload/backend.h"
#include "forein/offload/registry.h"

using namespace forein;
using namespace forein::offload;

namespace {

bool message_has(const std::function<void()>& f, const std::string& part) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    INFO(e.what());
    return std::string(e.what()).find(part) != std::string::npos;
  }
  return false;
}

}  // namespace

TEST_CASE("settings: name=value text") {
  BackendConfig c;
  parse_settings(" hot_leaves = 3 ,bottom_line_level=2,", &c);
  REQUIRE(c.settings.size() == 2);
  CHECK(c.settings[0].name == "hot_leaves");
  CHECK(c.settings[0].value == "3");
  CHECK(c.settings[1].name == "bottom_line_level");
  parse_settings("", &c);
  parse_settings("  ", &c);
  CHECK(c.settings.size() == 2);
  CHECK(message_has([&] { parse_settings("hot_leaves", &c); }, "name=value"));
  CHECK(message_has([&] { parse_settings("=4", &c); }, "name=value"));
  CHECK(message_has([&] { parse_settings("hot_leaves=5", &c); }, "given twice"));
  c.set("hot_leaves", std::int64_t{9});
  CHECK(c.settings[0].value == "9");
  CHECK(c.settings.size() == 2);
}

TEST_CASE("settings: the backend validates and reads them") {
  const BackendInfo& lpm = backend_by_name("switch_lpm");
  const BackendInfo& none = backend_by_name("none");
  REQUIRE_FALSE(lpm.settings.empty());
  CHECK(none.settings.empty());

  BackendConfig c;
  // unset: the declared default
  for (const SettingSpec& s : lpm.settings) CHECK(setting_value(lpm, c, s.name) == s.default_value);
  c.set("hot_leaves", std::int64_t{7});
  CHECK(setting_value(lpm, c, "hot_leaves") == 7);
  CHECK_NOTHROW(check_settings(lpm, c));
  CHECK_NOTHROW(Backend(lpm, c));

  // a setting another backend has, or none has
  CHECK(message_has([&] { check_settings(none, c); }, "backend \"none\" has no setting \"hot_leaves\" (it has none)"));
  BackendConfig unknown;
  unknown.set("layer_nodes", std::int64_t{3});
  CHECK(message_has([&] { Backend(lpm, unknown); }, "its settings: bottom_line_level, hot_leaves"));
  CHECK_NOTHROW(Backend(backend_by_name("fattree"), unknown));

  // values: integers in the declared range only
  for (const char* bad : {"x", "", "1.5", "3x", "-1", "1000001", "99999999999999999999"}) {
    BackendConfig b;
    b.set("hot_leaves", std::string_view(bad));
    INFO("value '" << bad << "'");
    CHECK(message_has([&] { check_settings(lpm, b); }, "takes an integer from 0 to 1000000"));
    CHECK_THROWS_AS(Backend(lpm, b), InvalidArgument);
  }
  BackendConfig dup;
  dup.settings = {{"hot_leaves", "1"}, {"hot_leaves", "2"}};
  CHECK(message_has([&] { check_settings(lpm, dup); }, "given twice"));
  // a backend reading a setting it never declared is a bug, reported as such
  CHECK_THROWS_AS(setting_value(lpm, c, "no_such_setting"), InvalidArgument);
}

TEST_CASE("settings: fattree's reach its planner's limits") {
  const BackendInfo& ft = backend_by_name("fattree");
  BackendConfig c;
  c.set("fat_root_ranges", std::int64_t{1025});
  CHECK(message_has([&] { Backend(ft, c); }, "from 1 to 1024"));
  c.set("fat_root_ranges", std::int64_t{0});
  CHECK_THROWS_AS(Backend(ft, c), InvalidArgument);
  c.set("fat_root_ranges", std::int64_t{1024});
  c.set("cached_layers", std::int64_t{6});
  CHECK(message_has([&] { Backend(ft, c); }, "cached_layers"));
  c.set("cached_layers", std::int64_t{5});
  CHECK_NOTHROW(Backend(ft, c));
}

TEST_CASE("settings: one default backend, and the deprecated capacity name") {
  CHECK(std::string(default_backend().name) == "switch_lpm");
  CHECK(serves_lookups(default_backend()));
  std::size_t named = 0;
  for (const BackendInfo* b : registered_backends()) {
    if (b->deprecated_capacity_name != nullptr) {
      ++named;
      CHECK(std::string(b->deprecated_capacity_name) == "lpm_entries");
      CHECK(std::string(b->unit) == "LPM entries");
    }
  }
  CHECK(named == 1);
}
