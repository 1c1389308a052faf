/*-------------------------------------------------------------------------
 *
 * forein_scan.c
 *	  Index scans: bounds from the scan keys, page-at-a-time reading in
 *	  either direction, mark/restore, index-only and bitmap scans.
 *
 * Scan keys become a range [lower, upper) of (key, TID) positions, as
 * nbtree's "required" keys do: the leading columns with an equality (or
 * IS NULL, or an array: one range per combination of its elements, in
 * index order) give a prefix, the next column's bounds end it.  Every
 * other key filters the entries inside the range.  DESC columns and NULLS
 * FIRST are handled by comparing in index order.  A page is read under a
 * share lock in one go: every entry in range is copied, with the page's
 * right link and low key, and the lock is dropped (the pin is kept only for
 * non-MVCC snapshots, as nbtree does, so VACUUM cannot recycle a TID we are
 * about to return).  Moving right follows the saved right link: entries
 * that moved right by a later split were already copied.  Moving left
 * descends again to the position just before the saved low key, which
 * needs no left-link dance and starts from a hint like any other search.
 *
 * pg_extension/forein_scan.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "access/relscan.h"
#include "forein.h"
#include "miscadmin.h"
#include "nodes/tidbitmap.h"
#include "pgstat.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/uuid.h"

static void kill_items(IndexScanDesc scan);

/*
 * Orders two non-NULL search values of column col in value order; false
 * when they cannot be compared here (cross-type values, or a cross-type
 * value against a plain one).
 */
static bool
order_values(const ForeinColumn *col, const ForeinKeyValue *a,
			 const ForeinKeyValue *b, int *result)
{
	int			cmp = 0;

	if (a->use_proc || b->use_proc)
		return false;
	switch (col->kind)
	{
		case FOREIN_KEY_INT:
		case FOREIN_KEY_DATE:
		case FOREIN_KEY_TIMESTAMP:
			cmp = (a->ival > b->ival) - (a->ival < b->ival);
			break;
		case FOREIN_KEY_UUID:
			cmp = memcmp(DatumGetPointer(a->datum), DatumGetPointer(b->datum), UUID_LEN);
			cmp = (cmp > 0) - (cmp < 0);
			break;
		case FOREIN_KEY_GENERIC:
			cmp = DatumGetInt32(FunctionCall2Coll((FmgrInfo *) &col->cmp,
												  col->collation, a->datum,
												  b->datum));
			cmp = (cmp > 0) - (cmp < 0);
			break;
	}
	*result = cmp;
	return true;
}

static const ForeinColumn *sort_col;

static int
compare_elems(const void *a, const void *b)
{
	int			cmp = 0;

	(void) order_values(sort_col, (const ForeinKeyValue *) a,
						(const ForeinKeyValue *) b, &cmp);
	return cmp;
}

/*
 * The non-NULL elements of an array scan key, sorted and distinct when
 * they are comparable (else in array order, cond->sorted false).
 */
static void
array_elements(ForeinState *state, ScanKey sk, ForeinScanCond *cond)
{
	ArrayType  *arr = DatumGetArrayTypeP(sk->sk_argument);
	Oid			elemtype = ARR_ELEMTYPE(arr);
	const ForeinColumn *col = &state->cols[cond->col];
	int16		elmlen;
	bool		elmbyval;
	char		elmalign;
	Datum	   *values;
	bool	   *nulls;
	int			n;
	int			i;
	int			m = 0;
	bool		comparable = true;

	get_typlenbyvalalign(elemtype, &elmlen, &elmbyval, &elmalign);
	deconstruct_array(arr, elemtype, elmlen, elmbyval, elmalign, &values, &nulls, &n);
	cond->elems = palloc(sizeof(ForeinKeyValue) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		if (nulls[i])
			continue;
		if (!forein_value_from_arg(state, cond->col, values[i], elemtype,
								   &cond->elems[m]))
			elog(ERROR, "forein: unsupported array element type %u", elemtype);
		comparable &= !cond->elems[m].use_proc;
		m++;
	}
	pfree(values);
	pfree(nulls);
	cond->sorted = comparable;
	if (comparable && m > 1)
	{
		int			j = 0;

		sort_col = col;
		qsort(cond->elems, m, sizeof(ForeinKeyValue), compare_elems);
		for (i = 1; i < m; i++)
			if (compare_elems(&cond->elems[i], &cond->elems[j]) != 0)
				cond->elems[++j] = cond->elems[i];
		m = j + 1;
	}
	cond->nelems = m;
}

