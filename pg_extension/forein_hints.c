/*-------------------------------------------------------------------------
 *
 * forein_hints.c
 *	  The non-blocking hint lookup of a scan start and the hint statistics
 *	  (per-backend counter rows in shared memory, local counters without a
 *	  slot).
 *
 * Portions Copyright (c) 2026, forein developers
 *
 * pg_extension/forein_hints.c
 *
 *-------------------------------------------------------------------------
 */

#include "postgres.h"

#include "common/pg_prng.h"
#include "miscadmin.h"
#if PG_VERSION_NUM >= 170000
#include "storage/procnumber.h"
#else
#include "storage/backendid.h"
#endif
#include "utils/memutils.h"

#include "forein_offload.h"
#include "forein_offload_int.h"

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
	return forein_off_counters(row, slotno);
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
		ForeinOffCounters *c = forein_off_counters(row, slotno);

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

		/*
		 * A descent the image started that ended in a leaf allocated after
		 * the image was computed: the image cannot name that leaf, and its
		 * hint (an ancestor that still holds the key) was a level short.
		 * Flag the image, as for an outdated hint (forein_offload_hint_stale).
		 */
		if (start != FOREIN_START_ROOT && leaf != InvalidBlockNumber &&
			!forein_debug_random_hints &&
			leaf >= forein_off_table(slot, *((volatile uint32 *) &slot->active) & 1)->nblocks)
			mark_stale(slot);

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

/*
 * A hint named a node that no longer holds its key (forein_search.c's
 * try_hint): the tree changed since the image was computed.  On a primary
 * the change's own events say so too; on a hot standby, where splits and
 * deletions arrive by WAL replay, this is what makes the slot dirty, and
 * it works whatever records replay them.  Only a flag: the first reader
 * that meets the change writes the shared line, the others just read it.
 * Random debug hints are not the image's and say nothing about it.
 */
void
forein_offload_hint_stale(Relation index)
{
	int			slotno;

	if (forein_off_shared == NULL || forein_debug_random_hints)
		return;
	slotno = forein_off_find_slot(index, false);
	if (slotno >= 0)
		mark_stale(forein_off_slot(slotno));
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

