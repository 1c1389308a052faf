/*
 * forein_offload.h: the C ABI of forein's offload layer.
 *
 * What hosts that are not C++ use (the PostgreSQL access method today; the
 * DPDK switch and the gRPC agent next): the backend registry, the pure
 * image lookup every host runs on its hot path, and a manager that plans
 * and publishes a backend's image from a node table and key words.
 *
 * Rules of the boundary: no exception crosses it (a failure returns an
 * error code or NULL with a NUL-terminated message in the caller's buffer),
 * and the C++ side never calls back into the host, so a host's non-local
 * exits (PostgreSQL's longjmp) never unwind C++ frames. Every function is
 * safe to call from any thread; a manager is one writer, many readers
 * (forein_offload_manager_hint runs lock-free beside a refresh).
 *
 * Built by CMake (library forein_offload_capi, tested under ASan/UBSan and
 * TSan) and compiled from the same source list into PostgreSQL's module
 * (offload/capi/sources.mk).
 */
#ifndef FOREIN_OFFLOAD_H
#define FOREIN_OFFLOAD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

/* ---- registry ---------------------------------------------------------- */

/* Registered backends are numbered 0 .. count-1; ids are stable in one build. */
extern int	forein_offload_backend_count(void);
/* The backend's name ("none", "switch_lpm", ...); NULL for a bad id. */
extern const char *forein_offload_backend_name(int id);
/* The id of a registered backend, or -1. */
extern int	forein_offload_backend_id(const char *name);
/* "none, switch_lpm": for error messages. Static storage. */
extern const char *forein_offload_backend_names(void);
/* The unit of the backend's capacity ("LPM entries", ...); NULL for a bad id. */
extern const char *forein_offload_backend_unit(int id);
/*
 * 1 if a host that looks keys up in its index may use backend id: it gives
 * start hints, or it is "none"; 0 otherwise (switch_visibility: write
 * visibility on the network path) and for a bad id.
 */
extern int	forein_offload_backend_serves_lookups(int id);
/* "none, switch_lpm, fattree, fpga, dpa": the backends an index can use. Static storage. */
extern const char *forein_offload_lookup_backend_names(void);
/*
 * The id of a backend an index can use, or -1 with a message (an unknown
 * name, or a backend that gives no start hints: the message says what it is
 * for and which ones to use).
 */
extern int	forein_offload_lookup_backend_id(const char *name, char *errbuf, size_t errlen);
/*
 * The backend's own settings, one per line: "name default min max
 * description" (static storage; "" for none, NULL for a bad id).
 */
extern const char *forein_offload_backend_settings(int id);
/*
 * 0 if settings ("name=value,name=value"; NULL or "": none) are valid for
 * backend id, else -1 with a message.
 */
extern int	forein_offload_check_settings(int id, const char *settings, char *errbuf, size_t errlen);
/*
 * The name hosts gave backend id's capacity before capacities were named
 * for what they size ("lpm_entries" for switch_lpm), kept as a deprecated
 * alias for that backend only; NULL if none or a bad id.
 */
extern const char *forein_offload_backend_capacity_alias(int id);
/* The backend hosts use when their user names none ("switch_lpm"). */
extern const char *forein_offload_default_backend_name(void);
/* The paper's capacity, in that unit. */
extern uint64_t forein_offload_default_capacity(int id);
/* The largest image the backend publishes at that capacity (0 for a bad id). */
extern size_t forein_offload_max_image_bytes(int id, uint64_t capacity);

/* ---- images ------------------------------------------------------------ */

typedef struct forein_offload_start_hint
{
	uint32_t	node;			/* 0: no hint */
	uint16_t	level;			/* 0 = leaf */
	uint16_t	pad;
	uint64_t	version;
} forein_offload_start_hint;

typedef struct forein_offload_hints
{
	forein_offload_start_hint primary;
	forein_offload_start_hint secondary;	/* tried when the primary fails */
} forein_offload_hints;

/*
 * The start hints of a key word in an image of backend id. Pure and safe on
 * any bytes (torn, truncated, garbage): at worst a wrong or absent hint.
 * A bad id gives no hints.
 */
extern void forein_offload_hint_lookup(int id, const void *image, size_t len,
									   uint64_t word, forein_offload_hints *out);

/* One record of an image (diagnostics): words under the prefix (the high
 * key_bits bits of key) lead to node at level; kind: the backend's class. */
typedef struct forein_offload_record
{
	uint64_t	key;
	uint32_t	node;
	uint16_t	level;
	uint8_t		key_bits;
	uint8_t		kind;
} forein_offload_record;

/*
 * Copies up to max of the image's records into out (out may be NULL when
 * max is 0) and returns how many it has; 0 for bytes that are not a valid
 * image.
 */
extern size_t forein_offload_image_records(int id, const void *image, size_t len,
										   forein_offload_record *out, size_t max);

/* One line of a device's usage by part (fattree: per switch and table):
 * used of capacity, in unit.  Strings are NUL-terminated, truncated to fit
 * (never inside a UTF-8 character). */
