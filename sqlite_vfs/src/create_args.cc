// CREATE VIRTUAL TABLE arguments: the column list (the first column is the
// key, INTEGER or TEXT), options (page_size=N, offload=NAME), and the
// schema declared to SQLite.
#include <cctype>
#include <cstdint>
#include <cstdlib>
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
        if (o == opt) throw SqlError{SQLITE_ERROR, "forein: option '" + opt + "' given twice"};
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
      throw SqlError{SQLITE_ERROR, "forein: unknown option '" + opt + "'"};
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
  const std::string kt = lower(s.types[0]);
  if (kt == "integer" || kt == "int") {
    s.key_type = KeyType::kInteger;
  } else if (kt == "text") {
    s.key_type = KeyType::kText;
  } else {
    throw SqlError{SQLITE_ERROR, "forein: the first column '" + s.names[0] +
                                     "' is the key and must be declared INTEGER or TEXT (got '" +
                                     s.types[0] + "')"};
  }
  return s;
}

std::string declare_sql(const Spec& s) {
  std::string sql = "CREATE TABLE x(";
  for (std::size_t i = 0; i < s.names.size(); ++i) {
    if (i) sql += ", ";
    sql += quote_ident(s.names[i]);
    if (i == 0) {
      sql += s.key_type == KeyType::kInteger ? " INTEGER PRIMARY KEY NOT NULL"
                                             : " TEXT PRIMARY KEY NOT NULL";
    } else if (!s.types[i].empty()) {
      sql += " " + s.types[i];
    }
  }
  return sql + ") WITHOUT ROWID";
}

}  // namespace forein::sqlite
