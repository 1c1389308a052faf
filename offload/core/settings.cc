// Backends' own settings (BackendConfig::settings): parsed from
// "name=value" text, validated against what the backend declares
// (BackendInfo::settings), read with their defaults.
#include <charconv>
#include <string>
#include <string_view>

#include "forein/error.h"
#include "forein/offload/backend.h"

namespace forein::offload {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

const SettingSpec* find_spec(const BackendInfo& info, std::string_view name) {
  for (const SettingSpec& spec : info.settings) {
    if (name == spec.name) return &spec;
  }
  return nullptr;
}

std::string declared_names(const BackendInfo& info) {
  if (info.settings.empty()) return "it has none";
  std::string names = "its settings: ";
  for (std::size_t i = 0; i < info.settings.size(); ++i) {
    if (i > 0) names += ", ";
    names += info.settings[i].name;
  }
  return names;
}

const SettingSpec& spec_of(const BackendInfo& info, std::string_view name) {
  const SettingSpec* spec = find_spec(info, name);
  if (spec == nullptr) {
    throw InvalidArgument("backend \"" + std::string(info.name) + "\" has no setting \"" + std::string(name) +
                          "\" (" + declared_names(info) + ")");
  }
  return *spec;
}

std::int64_t parse_value(const BackendInfo& info, const SettingSpec& spec, std::string_view text) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < spec.min || v > spec.max) {
    throw InvalidArgument("setting " + std::string(spec.name) + " of backend \"" + info.name + "\" takes an integer from " +
                          std::to_string(spec.min) + " to " + std::to_string(spec.max) + " (" + spec.description +
                          "), not \"" + std::string(text) + "\"");
  }
  return v;
}

}  // namespace

BackendConfig& BackendConfig::set(std::string_view name, std::string_view value) {
  for (BackendSetting& s : settings) {
    if (s.name == name) {
      s.value = std::string(value);
      return *this;
    }
  }
  settings.push_back(BackendSetting{std::string(name), std::string(value)});
  return *this;
}

BackendConfig& BackendConfig::set(std::string_view name, std::int64_t value) {
  return set(name, std::string_view(std::to_string(value)));
}

void parse_settings(std::string_view text, BackendConfig* config) {
  while (!trim(text).empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const std::size_t eq = item.find('=');
    const std::string_view name = trim(item.substr(0, eq));
    if (eq == std::string_view::npos || name.empty()) {
      throw InvalidArgument("backend settings are name=value items separated by commas, not \"" +
                            std::string(trim(item)) + "\"");
    }
    for (const BackendSetting& s : config->settings) {
      if (s.name == name) throw InvalidArgument("backend setting " + s.name + " is given twice");
    }
    config->set(name, trim(item.substr(eq + 1)));
  }
}

void check_settings(const BackendInfo& info, const BackendConfig& config) {
  for (std::size_t i = 0; i < config.settings.size(); ++i) {
    const BackendSetting& s = config.settings[i];
    for (std::size_t j = 0; j < i; ++j) {
      if (config.settings[j].name == s.name) {
        throw InvalidArgument("setting " + s.name + " of backend \"" + info.name + "\" is given twice");
      }
    }
    parse_value(info, spec_of(info, s.name), s.value);
  }
}

std::int64_t setting_value(const BackendInfo& info, const BackendConfig& config, std::string_view name) {
  const SettingSpec& spec = spec_of(info, name);
  for (const BackendSetting& s : config.settings) {
    if (s.name == name) return parse_value(info, spec, s.value);
  }
  return spec.default_value;
}

}  // namespace forein::offload
