/*-------------------------------------------------------------------------
 *
 * forein_refresh.c
 *	  Recomputes an index's offload image: reads every page into a node
 *	  table and the keys' words, hands them to the offload layer's one
 *	  manager through its C ABI (offload/capi/forein_offload.h: the same
 *	  planner, device model and image as every other host) and publishes the
 *	  device's image into the index's shared memory slot.
 *
 * The pages are read one at a time with share locks, like a concurrent
 * reader, so the tree may change underneath: a node can be missing or seen
 * twice at different moments.  None of that matters for correctness (hints
 * are validated); the manager derives parents from the word intervals and
 * copes with levels that are momentarily inconsistent.
 *
 * Nodes the current image names but the tree no longer has (merged away)
 * are published as invalid at once, before the modelled install delay, so
 * no hint leads to a dead page while the new image waits: FOREIN's
 * invalid-node tracking (section V-D).
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
#include "postmaster/interrupt.h"
#include "storage/bufmgr.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "forein.h"
#include "forein_offload.h"
#include "forein_offload_int.h"

/* Refresh no more often than this, or 20x the last refresh's duration */
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
 * Reads every page: live nodes with their word intervals and the words of
 * every leaf key.
 */
static void
read_pages(Relation index, ForeinState *state, BlockNumber nblocks,
		   RefreshData *d)
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
		forein_page_interval(state, page, &node->lo, &node->hi, &node->hi_inf);

		maxoff = PageGetMaxOffsetNumber(page);
		for (off = FOREIN_FIRST_ITEM; off <= maxoff && opaque->level == 0; off++)
		{
			ItemId		iid = PageGetItemId(page, off);

			if (ItemIdHasStorage(iid))
				add_word(d, forein_tuple_word(state, (IndexTuple) PageGetItem(page, iid)));
		}
		MemoryContextSwitchTo(old);
		MemoryContextReset(pagecxt);
		UnlockReleaseBuffer(buf);
	}

	MemoryContextDelete(pagecxt);
	FreeAccessStrategy(strategy);
}

/*
 * Waits out forein.install_delay_ms (the modelled control plane) from now,
 * interruptibly.  With take_reloads (a background worker, which has no idle
 * point to apply them at) a configuration reload applies at once, so
 * lowering the setting ends the wait sooner.
 */