/* Does a stored value's comparison with the argument satisfy the strategy? */
static inline bool
strategy_holds(StrategyNumber strategy, int stored_vs_arg)
{
	switch (strategy)
	{
		case BTLessStrategyNumber:
			return stored_vs_arg < 0;
		case BTLessEqualStrategyNumber:
			return stored_vs_arg <= 0;
		case BTEqualStrategyNumber:
			return stored_vs_arg == 0;
		case BTGreaterEqualStrategyNumber:
			return stored_vs_arg >= 0;
		case BTGreaterStrategyNumber:
			return stored_vs_arg > 0;
	}
	elog(ERROR, "forein: unknown strategy %d", strategy);
	return false;
}

/* Does the tuple satisfy the condition? */
static bool
cond_matches(ForeinState *state, const ForeinScanCond *cond, IndexTuple itup)
{
	const ForeinColumn *col = &state->cols[cond->col];
	bool		isnull;
	Datum		stored = index_getattr(itup, cond->col + 1, state->tupdesc, &isnull);
	int			i;

	if (cond->strategy == 0)
		return isnull == cond->want_null;
	if (isnull)
		return false;
	if (cond->nelems < 0)
		return strategy_holds(cond->strategy,
							  -forein_compare_value(col, &cond->arg, stored));
	if (cond->sorted && cond->strategy == BTEqualStrategyNumber)
	{
		int			lo = 0,
					hi = cond->nelems - 1;

		while (lo <= hi)
		{
			int			mid = (lo + hi) / 2;
			int			c = -forein_compare_value(col, &cond->elems[mid], stored);

			if (c == 0)
				return true;
			if (c < 0)
				hi = mid - 1;
			else
				lo = mid + 1;
		}
		return false;
	}
	for (i = 0; i < cond->nelems; i++)
		if (strategy_holds(cond->strategy,
						   -forein_compare_value(col, &cond->elems[i], stored)))
			return true;
	return false;
}

/* Does the tuple pass every condition the range does not imply? */
static inline bool
passes_filters(ForeinScanOpaque so, ForeinState *state, IndexTuple itup)
{
	int			i;

	if (so->nfilters == 0)
		return true;
	for (i = 0; i < so->nconds; i++)
		if (!so->conds[i].implied && !cond_matches(state, &so->conds[i], itup))
			return false;
	return true;
}

/*
 * Takes a bound of the range column (index order) unless the one already
 * chosen is tighter; bounds that cannot be ordered against each other
 * leave the later one as a filter.
 */
static void
take_bound(ForeinScanOpaque so, const ForeinColumn *col, ForeinScanCond *cond,
		   bool lower_side, bool incl, ForeinScanCond **chosen)
{
	bool	   *have = lower_side ? &so->have_lo : &so->have_hi;
	bool	   *cur_incl = lower_side ? &so->lo_incl : &so->hi_incl;
	ForeinKeyValue *cur = lower_side ? &so->lo : &so->hi;
	int			cmp;

	if (*have)
	{
		if (!order_values(col, &cond->arg, cur, &cmp))
			return;				/* stays a filter */
		if (col->desc)
			cmp = -cmp;
		if (!lower_side)
			cmp = -cmp;
		/* cmp > 0: the new bound is tighter; equal: exclusive is tighter */
		if (cmp < 0 || (cmp == 0 && (incl || !*cur_incl)))
		{
			cond->implied = true;
			return;
		}
		if (*chosen)
			(*chosen)->implied = true;
	}
	*have = true;
	*cur_incl = incl;
	*cur = cond->arg;
	cond->implied = true;
	*chosen = cond;
}

/*
 * The context for what the keys need until the next rescan, made at first
 * use: most scans (no array keys) never need one.
 */
static MemoryContext
key_context(ForeinScanOpaque so)
{
	if (so->keycxt == NULL)
		so->keycxt = AllocSetContextCreate(so->scancxt, "forein scan keys",
										   ALLOCSET_SMALL_SIZES);
	return so->keycxt;
}

/*
 * The leading column's equality for column i, if the keys give one: a
 * plain "=", else an "= ANY" with comparable elements, else IS NULL.
 * Marks what it uses as implied; false when the column has none.
 */
