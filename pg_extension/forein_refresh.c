/*-------------------------------------------------------------------------
 *
 * forein_refresh.c
 *	  Recomputes an index's offload table: reads every page, builds the node
 *	  table, runs FOREIN's layered selection (C++, through
 *	  forein_offload_abi.h), flattens it and publishes it into the index's
 *	  shared memory slot.
 *
 * The pages are read one at a time with share locks, like a concurrent
 * reader, so the tree may change underneath: a node can be missing, seen
 * twice at different moments, or lack a downlink.  None of that matters for
 * correctness (hints are validated), so the node table is made well formed
 * rather than exact: a node whose parent was not seen takes its left
 * sibling's parent (the case of an incomplete split, whose right half has no
 * downlink yet) or else hangs under the root.  Every parent is one level
 * up, so the table is always a tree.
 *
 * Runs in a backend (forein_refresh()) or in a refresh worker connected to
 * the index's database (forein_worker.c).
 *
 * Portions Copyright (c) 2026, forein developers
 *
 * pg_extension/forein_refresh.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/latch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "forein.h"
#include "forein_offload_abi.h"
#include "forein_offload_int.h"

/* Refresh no more often than this, or 4x the last refresh's duration */
#define FOREIN_MIN_REFRESH_MS	1000
#define FOREIN_MAX_BACKOFF_MS	60000

/* One page of the index as the refresh saw it */
typedef struct RefreshNode
{
	BlockNumber blkno;
	BlockNumber left;
	uint64		lo;
	uint64		hi;
	uint32		version;
	uint16		level;
	uint16		flags;
	bool		hi_inf;
	int32		parent;			/* index into the node array; -1: root */
} RefreshNode;

/* Growable arrays, huge-allocation aware (a large index has many words) */
typedef struct RefreshData
{
	RefreshNode *nodes;
	Size		nnodes;
	Size		nodes_alloc;
	uint64	   *words;
	Size		nwords;
	Size		words_alloc;
} RefreshData;

static void
add_word(RefreshData *d, uint64 w)
{
	if (d->nwords == d->words_alloc)
	{
		d->words_alloc *= 2;
		d->words = repalloc_huge(d->words, d->words_alloc * sizeof(uint64));
	}
	d->words[d->nwords++] = w;
}

static RefreshNode *
add_node(RefreshData *d)
{
	if (d->nnodes == d->nodes_alloc)
	{
		d->nodes_alloc *= 2;
		d->nodes = repalloc_huge(d->nodes, d->nodes_alloc * sizeof(RefreshNode));
	}
	return &d->nodes[d->nnodes++];
}

/*
 * Reads every page: live nodes with their word intervals, the child ->
 * parent block of every downlink, and the words of every leaf key.
 */
