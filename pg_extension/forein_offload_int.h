/*-------------------------------------------------------------------------
 *
 * forein_offload_int.h
 *	  Shared memory layout and internal interfaces of forein's offload side
 *	  (forein_module.c, forein_slots.c, forein_hints.c, forein_refresh.c,
 *	  forein_worker.c, forein_sqlfuncs.c).
 *
 * With shared_preload_libraries = 'forein' the postmaster sets aside
 * forein.max_indexes slots.  A slot belongs to one index, keyed by
 * (database, index OID), and holds:
 *
 *	 - a statistics generation: each backend counts its lookups in its own
 *	   row of ForeinOffCounters, one entry per slot;
 *	 - a node-event counter (page splits and deletions) and a ring of
 *	   sampled leaf blocks, which tell the background worker the table is
 *	   out of date and give the selection its weights;
 *	 - two table buffers.  A publish writes the buffer readers are not
 *	   using, under a per-buffer sequence counter (odd while written), then
 *	   flips `active`.  Readers never lock: they read the active buffer and
 *	   retry (or give up: no hint) if its counter moved.  A table records the
 *	   index's identity, relfilenode and size when it was computed, so a
 *	   table from before a REINDEX or TRUNCATE, or a block past that size,
 *	   is never handed out.
 *
 * Each table buffer holds one image of the index's offload backend: the
 * device's tables as the offload layer publishes them (offload/capi/
 * forein_offload.h), looked up with forein_offload_hint_lookup, which is
 * safe on torn bytes.  Buffers are sized from the largest image any
 * registered backend publishes at the server's capacity settings.
 *
 * Besides the tables, a slot keeps a short list of merged-away blocks that
 * the current image may still name (FOREIN's invalid-node tracking): a
 * refresh publishes it at once and the next image clears it, so while the
 * modelled control plane delays an install no hint leads to a dead page.
 *
 * Portions Copyright (c) 2026, forein developers
 *
 * pg_extension/forein_offload_int.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef FOREIN_OFFLOAD_INT_H
#define FOREIN_OFFLOAD_INT_H

#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "forein.h"

/* forein.lpm_entries (deprecated): the paper's switch, 73,000 LPM entries */
#define FOREIN_DEFAULT_LPM_ENTRIES	73000
#define FOREIN_MAX_LPM_ENTRIES		(1 << 22)

/* Sampled leaf blocks kept per slot (a power of two) */
#define FOREIN_SAMPLE_RING			8192

/* New samples since the last refresh that make a slot dirty */
#define FOREIN_RESAMPLE_THRESHOLD	FOREIN_SAMPLE_RING

/* Merged-away blocks a slot can list; more suspend hints until the next image */
#define FOREIN_MAX_INVALID			64
#define FOREIN_INVALID_ALL			PG_UINT32_MAX

/* What a slot's last refresh published */
typedef enum ForeinSlotBackend
{
	FOREIN_SLOT_NEVER = 0,		/* nothing published yet */
	FOREIN_SLOT_IMAGE,			/* an image of a hint-giving backend */
	FOREIN_SLOT_NONE			/* backend 'none', or no order-preserving words */
} ForeinSlotBackend;

typedef struct ForeinOffTable
{
	pg_atomic_uint32 seq;		/* odd while a publish writes this buffer */
	Oid			dboid;			/* whose table this is */
	Oid			relid;
	Oid			relfilenode;
	BlockNumber nblocks;		/* index size when computed: hints stay below */
	int32		backend_id;		/* forein_offload.h id of the image's backend */
	uint32		nentries;		/* records in the image, in the backend's unit */
	uint32		nnodes;			/* distinct nodes with a record */
	uint32		capacity;		/* the device capacity it was computed for */
	uint64		generation;		/* publishes into this slot so far */
	uint64		image_version;
	Size		image_len;
	char		image[FLEXIBLE_ARRAY_MEMBER];	/* MAXALIGNed */
} ForeinOffTable;