static bool
take_prefix_column(ForeinScanOpaque so, ForeinState *state, int i)
{
	const ForeinColumn *col = &state->cols[i];
	ForeinPrefixColumn *pc = &so->prefix[i];
	ForeinScanCond *eq = NULL;
	ForeinScanCond *arr = NULL;
	ForeinScanCond *isnull = NULL;
	int			k;

	for (k = 0; k < so->nconds; k++)
	{
		ForeinScanCond *c = &so->conds[k];

		if (c->col != i)
			continue;
		if (c->strategy == BTEqualStrategyNumber && c->nelems < 0)
		{
			int			cmp;

			if (eq == NULL)
				eq = c;
			else if (order_values(col, &c->arg, &eq->arg, &cmp))
			{
				if (cmp != 0)
					so->qual_ok = false;	/* x = 1 AND x = 2 */
				c->implied = true;
			}
		}
		else if (c->strategy == BTEqualStrategyNumber && c->sorted && arr == NULL)
			arr = c;
		else if (c->strategy == 0 && c->want_null && isnull == NULL)
			isnull = c;
	}
	if (eq != NULL)
	{
		pc->vals = &eq->arg;
		pc->nvals = 1;
		eq->implied = true;
	}
	else if (arr != NULL)
	{
		pc->vals = arr->elems;
		pc->nvals = arr->nelems;
		if (col->desc && arr->nelems > 1)
		{
			/* index order: descending */
			ForeinKeyValue *rev = MemoryContextAlloc(key_context(so),
													  sizeof(ForeinKeyValue) * arr->nelems);

			for (k = 0; k < arr->nelems; k++)
				rev[k] = arr->elems[arr->nelems - 1 - k];
			pc->vals = rev;
		}
		arr->implied = true;
		so->has_arrays |= arr->nelems > 1;
		if (arr->nelems == 0)
			so->qual_ok = false;
	}
	else if (isnull != NULL)
	{
		static const ForeinKeyValue null_value = {.isnull = true};

		pc->vals = &null_value;
		pc->nvals = 1;
		isnull->implied = true;
	}
	else
		return false;
	pc->cur = 0;
	return true;
}

/* The bounds of the range column, nprefix, from its comparisons */
static void
take_range_column(ForeinScanOpaque so, ForeinState *state, int i)
{
	const ForeinColumn *col = &state->cols[i];
	ForeinScanCond *lo_cond = NULL;
	ForeinScanCond *hi_cond = NULL;
	bool		notnull = false;
	int			k;

	for (k = 0; k < so->nconds; k++)
	{
		ForeinScanCond *c = &so->conds[k];
		bool		lower_side;
		bool		incl;

		if (c->col != i)
			continue;
		if (c->strategy == 0)
		{
			if (!c->want_null)
			{
				notnull = true;
				c->implied = true;
			}
			continue;
		}
		notnull = true;
		if (c->nelems >= 0)
			continue;			/* arrays here filter */
		switch (c->strategy)
		{
			case BTLessStrategyNumber:
			case BTLessEqualStrategyNumber:
				lower_side = col->desc;
				break;
			case BTGreaterStrategyNumber:
			case BTGreaterEqualStrategyNumber:
				lower_side = !col->desc;
				break;
			default:
				continue;		/* "=" of another type than the chosen one */
		}
		incl = c->strategy == BTLessEqualStrategyNumber ||
			c->strategy == BTGreaterEqualStrategyNumber;
		take_bound(so, col, c, lower_side, incl, lower_side ? &lo_cond : &hi_cond);
	}

	/* comparisons and IS NOT NULL exclude the NULLs at their end */
	if (notnull)
	{
		bool	   *have = col->nulls_first ? &so->have_lo : &so->have_hi;
		bool	   *incl = col->nulls_first ? &so->lo_incl : &so->hi_incl;
		ForeinKeyValue *v = col->nulls_first ? &so->lo : &so->hi;

		if (!*have)
		{
			*have = true;
			*incl = false;
			memset(v, 0, sizeof(*v));
			v->isnull = true;
		}
	}
}

/* Sets [lower, upper) to the range of the current prefix values */
static void
set_range(ForeinScanOpaque so, ForeinState *state)
{
	int			n = so->nprefix;
	int			i;

	for (i = 0; i < n; i++)
	{
		ForeinPrefixColumn *pc = &so->prefix[i];

		so->lower.vals[i] = pc->vals[pc->cur];
		so->upper.vals[i] = pc->vals[pc->cur];
	}
	so->lower.unbounded = so->upper.unbounded = false;
	so->lower.nvals = so->upper.nvals = n;
	so->lower.tidmode = FOREIN_TID_BEFORE;
	so->upper.tidmode = FOREIN_TID_AFTER;
	if (so->have_lo)
	{
		so->lower.vals[n] = so->lo;
		so->lower.nvals = n + 1;
		so->lower.tidmode = so->lo_incl ? FOREIN_TID_BEFORE : FOREIN_TID_AFTER;
	}
	if (so->have_hi)
	{
		so->upper.vals[n] = so->hi;
		so->upper.nvals = n + 1;
		so->upper.tidmode = so->hi_incl ? FOREIN_TID_AFTER : FOREIN_TID_BEFORE;
	}
	so->have_lower = so->lower.nvals > 0;
	so->have_upper = so->upper.nvals > 0;
	forein_key_set_word(state, &so->lower);
	forein_key_set_word(state, &so->upper);
}