static void
read_pages(Relation index, ForeinState *state, BlockNumber nblocks,
		   RefreshData *d, BlockNumber *parent_of)
{
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	MemoryContext pagecxt;
	BlockNumber blkno;

	/* key words may palloc (detoasting); freed page by page */
	pagecxt = AllocSetContextCreate(CurrentMemoryContext, "forein refresh page",
									ALLOCSET_SMALL_SIZES);

	for (blkno = FOREIN_METAPAGE_BLKNO + 1; blkno < nblocks; blkno++)
	{
		Buffer		buf;
		Page		page;
		ForeinPageOpaque opaque;
		OffsetNumber off;
		OffsetNumber maxoff;
		RefreshNode *node;
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();

		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		opaque = ForeinPageGetOpaque(page);

		/* not ours to judge here (forein_check does): just skip odd pages */
		if (PageIsNew(page) ||
			PageGetSpecialSize(page) != MAXALIGN(sizeof(ForeinPageOpaqueData)) ||
			opaque->page_id != FOREIN_PAGE_ID ||
			(opaque->flags & (FOREIN_META | FOREIN_DELETED)) != 0 ||
			PageGetMaxOffsetNumber(page) < FOREIN_LOKEY)
		{
			UnlockReleaseBuffer(buf);
			continue;
		}

		old = MemoryContextSwitchTo(pagecxt);
		node = add_node(d);
		node->blkno = blkno;
		node->left = opaque->left;
		node->version = opaque->version;
		node->level = opaque->level;
		node->flags = opaque->flags;
		node->parent = -1;
		forein_page_interval(state, page, &node->lo, &node->hi, &node->hi_inf);

		maxoff = PageGetMaxOffsetNumber(page);
		for (off = FOREIN_FIRST_ITEM; off <= maxoff; off++)
		{
			ItemId		iid = PageGetItemId(page, off);
			IndexTuple	itup;

			if (!ItemIdHasStorage(iid))
				continue;
			itup = (IndexTuple) PageGetItem(page, iid);
			if (opaque->level > 0)
			{
				BlockNumber child = FOREIN_DOWNLINK(itup);

				/* a child added after nblocks was read is not in the table */
				if (child < nblocks)
					parent_of[child] = blkno;
			}
			else
				add_word(d, forein_tuple_word(state, itup));
		}
		MemoryContextSwitchTo(old);
		MemoryContextReset(pagecxt);
		UnlockReleaseBuffer(buf);
	}

	MemoryContextDelete(pagecxt);
	FreeAccessStrategy(strategy);
}

/*
 * Parent links.  Returns the index of the root, which is nnodes (a virtual
 * root, appended by the caller) when the top level holds several nodes (a
 * root split seen half done).
 */
static int32
link_parents(RefreshData *d, BlockNumber nblocks, const BlockNumber *parent_of,
			 int32 *node_of)
{
	uint16		top = 0;
	Size		ntop = 0;
	int32		root = -1;
	Size		i;

	for (i = 0; i < d->nnodes; i++)
	{
		node_of[d->nodes[i].blkno] = (int32) i;
		top = Max(top, d->nodes[i].level);
	}
	for (i = 0; i < d->nnodes; i++)
	{
		if (d->nodes[i].level == top)
		{
			ntop++;
			root = (int32) i;
		}
	}
	if (ntop != 1)
		root = (int32) d->nnodes;

	/* downlinks, accepted only from a node exactly one level up */
	for (i = 0; i < d->nnodes; i++)
	{
		RefreshNode *n = &d->nodes[i];
		BlockNumber p = parent_of[n->blkno];

		n->parent = -2;			/* unresolved */
		if (n->level == top)
			n->parent = (i == (Size) root) ? -1 : root;
		else if (p != InvalidBlockNumber && node_of[p] >= 0 &&
				 d->nodes[node_of[p]].level == n->level + 1)
			n->parent = node_of[p];
	}

	/*
	 * No downlink seen: walk left along the level to the nearest node that
	 * has a parent.  That is exactly right for the right half of an
	 * incomplete split (FOREIN_INCOMPLETE_SPLIT on its left sibling), and a
	 * harmless approximation for pages that changed while being read.
	 */
	for (i = 0; i < d->nnodes; i++)
	{
		RefreshNode *n = &d->nodes[i];
		BlockNumber l = n->left;
		Size		steps = 0;

		if (n->parent != -2)
			continue;
		n->parent = root;
		while (l != InvalidBlockNumber && l < nblocks && node_of[l] >= 0 &&
			   steps++ < d->nnodes)
		{
			RefreshNode *ln = &d->nodes[node_of[l]];

			if (ln->level != n->level)
				break;
			if (ln->parent >= 0)
			{
				n->parent = ln->parent;
				break;
			}
			l = ln->left;
		}
	}
	return root;
}

/* Waits forein.install_delay_ms (the modelled control plane), interruptibly */
static void
install_delay(int delay_ms)
{
	TimestampTz end = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), delay_ms);

	for (;;)
	{
		long		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), end);

		if (left <= 0)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 left, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/* What a refresh publishes */