typedef struct ForeinOffSlot
{
	/*
	 * Read by every lookup, written only when the slot changes hands or a
	 * refresh publishes: kept apart from the lines written below, so scans
	 * on other CPUs do not take these lines away from each other.
	 */

	/* identity; changed under the allocation lock and the slot lock */
	bool		in_use;
	Oid			dboid;
	Oid			relid;
	pg_atomic_uint64 stats_gen; /* bumped per new owner: ForeinOffCounters */

	/* merged-away blocks the active image may name (seqlock, like tables) */
	pg_atomic_uint32 invalid_seq;
	uint32		ninvalid;		/* FOREIN_INVALID_ALL: no hints for now */
	BlockNumber invalid[FOREIN_MAX_INVALID];

	uint32		active;			/* buffer readers use: 0 or 1 (slot lock) */
	ForeinSlotBackend backend;	/* what the last refresh published (slot lock) */

	char		read_mostly_end[PG_CACHE_LINE_SIZE];

	/* what makes the slot dirty, bumped without locks */
	pg_atomic_uint64 events;	/* splits and deletions */
	pg_atomic_uint64 samples;	/* samples taken; ring head */
	pg_atomic_uint32 stale;		/* a reader saw the table disagree with the
								 * index (new relfilenode, reloption) or
								 * its tree (a hint outgrown by splits);
								 * taken by the refresh that starts next */

	/* refresh bookkeeping, under the slot lock */
	uint64		events_at_refresh;
	uint64		samples_at_refresh;
	bool		refresh_requested;	/* by the leader, for a database worker */
	int			failures;		/* consecutive failed refreshes */
	int			launch_failures;	/* workers that never got to it */
	TimestampTz next_refresh;	/* not before this (rate limit, backoff) */
	int64		last_refresh_us;	/* how long the last one took */

	/* activity, kept by the leader */
	TimestampTz last_active;
	uint64		lookups_seen;
} ForeinOffSlot;

/*
 * One backend's statistics of one slot.  Only that backend writes its
 * entries, with plain stores (no atomic read-modify-write, no cache line
 * another writer touches), so a hinted lookup costs no cross-CPU traffic;
 * readers (forein_stats, the worker) sum every backend's entry whose gen is
 * the slot's stats_gen.  A new backend that gets an exited one's number
 * goes on counting in its row: the counts stay the index's.
 */
typedef struct ForeinOffCounters
{
	pg_atomic_uint64 gen;		/* the slot's stats_gen these count for */
	pg_atomic_uint64 lookups;
	pg_atomic_uint64 hint_hits;
	pg_atomic_uint64 move_rights;
	pg_atomic_uint64 fallbacks;
} ForeinOffCounters;

typedef struct ForeinOffShared
{
	int			max_indexes;
	Size		image_bytes;	/* image room per table buffer */
	Size		slot_size;		/* bytes per slot, cache-line aligned */
	Size		table_offset[2];	/* of each table buffer within a slot */
	Size		ring_offset;
	int			max_backends;	/* rows of counters (MaxBackends) */
	Size		counters_offset;	/* of the counters, from this struct */
	Size		counters_row;	/* bytes per backend row, cache-line aligned */
	pg_atomic_uint32 epoch;		/* bumped when a slot changes hands */
	Latch	   *leader_latch;	/* the background worker's, or NULL */
	char		slots[FLEXIBLE_ARRAY_MEMBER];
} ForeinOffShared;

/* GUCs */
extern bool forein_offload_enabled;
extern int	forein_offload_capacity;
extern int	forein_lpm_entries;		/* deprecated: forein.offload_capacity */
extern double forein_sample_rate;
extern int	forein_install_delay_ms;
extern int	forein_max_indexes;
extern bool forein_debug_random_hints;

/* forein_module.c: capacities */
extern bool forein_sized_by_lpm_entries(int id);
extern uint64 forein_server_capacity(int id, const char **setting);
extern uint64 forein_options_capacity(ForeinOptions *opts, int id, const char **option);
extern uint32 forein_index_budget(Relation index);

/* forein_slots.c */
extern void forein_slots_init(void);
extern ForeinOffShared *forein_off_shared;
extern LWLockPadded *forein_off_locks;	/* [0]: allocation; [1 + i]: slot i */

