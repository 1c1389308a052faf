/*-------------------------------------------------------------------------
 *
 * forein_offload.c
 *	  Hints from the modelled offload hardware (any registered backend:
 *	  switch_lpm today) and access statistics: GUCs, shared memory slots,
 *	  the non-blocking hint lookup.
 *
 * Loaded through shared_preload_libraries, the module keeps one slot per
 * offloaded index in shared memory (see forein_offload_int.h) and a
 * background worker (forein_worker.c) that recomputes a slot's image
 * through the offload layer's C ABI (forein_refresh.c) when page splits, deletions or sampled accesses say it
 * is out of date.  A scan start asks forein_offload_hint() for the node to
 * start from; the answer is advice the caller validates on the page, so a
 * stale or torn table can cost time but never a wrong result.
 *
 * Loaded any other way, every entry point here is cheap and says "no hint";
 * statistics then go to backend-local counters.
 *
 * Portions Copyright (c) 2026, forein developers
 *
 * pg_extension/forein_offload.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "common/pg_prng.h"
#include "miscadmin.h"
#include "postmaster/autovacuum.h"
#include "replication/walsender.h"
#include "storage/ipc.h"
#if PG_VERSION_NUM >= 170000
#include "storage/procnumber.h"
#else
#include "storage/backendid.h"
#endif
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "forein.h"
#include "forein_offload.h"
#include "forein_offload_int.h"

PG_MODULE_MAGIC;

/* GUCs */
bool		forein_offload_enabled = true;
int			forein_lpm_entries = FOREIN_DEFAULT_LPM_ENTRIES;
double		forein_sample_rate = 0.01;
int			forein_install_delay_ms = 0;
int			forein_max_indexes = 8;
bool		forein_debug_random_hints = false;

/* Set in the postmaster's shmem startup hook; NULL: not preloaded */
ForeinOffShared *forein_off_shared = NULL;
LWLockPadded *forein_off_locks = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static object_access_hook_type prev_object_access_hook = NULL;

/*
 * Which slot an index has, cached per backend.  An entry is trusted while
 * the shared epoch (bumped whenever a slot changes hands) is unchanged and
 * the slot still names the index.  A failed allocation (every slot busy) is
 * retried only every FOREIN_ALLOC_RETRY calls, so a busy table costs scans
 * nothing.
 */
#define FOREIN_SLOT_CACHE		64
#define FOREIN_ALLOC_RETRY		1024

typedef struct SlotCacheEntry
{
	Oid			relid;
	int			slotno;			/* -1: none */
	uint32		epoch;
	bool		alloc_tried;	/* the -1 came from a failed allocation */
	uint32		misses;
} SlotCacheEntry;

static SlotCacheEntry slot_cache[FOREIN_SLOT_CACHE];

/* Statistics of indexes without a slot, this backend only */
typedef struct LocalCounters
{
	Oid			relid;			/* hash key */
	uint64		lookups;
	uint64		hint_hits;
	uint64		move_rights;
	uint64		fallbacks;
} LocalCounters;

static HTAB *local_counters = NULL;

void		_PG_init(void);

static void check_shmem_size(void);
static void forein_shmem_request(void);
static void forein_shmem_startup(void);
static void forein_object_access(ObjectAccessType access, Oid classId,
								 Oid objectId, int subId, void *arg);

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

	DefineCustomIntVariable("forein.lpm_entries",
							"LPM entries of the modelled switch table, per index.",
							"Sizes every slot's shared memory at server start; an "
							"index's reloption lpm_entries may ask for less.",
							&forein_lpm_entries,
							FOREIN_DEFAULT_LPM_ENTRIES,
							1, FOREIN_MAX_LPM_ENTRIES,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("forein");
	check_shmem_size();

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = forein_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = forein_shmem_startup;
	prev_object_access_hook = object_access_hook;
	object_access_hook = forein_object_access;

	forein_worker_register();
}

/*
 * Is backend id's capacity counted in LPM entries?  Only those backends
 * take their capacity from forein.lpm_entries and the reloption
 * lpm_entries; every other backend gets its paper's figure (its default
 * capacity), in its own unit.
 */
bool
forein_backend_uses_lpm_entries(int id)
{
	const char *unit = forein_offload_backend_unit(id);

	return unit != NULL && strcmp(unit, "LPM entries") == 0;
}