void
forein_install_delay(bool take_reloads)
{
	TimestampTz start = GetCurrentTimestamp();

	for (;;)
	{
		long		left;

		CHECK_FOR_INTERRUPTS();
		if (take_reloads && ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
											   TimestampTzPlusMilliseconds(start, forein_install_delay_ms));
		if (left <= 0)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 left, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* What a refresh publishes */
typedef struct RefreshResult
{
	ForeinSlotBackend backend;
	int32		backend_id;
	char	   *image;
	Size		image_len;
	uint64		image_version;
	uint32		nentries;
	uint32		nnodes;
	uint32		capacity;
	BlockNumber nblocks;
} RefreshResult;

/*
 * Writes the result into the buffer readers are not using and flips the
 * slot to it; the new image names no merged-away node, so the invalid list
 * is cleared.  Returns false if the slot was given to another index
 * meanwhile (then nothing is written).
 */
static bool
publish(int slotno, Relation index, const RefreshResult *r, uint64 events,
		uint64 samples, int64 took_us)
{
	ForeinOffSlot *slot = forein_off_slot(slotno);
	ForeinOffTable *t;
	ForeinOffTable *cur;
	uint32		next;
	uint32		seq;
	TimestampTz now;
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
	t->backend_id = r->backend_id;
	t->nentries = r->nentries;
	t->nnodes = r->nnodes;
	t->capacity = r->capacity;
	t->generation = cur->generation + 1;
	t->image_version = r->image_version;
	t->image_len = r->image_len;
	if (r->image_len > 0)
		memcpy(t->image, r->image, r->image_len);
	pg_write_barrier();
	pg_atomic_write_u32(&t->seq, (seq | 1) + 1);
	pg_write_barrier();
	slot->active = next;
	forein_off_set_invalid(slot, NULL, 0);

	now = GetCurrentTimestamp();
	/*
	 * A refresh re-reads the whole index: keep the worker's share of a CPU
	 * near 5 % however busy the index is, so it never competes seriously
	 * with the queries it is meant to speed up.
	 */
	wait_ms = Max(FOREIN_MIN_REFRESH_MS, 20 * took_us / 1000);
	slot->backend = r->backend;
	slot->events_at_refresh = events;
	slot->samples_at_refresh = samples;
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

static int
cmp_uint64(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/*
 * Publishes, as invalid, the nodes the slot's current image names that the
 * tree no longer has (node_of: the live node of each block, or -1), so
 * that no hint leads to a merged-away page while the new image waits.
 */
static void
invalidate_dead_nodes(int slotno, Relation index, const RefreshData *d,
					  const int32 *node_of, BlockNumber nblocks)
{
	ForeinOffTableInfo info;
	char	   *image = forein_off_copy_image(slotno, index, &info);
	forein_offload_record *recs;
	BlockNumber dead[FOREIN_MAX_INVALID + 1];
	uint32		ndead = 0;
	size_t		n;
	size_t		i;

	if (image == NULL)
		return;
	n = forein_offload_image_records(info.backend_id, image, info.image_len, NULL, 0);
	recs = palloc_extended(Max(n, 1) * sizeof(forein_offload_record), MCXT_ALLOC_HUGE);
	n = forein_offload_image_records(info.backend_id, image, info.image_len, recs, n);
	for (i = 0; i < n && ndead <= FOREIN_MAX_INVALID; i++)
	{
		BlockNumber b = recs[i].node;
		bool		live = b < nblocks && node_of[b] >= 0 &&
			d->nodes[node_of[b]].level == recs[i].level;
		uint32		j;

		if (live)
			continue;
		for (j = 0; j < ndead && dead[j] != b; j++)
			;
		if (j == ndead)
			dead[ndead++] = b;
	}
	if (ndead > 0)
	{
		ForeinOffSlot *slot = forein_off_slot(slotno);

		LWLockAcquire(FOREIN_SLOT_LOCK(slotno), LW_EXCLUSIVE);
		if (slot->in_use && slot->dboid == MyDatabaseId &&
			slot->relid == RelationGetRelid(index))
			forein_off_set_invalid(slot, dead, ndead);
		LWLockRelease(FOREIN_SLOT_LOCK(slotno));
	}
	pfree(recs);
	pfree(image);
}

/*
 * Plans the index's image through the offload C ABI: a manager over a new
 * device of the index's backend, given the live nodes, the sampled leaves
 * and the keys' words.  Copies the image into a palloc'd RefreshResult; the
 * manager is destroyed even if an ERROR is thrown.
 */
static void
compute_image(Relation index, RefreshData *d, const int32 *node_of,
			  const uint32 *ring, uint64 nsamples, RefreshResult *r)
{
	forein_offload_config config;
	forein_offload_node *nodes;
	forein_offload_manager *volatile m = NULL;
	char		errbuf[512];
	Size		nnodes = 0;
	Size		i;

	nodes = palloc_extended(Max(d->nnodes, 1) * sizeof(forein_offload_node), MCXT_ALLOC_HUGE);
	for (i = 0; i < d->nnodes; i++)
	{
		RefreshNode *n = &d->nodes[i];
		forein_offload_node *c = &nodes[nnodes++];

		memset(c, 0, sizeof(*c));
		c->lo = n->lo;
		c->hi = n->hi;
		c->hi_inf = n->hi_inf ? 1 : 0;
		c->version = n->version;
		c->node = n->blkno;
		c->level = n->level;
	}
	qsort(d->words, d->nwords, sizeof(uint64), cmp_uint64);

	forein_offload_config_init(&config);
	/* the slot holds one whole image: the index may use all of it */
	config.capacity = r->capacity;
	config.budget = r->capacity;
	/*
	 * The backend's own settings: the reloption offload_settings, else
	 * their defaults (without samples every leaf weighs the same, and
	 * switch_lpm then pins no hot leaf).
	 */
	config.settings = forein_index_offload_settings(index);

	errbuf[0] = '\0';
	PG_TRY();
	{
		forein_offload_stats st;
		forein_offload_record *recs;
		size_t		nrecs;
		bool	   *named;
		uint32		distinct = 0;

		m = forein_offload_manager_create(r->backend_id, &config, errbuf, sizeof(errbuf));
		if (m == NULL ||
			forein_offload_manager_sync_nodes(m, nodes, nnodes, errbuf, sizeof(errbuf)) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not plan the offload image of index \"%s\": %s",
							RelationGetRelationName(index), errbuf)));

		/* one access per sampled leaf, at the leaf's first word */
		for (i = 0; i < nsamples; i++)
		{
			BlockNumber b = ring[i];

			if (b < r->nblocks && node_of[b] >= 0 && d->nodes[node_of[b]].level == 0)
				forein_offload_manager_record_access(m, d->nodes[node_of[b]].lo);
		}

		if (forein_offload_manager_refresh(m, d->words, d->nwords, errbuf, sizeof(errbuf)) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not plan the offload image of index \"%s\": %s",
							RelationGetRelationName(index), errbuf)));
		forein_offload_manager_stats(m, &st);
		if (st.image_bytes > forein_off_shared->image_bytes)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("offload image of index \"%s\" does not fit its slot (%llu bytes, room for %zu)",
							RelationGetRelationName(index),
							(unsigned long long) st.image_bytes,
							forein_off_shared->image_bytes)));
		r->image = palloc_extended(Max(st.image_bytes, 1), MCXT_ALLOC_HUGE);
		r->image_len = forein_offload_manager_image(m, r->image, st.image_bytes,
													&r->image_version);
		r->nentries = (uint32) st.used;

		/* distinct nodes named by the image */
		nrecs = forein_offload_image_records(r->backend_id, r->image, r->image_len, NULL, 0);
		recs = palloc_extended(Max(nrecs, 1) * sizeof(forein_offload_record), MCXT_ALLOC_HUGE);
		nrecs = forein_offload_image_records(r->backend_id, r->image, r->image_len, recs, nrecs);
		named = palloc_extended(Max(d->nnodes, 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
		for (i = 0; i < nrecs; i++)
		{
			BlockNumber b = recs[i].node;

			if (b < r->nblocks && node_of[b] >= 0 && !named[node_of[b]])
			{
				named[node_of[b]] = true;
				distinct++;
			}
		}
		r->nnodes = distinct;
		elog(DEBUG1, "forein: index \"%s\": %s image of %zu bytes, %u %s on %u nodes",
			 RelationGetRelationName(index), forein_offload_backend_name(r->backend_id),
			 r->image_len, r->nentries, forein_offload_backend_unit(r->backend_id),
			 r->nnodes);
	}
	PG_FINALLY();
	{
		forein_offload_manager_destroy(m);
	}
	PG_END_TRY();
	pfree(nodes);
}