/*
 * Positions the array combination at its first (forward) or last
 * (backward) value in every prefix column.
 */
static void
first_combination(ForeinScanOpaque so, ForeinState *state, ScanDirection dir)
{
	int			i;

	for (i = 0; i < so->nprefix; i++)
		so->prefix[i].cur = ScanDirectionIsBackward(dir) ? so->prefix[i].nvals - 1 : 0;
	set_range(so, state);
}

/*
 * Moves to the next combination of the prefix columns' values in index
 * order (the last column fastest); false after the last one.
 */
static bool
next_combination(ForeinScanOpaque so, ForeinState *state, ScanDirection dir)
{
	int			i;

	if (!so->has_arrays)
		return false;
	for (i = so->nprefix - 1; i >= 0; i--)
	{
		ForeinPrefixColumn *pc = &so->prefix[i];

		if (ScanDirectionIsBackward(dir))
		{
			if (pc->cur > 0)
			{
				pc->cur--;
				break;
			}
			pc->cur = pc->nvals - 1;
		}
		else
		{
			if (pc->cur + 1 < pc->nvals)
			{
				pc->cur++;
				break;
			}
			pc->cur = 0;
		}
	}
	if (i < 0)
	{
		/* wrapped around: stay on the last combination */
		for (i = 0; i < so->nprefix; i++)
			so->prefix[i].cur = ScanDirectionIsBackward(dir) ? 0 : so->prefix[i].nvals - 1;
		return false;
	}
	set_range(so, state);
	return true;
}

/* Turns the scan keys into conditions, the range and the filters */
static void
preprocess_keys(IndexScanDesc scan)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;
	ForeinState *state = forein_get_state(scan->indexRelation);
	int			i;

	/* what the keys need lives until the next rescan (nested loops rescan often) */
	if (so->keycxt != NULL)
		MemoryContextReset(so->keycxt);
	memset(so->conds, 0, sizeof(ForeinScanCond) * scan->numberOfKeys);
	so->nconds = 0;
	so->qual_ok = true;
	so->nprefix = 0;
	so->has_arrays = false;
	so->have_lo = so->have_hi = false;

	for (i = 0; i < scan->numberOfKeys; i++)
	{
		ScanKey		sk = &scan->keyData[i];
		ForeinScanCond *cond = &so->conds[so->nconds];

		cond->col = sk->sk_attno - 1;
		cond->nelems = -1;
		if (sk->sk_flags & SK_ISNULL)
		{
			if (sk->sk_flags & (SK_SEARCHNULL | SK_SEARCHNOTNULL))
			{
				cond->strategy = 0;
				cond->want_null = (sk->sk_flags & SK_SEARCHNULL) != 0;
				so->nconds++;
			}
			else
				so->qual_ok = false;	/* a comparison with NULL */
			continue;
		}
		cond->strategy = sk->sk_strategy;
		if (sk->sk_flags & SK_SEARCHARRAY)
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(key_context(so));

			array_elements(state, sk, cond);
			MemoryContextSwitchTo(oldcxt);
			if (cond->nelems == 0)
				so->qual_ok = false;
		}
		else if (!forein_value_from_arg(state, cond->col, sk->sk_argument,
										sk->sk_subtype, &cond->arg))
			elog(ERROR, "forein: unsupported scan key type %u for index \"%s\"",
				 sk->sk_subtype, RelationGetRelationName(scan->indexRelation));
		so->nconds++;
	}

	while (so->nprefix < state->nkeys && take_prefix_column(so, state, so->nprefix))
		so->nprefix++;
	if (so->nprefix < state->nkeys)
		take_range_column(so, state, so->nprefix);

	so->nfilters = 0;
	for (i = 0; i < so->nconds; i++)
		so->nfilters += so->conds[i].implied ? 0 : 1;
	/* the first fetch sets the range, in its direction (first_combination) */
}

IndexScanDesc
forein_beginscan(Relation r, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(r, nkeys, norderbys);
	ForeinScanOpaque so = palloc(sizeof(ForeinScanOpaqueData));

	/* the kilobytes of range values past lo are written before use */
	memset(so, 0, offsetof(ForeinScanOpaqueData, lo));
	so->pos.buf = InvalidBuffer;
	so->mark.buf = InvalidBuffer;
	so->scancxt = CurrentMemoryContext;
	so->conds = palloc(sizeof(ForeinScanCond) * Max(nkeys, 1));
	so->pos.items = palloc(sizeof(ForeinScanItem) * FOREIN_SCAN_FIRST_ITEMS);
	so->pos.maxItems = FOREIN_SCAN_FIRST_ITEMS;
	/* so->mark's arrays come with the first mark (merge joins only) */
	scan->xs_itupdesc = RelationGetDescr(r);
	scan->opaque = so;
	return scan;
}