typedef struct RefreshResult
{
	ForeinSlotBackend backend;
	ForeinOffRecord *recs;		/* entries, then main, then bottom segments */
	uint32		nentries;
	uint32		nmain;
	uint32		nbottom;
	uint32		nnodes;
	uint32		capacity;
	uint16		bottom_level;
	BlockNumber nblocks;
} RefreshResult;

/*
 * Writes the result into the buffer readers are not using and flips the
 * slot to it.  Returns false if the slot was given to another index
 * meanwhile (then nothing is written).
 */
static bool
publish(int slotno, Relation index, const RefreshResult *r, uint64 events,
		uint64 samples, TimestampTz started)
{
	ForeinOffSlot *slot = forein_off_slot(slotno);
	ForeinOffTable *t;
	ForeinOffTable *cur;
	uint32		next;
	uint32		seq;
	uint32		nrecs = r->nentries + r->nmain + r->nbottom;
	TimestampTz now;
	int64		took_us;
	int64		wait_ms;

	LWLockAcquire(FOREIN_SLOT_LOCK(slotno), LW_EXCLUSIVE);
	if (!slot->in_use || slot->dboid != MyDatabaseId ||
		slot->relid != RelationGetRelid(index))
	{
		LWLockRelease(FOREIN_SLOT_LOCK(slotno));
		return false;
	}

	cur = forein_off_table(slot, slot->active & 1);
	next = (slot->active & 1) ^ 1;
	t = forein_off_table(slot, next);

	seq = pg_atomic_read_u32(&t->seq);
	pg_atomic_write_u32(&t->seq, seq | 1);
	pg_write_barrier();
	t->dboid = MyDatabaseId;
	t->relid = RelationGetRelid(index);
	t->relfilenode = forein_index_relfilenode(index);
	t->nblocks = r->nblocks;
	t->nentries = r->nentries;
	t->nmain = r->nmain;
	t->nbottom = r->nbottom;
	t->nnodes = r->nnodes;
	t->capacity = r->capacity;
	t->bottom_level = r->bottom_level;
	t->generation = cur->generation + 1;
	if (nrecs > 0)
		memcpy(t->recs, r->recs, sizeof(ForeinOffRecord) * nrecs);
	pg_write_barrier();
	pg_atomic_write_u32(&t->seq, (seq | 1) + 1);
	pg_write_barrier();
	slot->active = next;

	now = GetCurrentTimestamp();
	took_us = now - started;
	/*
	 * A refresh re-reads the whole index: keep the worker's share of a CPU
	 * near 5 % however busy the index is, so it never competes seriously
	 * with the queries it is meant to speed up.
	 */
	wait_ms = Max(FOREIN_MIN_REFRESH_MS, 20 * took_us / 1000);
	slot->backend = r->backend;
	slot->events_at_refresh = events;
	slot->samples_at_refresh = samples;
	pg_atomic_write_u32(&slot->stale, 0);
	slot->failures = 0;
	slot->last_refresh_us = took_us;
	slot->next_refresh = TimestampTzPlusMilliseconds(now,
													 Min(wait_ms, FOREIN_MAX_BACKOFF_MS));
	LWLockRelease(FOREIN_SLOT_LOCK(slotno));
	return true;
}

/* A refresh of the slot failed: back off exponentially, up to a minute */
void
forein_refresh_failed(int slotno)
{
	ForeinOffSlot *slot = forein_off_slot(slotno);
	int64		wait_ms;

	LWLockAcquire(FOREIN_SLOT_LOCK(slotno), LW_EXCLUSIVE);
	slot->failures = Min(slot->failures + 1, 16);
	wait_ms = Min((int64) FOREIN_MIN_REFRESH_MS << slot->failures,
				  FOREIN_MAX_BACKOFF_MS);
	slot->next_refresh = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms);
	LWLockRelease(FOREIN_SLOT_LOCK(slotno));
}

