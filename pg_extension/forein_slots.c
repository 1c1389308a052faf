/*-------------------------------------------------------------------------
 *
 * forein_slots.c
 *	  forein's shared memory: the slot layout sized from the capacity
 *	  settings, slot allocation per index, the published tables and the
 *	  merged-away block lists (layout: forein_offload_int.h).
 *
 * Portions Copyright (c) 2026, forein developers
 *
 * pg_extension/forein_slots.c
 *
 *-------------------------------------------------------------------------
 */

#include "postgres.h"

#include <unistd.h>

#include "catalog/objectaccess.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "postmaster/autovacuum.h"
#include "replication/walsender.h"
#include "storage/ipc.h"
#include "storage/shmem.h"

#include "forein_offload.h"
#include "forein_offload_int.h"

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


static void check_shmem_size(void);
static void forein_shmem_request(void);
static void forein_shmem_startup(void);
static void forein_object_access(ObjectAccessType access, Oid classId,
								 Oid objectId, int subId, void *arg);

/*
 * The image room of a table buffer: the largest image any registered
 * backend an index can use publishes at the server's capacity
 * (forein_server_capacity). Backends that give no start hints
 * (switch_visibility) are refused by the offload reloption: no room.
 */
static Size
image_room(void)
{
	Size		room = 0;
	int			id;

	for (id = 0; id < forein_offload_backend_count(); id++)
		if (forein_offload_backend_serves_lookups(id))
			room = Max(room, forein_offload_max_image_bytes(id, forein_server_capacity(id, NULL)));
	return MAXALIGN(room);
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
 * Shared memory layout, from forein.max_indexes and the capacity settings as
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
				 errdetail("forein.max_indexes = %d slots of %zu kB each (two images of up to %zu kB at forein.offload_capacity = %d, forein.lpm_entries = %d, a sample ring and a header).",
						   forein_max_indexes, layout.slot_size / 1024,
						   layout.image_bytes / 1024, forein_offload_capacity,
						   forein_lpm_entries),
				 errhint("Lower forein.max_indexes or forein.offload_capacity.")));
	ereport(LOG,
			(errmsg("forein offload: %zu kB of shared memory for %d index slots (forein.offload_capacity = %d, forein.lpm_entries = %d)",
					size / 1024, forein_max_indexes, forein_offload_capacity,
					forein_lpm_entries)));
}

/*
 * At preload: checks the size the settings ask for and installs the
 * shared memory and object access hooks.
 */
void
forein_slots_init(void)
{
	check_shmem_size();

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = forein_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = forein_shmem_startup;
	prev_object_access_hook = object_access_hook;
	object_access_hook = forein_object_access;
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
			ForeinOffCounters *c = forein_off_counters(i / sh->max_indexes,
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

/*
 * WAL replay changed the tree stored in `node`: counts a node event for the
 * slot whose published table names that storage, as a split on the primary
 * does (forein_offload_node_event), so that a hot standby's worker refreshes
 * the image.  Redo knows only the relfilenode, so the slots are matched by
 * their tables' (database, relfilenode), read without locks: a read racing a
 * publish may miss (the next stale hint a reader meets still flags the slot,
 * forein_offload_hint_stale) or match a slot that just changed hands (one
 * refresh too many).  Takes no lock and allocates nothing, so the startup
 * process may call it from any redo routine.
 */
void
#if PG_VERSION_NUM >= 160000
forein_slots_note_replayed_change(RelFileLocator node)
#else
forein_slots_note_replayed_change(RelFileNode node)
#endif
{
#if PG_VERSION_NUM >= 160000
	Oid			dboid = node.dbOid;
	Oid			relfilenode = node.relNumber;
#else
	Oid			dboid = node.dbNode;
	Oid			relfilenode = node.relNode;
#endif
	int			i;

	if (forein_off_shared == NULL)
		return;
	for (i = 0; i < forein_off_shared->max_indexes; i++)
	{
		ForeinOffSlot *slot = forein_off_slot(i);
		int			which;

		if (!*((volatile bool *) &slot->in_use))
			continue;
		for (which = 0; which < 2; which++)
		{
			volatile ForeinOffTable *t = forein_off_table(slot, which);

			if (t->relfilenode == relfilenode && t->dboid == dboid)
			{
				pg_atomic_fetch_add_u64(&slot->events, 1);
				break;
			}
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