/* Makes room for n entries in pos (a page's worth at most) */
static void
reserve_items(ForeinScanOpaque so, ForeinScanPos *pos, int n)
{
	if (n <= pos->maxItems)
		return;
	Assert(n <= FOREIN_MAX_TIDS_PER_PAGE);
	if (pos->items == NULL)
		pos->items = MemoryContextAlloc(so->scancxt, sizeof(ForeinScanItem) *
										FOREIN_MAX_TIDS_PER_PAGE);
	else
		pos->items = repalloc(pos->items, sizeof(ForeinScanItem) *
							  FOREIN_MAX_TIDS_PER_PAGE);
	pos->maxItems = FOREIN_MAX_TIDS_PER_PAGE;
}

static void
release_pos(ForeinScanPos *pos)
{
	if (BufferIsValid(pos->buf))
		ReleaseBuffer(pos->buf);
	pos->buf = InvalidBuffer;
}

void
forein_rescan(IndexScanDesc scan, ScanKey scankey, int nscankeys,
			  ScanKey orderbys, int norderbys)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;

	kill_items(scan);
	release_pos(&so->pos);
	so->started = false;
	so->mark_valid = false;
	if (scankey && scan->numberOfKeys > 0)
		memmove(scan->keyData, scankey, scan->numberOfKeys * sizeof(ScanKeyData));
	if (scan->xs_want_itup && so->pos.tuples == NULL)
		so->pos.tuples = MemoryContextAlloc(so->scancxt, BLCKSZ);
	preprocess_keys(scan);
}

/*
 * Copies the in-range entries of the share-locked leaf in buf into the scan
 * position, then unlocks it (keeping the pin for non-MVCC snapshots).
 */
static void
read_page(IndexScanDesc scan, Buffer buf, ScanDirection dir)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;
	ForeinState *state = forein_get_state(scan->indexRelation);
	ForeinScanPos *pos = &so->pos;
	Page		page = BufferGetPage(buf);
	ForeinPageOpaque opaque = ForeinPageGetOpaque(page);
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
	OffsetNumber start = FOREIN_FIRST_ITEM;
	OffsetNumber off;
	bool		end_hit = false;
	int			n = 0;

	release_pos(pos);
	pos->blkno = BufferGetBlockNumber(buf);
	pos->lsn = BufferGetLSNAtomic(buf);
	pos->right = opaque->right;
	pos->leftmost = opaque->left == InvalidBlockNumber;
	if (pos->lokey)
		pfree(pos->lokey);
	pos->lokey = NULL;
	pos->nextTupleOffset = 0;

	if (ForeinPageIsDeleted(page))
		maxoff = InvalidOffsetNumber;	/* empty; only its right link counts */
	else if (so->have_lower)
		start = forein_binsearch_leaf(state, page, &so->lower);

	for (off = start; off <= maxoff; off++)
	{
		IndexTuple	itup = (IndexTuple) PageGetItem(page, PageGetItemId(page, off));
		ForeinScanItem *item;
		uint16		tupleOffset = 0;
		int			ntids;
		int			k;

		if (so->have_upper && forein_compare(state, &so->upper, itup) <= 0)
		{
			end_hit = true;
			break;
		}
		if (scan->ignore_killed_tuples && ItemIdIsDead(PageGetItemId(page, off)))
			continue;			/* its heap tuples are dead to everyone */
		if (!passes_filters(so, state, itup))
			continue;
		ntids = forein_posting_count(itup);
		if (unlikely(n + ntids > pos->maxItems))
			reserve_items(so, pos, n + ntids);
		if (scan->xs_want_itup)
		{
			/* the key once, for every TID of a posting tuple */
			tupleOffset = pos->nextTupleOffset;
			pos->nextTupleOffset += MAXALIGN(forein_copy_key(pos->tuples + tupleOffset,
															 itup));
		}
		for (k = 0; k < ntids; k++)
		{
			item = &pos->items[n++];
			item->heapTid = *forein_posting_tid(itup, k);
			item->offnum = off;
			item->tupleOffset = tupleOffset;
		}
	}
	pos->firstItem = 0;
	pos->lastItem = n - 1;
	pos->itemIndex = ScanDirectionIsBackward(dir) ? n - 1 : 0;
	pos->moreRight = !end_hit && opaque->right != InvalidBlockNumber;
	pos->moreLeft = start == FOREIN_FIRST_ITEM && !pos->leftmost &&
		!ForeinPageIsDeleted(page);

	/*
	 * The bounds are kept only for the steps they serve (a point lookup
	 * that ends on this leaf needs neither): the low key to step left, the
	 * high key to check the right link.
	 */
	if (pos->moreLeft)
		pos->lokey = forein_make_bound((IndexTuple) PageGetItem(page, PageGetItemId(page, FOREIN_LOKEY)));
	if (pos->hikey)
		pfree(pos->hikey);
	pos->hikey = NULL;
	if (pos->moreRight && !ForeinPageIsDeleted(page))
		pos->hikey = forein_make_bound((IndexTuple) PageGetItem(page, PageGetItemId(page, FOREIN_HIKEY)));

	/*
	 * Keep the pin unless the snapshot is MVCC and the heap is visited for
	 * every entry: VACUUM's cleanup lock then waits for us, so a TID we are
	 * about to return (or an index-only answer) cannot be recycled meanwhile.
	 * Unlogged indexes keep it too: their pages' LSNs do not move, so only
	 * the pin tells kill_items that no TID on the leaf was recycled.
	 */
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	if (IsMVCCSnapshot(scan->xs_snapshot) && !scan->xs_want_itup &&
		RelationNeedsWAL(scan->indexRelation))
		ReleaseBuffer(buf);
	else
		pos->buf = buf;
}