static void
copy_segments(ForeinOffRecord *dst, const ForeinAbiSegment *src, size_t n)
{
	size_t		i;

	for (i = 0; i < n; i++)
	{
		dst[i].key = src[i].start;
		dst[i].block = src[i].block;
		dst[i].level = src[i].level;
		dst[i].len = 0;
		dst[i].layer = 0;
	}
}

/*
 * Runs the selection and flattening in C++ and copies the outcome into a
 * palloc'd RefreshResult.  The C++ result is freed even if palloc ERRORs.
 */
static void
compute_table(Relation index, RefreshData *d, const double *weight,
			  uint32 budget, bool sampled, RefreshResult *r)
{
	ForeinAbiNode *abinodes;
	ForeinAbiOptions options;
	ForeinAbiResult *volatile result;
	char		errbuf[512];
	Size		i;

	abinodes = palloc_extended(d->nnodes * sizeof(ForeinAbiNode), MCXT_ALLOC_HUGE);
	for (i = 0; i < d->nnodes; i++)
	{
		RefreshNode *n = &d->nodes[i];

		abinodes[i].lo = n->lo;
		abinodes[i].hi = n->hi;
		abinodes[i].hi_inf = n->hi_inf ? 1 : 0;
		abinodes[i].version = n->version;
		abinodes[i].weight = weight[i];
		abinodes[i].block = n->blkno;
		abinodes[i].parent = n->parent;
		abinodes[i].level = n->level;
		abinodes[i].pad = 0;
	}

	options.budget = budget;
	options.bottom_line_level = 1;
	/* without samples every leaf weighs the same: nothing is hot */
	options.hot_leaves = sampled ? FOREIN_HOT_LEAVES : 0;

	errbuf[0] = '\0';
	result = NULL;
	PG_TRY();
	{
		ForeinAbiSummary s;
		uint32		nrecs;

		result = forein_abi_build(abinodes, d->nnodes, d->words, d->nwords,
								  &options, errbuf, sizeof(errbuf));
		if (result == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not compute the offload table of index \"%s\": %s",
							RelationGetRelationName(index), errbuf)));
		forein_abi_summary(result, &s);
		if (s.entries + s.main_segments + s.bottom_segments >
			forein_off_shared->table_records)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("offload table of index \"%s\" does not fit its slot (%zu entries, %zu + %zu segments)",
							RelationGetRelationName(index), s.entries,
							s.main_segments, s.bottom_segments)));
		nrecs = (uint32) (s.entries + s.main_segments + s.bottom_segments);
		r->recs = palloc(sizeof(ForeinOffRecord) * Max(nrecs, 1));
		for (i = 0; i < s.entries; i++)
		{
			const ForeinAbiEntry *e = &forein_abi_entries(result)[i];

			r->recs[i].key = e->value;
			r->recs[i].block = e->block;
			r->recs[i].level = e->level;
			r->recs[i].len = e->len;
			r->recs[i].layer = e->layer;
		}
		copy_segments(r->recs + s.entries, forein_abi_main_segments(result),
					  s.main_segments);
		copy_segments(r->recs + s.entries + s.main_segments,
					  forein_abi_bottom_segments(result), s.bottom_segments);
		r->nentries = (uint32) s.entries;
		r->nmain = (uint32) s.main_segments;
		r->nbottom = (uint32) s.bottom_segments;
		r->nnodes = (uint32) s.nodes;
		r->bottom_level = s.bottom_line_level;
		elog(DEBUG1, "forein: index \"%s\": %zu entries (bottom line level %u: %zu, main %zu, hot leaves %zu) on %zu nodes, modelled AMA %.1f",
			 RelationGetRelationName(index), s.entries, s.bottom_line_level,
			 s.bottom_line_entries, s.main_entries, s.hot_leaf_entries,
			 s.nodes, s.modelled_ama);
	}
	PG_FINALLY();
	{
		if (result != NULL)
			forein_abi_free(result);
	}
	PG_END_TRY();
	pfree(abinodes);
}

/*
 * Recomputes the index's offload table and publishes it into its slot.
 * With `delay`, waits forein.install_delay_ms between computing and
 * installing, as the switch's control plane would.  Returns the number of
 * installed entries.  The caller holds a lock on the index.
 */
