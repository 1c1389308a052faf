// The registry of offload backends, by name. Hosts take a backend name from
// their users (PostgreSQL's `offload` reloption, SQLite's `offload=NAME`,
// the tools' `--backend NAME`) and look it up here; an unknown name is an
// error that lists the registered ones.
//
// A backend is registered by adding a line for its BackendInfo to
// offload/backends/backends.def, once it passes the conformance suite
// (tests/offload/conformance, which can run it unregistered first); see
// docs/offload.md.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "forein/offload/backend.h"

namespace forein::offload {

// Every registered backend, in registration order ("none" first).
std::span<const BackendInfo* const> registered_backends();

// The backend a host uses when its user names none (PostgreSQL's `offload`
// reloption, SQLite's `offload=`, forein-kv-server's and the tools'
// `--backend`): switch_lpm. Chosen here only; hosts ask for it.
const BackendInfo& default_backend();

// The backend of that name (exact, lower case), or null.
const BackendInfo* find_backend(std::string_view name);

// The backend of that name; throws InvalidArgument naming the registered
// ones if there is none.
const BackendInfo& backend_by_name(std::string_view name);

// "none, switch_lpm": the registered names, for error messages and --help.
std::string registered_backend_names();

// Whether a host that looks keys up in its tree can use the backend: it
// declares kStartHints, or it declares nothing at all ("none": every lookup
// starts at the root). A backend with other capabilities only
// (switch_visibility: write visibility on the network path) cannot.
bool serves_lookups(const BackendInfo& info);

// The backend of that name for a host that looks keys up (PostgreSQL's
// `offload`, SQLite's `offload=NAME`, forein-kv-server's and the tools'
// `--backend`). Throws InvalidArgument for an unknown name (as
// backend_by_name) and for a backend that does not serve lookups, naming
// what it is for and the ones to use instead.
const BackendInfo& backend_for_lookups(std::string_view name);

// "none, switch_lpm, fattree, fpga, dpa": the registered names backend_for_lookups
// accepts, in registration order.
std::string lookup_backend_names();

}  // namespace forein::offload