/*
 * Locks the leaf after the current one.  The saved right link is normally
 * right: that page's low key can only have moved down to our old high key.
 * A page that no longer fits (reused after deletion; possible on a hot
 * standby, which gets no recovery conflict for page reuse from generic WAL)
 * is not trusted: descend again to our old high key instead.
 */
static Buffer
read_right(IndexScanDesc scan, ForeinState *state)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;
	ForeinScanPos *pos = &so->pos;
	Relation	index = scan->indexRelation;
	Buffer		buf = ReadBuffer(index, pos->right);
	Page		page;
	ForeinSearchKey key;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (pos->hikey == NULL)
	{
		forein_check_page(index, page, pos->right);
		return buf;
	}
	forein_key_from_tuple(state, pos->hikey, &key);
	if (!PageIsNew(page) &&
		PageGetSpecialSize(page) == MAXALIGN(sizeof(ForeinPageOpaqueData)) &&
		ForeinPageGetOpaque(page)->page_id == FOREIN_PAGE_ID &&
		ForeinPageGetOpaque(page)->level == 0 &&
		(ForeinPageIsDeleted(page) || forein_page_lo_le(state, page, &key)))
		return buf;
	forein_relbuf(buf);
	return forein_descend_counted(index, state, &key, 0, BUFFER_LOCK_SHARE,
								  NULL, true, &so->counts);
}

static int
compare_ints(const void *a, const void *b)
{
	int			x = *(const int *) a;
	int			y = *(const int *) b;

	return (x > y) - (x < y);
}

/* Is tid among the n killed entries of pos at indexes kill[0..n-1]? */
static bool
tid_killed(const ForeinScanPos *pos, const int *kill, int n, ItemPointer tid)
{
	int			i;

	for (i = 0; i < n; i++)
		if (ItemPointerEquals(&pos->items[kill[i]].heapTid, tid))
			return true;
	return false;
}

/*
 * Marks LP_DEAD the entries of pos's leaf whose heap tuples the executor
 * found dead to every transaction (nbtree's _bt_killitems), so later scans
 * skip them without visiting the heap; VACUUM removes them as before.  A
 * posting tuple is marked only when every one of its TIDs was found dead.
 * The mark is a hint (no WAL, MarkBufferDirtyHint): any doubt means no
 * mark.  Without a pin on the leaf since it was read, a TID there may have
 * been recycled by VACUUM and reused, so the leaf must not have changed at
 * all (same LSN: every change of a logged forein page sets it); with the
 * pin, VACUUM cannot have passed the leaf, and an entry that insertions
 * shifted right is found by its TIDs.
 */