#define FOREIN_ALLOC_LOCK()		(&forein_off_locks[0].lock)
#define FOREIN_SLOT_LOCK(i)		(&forein_off_locks[1 + (i)].lock)

static inline ForeinOffSlot *
forein_off_slot(int i)
{
	return (ForeinOffSlot *) (forein_off_shared->slots +
							  (Size) i * forein_off_shared->slot_size);
}

static inline ForeinOffTable *
forein_off_table(ForeinOffSlot *slot, int which)
{
	return (ForeinOffTable *) ((char *) slot +
							   forein_off_shared->table_offset[which]);
}

/* Backend row's counters of slot slotno */
static inline ForeinOffCounters *
forein_off_counters(int row, int slotno)
{
	return (ForeinOffCounters *) ((char *) forein_off_shared +
								  forein_off_shared->counters_offset +
								  (Size) row * forein_off_shared->counters_row) + slotno;
}

static inline uint32 *
forein_off_ring(ForeinOffSlot *slot)
{
	return (uint32 *) ((char *) slot + forein_off_shared->ring_offset);
}

static inline Oid
forein_index_relfilenode(Relation index)
{
#if PG_VERSION_NUM >= 160000
	return index->rd_locator.relNumber;
#else
	return index->rd_node.relNode;
#endif
}

extern int	forein_off_find_slot(Relation index, bool create);
extern void forein_off_forget_slot(Relation index);
extern void forein_off_free_slot(int slotno, Oid dboid, Oid relid);
extern void forein_off_clear_tables(ForeinOffSlot *slot);
extern bool forein_off_is_invalid(ForeinOffSlot *slot, BlockNumber blkno);
extern void forein_off_set_invalid(ForeinOffSlot *slot, const BlockNumber *blocks,
								   uint32 n);
extern bool forein_is_forein_index(Relation rel);

/* A consistent copy of a slot's active table header */
typedef struct ForeinOffTableInfo
{
	bool		valid;			/* a table of this index is published */
	BlockNumber nblocks;
	int32		backend_id;
	uint32		nentries;
	uint32		nnodes;
	uint32		capacity;
	uint64		generation;
	uint64		image_version;
	Size		image_len;
} ForeinOffTableInfo;

extern void forein_off_table_info(int slotno, Relation index,
								  ForeinOffTableInfo *info);

/* A palloc'd copy of the active image (NULL if none of this index) */
extern char *forein_off_copy_image(int slotno, Relation index,
								   ForeinOffTableInfo *info);

/* forein_hints.c: hint statistics summed over backends, and local ones */
extern void forein_off_slot_counts(int slotno, uint64 *counts);
extern void forein_off_local_counts(Oid relid, uint64 *counts);

/* forein_hints.c: a hint found the tree changed since its image */
extern void forein_offload_hint_stale(Relation index);

/*
 * forein_slots.c: WAL replay changed the tree of the index stored in this
 * relfilenode (a split, a new root, a deleted page).  For redo routines:
 * no catalog access, no lock, no allocation.
 */
#if PG_VERSION_NUM >= 160000
extern void forein_slots_note_replayed_change(RelFileLocator locator);
#else
extern void forein_slots_note_replayed_change(RelFileNode node);
#endif

/* forein_refresh.c */
extern int64 forein_refresh_index(Relation index, int slotno, bool delay);
typedef struct ForeinRefreshJob ForeinRefreshJob;
extern ForeinRefreshJob *forein_refresh_compute(Relation index, int slotno,
												bool invalidate);
extern MemoryContext forein_refresh_job_context(ForeinRefreshJob *job);
extern int64 forein_refresh_publish(Relation index, int slotno, ForeinRefreshJob *job);
extern void forein_install_delay(bool take_reloads);
extern void forein_refresh_failed(int slotno);

/* forein_worker.c */
extern void forein_worker_register(void);
extern PGDLLEXPORT void forein_leader_main(Datum main_arg);
extern PGDLLEXPORT void forein_refresh_worker_main(Datum main_arg);

#endif							/* FOREIN_OFFLOAD_INT_H */