/*
 * The server-wide capacity of backend id in its unit: forein.lpm_entries
 * for LPM tables, the paper's figure for others.
 */
static uint64
backend_server_capacity(int id)
{
	if (forein_backend_uses_lpm_entries(id))
		return (uint64) forein_lpm_entries;
	return forein_offload_default_capacity(id);
}

/*
 * The image room of a table buffer: the largest image any registered
 * backend an index can use publishes at the server's capacity
 * (backend_server_capacity). Backends that give no start hints
 * (switch_visibility) are refused by the offload reloption: no room.
 */
static Size
image_room(void)
{
	Size		room = 0;
	int			id;

	for (id = 0; id < forein_offload_backend_count(); id++)
		if (forein_offload_backend_serves_lookups(id))
			room = Max(room, forein_offload_max_image_bytes(id, backend_server_capacity(id)));
	return MAXALIGN(room);
}

/* Backend row's counters of slot slotno */
static inline ForeinOffCounters *
counters_of(int row, int slotno)
{
	return (ForeinOffCounters *) ((char *) forein_off_shared +
								  forein_off_shared->counters_offset +
								  (Size) row * forein_off_shared->counters_row) + slotno;
}

/*
 * Rows of per-backend counters: MaxBackends, or at preload (before the
 * postmaster computes it) PostgreSQL 15's formula for it, for the size the
 * server logs.
 */
static int
counter_rows(void)
{
	if (MaxBackends > 0)
		return MaxBackends;
	return MaxConnections + autovacuum_max_workers + 1 + max_worker_processes +
		max_wal_senders;
}

/*
 * Shared memory layout, from forein.max_indexes and forein.lpm_entries as
 * the postmaster read them: per slot, its header, the sample ring and two
 * table buffers (one image each).
 */
static Size
forein_shmem_layout(ForeinOffShared *layout)
{
	Size		table_size;
	Size		off;

	layout->image_bytes = image_room();
	table_size = CACHELINEALIGN(add_size(MAXALIGN(offsetof(ForeinOffTable, image)),
										 layout->image_bytes));
	off = CACHELINEALIGN(sizeof(ForeinOffSlot));
	layout->ring_offset = off;
	off = add_size(off, CACHELINEALIGN(FOREIN_SAMPLE_RING * sizeof(uint32)));
	layout->table_offset[0] = off;
	off = add_size(off, table_size);
	layout->table_offset[1] = off;
	off = add_size(off, table_size);
	layout->slot_size = off;
	layout->slot_capacity = (uint32) forein_lpm_entries;
	layout->max_indexes = forein_max_indexes;

	/* per-backend statistics rows after the slots */
	off = add_size(CACHELINEALIGN(offsetof(ForeinOffShared, slots)),
				   mul_size(forein_max_indexes, layout->slot_size));
	layout->max_backends = counter_rows();
	layout->counters_offset = off;
	layout->counters_row = CACHELINEALIGN(mul_size(forein_max_indexes,
												   sizeof(ForeinOffCounters)));
	return add_size(off, mul_size(layout->max_backends, layout->counters_row));
}

/*
 * At preload: says how much shared memory the settings take, and refuses
 * settings no machine could give (more than half of physical memory) with a
 * clear error instead of a failed shared memory allocation.
 */
static void
check_shmem_size(void)
{
	ForeinOffShared layout;
	Size		size = forein_shmem_layout(&layout);
	long		pages = sysconf(_SC_PHYS_PAGES);
	long		pagesize = sysconf(_SC_PAGESIZE);
	double		physical = (pages > 0 && pagesize > 0) ? (double) pages * pagesize : 0;

	if (physical > 0 && (double) size > physical / 2)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("forein offload needs %zu MB of shared memory, more than half of this machine's memory",
						size / (1024 * 1024)),
				 errdetail("forein.max_indexes = %d slots of %zu kB each (two images of up to %zu kB for forein.lpm_entries = %d, a sample ring and a header).",
						   forein_max_indexes, layout.slot_size / 1024,
						   layout.image_bytes / 1024, forein_lpm_entries),
				 errhint("Lower forein.max_indexes or forein.lpm_entries.")));
	ereport(LOG,
			(errmsg("forein offload: %zu kB of shared memory for %d index slots (forein.lpm_entries = %d)",
					size / 1024, forein_max_indexes, forein_lpm_entries)));
}