#define FOREIN_OFFLOAD_USAGE_NAME_LEN	64
#define FOREIN_OFFLOAD_USAGE_UNIT_LEN	32

typedef struct forein_offload_usage_row
{
	char		device[FOREIN_OFFLOAD_USAGE_NAME_LEN];	/* "switch", "core switch", ... */
	char		resource[FOREIN_OFFLOAD_USAGE_NAME_LEN];	/* "LPM entries", "node set 2", ... */
	char		unit[FOREIN_OFFLOAD_USAGE_UNIT_LEN];	/* "entries", "nodes", ... */
	uint64_t	used;
	uint64_t	capacity;
} forein_offload_usage_row;

/*
 * The usage of an image of backend id, read off its bytes alone, for a
 * device of that capacity (0: the backend's default): copies up to max rows
 * into out (out may be NULL when max is 0) and returns how many there are.
 * A backend without a breakdown gives one row: device "device", resource
 * and unit its unit, used its record count.  Pure and safe on any bytes
 * (garbage reads as an empty or partial device).  0 for a bad id, or on an
 * internal error.
 */
extern size_t forein_offload_image_usage(int id, const void *image, size_t len,
										 uint64_t capacity, forein_offload_usage_row *out,
										 size_t max);

/* ---- manager ----------------------------------------------------------- */

typedef struct forein_offload_manager forein_offload_manager;

typedef struct forein_offload_config
{
	uint64_t	capacity;		/* device capacity in its unit; 0: the paper's */
	uint64_t	budget;			/* planner budget; 0: half the capacity */
	/*
	 * The backend's own settings, "name=value,name=value" (NULL or "": its
	 * defaults), validated by the backend: an unknown name or a bad value
	 * makes forein_offload_manager_create fail with a message naming it.
	 * Which settings a backend takes: forein_offload_backend_settings.
	 */
	const char *settings;
} forein_offload_config;

/* Fills *config with the defaults. */
extern void forein_offload_config_init(forein_offload_config *config);

/* One live node of the host's index: it owns the words [lo, hi) (hi_inf:
 * through 2^64 - 1). */
typedef struct forein_offload_node
{
	uint64_t	lo;
	uint64_t	hi;
	uint64_t	version;
	uint32_t	node;			/* never 0 */
	uint16_t	level;			/* 0 = leaf */
	uint8_t		hi_inf;
	uint8_t		pad;
} forein_offload_node;

/* A manager over a new device of backend id; NULL with a message on error. */
extern forein_offload_manager *forein_offload_manager_create(int id,
															 const forein_offload_config *config,
															 char *errbuf, size_t errlen);
extern void forein_offload_manager_destroy(forein_offload_manager *m);

/*
 * The index's whole live node table, read now (replaces the previous one;
 * nodes that are gone count as merged away). Returns 0, or -1 with a
 * message.
 */
extern int	forein_offload_manager_sync_nodes(forein_offload_manager *m,
											  const forein_offload_node *nodes, size_t n,
											  char *errbuf, size_t errlen);

/* One sampled access to a key word (weights the leaf that owns it). */
extern void forein_offload_manager_record_access(forein_offload_manager *m, uint64_t word);

/*
 * Plans from the node table, the sampled accesses and the index's key
 * words (ascending; duplicates allowed), and applies the result to the
 * device now. Returns 0, or -1 with a message (nothing changed).  When
 * nothing changed since the last plan (the same node table, the same
 * words, no sampled access) the planner is not asked: the plan would be
 * the same (stats: plans, skipped_refreshes).
 */
extern int	forein_offload_manager_refresh(forein_offload_manager *m, const uint64_t *words,
										   size_t nwords, char *errbuf, size_t errlen);

/*
 * Copies the device's current image into buf if it fits (buflen >= the
 * returned size) and returns its size; *version gets its version.
 */
extern size_t forein_offload_manager_image(forein_offload_manager *m, void *buf, size_t buflen,
										   uint64_t *version);

/* Hints from the device's current image (lock-free; for in-process hosts). */
extern void forein_offload_manager_hint(const forein_offload_manager *m, uint64_t word,
										forein_offload_hints *out);

typedef struct forein_offload_stats
{
	uint64_t	used;			/* device usage, in the backend's unit */
	uint64_t	capacity;
	uint64_t	target_records;	/* what the device holds once nothing is pending */
	uint64_t	live_nodes;
	uint64_t	invalid_nodes;	/* merged-away nodes whose records may remain */
	uint64_t	refreshes;
	uint64_t	failed_installs;
	uint64_t	image_bytes;
	uint64_t	image_version;
	uint64_t	plans;			/* refreshes that asked the planner */
	uint64_t	skipped_refreshes;	/* refreshes with nothing to plan */
} forein_offload_stats;

extern void forein_offload_manager_stats(const forein_offload_manager *m,
										 forein_offload_stats *out);

#ifdef __cplusplus
}
#endif

#endif							/* FOREIN_OFFLOAD_H */
