// The network programs' command lines, on CLI11 (Debian libcli11-dev,
// header-only): each flag is declared once, with its value's form, range
// and help; CLI11 takes --flag VALUE and --flag=VALUE, refuses unknown
// flags and missing values, and writes --help. Values are parsed here
// (whole numbers with from_chars, HOST:PORT, A.B.C, lists), so every error
// names its flag: "--threads: '65' is not a whole number from 1 to 64".
// The programs exit 2 on any of them (parse() below).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/parse.h"

namespace forein::net::cli {

// A bad command line: the message names the flag. Thrown from the option
// callbacks below and from the programs' checks across flags.
inline CLI::ValidationError bad(const std::string& flag, const std::string& why) {
  return CLI::ValidationError(flag, why);
}

// The app with the programs' shared settings: the help flag, no
// positional arguments (a stray word is an error), --flag=VALUE allowed.
inline void configure(CLI::App& app) {
  app.set_help_flag("-h,--help", "print this help and exit");
  app.allow_extras(false);
  // A flag given twice: the last one counts (as with the hand-written parsers).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.get_formatter()->column_width(34);
}

// A value of a form of the program's own: set(v) parses and stores it, or
// returns false; the error then says "'v' is not EXPECT".
inline CLI::Option* value(CLI::App& app, const std::string& flag, const std::string& form,
                          std::function<bool(const std::string&)> set, const std::string& expect,
                          const std::string& help) {
  return app
      .add_option_function<std::string>(
          flag,
          [flag, set = std::move(set), expect](const std::string& v) {
            if (!set(v)) throw bad(flag, "'" + v + "' is not " + expect);
          },
          help)
      ->type_name(form);
}

// A whole number in [min, max] (decimal, nothing else).
template <typename T>
CLI::Option* number(CLI::App& app, const std::string& flag, T* out, T min, T max, const std::string& help) {
  return app
      .add_option_function<std::string>(
          flag,
          [flag, out, min, max](const std::string& v) {
            if (!parse_number<T>(v, min, max, out)) {
              throw bad(flag,
                        "'" + v + "' is not a whole number from " + std::to_string(min) + " to " + std::to_string(max));
            }
          },
          help + " (" + std::to_string(min) + ".." + std::to_string(max) + ")")
      ->type_name("N")
      ->default_str(std::to_string(*out));
}

// Any text (non-empty unless allow_empty).
inline CLI::Option* text(CLI::App& app, const std::string& flag, std::string* out, const std::string& help,
                         bool allow_empty = false) {
  return app
      .add_option_function<std::string>(
          flag,
          [flag, out, allow_empty](const std::string& v) {
            if (v.empty() && !allow_empty) throw bad(flag, "needs a non-empty value");
            *out = v;
          },
          help)
      ->type_name("TEXT");
}

// One of named values.
template <typename T>
CLI::Option* choice(CLI::App& app, const std::string& flag, T* out, std::vector<std::pair<std::string, T>> names,
                    const std::string& help) {
  std::string list;
  for (const auto& [name, value] : names) list += (list.empty() ? "" : "|") + name;
  return app
      .add_option_function<std::string>(
          flag,
          [flag, out, names, list](const std::string& v) {
            for (const auto& [name, value] : names) {
              if (v == name) {
                *out = value;
                return;
              }
            }
            throw bad(flag, "'" + v + "' is not one of " + list);
          },
          help)
      ->type_name(list);
}

// on|off.
inline CLI::Option* on_off(CLI::App& app, const std::string& flag, bool* out, const std::string& help) {
  return choice<bool>(app, flag, out, {{"on", true}, {"off", false}}, help)->default_str(*out ? "on" : "off");
}

// HOST:PORT with PORT in [min_port, 65535]; HOST non-empty.
inline bool parse_host_port(std::string_view text, std::uint32_t min_port, std::string* host, std::uint16_t* port) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  std::uint32_t p = 0;
  if (!parse_number<std::uint32_t>(text.substr(colon + 1), min_port, 65535, &p)) return false;
  *host = std::string(text.substr(0, colon));
  *port = static_cast<std::uint16_t>(p);
  return true;
}