static void
forein_shmem_request(void)
{
	ForeinOffShared layout;

	if (prev_shmem_request_hook)
		prev_shmem_request_hook();

	RequestAddinShmemSpace(forein_shmem_layout(&layout));
	RequestNamedLWLockTranche("forein_offload", 1 + forein_max_indexes);
}

static void
forein_shmem_startup(void)
{
	ForeinOffShared layout;
	Size		size;
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	size = forein_shmem_layout(&layout);

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	forein_off_shared = ShmemInitStruct("forein_offload", size, &found);
	forein_off_locks = GetNamedLWLockTranche("forein_offload");
	if (!found)
	{
		ForeinOffShared *sh = forein_off_shared;
		int			i;

		/* slots' bytes are touched lazily: big tables cost only what is used */
		sh->max_indexes = layout.max_indexes;
		sh->slot_capacity = layout.slot_capacity;
		sh->image_bytes = layout.image_bytes;
		sh->slot_size = layout.slot_size;
		sh->table_offset[0] = layout.table_offset[0];
		sh->table_offset[1] = layout.table_offset[1];
		sh->ring_offset = layout.ring_offset;
		sh->max_backends = layout.max_backends;
		sh->counters_offset = layout.counters_offset;
		sh->counters_row = layout.counters_row;
		pg_atomic_init_u32(&sh->epoch, 1);
		sh->leader_latch = NULL;
		for (i = 0; i < sh->max_indexes; i++)
		{
			ForeinOffSlot *slot = forein_off_slot(i);

			memset(slot, 0, sizeof(ForeinOffSlot));
			pg_atomic_init_u64(&slot->stats_gen, 0);
			pg_atomic_init_u64(&slot->events, 0);
			pg_atomic_init_u64(&slot->samples, 0);
			pg_atomic_init_u32(&slot->stale, 0);
			pg_atomic_init_u32(&slot->invalid_seq, 0);
			pg_atomic_init_u32(&forein_off_table(slot, 0)->seq, 0);
			pg_atomic_init_u32(&forein_off_table(slot, 1)->seq, 0);
			forein_off_clear_tables(slot);
		}
		/* gen 0 entries count for no owner (a slot's first owner gets 1) */
		for (i = 0; i < sh->max_backends * sh->max_indexes; i++)
		{
			ForeinOffCounters *c = counters_of(i / sh->max_indexes,
											   i % sh->max_indexes);

			pg_atomic_init_u64(&c->gen, 0);
			pg_atomic_init_u64(&c->lookups, 0);
			pg_atomic_init_u64(&c->hint_hits, 0);
			pg_atomic_init_u64(&c->move_rights, 0);
			pg_atomic_init_u64(&c->fallbacks, 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Empties both table buffers of a slot (caller holds the slot lock, or is
 * the postmaster initialising): readers see no table from now on.
 */
void
forein_off_clear_tables(ForeinOffSlot *slot)
{
	int			which;

	for (which = 0; which < 2; which++)
	{
		ForeinOffTable *t = forein_off_table(slot, which);
		uint32		seq = pg_atomic_read_u32(&t->seq);

		pg_atomic_write_u32(&t->seq, seq | 1);
		pg_write_barrier();
		t->dboid = InvalidOid;
		t->relid = InvalidOid;
		t->relfilenode = InvalidOid;
		t->nblocks = 0;
		t->backend_id = -1;
		t->nentries = t->nnodes = 0;
		t->capacity = 0;
		t->image_version = 0;
		t->image_len = 0;
		pg_write_barrier();
		pg_atomic_write_u32(&t->seq, (seq | 1) + 1);
	}
	forein_off_set_invalid(slot, NULL, 0);
}

/*
 * Publishes the merged-away blocks the active image may still name
 * (n > FOREIN_MAX_INVALID: all hints are off until the next image).  Caller
 * holds the slot lock.
 */
void
forein_off_set_invalid(ForeinOffSlot *slot, const BlockNumber *blocks, uint32 n)
{
	uint32		seq = pg_atomic_read_u32(&slot->invalid_seq);

	pg_atomic_write_u32(&slot->invalid_seq, seq | 1);
	pg_write_barrier();
	if (n > FOREIN_MAX_INVALID)
		slot->ninvalid = FOREIN_INVALID_ALL;
	else
	{
		if (n > 0)
			memcpy(slot->invalid, blocks, n * sizeof(BlockNumber));
		slot->ninvalid = n;
	}
	pg_write_barrier();
	pg_atomic_write_u32(&slot->invalid_seq, (seq | 1) + 1);
}

/*
 * Is blkno a merged-away node the active image may still name?  Lock-free;
 * a read racing a publish answers "invalid", which only costs a hint.
 */
bool
forein_off_is_invalid(ForeinOffSlot *slot, BlockNumber blkno)
{
	uint32		seq = pg_atomic_read_u32(&slot->invalid_seq);
	uint32		n;
	uint32		i;
	bool		found = false;

	if (seq & 1)
		return true;
	pg_read_barrier();
	n = *((volatile uint32 *) &slot->ninvalid);
	if (n == 0)
		return false;
	if (n == FOREIN_INVALID_ALL)
		return true;
	n = Min(n, FOREIN_MAX_INVALID);
	for (i = 0; i < n && !found; i++)
		found = ((volatile BlockNumber *) slot->invalid)[i] == blkno;
	pg_read_barrier();
	return found || pg_atomic_read_u32(&slot->invalid_seq) != seq;
}

/* Resets a slot for a new owner; caller holds the allocation and slot locks */
static void
init_slot(ForeinOffSlot *slot, Oid dboid, Oid relid, TimestampTz now)
{
	slot->in_use = true;
	slot->dboid = dboid;
	slot->relid = relid;
	/* every backend's counts of the former owner stop counting */
	pg_atomic_write_u64(&slot->stats_gen, pg_atomic_read_u64(&slot->stats_gen) + 1);
	pg_atomic_write_u64(&slot->events, 0);
	pg_atomic_write_u64(&slot->samples, 0);
	pg_atomic_write_u32(&slot->stale, 0);
	slot->backend = FOREIN_SLOT_NEVER;
	slot->events_at_refresh = 0;
	slot->samples_at_refresh = 0;
	slot->refresh_requested = false;
	slot->failures = 0;
	slot->launch_failures = 0;
	slot->next_refresh = 0;
	slot->last_refresh_us = 0;
	slot->last_active = now;
	slot->lookups_seen = 0;
	forein_off_clear_tables(slot);
}

static int
scan_slots(Oid dboid, Oid relid)
{
	int			i;

	for (i = 0; i < forein_off_shared->max_indexes; i++)
	{
		ForeinOffSlot *slot = forein_off_slot(i);

		if (slot->in_use && slot->relid == relid && slot->dboid == dboid)
			return i;
	}
	return -1;
}

/*
 * Takes a free slot for the index.  A slot is never taken from another
 * index: slots are given back when their index or database is dropped (or
 * its database can no longer be reached), so an index that finds every slot
 * held goes without hints, and forein_stats and forein_refresh say so.
 * Returns the slot or -1, and the epoch that goes with the answer.
 */
static int
allocate_slot(Oid relid, uint32 *epoch)
{
	int			slotno;
	Latch	   *leader = NULL;

	LWLockAcquire(FOREIN_ALLOC_LOCK(), LW_EXCLUSIVE);
	slotno = scan_slots(MyDatabaseId, relid);
	if (slotno < 0)
	{
		int			i;

		for (i = 0; i < forein_off_shared->max_indexes; i++)
		{
			ForeinOffSlot *slot = forein_off_slot(i);

			if (!slot->in_use)
			{
				LWLockAcquire(FOREIN_SLOT_LOCK(i), LW_EXCLUSIVE);
				init_slot(slot, MyDatabaseId, relid, GetCurrentTimestamp());
				LWLockRelease(FOREIN_SLOT_LOCK(i));
				pg_atomic_fetch_add_u32(&forein_off_shared->epoch, 1);
				leader = forein_off_shared->leader_latch;
				slotno = i;
				break;
			}
		}
	}
	*epoch = pg_atomic_read_u32(&forein_off_shared->epoch);
	LWLockRelease(FOREIN_ALLOC_LOCK());

	/* the worker computes the new slot's first table right away */
	if (leader)
		SetLatch(leader);
	return slotno;
}

/*
 * The index's slot, or -1.  With create, takes a slot if it has none (never
 * inside a critical section: that needs a lock).
 */
int
forein_off_find_slot(Relation index, bool create)
{
	Oid			relid = RelationGetRelid(index);
	SlotCacheEntry *ce = &slot_cache[relid % FOREIN_SLOT_CACHE];
	uint32		epoch;
	int			slotno;
	bool		tried = false;

	if (forein_off_shared == NULL)
		return -1;

	epoch = pg_atomic_read_u32(&forein_off_shared->epoch);
	pg_read_barrier();
	if (ce->relid == relid && ce->epoch == epoch)
	{
		if (ce->slotno >= 0)
		{
			ForeinOffSlot *slot = forein_off_slot(ce->slotno);

			if (slot->in_use && slot->relid == relid && slot->dboid == MyDatabaseId)
				return ce->slotno;
		}
		else if (!create)
			return -1;
		else if (ce->alloc_tried && (++ce->misses % FOREIN_ALLOC_RETRY) != 0)
			return -1;
	}

	/*
	 * Temporary indexes get no slot: the worker, another backend, cannot
	 * read their pages.
	 */
	slotno = scan_slots(MyDatabaseId, relid);
	if (slotno < 0 && create && CritSectionCount == 0 && OidIsValid(MyDatabaseId) &&
		index->rd_rel->relpersistence != RELPERSISTENCE_TEMP)
	{
		slotno = allocate_slot(relid, &epoch);
		tried = true;
	}

	if (ce->relid != relid)
		ce->misses = 0;
	ce->relid = relid;
	ce->slotno = slotno;
	ce->epoch = epoch;
	ce->alloc_tried = tried;
	return slotno;
}

/* Drops what this backend remembers of the index's slot (next use rescans) */
void
forein_off_forget_slot(Relation index)
{
	Oid			relid = RelationGetRelid(index);
	SlotCacheEntry *ce = &slot_cache[relid % FOREIN_SLOT_CACHE];

	if (ce->relid == relid)
		ce->relid = InvalidOid;
}

/* Gives a slot up if it still belongs to (dboid, relid) */
void
forein_off_free_slot(int slotno, Oid dboid, Oid relid)
{
	ForeinOffSlot *slot = forein_off_slot(slotno);

	LWLockAcquire(FOREIN_ALLOC_LOCK(), LW_EXCLUSIVE);
	if (slot->in_use && slot->dboid == dboid &&
		(relid == InvalidOid || slot->relid == relid))
	{
		LWLockAcquire(FOREIN_SLOT_LOCK(slotno), LW_EXCLUSIVE);
		slot->in_use = false;
		slot->refresh_requested = false;
		forein_off_clear_tables(slot);
		LWLockRelease(FOREIN_SLOT_LOCK(slotno));
		pg_atomic_fetch_add_u32(&forein_off_shared->epoch, 1);
	}
	LWLockRelease(FOREIN_ALLOC_LOCK());
}

/*
 * DROP INDEX (or of its table) and DROP DATABASE free their slots at once.
 * Should the drop roll back, the index just gets a new slot on next use.
 */
static void
forein_object_access(ObjectAccessType access, Oid classId, Oid objectId,
					 int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);

	if (access != OAT_DROP || forein_off_shared == NULL)
		return;

	if (classId == RelationRelationId && subId == 0)
	{
		int			slotno = scan_slots(MyDatabaseId, objectId);

		if (slotno >= 0)
			forein_off_free_slot(slotno, MyDatabaseId, objectId);
	}
	else if (classId == DatabaseRelationId)
	{
		int			i;

		for (i = 0; i < forein_off_shared->max_indexes; i++)
		{
			ForeinOffSlot *slot = forein_off_slot(i);

			if (slot->in_use && slot->dboid == objectId)
				forein_off_free_slot(i, objectId, InvalidOid);
		}
	}
}

/* Is rel an index of the forein access method? */
bool
forein_is_forein_index(Relation rel)
{
	return rel->rd_rel->relkind == RELKIND_INDEX &&
		rel->rd_indam != NULL &&
		rel->rd_indam->ambuild == forein_build;
}

/*
 * The device capacity of an index, in its backend's unit.  For a backend
 * counted in LPM entries: its reloption lpm_entries, else
 * forein.lpm_entries, at most what a slot holds (a reloption above the
 * server's setting is refused when set; this covers a setting lowered
 * since).  For any other backend (fattree: in-switch nodes) the backend's
 * default capacity, which image_room() reserved room for; lpm_entries does
 * not apply.  The one figure forein_stats reports, the manager is created
 * with, and forein_offload_usage reads back from the published table.
 */
uint32
forein_index_budget(Relation index)
{
	int			id = forein_index_backend(index);
	uint32		budget = (uint32) forein_lpm_entries;

	if (!forein_backend_uses_lpm_entries(id))
		return (uint32) Min(forein_offload_default_capacity(id), (uint64) PG_UINT32_MAX);

	if (index->rd_options != NULL &&
		((ForeinOptions *) index->rd_options)->lpm_entries > 0)
		budget = (uint32) ((ForeinOptions *) index->rd_options)->lpm_entries;
	if (forein_off_shared != NULL)
		budget = Min(budget, forein_off_shared->slot_capacity);
	return budget;
}

/* Flags a slot for the worker, touching the shared line only once */
static inline void
mark_stale(ForeinOffSlot *slot)
{
	if (pg_atomic_read_u32(&slot->stale) == 0)
		pg_atomic_write_u32(&slot->stale, 1);
}

/*
 * Reads the slot's active image without locking.  The buffer's sequence
 * counter is read before and after; if a publish overwrote the buffer in
 * between (two publishes during one lookup), the lookup is retried, and
 * after a few tries given up: no hint is always a safe answer.  The image
 * lookup is bounds-checked (forein_offload.h), so even a torn read stays
 * inside the buffer.
 */
static bool
table_lookup(ForeinOffSlot *slot, Relation index, uint64 word, ForeinHint *hint)
{
	Oid			relid = RelationGetRelid(index);
	Oid			relfilenode = forein_index_relfilenode(index);
	int			attempt;

	for (attempt = 0; attempt < 4; attempt++)
	{
		uint32		which = *((volatile uint32 *) &slot->active) & 1;
		ForeinOffTable *t = forein_off_table(slot, which);
		uint32		seq;
		BlockNumber nblocks;
		forein_offload_hints h;
		BlockNumber primary;
		BlockNumber secondary;
		bool		mine;
		bool		current;

		pg_read_barrier();
		seq = pg_atomic_read_u32(&t->seq);
		if (seq & 1)
			continue;
		pg_read_barrier();

		mine = t->dboid == MyDatabaseId && t->relid == relid;
		current = t->relfilenode == relfilenode;
		nblocks = t->nblocks;
		memset(&h, 0, sizeof(h));
		if (mine && current)
			forein_offload_hint_lookup(t->backend_id, t->image,
									   Min(t->image_len, forein_off_shared->image_bytes),
									   word, &h);

		pg_read_barrier();
		if (pg_atomic_read_u32(&t->seq) != seq)
			continue;

		if (!mine)
			return false;		/* no table for this index yet */
		if (!current)
		{
			/* REINDEX or TRUNCATE since: the table names old blocks */
			mark_stale(slot);
			return false;
		}

		/*
		 * Block 0 (the metapage) is never a node; never past the old EOF;
		 * never a node merged away since the image was computed.
		 */
		primary = h.primary.node;
		secondary = h.secondary.node;
		if (primary == 0 || primary >= nblocks || forein_off_is_invalid(slot, primary))
			primary = InvalidBlockNumber;
		if (secondary == 0 || secondary >= nblocks || secondary == primary ||
			forein_off_is_invalid(slot, secondary))
			secondary = InvalidBlockNumber;
		if (primary == InvalidBlockNumber)
		{
			primary = secondary;
			h.primary.level = h.secondary.level;
			secondary = InvalidBlockNumber;
		}
		if (primary == InvalidBlockNumber)
			return false;

		hint->primary = primary;
		hint->primary_level = h.primary.level;
		hint->secondary = secondary;
		hint->secondary_level = secondary == InvalidBlockNumber ? 0 : h.secondary.level;
		return true;
	}
	return false;
}

/* forein.debug_random_hints: any block of the index, any plausible level */
static bool
random_hint(Relation index, ForeinHint *hint)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	pg_prng_state *rng = &pg_global_prng_state;

	if (nblocks <= 1)
		return false;
	hint->primary = (BlockNumber) pg_prng_uint64_range(rng, 1, nblocks - 1);
	hint->primary_level = (uint16) pg_prng_uint64_range(rng, 0, 3);
	hint->secondary = (BlockNumber) pg_prng_uint64_range(rng, 1, nblocks - 1);
	hint->secondary_level = (uint16) pg_prng_uint64_range(rng, 0, 3);
	return true;
}

/*
 * The start node for a descent to the key whose offload word is `word`.
 * False: no hint (start at the root).  Never blocks and never reads a page.
 */
bool
forein_offload_hint(Relation index, uint64 word, ForeinHint *hint)
{
	int			slotno;
	ForeinOffSlot *slot;

	hint->primary = InvalidBlockNumber;
	hint->primary_level = 0;
	hint->secondary = InvalidBlockNumber;
	hint->secondary_level = 0;

	if (unlikely(forein_debug_random_hints))
		return random_hint(index, hint);
	if (forein_off_shared == NULL || !forein_offload_enabled)
		return false;
	if (!forein_index_offloaded(index))
		return false;

	slotno = forein_off_find_slot(index, true);
	if (slotno < 0)
		return false;
	slot = forein_off_slot(slotno);

	/* offload was switched back on (ALTER INDEX): the worker must compute */
	if (slot->backend == FOREIN_SLOT_NONE)
	{
		mark_stale(slot);
		return false;
	}
	return table_lookup(slot, index, word, hint);
}

static LocalCounters *
local_entry(Oid relid)
{
	bool		found;
	LocalCounters *entry;

	if (local_counters == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(LocalCounters);
		ctl.hcxt = TopMemoryContext;
		local_counters = hash_create("forein local offload counters", 16, &ctl,
									 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	entry = hash_search(local_counters, &relid, HASH_ENTER, &found);
	if (!found)
	{
		entry->lookups = 0;
		entry->hint_hits = 0;
		entry->move_rights = 0;
		entry->fallbacks = 0;
	}
	return entry;
}

/*
 * Statistics of one descent to a leaf, and with probability
 * forein.sample_rate a sample of the leaf for the selection's weights.
 */
/*
 * This backend's counters of slot slotno; NULL for a process without a
 * backend number (it counts locally).
 */
static ForeinOffCounters *
my_counters(int slotno)
{
#if PG_VERSION_NUM >= 170000
	int			row = MyProcNumber;
#else
	int			row = MyBackendId - 1;
#endif

	if (row < 0 || row >= forein_off_shared->max_backends)
		return NULL;
	return counters_of(row, slotno);
}

/* Only this backend writes c: a plain load and store, no locked instruction */
static inline void
add_count(pg_atomic_uint64 *c, uint64 n)
{
	pg_atomic_write_u64(c, pg_atomic_read_u64(c) + n);
}

/*
 * The slot's lookups, hint_hits, move_rights and fallbacks: the sum of
 * every backend's counts for its current owner.
 */
void
forein_off_slot_counts(int slotno, uint64 *counts)
{
	uint64		gen = pg_atomic_read_u64(&forein_off_slot(slotno)->stats_gen);
	int			row;

	counts[0] = counts[1] = counts[2] = counts[3] = 0;
	for (row = 0; row < forein_off_shared->max_backends; row++)
	{
		ForeinOffCounters *c = counters_of(row, slotno);

		if (pg_atomic_read_u64(&c->gen) != gen)
			continue;
		pg_read_barrier();
		counts[0] += pg_atomic_read_u64(&c->lookups);
		counts[1] += pg_atomic_read_u64(&c->hint_hits);
		counts[2] += pg_atomic_read_u64(&c->move_rights);
		counts[3] += pg_atomic_read_u64(&c->fallbacks);
	}
}

void
forein_offload_count(Relation index, ForeinStart start, int move_rights,
					 BlockNumber leaf)
{
	ForeinOffCounters *c = NULL;
	int			slotno = -1;
	bool		hit = (start == FOREIN_START_HINT || start == FOREIN_START_SECONDARY);
	bool		fallback = (start == FOREIN_START_FALLBACK);

	if (forein_off_shared != NULL)
		slotno = forein_off_find_slot(index, true);

	if (slotno >= 0 && (c = my_counters(slotno)) != NULL)
	{
		ForeinOffSlot *slot = forein_off_slot(slotno);
		uint64		gen = pg_atomic_read_u64(&slot->stats_gen);

		if (pg_atomic_read_u64(&c->gen) != gen)
		{
			/* the slot changed hands since this backend last counted */
			pg_atomic_write_u64(&c->lookups, 0);
			pg_atomic_write_u64(&c->hint_hits, 0);
			pg_atomic_write_u64(&c->move_rights, 0);
			pg_atomic_write_u64(&c->fallbacks, 0);
			pg_write_barrier();
			pg_atomic_write_u64(&c->gen, gen);
		}
		add_count(&c->lookups, 1);
		if (hit)
			add_count(&c->hint_hits, 1);
		if (fallback)
			add_count(&c->fallbacks, 1);
		if (move_rights > 0)
			add_count(&c->move_rights, move_rights);

		if (leaf != InvalidBlockNumber && forein_sample_rate > 0 &&
			(forein_sample_rate >= 1.0 ||
			 pg_prng_double(&pg_global_prng_state) < forein_sample_rate))
		{
			uint64		pos = pg_atomic_fetch_add_u64(&slot->samples, 1);

			forein_off_ring(slot)[pos % FOREIN_SAMPLE_RING] = leaf;
		}
	}
	else if (CritSectionCount == 0)
	{
		LocalCounters *lc = local_entry(RelationGetRelid(index));

		lc->lookups++;
		if (hit)
			lc->hint_hits++;
		if (fallback)
			lc->fallbacks++;
		if (move_rights > 0)
			lc->move_rights += move_rights;
	}
}

/*
 * A page of the index split or was deleted: the table is out of date.  Only
 * bumps a counter (callers may be inside a critical section); the worker
 * notices within a second.
 */
void
forein_offload_node_event(Relation index, BlockNumber blkno)
{
	int			slotno;

	if (forein_off_shared == NULL)
		return;
	slotno = forein_off_find_slot(index, false);
	if (slotno >= 0)
		pg_atomic_fetch_add_u64(&forein_off_slot(slotno)->events, 1);
}

/* This backend's counters of an index without a slot (zeros if none) */
void
forein_off_local_counts(Oid relid, uint64 *counts)
{
	LocalCounters *entry = NULL;

	if (local_counters != NULL)
		entry = hash_search(local_counters, &relid, HASH_FIND, NULL);
	counts[0] = entry ? entry->lookups : 0;
	counts[1] = entry ? entry->hint_hits : 0;
	counts[2] = entry ? entry->move_rights : 0;
	counts[3] = entry ? entry->fallbacks : 0;
}

/* Is the active table of this slot the index's current one? */
static bool
table_is_current(ForeinOffTable *t, Relation index)
{
	return t->dboid == MyDatabaseId && t->relid == RelationGetRelid(index) &&
		t->relfilenode == forein_index_relfilenode(index);
}

static void
fill_info(ForeinOffTable *t, ForeinOffTableInfo *info)
{
	info->valid = true;
	info->nblocks = t->nblocks;
	info->backend_id = t->backend_id;
	info->nentries = t->nentries;
	info->nnodes = t->nnodes;
	info->capacity = t->capacity;
	info->generation = t->generation;
	info->image_version = t->image_version;
	info->image_len = Min(t->image_len, forein_off_shared->image_bytes);
}

/* The active table's header, under the slot lock (not for hot paths) */
void
forein_off_table_info(int slotno, Relation index, ForeinOffTableInfo *info)
{
	ForeinOffSlot *slot = forein_off_slot(slotno);
	ForeinOffTable *t;

	memset(info, 0, sizeof(*info));
	LWLockAcquire(FOREIN_SLOT_LOCK(slotno), LW_SHARED);
	t = forein_off_table(slot, slot->active & 1);
	if (table_is_current(t, index))
		fill_info(t, info);
	LWLockRelease(FOREIN_SLOT_LOCK(slotno));
}

/* A palloc'd copy of the active image, under the slot lock; NULL if none */
char *
forein_off_copy_image(int slotno, Relation index, ForeinOffTableInfo *info)
{
	ForeinOffSlot *slot = forein_off_slot(slotno);
	ForeinOffTable *t;
	char	   *copy;

	/* allocated before taking the lock: no ERROR while holding it */
	copy = palloc_extended(Max(forein_off_shared->image_bytes, 1), MCXT_ALLOC_HUGE);
	memset(info, 0, sizeof(*info));
	LWLockAcquire(FOREIN_SLOT_LOCK(slotno), LW_SHARED);
	t = forein_off_table(slot, slot->active & 1);
	if (table_is_current(t, index))
	{
		fill_info(t, info);
		memcpy(copy, t->image, info->image_len);
	}
	LWLockRelease(FOREIN_SLOT_LOCK(slotno));
	if (!info->valid)
	{
		pfree(copy);
		return NULL;
	}
	return copy;
}
