// The SQL functions: forein_stats, forein_check and forein_debug_hints.
//
// Their table argument names a forein table as SQL text would: `table` or
// `schema.table`, each part bare or quoted ("..", [..], `..`). An
// unqualified name resolves as SQLite resolves table names (temp, main,
// then attached schemas in attach order, case-insensitively); the object
// found must be a forein virtual table, and its state is then taken from
// the connection's registry under exactly that schema and name.
// forein_stats and forein_check also take (schema, table) as two literal
// names (schema NULL: unqualified).
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "forein/error.h"
#include "forein_vtab.h"

namespace forein::sqlite {
namespace {

bool ascii_ieq(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto f = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
    if (f(a[i]) != f(b[i])) return false;
  }
  return true;
}

// One identifier at s[*i]: quoted ("..", [..], `..`, with "" and `` for
// the quote itself) or bare (up to the next '.', or the end). Returns
// nullopt when a quote is not closed or the part is empty.
std::optional<std::string> read_part(std::string_view s, std::size_t* i) {
  if (*i >= s.size()) return std::nullopt;
  const char open = s[*i];
  if (open == '"' || open == '`' || open == '[') {
    const char close = open == '[' ? ']' : open;
    std::string out;
    for (std::size_t j = *i + 1; j < s.size(); ++j) {
      if (s[j] != close) {
        out += s[j];
        continue;
      }
      if (close != ']' && j + 1 < s.size() && s[j + 1] == close) {
        out += close;
        ++j;
        continue;
      }
      *i = j + 1;
      return out;
    }
    return std::nullopt;
  }
  const std::size_t dot = s.find('.', *i);
  const std::size_t end = dot == std::string_view::npos ? s.size() : dot;
  if (end == *i) return std::nullopt;
  std::string out(s.substr(*i, end - *i));
  *i = end;
  return out;
}

struct TableName {
  std::optional<std::string> schema;  // nullopt: unqualified
  std::string name;
};

// Parses `table` or `schema.table`.
TableName parse_name(std::string_view s) {
  const auto bad = [&s] {
    return SqlError{SQLITE_ERROR, "forein: cannot parse table name '" + std::string(s) +
                                      "' (expected table or schema.table; quote a name "
                                      "holding a dot: \"a.b\")"};
  };
  std::size_t i = 0;
  auto first = read_part(s, &i);
  if (!first) throw bad();
  if (i == s.size()) return TableName{std::nullopt, std::move(*first)};
  if (s[i] != '.') throw bad();
  ++i;
  auto second = read_part(s, &i);
  if (!second || i != s.size()) throw bad();
  return TableName{std::move(*first), std::move(*second)};
}

std::string display(const TableName& n) {
  return n.schema ? *n.schema + "." + n.name : n.name;
}

// Skips blanks and SQL comments.
void skip_space(std::string_view s, std::size_t* i) {
  while (*i < s.size()) {
    const char c = s[*i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      ++*i;
    } else if (s.substr(*i, 2) == "--") {
      const std::size_t nl = s.find('\n', *i);
      *i = nl == std::string_view::npos ? s.size() : nl + 1;
    } else if (s.substr(*i, 2) == "/*") {
      const std::size_t e = s.find("*/", *i + 2);
      *i = e == std::string_view::npos ? s.size() : e + 2;
    } else {
      return;
    }
  }
}

// One SQL token: a quoted identifier or string ('..' too), or a run of
// identifier characters. Empty when none.
std::string read_token(std::string_view s, std::size_t* i) {
  if (*i >= s.size()) return {};
  const char open = s[*i];
  if (open == '"' || open == '`' || open == '[' || open == '\'') {
    const char close = open == '[' ? ']' : open;
    std::string out;
    for (std::size_t j = *i + 1; j < s.size(); ++j) {
      if (s[j] != close) {
        out += s[j];
      } else if (close != ']' && j + 1 < s.size() && s[j + 1] == close) {
        out += close;
        ++j;
      } else {
        *i = j + 1;
        return out;
      }
    }
    return {};
  }
  std::size_t j = *i;
  while (j < s.size()) {
    const auto c = static_cast<unsigned char>(s[j]);
    if (!(c >= 0x80 || c == '_' || c == '$' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
          (c >= 'A' && c <= 'Z'))) {
      break;
    }
    ++j;
  }
  std::string out(s.substr(*i, j - *i));
  *i = j;
  return out;
}

// Whether sqlite_schema.sql is `CREATE VIRTUAL TABLE <name> USING forein`.
bool is_forein_sql(std::string_view sql) {
  std::size_t i = 0;
  for (const char* kw : {"CREATE", "VIRTUAL", "TABLE"}) {
    skip_space(sql, &i);
    if (!ascii_ieq(read_token(sql, &i), kw)) return false;
  }
  skip_space(sql, &i);
  if (read_token(sql, &i).empty()) return false;  // the table's name
  skip_space(sql, &i);
  if (!ascii_ieq(read_token(sql, &i), "USING")) return false;
  skip_space(sql, &i);
  return ascii_ieq(read_token(sql, &i), "forein");
}

// The connection's schemas in SQLite's search order for unqualified
// names: temp, main, then attached ones in attach order.
std::vector<std::string> search_order(sqlite3* db) {
  std::vector<std::pair<int, std::string>> dbs;
  Stmt q(db, "PRAGMA database_list");
  while (q.step()) {
    const auto* n = reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 1));
    dbs.emplace_back(sqlite3_column_int(q.get(), 0), n ? n : "");
  }
  std::vector<std::string> out;
  for (const auto& [seq, n] : dbs) {
    if (seq == 1) out.push_back(n);  // temp
  }
  for (const auto& [seq, n] : dbs) {
    if (seq != 1) out.push_back(n);  // main (0), then attached (2..) in order
  }
  return out;
}

