/*-------------------------------------------------------------------------
 *
 * forein_module.c
 *	  Module load, forein's GUCs and the device capacity each index gets.
 *
 * Loaded through shared_preload_libraries, the module keeps one slot per
 * offloaded index in shared memory (forein_slots.c, layout in
 * forein_offload_int.h) and a background worker (forein_worker.c) that
 * recomputes a slot's image through the offload layer's C ABI
 * (forein_refresh.c) when page splits, deletions or sampled accesses say it
 * is out of date.  A scan start asks forein_offload_hint() (forein_hints.c)
 * for the node to start from; the answer is advice the caller validates on
 * the page, so a stale or torn table can cost time but never a wrong result.
 *
 * Loaded any other way, every entry point is cheap and says "no hint";
 * statistics then go to backend-local counters.
 *
 * Portions Copyright (c) 2026, forein developers
 *
 * pg_extension/forein_module.c
 *
 *-------------------------------------------------------------------------
 */

#include "postgres.h"

#include "miscadmin.h"
#include "utils/guc.h"

#include "forein_offload.h"
#include "forein_offload_int.h"

PG_MODULE_MAGIC;

/* GUCs */
bool		forein_offload_enabled = true;
int			forein_offload_capacity = 0;
int			forein_lpm_entries = FOREIN_DEFAULT_LPM_ENTRIES;	/* deprecated */
double		forein_sample_rate = 0.01;
int			forein_install_delay_ms = 0;
int			forein_max_indexes = 8;
bool		forein_debug_random_hints = false;

void		_PG_init(void);

/*
 * Module load.
 */
void
_PG_init(void)
{
	forein_offload_init();
	forein_hooks_init();
	if (process_shared_preload_libraries_in_progress)
		forein_register_wal_rmgr();
}

/*
 * Defines the GUCs and, while shared_preload_libraries is being processed,
 * asks for shared memory and registers the background worker.  Idempotent.
 */
void
forein_offload_init(void)
{
	static bool done = false;

	if (done)
		return;
	done = true;

	DefineCustomBoolVariable("forein.offload",
							 "Starts forein index descents from offload hints.",
							 "Off: every descent starts at the root.",
							 &forein_offload_enabled,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("forein.sample_rate",
							 "Fraction of index descents sampled as access weights.",
							 NULL,
							 &forein_sample_rate,
							 0.01,
							 0.0, 1.0,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("forein.install_delay_ms",
							"Modelled control-plane delay before a new LPM table is installed.",
							NULL,
							&forein_install_delay_ms,
							0,
							0, 3600 * 1000,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("forein.debug_random_hints",
							 "Makes forein hand out random start hints (testing only).",
							 "Hints are validated, so results must not change.",
							 &forein_debug_random_hints,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	/* before the prefix is reserved: a SET before the load must stick */
	DefineCustomBoolVariable("forein.explain_hints",
							 "Shows forein index scans' hint counters in EXPLAIN ANALYZE.",
							 NULL,
							 &forein_explain_hints,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	/* a PGC_POSTMASTER variable can only be defined at preload */
	if (!process_shared_preload_libraries_in_progress)
	{
		MarkGUCPrefixReserved("forein");
		return;
	}

	DefineCustomIntVariable("forein.max_indexes",
							"Indexes that can hold an offload table in shared memory.",
							NULL,
							&forein_max_indexes,
							8,
							1, 1024,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("forein.offload_capacity",
							"Device capacity per index, in its offload backend's unit (0: each backend's paper figure).",
							"Sizes every slot's shared memory at server start; an "
							"index's reloption offload_capacity may ask for less.",
							&forein_offload_capacity,
							0,
							0, INT_MAX,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	/* its first name, kept for the backends it sized (switch_lpm) */
	DefineCustomIntVariable("forein.lpm_entries",
							"Deprecated: LPM entries per index of backends counted in LPM entries, when forein.offload_capacity is 0.",
							"Use forein.offload_capacity.",
							&forein_lpm_entries,
							FOREIN_DEFAULT_LPM_ENTRIES,
							1, FOREIN_MAX_LPM_ENTRIES,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("forein");
	forein_slots_init();
	forein_worker_register();
}

/*
 * Does the deprecated name "lpm_entries" (forein.lpm_entries, the reloption
 * lpm_entries) size backend id?  The backend says so (the C ABI's
 * forein_offload_backend_capacity_alias): switch_lpm, the backend it named.
 */
bool
forein_sized_by_lpm_entries(int id)
{
	const char *alias = forein_offload_backend_capacity_alias(id);

	return alias != NULL && strcmp(alias, "lpm_entries") == 0;
}

/*
 * The server's device capacity per index of backend id, in its unit:
 * forein.offload_capacity if set, else the deprecated forein.lpm_entries
 * for the backends it sizes, else the backend's paper figure.  *setting
 * (if not NULL) gets the setting it came from, or NULL for the paper's
 * figure (forein.lpm_entries at its default is switch_lpm's).
 */
uint64
forein_server_capacity(int id, const char **setting)
{
	const char *from = NULL;
	uint64		capacity;

	if (forein_offload_capacity > 0)
	{
		from = "forein.offload_capacity";
		capacity = (uint64) forein_offload_capacity;
	}
	else if (forein_sized_by_lpm_entries(id))
	{
		/* at its default it is the paper's figure, not a setting */
		if (forein_lpm_entries != FOREIN_DEFAULT_LPM_ENTRIES)
			from = "forein.lpm_entries";
		capacity = (uint64) forein_lpm_entries;
	}
	else
		capacity = forein_offload_default_capacity(id);
	if (setting != NULL)
		*setting = from;
	return capacity;
}

/*
 * The capacity an index's reloptions ask for with backend id (0: none):
 * offload_capacity, else the deprecated lpm_entries where it applies.
 * *option (if not NULL) gets the reloption's name.
 */
uint64
forein_options_capacity(ForeinOptions *opts, int id, const char **option)
{
	if (opts != NULL && opts->offload_capacity > 0)
	{
		if (option != NULL)
			*option = "offload_capacity";
		return (uint64) opts->offload_capacity;
	}
	if (opts != NULL && opts->lpm_entries > 0 && forein_sized_by_lpm_entries(id))
	{
		if (option != NULL)
			*option = "lpm_entries";
		return (uint64) opts->lpm_entries;
	}
	return 0;
}

/*
 * The device capacity of an index, in its backend's unit: what its
 * reloptions ask for (forein_options_capacity), at most the server's
 * (a reloption above it is refused when set; this covers a setting
 * lowered since), else the server's (forein_server_capacity), which
 * the slots' image room was reserved for.  The one figure forein_stats
 * reports, the manager is created with, and forein_offload_usage reads
 * back from the published table.
 */
uint32
forein_index_budget(Relation index)
{
	int			id = forein_index_backend(index);
	uint64		server = forein_server_capacity(id, NULL);
	uint64		asked = forein_options_capacity((ForeinOptions *) index->rd_options, id, NULL);
	uint64		budget = asked > 0 ? Min(asked, server) : server;

	return (uint32) Min(budget, (uint64) PG_UINT32_MAX);
}

