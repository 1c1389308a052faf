// The SQL functions: forein_stats, forein_check and forein_debug_hints.
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "forein/error.h"
#include "forein_vtab.h"

namespace forein::sqlite {
namespace {

// The Table for the name in argv[0], connecting it if needed.
Table* find_table(sqlite3_context* ctx, sqlite3_value* name_v) {
  auto* reg = static_cast<Registry*>(sqlite3_user_data(ctx));
  const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(name_v));
  if (!p) throw SqlError{SQLITE_ERROR, "forein: table name expected"};
  const std::string name = p;
  // Preparing a statement on the table makes SQLite connect it if it is not
  // yet (the connection keeps it until the schema changes); then its state
  // is registered.
  sqlite3* db = sqlite3_context_db_handle(ctx);
  sqlite3_stmt* s = nullptr;
  const std::string sql = "SELECT 1 FROM " + quote_ident(name) + " LIMIT 0";
  const int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr);
  sqlite3_finalize(s);
  auto it = reg->tables.find(registry_key("main", name));
  if (it == reg->tables.end()) {
    const std::string suffix = "." + lower(name);
    for (it = reg->tables.begin(); it != reg->tables.end(); ++it) {
      if (it->first.size() > suffix.size() && it->first.ends_with(suffix)) break;
    }
  }
  if (rc != SQLITE_OK || it == reg->tables.end()) {
    throw SqlError{SQLITE_ERROR, "forein: no forein table named '" + name + "'"};
  }
  return it->second.get();
}

}  // namespace

void fn_stats(sqlite3_context* ctx, int, sqlite3_value** argv) {
  try {
    Table* t = find_table(ctx, argv[0]);
    t->ensure_fresh();
    t->hints.ensure_refreshed();  // report the switch's entries, not an empty table
    const TreeStats s = t->hints.own_stats();
    std::string j = "{";
    auto add = [&j](const char* k, std::uint64_t v) {
      if (j.size() > 1) j += ",";
      j += "\"";
      j += k;
      j += "\":" + std::to_string(v);
    };
    add("lookups", t->lookups);
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
    j += "}";
    sqlite3_result_text(ctx, j.c_str(), -1, SQLITE_TRANSIENT);
  } catch (const SqlError& e) {
    sqlite3_result_error(ctx, e.msg.c_str(), -1);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, (std::string("forein: ") + e.what()).c_str(), -1);
  }
}

void fn_check(sqlite3_context* ctx, int, sqlite3_value** argv) {
  Table* t = nullptr;
  try {
    t = find_table(ctx, argv[0]);
    // Reload from the shadow table (verifying every page checksum), then
    // check the tree's invariants and its key count against a full scan.
    // Inside a transaction that changed the table the unwritten pages exist
    // only in memory: check that tree as it is.
    if (t->has_unwritten()) {
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
    Table* t = find_table(ctx, argv[0]);
    const int mode = sqlite3_value_int(argv[1]);
    if (mode < 0 || mode > 2) throw SqlError{SQLITE_ERROR, "forein_debug_hints: mode is 0, 1 or 2"};
    t->hints.mode = mode;
    if (argc > 2) t->hints.rng.seed(static_cast<std::uint64_t>(sqlite3_value_int64(argv[2])));
    sqlite3_result_int(ctx, mode);
  } catch (const SqlError& e) {
    sqlite3_result_error(ctx, e.msg.c_str(), -1);
  }
}

}  // namespace forein::sqlite