// The table or view named `name` in `schema`: its name as stored and
// whether it is a forein virtual table; nullopt when there is none.
std::optional<std::pair<std::string, bool>> lookup(sqlite3* db, const std::string& schema,
                                                   const std::string& name) {
  Stmt q(db, "SELECT name, type, sql FROM " + quote_ident(schema) +
                 ".sqlite_schema WHERE type IN ('table', 'view') AND name = ?1 COLLATE NOCASE");
  sqlite3_bind_text(q.get(), 1, name.data(), static_cast<int>(name.size()), SQLITE_TRANSIENT);
  if (!q.step()) return std::nullopt;
  const auto* n = reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 0));
  const auto* type = reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 1));
  const auto* sql = reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 2));
  const bool forein = type && std::string_view(type) == "table" && sql && is_forein_sql(sql);
  return std::pair<std::string, bool>{n ? n : "", forein};
}

// The Table that `n` names, connecting it if needed.
Table* find_table(sqlite3_context* ctx, const TableName& n) {
  auto* reg = static_cast<Registry*>(sqlite3_user_data(ctx));
  sqlite3* db = sqlite3_context_db_handle(ctx);
  std::vector<std::string> schemas;
  if (n.schema) {
    for (const std::string& s : search_order(db)) {
      if (ascii_ieq(s, *n.schema)) schemas.push_back(s);
    }
  } else {
    schemas = search_order(db);
  }
  for (const std::string& schema : schemas) {
    const auto found = lookup(db, schema, n.name);
    if (!found) continue;
    // The first schema holding the name decides, as in SQLite.
    if (!found->second) {
      throw SqlError{SQLITE_ERROR, "forein: '" + display(n) + "' is not a forein table"};
    }
    // Preparing a statement on the table makes SQLite connect it if it is
    // not yet (the connection keeps it until the schema changes); then its
    // state is registered.
    const std::string qualified = quote_ident(schema) + "." + quote_ident(found->first);
    { Stmt connect(db, "SELECT 1 FROM " + qualified + " LIMIT 0"); }
    auto it = reg->tables.find(registry_key(schema, found->first));
    if (it == reg->tables.end()) {
      throw SqlError{SQLITE_ERROR, "forein: '" + display(n) + "' is not a forein table"};
    }
    return it->second.get();
  }
  throw SqlError{SQLITE_ERROR, "forein: no such table: " + display(n)};
}

std::string text_arg(sqlite3_value* v, const char* what) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(v));
  if (!p) throw SqlError{SQLITE_ERROR, std::string("forein: ") + what + " expected"};
  return std::string(p, static_cast<std::size_t>(sqlite3_value_bytes(v)));
}

}  // namespace

// (name) or, where the function takes it, (schema, table).
Table* find_table(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  if (argc == 1) return find_table(ctx, parse_name(text_arg(argv[0], "table name")));
  TableName n;
  if (sqlite3_value_type(argv[0]) != SQLITE_NULL) n.schema = text_arg(argv[0], "schema name");
  n.name = text_arg(argv[1], "table name");
  return find_table(ctx, n);
}