inline CLI::Option* host_port(CLI::App& app, const std::string& flag, std::string* host, std::uint16_t* port,
                              std::uint32_t min_port, const std::string& help) {
  return app
      .add_option_function<std::string>(
          flag,
          [flag, host, port, min_port](const std::string& v) {
            if (!parse_host_port(v, min_port, host, port)) {
              throw bad(flag, "'" + v + "' is not HOST:PORT with PORT from " + std::to_string(min_port) + " to 65535");
            }
          },
          help)
      ->type_name("HOST:PORT");
}

// HOST:PORT kept as written (an address handed to gRPC or a resolver),
// checked: PORT from min_port to 65535, HOST non-empty.
inline CLI::Option* address(CLI::App& app, const std::string& flag, std::string* out, std::uint32_t min_port,
                            const std::string& help) {
  return app
      .add_option_function<std::string>(
          flag,
          [flag, out, min_port](const std::string& v) {
            std::string host;
            std::uint16_t port = 0;
            if (!parse_host_port(v, min_port, &host, &port)) {
              throw bad(flag, "'" + v + "' is not HOST:PORT with PORT from " + std::to_string(min_port) + " to 65535");
            }
            *out = v;
          },
          help)
      ->type_name("HOST:PORT");
}

// A /24 written A.B.C: *base is A.B.C.0 (host order), *text the words.
inline CLI::Option* net24(CLI::App& app, const std::string& flag, std::string* text, std::uint32_t* base,
                          const std::string& help) {
  return app
      .add_option_function<std::string>(
          flag,
          [flag, text, base](const std::string& v) {
            std::uint32_t b = 0;
            if (!parse_net(v, &b)) throw bad(flag, "'" + v + "' is not a /24 written A.B.C (three numbers 0..255)");
            *text = v;
            if (base != nullptr) *base = b;
          },
          help)
      ->type_name("A.B.C")
      ->default_str(*text);
}

// I/K with 0 <= I < K <= max_k.
inline CLI::Option* part_of(CLI::App& app, const std::string& flag, std::uint32_t* i, std::uint32_t* k,
                            std::uint32_t max_k, const std::string& form, const std::string& help) {
  return app
      .add_option_function<std::string>(
          flag,
          [flag, i, k, max_k, form](const std::string& v) {
            const std::size_t slash = v.find('/');
            std::uint32_t kk = 0, ii = 0;
            if (slash == std::string::npos ||
                !parse_number<std::uint32_t>(std::string_view(v).substr(slash + 1), 1, max_k, &kk) ||
                !parse_number<std::uint32_t>(std::string_view(v).substr(0, slash), 0, kk - 1, &ii)) {
              throw bad(flag, "'" + v + "' is not " + form + " with 0 <= I < " + form.substr(form.find('/') + 1) +
                                  " <= " + std::to_string(max_k));
            }
            *i = ii;
            *k = kk;
          },
          help)
      ->type_name(form);
}

// A bad command line's end: "PROGRAM: message" and the usage line, on
// stderr; exit code 2.
inline int refuse(const std::string& program, const std::string& message) {
  std::fprintf(stderr, "%s: %s\nusage: %s [FLAGS] ('%s --help' lists them)\n", program.c_str(), message.c_str(),
               program.c_str(), program.c_str());
  return 2;
}

// The DPDK programs' `-- EAL ARGS...`: the words after `--` go to *eal
// (*given set); returns how many of argv are the program's own.
inline int split_eal(int argc, char** argv, std::vector<std::string>* eal, bool* given) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      *given = true;
      for (int k = i + 1; k < argc; ++k) eal->emplace_back(argv[k]);
      return i;
    }
  }
  return argc;
}

// Parses argv with app into *error / *help: false on a bad command line
// (*error names the flag); --help sets *help.
inline bool parse(CLI::App& app, int argc, const char* const* argv, std::string* error, bool* help) {
  *help = false;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    *help = true;
  } catch (const CLI::ParseError& e) {
    *error = e.what();
    return false;
  }
  return true;
}

// parse() for a program that prints its own help and refusals: nullopt to
// go on, or the exit code (0 after --help, 2 after a bad command line).
inline std::optional<int> run(CLI::App& app, int argc, const char* const* argv) {
  std::string error;
  bool help = false;
  if (!parse(app, argc, argv, &error, &help)) return refuse(app.get_name(), error);
  if (help) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  }
  return std::nullopt;
}

}  // namespace forein::net::cli