static void
kill_items(IndexScanDesc scan)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;
	ForeinScanPos *pos = &so->pos;
	int			nkilled = so->nkilled;
	bool		pinned = BufferIsValid(pos->buf);
	bool		marked = false;
	Buffer		buf;
	Page		page;
	ForeinPageOpaque opaque;
	OffsetNumber maxoff;
	int			i;

	so->nkilled = 0;
	if (nkilled == 0 || pos->lastItem < pos->firstItem)
		return;
	buf = pinned ? pos->buf : ReadBuffer(scan->indexRelation, pos->blkno);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	opaque = ForeinPageGetOpaque(page);
	if ((!pinned && BufferGetLSNAtomic(buf) != pos->lsn) ||
		PageIsNew(page) ||
		PageGetSpecialSize(page) != MAXALIGN(sizeof(ForeinPageOpaqueData)) ||
		opaque->page_id != FOREIN_PAGE_ID || opaque->level != 0 ||
		ForeinPageIsDeleted(page))
		goto done;
	maxoff = PageGetMaxOffsetNumber(page);

	/* the killed entries by position, so a posting tuple's TIDs sit together */
	qsort(so->killed, nkilled, sizeof(int), compare_ints);
	for (i = 0; i < nkilled;)
	{
		OffsetNumber off = pos->items[so->killed[i]].offnum;
		int			n = 1;
		OffsetNumber at;

		while (i + n < nkilled && pos->items[so->killed[i + n]].offnum == off)
			n++;
		for (at = off; at <= maxoff && at >= FOREIN_FIRST_ITEM; at++)
		{
			ItemId		iid = PageGetItemId(page, at);
			IndexTuple	itup = (IndexTuple) PageGetItem(page, iid);
			int			ntids = forein_posting_count(itup);
			int			k;
			bool		all = ntids == n;

			for (k = 0; k < ntids && all; k++)
				all = tid_killed(pos, &so->killed[i], n, forein_posting_tid(itup, k));
			if (all)
			{
				if (!ItemIdIsDead(iid))
				{
					ItemIdMarkDead(iid);
					marked = true;
				}
				break;
			}
			if (!pinned)
				break;			/* unchanged leaf: the entry is at off or gone */
		}
		i += n;
	}
	if (marked)
		MarkBufferDirtyHint(buf, true);
done:
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	if (!pinned)
		ReleaseBuffer(buf);
}

/* Reads leaves in direction dir until one has entries; false at the end */
static bool
step_page(IndexScanDesc scan, ScanDirection dir)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;
	ForeinState *state = forein_get_state(scan->indexRelation);
	Relation	index = scan->indexRelation;
	ForeinScanPos *pos = &so->pos;

	kill_items(scan);
	for (;;)
	{
		Buffer		buf;

		CHECK_FOR_INTERRUPTS();
		if (ScanDirectionIsForward(dir))
		{
			if (!pos->moreRight)
			{
				pos->itemIndex = pos->lastItem + 1;
				return false;
			}
			buf = read_right(scan, state);
		}
		else
		{
			ForeinSearchKey key;

			if (!pos->moreLeft || pos->lokey == NULL)
			{
				pos->itemIndex = pos->firstItem - 1;
				return false;
			}
			forein_key_from_tuple(state, pos->lokey, &key);
			key.tidmode = FOREIN_TID_JUST_BEFORE;
			buf = forein_descend_counted(index, state, &key, 0,
										 BUFFER_LOCK_SHARE, NULL, true,
										 &so->counts);
		}
		read_page(scan, buf, dir);
		if (pos->lastItem >= pos->firstItem)
			return true;
	}
}

/* Positions the scan on its first entry in direction dir */
static bool
first_position(IndexScanDesc scan, ScanDirection dir)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;
	ForeinState *state = forein_get_state(scan->indexRelation);
	Relation	index = scan->indexRelation;
	Buffer		buf;

	pgstat_count_index_scan(index);
	if (ScanDirectionIsForward(dir))
		buf = so->have_lower ?
			forein_descend_counted(index, state, &so->lower, 0,
								   BUFFER_LOCK_SHARE, NULL, true, &so->counts) :
			forein_get_endpoint_counted(index, state, false, &so->counts);
	else
		buf = so->have_upper ?
			forein_descend_counted(index, state, &so->upper, 0,
								   BUFFER_LOCK_SHARE, NULL, true, &so->counts) :
			forein_get_endpoint_counted(index, state, true, &so->counts);
	read_page(scan, buf, dir);
	if (so->pos.lastItem >= so->pos.firstItem)
		return true;
	return step_page(scan, dir);
}

static void
return_item(IndexScanDesc scan)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;
	ForeinScanItem *item = &so->pos.items[so->pos.itemIndex];

	scan->xs_heaptid = item->heapTid;
	if (scan->xs_want_itup)
		scan->xs_itup = (IndexTuple) (so->pos.tuples + item->tupleOffset);
	scan->xs_recheck = false;
}