/* A computed image waiting to be published (forein_refresh_compute) */
struct ForeinRefreshJob
{
	MemoryContext cxt;			/* holds the job and its image */
	RefreshResult r;
	uint64		events;			/* the slot's counters when reading began */
	uint64		samples;
	int64		took_us;		/* reading and computing (not the delay) */
	Oid			relfilenode;	/* the index's storage the image names */
};

/*
 * Reads the index and computes its offload image, in a new child context of
 * the current one that the job owns (forein_refresh_job_context;
 * forein_refresh_publish frees it).  With
 * `invalidate`, nodes the published image names that were merged away are
 * published as invalid now, before the install delay.  The caller holds a
 * lock on the index.
 */
ForeinRefreshJob *
forein_refresh_compute(Relation index, int slotno, bool invalidate)
{
	ForeinOffSlot *slot = forein_off_slot(slotno);
	MemoryContext cxt;
	MemoryContext old;
	ForeinRefreshJob *job;
	ForeinState *state;
	RefreshResult *r;
	TimestampTz started;

	/* an index of another on-disk format has no image to offload */
	forein_check_metapage(index);

	cxt = AllocSetContextCreate(CurrentMemoryContext, "forein refresh",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	job = palloc0(sizeof(ForeinRefreshJob));
	job->cxt = cxt;
	started = GetCurrentTimestamp();
	job->relfilenode = forein_index_relfilenode(index);

	/*
	 * Read first: changes during the refresh leave the slot dirty.  The
	 * stale flag is taken now, not cleared at publish: a reader that meets
	 * a change this refresh may not have seen (a hot standby replaying
	 * while the pages are read) flags it again for the next refresh.
	 */
	job->events = pg_atomic_read_u64(&slot->events);
	job->samples = pg_atomic_read_u64(&slot->samples);
	if (pg_atomic_read_u32(&slot->stale) != 0)
		pg_atomic_write_u32(&slot->stale, 0);
	pg_memory_barrier();

	r = &job->r;
	r->capacity = forein_index_budget(index);
	r->nblocks = RelationGetNumberOfBlocks(index);
	r->backend_id = forein_index_backend(index);
	state = forein_get_state(index);

	if (!forein_index_offloaded(index) || !state->has_words)
	{
		/* nothing to offload: say so, and stop the worker from trying */
		r->backend = FOREIN_SLOT_NONE;
		r->capacity = 0;
	}
	else
	{
		RefreshData d;
		int32	   *node_of;
		uint32	   *ring = forein_off_ring(slot);
		uint64		nsamples = Min(job->samples, (uint64) FOREIN_SAMPLE_RING);
		uint32	   *ring_copy;
		Size		i;

		r->backend = FOREIN_SLOT_IMAGE;

		d.nodes_alloc = 64;
		d.nodes = palloc(d.nodes_alloc * sizeof(RefreshNode));
		d.nnodes = 0;
		d.words_alloc = 1024;
		d.words = palloc(d.words_alloc * sizeof(uint64));
		d.nwords = 0;
		node_of = palloc_extended(Max(r->nblocks, 1) * sizeof(int32), MCXT_ALLOC_HUGE);
		for (i = 0; i < r->nblocks; i++)
			node_of[i] = -1;

		read_pages(index, state, r->nblocks, &d);
		for (i = 0; i < d.nnodes; i++)
			node_of[d.nodes[i].blkno] = (int32) i;

		/* the ring is written without locks: take a stable copy */
		ring_copy = palloc(Max(nsamples, 1) * sizeof(uint32));
		for (i = 0; i < nsamples; i++)
			ring_copy[i] = ((volatile uint32 *) ring)[i];

		if (invalidate)
			invalidate_dead_nodes(slotno, index, &d, node_of, r->nblocks);
		if (d.nnodes > 0)
			compute_image(index, &d, node_of, ring_copy, nsamples, r);
	}

	job->took_us = GetCurrentTimestamp() - started;
	MemoryContextSwitchTo(old);
	return job;
}

MemoryContext
forein_refresh_job_context(ForeinRefreshJob *job)
{
	return job->cxt;
}

/*
 * Publishes a computed image into the index's slot and frees the job.
 * Returns the number of installed records: 0 if the slot went to another
 * index, or if the index's storage changed since the image was computed
 * (REINDEX, TRUNCATE: the image names old blocks; the slot is marked stale
 * so that the worker computes a new one).  The caller holds a lock on the
 * index.
 */
int64
forein_refresh_publish(Relation index, int slotno, ForeinRefreshJob *job)
{
	int64		installed = 0;

	if (forein_index_relfilenode(index) != job->relfilenode)
		pg_atomic_write_u32(&forein_off_slot(slotno)->stale, 1);
	else if (publish(slotno, index, &job->r, job->events, job->samples, job->took_us))
		installed = job->r.nentries;
	MemoryContextDelete(job->cxt);
	return installed;
}

/*
 * Recomputes the index's offload image and publishes it into its slot.
 * With `delay`, waits forein.install_delay_ms between computing and
 * installing, as the device's control plane would (merged-away nodes are
 * published as invalid before the wait), holding the caller's lock on the
 * index throughout (the background worker lets go of it instead:
 * forein_worker.c).  Returns the number of installed records.
 */
int64
forein_refresh_index(Relation index, int slotno, bool delay)
{
	bool		wait = delay && forein_install_delay_ms > 0;
	ForeinRefreshJob *job = forein_refresh_compute(index, slotno, wait);

	if (wait)
		forein_install_delay(false);
	return forein_refresh_publish(index, slotno, job);
}