void fn_stats(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  try {
    Table* t = find_table(ctx, argc, argv);
    t->ensure_fresh();
    t->attach_hints();
    t->hints.ensure_refreshed();  // report the switch's entries, not an empty table
    const TreeStats s = t->own_stats();
    std::string j = "{";
    auto add = [&j](const char* k, std::uint64_t v) {
      if (j.size() > 1) j += ",";
      j += "\"";
      j += k;
      j += "\":" + std::to_string(v);
    };
    j += "\"backend\":\"";
    j += t->hints.backend_name();  // a registered name: [a-z_]+, nothing to escape
    j += "\"";
    add("lookups", t->lookups);
    add("writes", t->writes);
    add("hinted", t->base_hinted + s.hinted);
    add("hint_hits", t->base_hint_hits + s.hint_hits);
    add("fallbacks", t->base_fallbacks + s.fallbacks);
    add("installed_entries", t->hints.installed_entries());  // switch_lpm LPM entries
    add("capacity_entries", t->hints.capacity_entries());
    add("hint_refreshes", t->hints.refreshes());
    add("keys", t->tree->size());
    add("height", t->tree->height());
    add("pages", t->tree->store().page_count());
    add("page_size", t->page_size);
    add("loads", t->loads);
    add("refreshes", t->refreshes);
    add("pages_read", t->pages_read);
    add("pages_written", t->pages_written);
    add("cached_pages", t->store().resident_pages());
    add("cache_pages", t->cache_pages);
    j += "}";
    sqlite3_result_text(ctx, j.c_str(), -1, SQLITE_TRANSIENT);
  } catch (const SqlError& e) {
    sqlite3_result_error(ctx, e.msg.c_str(), -1);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, (std::string("forein: ") + e.what()).c_str(), -1);
  }
}

void fn_check(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  Table* t = nullptr;
  try {
    t = find_table(ctx, argc, argv);
    // Reload from the shadow table (verifying every page checksum), then
    // check the tree's invariants and its key count against a full scan.
    // Inside a transaction that changed the table the unwritten pages exist
    // only in memory: check that tree as it is. Then the free list: each
    // page is reachable or free, never both or neither.
    const bool in_memory = t->has_unwritten();
    if (in_memory) {
      t->ensure_fresh();
    } else {
      t->load_all();
    }
    t->tree->check();
    std::uint64_t n = 0;
    std::string prev;
    std::vector<std::size_t> offs;
    bool first = true;
    t->tree->scan(ScanSpec{}, [&](std::string_view k, std::string_view v) {
      if (!first && compare_keys(prev, k) >= 0) throw CorruptionError("keys out of order in scan");
      if (t->key_type == KeyType::kInteger && k.size() != 8) {
        throw CorruptionError("integer key of " + std::to_string(k.size()) + " bytes");
      }
      column_offsets(v, &offs);
      if (offs.size() > t->columns.size() - 1) throw CorruptionError("row with too many columns");
      prev = std::string(k);
      first = false;
      ++n;
      return true;
    });
    if (n != t->tree->size()) {
      throw CorruptionError("scan found " + std::to_string(n) + " keys, meta page says " +
                            std::to_string(t->tree->size()));
    }
    t->check_free_list(in_memory);  // every page reachable or free, not both
    sqlite3_result_text(ctx, "ok", -1, SQLITE_STATIC);
  } catch (const SqlError& e) {
    sqlite3_result_error(ctx, e.msg.c_str(), -1);
  } catch (const std::exception& e) {
    if (t && !t->has_unwritten()) t->mark_stale();
    sqlite3_result_error(ctx, (std::string("forein_check: ") + e.what()).c_str(), -1);
  }
}

// forein_debug_hints(table, mode[, seed]): 0 = hints from the offload path
// (manager + switch_lpm), 1 = random hints (hint-safety tests), 2 = none.
void fn_debug_hints(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  try {
    Table* t = find_table(ctx, 1, argv);
    const int mode = sqlite3_value_int(argv[1]);
    if (mode < 0 || mode > 2) throw SqlError{SQLITE_ERROR, "forein_debug_hints: mode is 0, 1 or 2"};
    t->hints.mode = mode;
    if (argc > 2) t->hints.rng.seed(static_cast<std::uint64_t>(sqlite3_value_int64(argv[2])));
    sqlite3_result_int(ctx, mode);
  } catch (const SqlError& e) {
    sqlite3_result_error(ctx, e.msg.c_str(), -1);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, (std::string("forein: ") + e.what()).c_str(), -1);
  }
}

}  // namespace forein::sqlite