bool
forein_gettuple(IndexScanDesc scan, ScanDirection dir)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;
	ForeinState *state = forein_get_state(scan->indexRelation);
	ForeinScanPos *pos = &so->pos;

	bool		found;

	if (!so->qual_ok)
		return false;
	/* the entry returned last leads only to heap tuples dead to everyone */
	if (scan->kill_prior_tuple && so->started &&
		pos->itemIndex >= pos->firstItem && pos->itemIndex <= pos->lastItem)
	{
		if (so->killed == NULL)
			so->killed = MemoryContextAlloc(so->scancxt,
											sizeof(int) * FOREIN_MAX_TIDS_PER_PAGE);
		if (so->nkilled < FOREIN_MAX_TIDS_PER_PAGE)
			so->killed[so->nkilled++] = pos->itemIndex;
	}
	if (!so->started)
	{
		so->started = true;
		first_combination(so, state, dir);
		found = first_position(scan, dir);
	}
	else if (ScanDirectionIsForward(dir))
		found = ++pos->itemIndex <= pos->lastItem || step_page(scan, dir);
	else
		found = --pos->itemIndex >= pos->firstItem || step_page(scan, dir);

	/* this combination's entries are done: on to the next one */
	while (!found && next_combination(so, state, dir))
	{
		kill_items(scan);
		found = first_position(scan, dir);
	}
	if (!found)
		return false;
	return_item(scan);
	return true;
}

int64
forein_getbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;
	ForeinState *state = forein_get_state(scan->indexRelation);
	int64		ntids = 0;

	if (!so->qual_ok)
		return 0;
	so->started = true;
	first_combination(so, state, ForwardScanDirection);
	do
	{
		if (!first_position(scan, ForwardScanDirection))
			continue;
		do
		{
			ForeinScanPos *pos = &so->pos;
			int			i;

			for (i = pos->firstItem; i <= pos->lastItem; i++)
				tbm_add_tuples(tbm, &pos->items[i].heapTid, 1, false);
			ntids += pos->lastItem - pos->firstItem + 1;
		} while (step_page(scan, ForwardScanDirection));
	} while (next_combination(so, state, ForwardScanDirection));
	return ntids;
}

void
forein_endscan(IndexScanDesc scan)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;

	kill_items(scan);
	release_pos(&so->pos);
	if (so->pos.lokey)
		pfree(so->pos.lokey);
	if (so->mark.lokey)
		pfree(so->mark.lokey);
	if (so->pos.hikey)
		pfree(so->pos.hikey);
	if (so->mark.hikey)
		pfree(so->mark.hikey);
	pfree(so->pos.items);
	if (so->mark.items)
		pfree(so->mark.items);
	if (so->killed)
		pfree(so->killed);
	if (so->keycxt != NULL)
		MemoryContextDelete(so->keycxt);
	pfree(so->conds);
	if (so->pos.tuples)
		pfree(so->pos.tuples);
	if (so->mark.tuples)
		pfree(so->mark.tuples);
	pfree(so);
}

/* Copies a scan position (no pin: entries are copies) */
static void
copy_pos(ForeinScanOpaque so, ForeinScanPos *dst, const ForeinScanPos *src)
{
	ForeinScanItem *items;
	int			maxItems;
	char	   *tuples = dst->tuples;

	if (dst->lokey)
		pfree(dst->lokey);
	if (dst->hikey)
		pfree(dst->hikey);
	reserve_items(so, dst, src->lastItem + 1);
	items = dst->items;
	maxItems = dst->maxItems;
	*dst = *src;
	dst->buf = InvalidBuffer;
	dst->items = items;
	dst->maxItems = maxItems;
	dst->tuples = tuples;
	dst->lokey = src->lokey ? forein_make_bound(src->lokey) : NULL;
	dst->hikey = src->hikey ? forein_make_bound(src->hikey) : NULL;
	if (src->lastItem >= 0)
		memcpy(items, src->items, sizeof(ForeinScanItem) * (src->lastItem + 1));
	if (tuples && src->tuples)
		memcpy(tuples, src->tuples, src->nextTupleOffset);
}

void
forein_markpos(IndexScanDesc scan)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;
	int			i;

	if (!so->started)
	{
		so->mark_valid = false;
		return;
	}
	if (so->pos.tuples && so->mark.tuples == NULL)
		so->mark.tuples = MemoryContextAlloc(so->scancxt, BLCKSZ);
	copy_pos(so, &so->mark, &so->pos);
	for (i = 0; i < so->nprefix; i++)
		so->prefix[i].mark = so->prefix[i].cur;
	so->mark_valid = true;
}

void
forein_restrpos(IndexScanDesc scan)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;
	int			i;

	kill_items(scan);
	if (!so->mark_valid)
	{
		/* marked before the first fetch: start over */
		release_pos(&so->pos);
		so->started = false;
		return;
	}
	release_pos(&so->pos);
	copy_pos(so, &so->pos, &so->mark);
	for (i = 0; i < so->nprefix; i++)
		so->prefix[i].cur = so->prefix[i].mark;
	set_range(so, forein_get_state(scan->indexRelation));
}

bool
forein_canreturn(Relation index, int attno)
{
	return true;
}
