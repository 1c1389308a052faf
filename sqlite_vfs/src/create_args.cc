// CREATE VIRTUAL TABLE arguments: the column list (the first column is the
// key, of INTEGER or TEXT affinity by SQLite's rules), options
// (page_size=N, offload=NAME, each at most once), and the schema declared
// to SQLite.
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "forein/error.h"
#include "forein/offload/registry.h"
#include "forein_vtab.h"

namespace forein::sqlite {
namespace {

// A declared type name only, like SQLite's: words, optionally "(n)" or
// "(n, m)"; no constraints (they would be silently ignored on a virtual
// table).
bool valid_type(const std::string& t) {
  std::size_t i = 0;
  while (i < t.size() && (std::isalnum(static_cast<unsigned char>(t[i])) || t[i] == '_' || t[i] == ' ')) ++i;
  if (i < t.size()) {
    if (t[i] != '(' || t.back() != ')') return false;
    for (std::size_t j = i + 1; j + 1 < t.size(); ++j) {
      if (!(std::isdigit(static_cast<unsigned char>(t[j])) || t[j] == ' ' || t[j] == ',')) return false;
    }
  }
  std::string word;
  const std::string lt = lower(t.substr(0, i)) + " ";
  for (char c : lt) {
    if (c == ' ') {
      static const char* kBad[] = {"check", "default", "references", "primary", "unique", "not",
                                   "null", "collate", "generated", "as", "constraint", "hidden"};
      for (const char* b : kBad)
        if (word == b) return false;
      word.clear();
    } else {
      word += c;
    }
  }
  return true;
}

// Splits a column argument into (name, declared type).
bool split_column(const std::string& arg, std::string* name, std::string* type) {
  std::string a = trim(arg);
  if (a.empty()) return false;
  std::size_t i = 0;
  if (a[0] == '"' || a[0] == '`' || a[0] == '[') {
    const char close = a[0] == '[' ? ']' : a[0];
    std::string n;
    for (i = 1; i < a.size(); ++i) {
      if (a[i] == close) {
        if (close != ']' && i + 1 < a.size() && a[i + 1] == close) {
          n += close;
          ++i;
          continue;
        }
        break;
      }
      n += a[i];
    }
    if (i >= a.size() || n.empty()) return false;
    ++i;
    *name = n;
  } else {
    while (i < a.size() && (std::isalnum(static_cast<unsigned char>(a[i])) || a[i] == '_')) ++i;
    if (i == 0) return false;
    *name = a.substr(0, i);
  }
  *type = trim(a.substr(i));
  return true;
}

// The key type a declared type gives, by SQLite's column affinity rules
// (https://www.sqlite.org/datatype3.html, 3.1), in their order: "INT"
// anywhere gives INTEGER affinity; else "CHAR", "CLOB" or "TEXT" gives
// TEXT. BLOB, REAL and NUMERIC affinity (and no type) have no key type.
std::optional<KeyType> key_type_of(const std::string& type) {
  const std::string t = lower(type);
  if (t.find("int") != std::string::npos) return KeyType::kInteger;
  for (const char* s : {"char", "clob", "text"}) {
    if (t.find(s) != std::string::npos) return KeyType::kText;
  }
  return std::nullopt;
}

// The affinity SQLite gives a type without INTEGER or TEXT affinity, for
// the error message.
const char* other_affinity(const std::string& type) {
  const std::string t = lower(type);
  if (t.empty() || t.find("blob") != std::string::npos) return "BLOB";
  for (const char* s : {"real", "floa", "doub"}) {
    if (t.find(s) != std::string::npos) return "REAL";
  }
  return "NUMERIC";
}

}  // namespace

Spec parse_args(int argc, const char* const* argv) {
  Spec s;
  std::vector<std::string> seen_options;
  for (int i = 3; i < argc; ++i) {
    const std::string arg = trim(argv[i]);
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      const std::string opt = lower(trim(arg.substr(0, eq)));
      const std::string val = trim(arg.substr(eq + 1));
      for (const std::string& o : seen_options) {
        if (o == opt) {
          throw SqlError{SQLITE_ERROR, "forein: option '" + opt + "' given twice (" + arg + ")"};
        }
      }
      seen_options.push_back(opt);
      if (opt == "offload") {
        // A backend the table can look keys up with (one that gives start
        // hints, or none); the message names the others' purpose.
        try {
          offload::backend_for_lookups(val);
        } catch (const InvalidArgument& e) {
          throw SqlError{SQLITE_ERROR, std::string("forein: ") + e.what()};
        }
        s.offload = val;
        continue;
      }
      if (opt == "page_size") {
        char* end = nullptr;
        const unsigned long ps = std::strtoul(val.c_str(), &end, 10);
        if (val.empty() || *end != '\0' || ps < kMinPageSize || ps > kMaxPageSize ||
            (ps & (ps - 1)) != 0) {
          throw SqlError{SQLITE_ERROR, "forein: page_size must be a power of two in [4096, 32768], got '" +
                                           val + "'"};
        }
        s.page_size = static_cast<std::uint32_t>(ps);
        continue;
      }
      throw SqlError{SQLITE_ERROR, "forein: unknown option '" + opt +
                                       "' (the options are page_size=N and offload=NAME)"};
    }
    std::string name, type;
    if (!split_column(arg, &name, &type)) {
      throw SqlError{SQLITE_ERROR, "forein: malformed column definition '" + arg + "'"};
    }
    if (!valid_type(type)) {
      throw SqlError{SQLITE_ERROR, "forein: unsupported column type or constraint in '" + arg +
                                       "' (only a type name is allowed)"};
    }
    for (const auto& n : s.names) {
      if (lower(n) == lower(name)) {
        throw SqlError{SQLITE_ERROR, "forein: duplicate column name '" + name + "'"};
      }
    }
    s.names.push_back(name);
    s.types.push_back(type);
  }
  if (s.names.empty()) {
    throw SqlError{SQLITE_ERROR,
                   "forein: missing key column: USING forein(key INTEGER|TEXT, other columns...)"};
  }
  const std::optional<KeyType> kt = key_type_of(s.types[0]);
  if (!kt) {
    const std::string declared = s.types[0].empty() ? "no type" : "'" + s.types[0] + "'";
    throw SqlError{SQLITE_ERROR,
                   "forein: the first column '" + s.names[0] + "' is the key: its type must have "
                   "INTEGER affinity (a name containing INT: INTEGER, INT, BIGINT, ...) or TEXT "
                   "affinity (containing CHAR, CLOB or TEXT: TEXT, VARCHAR(n), ...); got " +
                   declared + " (" + other_affinity(s.types[0]) + " affinity)"};
  }
  s.key_type = *kt;
  return s;
}

std::string declare_sql(const Spec& s) {
  std::string sql = "CREATE TABLE x(";
  for (std::size_t i = 0; i < s.names.size(); ++i) {
    if (i) sql += ", ";
    sql += quote_ident(s.names[i]);
    // The declared type as written (BIGINT, VARCHAR(20), ...): in a
    // WITHOUT ROWID table it only sets the affinity, which key_type_of
    // matched.
    if (!s.types[i].empty()) sql += " " + s.types[i];
    if (i == 0) sql += " PRIMARY KEY NOT NULL";
  }
  return sql + ") WITHOUT ROWID";
}

}  // namespace forein::sqlite