int64
forein_refresh_index(Relation index, int slotno, bool delay)
{
	ForeinOffSlot *slot = forein_off_slot(slotno);
	TimestampTz started = GetCurrentTimestamp();
	MemoryContext cxt;
	MemoryContext old;
	uint64		events;
	uint64		samples;
	ForeinState *state;
	RefreshResult r;
	int64		installed;

	/* read first: changes during the refresh leave the slot dirty */
	events = pg_atomic_read_u64(&slot->events);
	samples = pg_atomic_read_u64(&slot->samples);
	pg_memory_barrier();

	cxt = AllocSetContextCreate(CurrentMemoryContext, "forein refresh",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);

	memset(&r, 0, sizeof(r));
	r.capacity = forein_index_budget(index);
	r.nblocks = RelationGetNumberOfBlocks(index);
	state = forein_get_state(index);

	if (forein_index_offload(index) == FOREIN_OFFLOAD_NONE || !state->has_words)
	{
		/* nothing to offload: say so, and stop the worker from trying */
		r.backend = FOREIN_SLOT_NONE;
		r.capacity = 0;
	}
	else
	{
		RefreshData d;
		BlockNumber *parent_of;
		int32	   *node_of;
		int32		root;
		uint32	   *ring = forein_off_ring(slot);
		uint64		nsamples = Min(samples, (uint64) FOREIN_SAMPLE_RING);
		double	   *weight;
		Size		i;

		r.backend = FOREIN_SLOT_SWITCH_LPM;

		d.nodes_alloc = 64;
		d.nodes = palloc(d.nodes_alloc * sizeof(RefreshNode));
		d.nnodes = 0;
		d.words_alloc = 1024;
		d.words = palloc(d.words_alloc * sizeof(uint64));
		d.nwords = 0;
		parent_of = palloc_extended(Max(r.nblocks, 1) * sizeof(BlockNumber),
									MCXT_ALLOC_HUGE);
		node_of = palloc_extended(Max(r.nblocks, 1) * sizeof(int32),
								  MCXT_ALLOC_HUGE);
		for (i = 0; i < r.nblocks; i++)
		{
			parent_of[i] = InvalidBlockNumber;
			node_of[i] = -1;
		}

		read_pages(index, state, r.nblocks, &d, parent_of);

		if (d.nnodes > 0)
		{
			root = link_parents(&d, r.nblocks, parent_of, node_of);
			if (root == (int32) d.nnodes)
			{
				RefreshNode *v = add_node(&d);
				uint16		top = 0;

				for (i = 0; i + 1 < d.nnodes; i++)
					top = Max(top, d.nodes[i].level);
				memset(v, 0, sizeof(*v));
				v->blkno = 0;	/* never installed: the fallback */
				v->left = InvalidBlockNumber;
				v->level = top + 1;
				v->hi_inf = true;
				v->parent = -1;
			}

			/*
			 * Leaf weights: one per sampled access in the ring, plus a prior
			 * of one so an unsampled tree still covers its leaves evenly.
			 */
			weight = palloc_extended(d.nnodes * sizeof(double),
									 MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
			for (i = 0; i < d.nnodes; i++)
				if (d.nodes[i].level == 0 && d.nodes[i].blkno != 0)
					weight[i] = 1.0;
			for (i = 0; i < nsamples; i++)
			{
				BlockNumber b = ring[i];

				if (b < r.nblocks && node_of[b] >= 0 && d.nodes[node_of[b]].level == 0)
					weight[node_of[b]] += 1.0;
			}

			compute_table(index, &d, weight, r.capacity, nsamples > 0, &r);
		}
	}

	if (delay && forein_install_delay_ms > 0)
		install_delay(forein_install_delay_ms);

	installed = r.nentries;
	if (!publish(slotno, index, &r, events, samples, started))
		installed = 0;

	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return installed;
}
