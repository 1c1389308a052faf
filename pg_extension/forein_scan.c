/*-------------------------------------------------------------------------
 *
 * forein_scan.c
 *	  Index scans: bounds from the scan keys, page-at-a-time reading in
 *	  either direction, mark/restore, index-only and bitmap scans.
 *
 * Scan keys collapse into one range [lower, upper) of (key, TID) positions
 * (IS NULL selects the NULLs, which sort last).  A page is read under a
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
#include "utils/rel.h"
#include "utils/snapmgr.h"

static int
mode_rank(ForeinTidMode mode)
{
	return mode == FOREIN_TID_BEFORE ? -1 : 1;
}

/* Orders two scan bounds (TID modes BEFORE or AFTER only) */
static int
compare_bounds(ForeinState *state, const ForeinSearchKey *a,
			   const ForeinSearchKey *b)
{
	int			cmp = 0;

	if (a->isnull || b->isnull)
		cmp = (int) a->isnull - (int) b->isnull;
	else
	{
		switch (state->kind)
		{
			case FOREIN_KEY_INT:
			case FOREIN_KEY_DATE:
			case FOREIN_KEY_TIMESTAMP:
				cmp = (a->ival > b->ival) - (a->ival < b->ival);
				break;
			case FOREIN_KEY_UUID:
				cmp = memcmp(DatumGetPointer(a->datum), DatumGetPointer(b->datum), 16);
				break;
			case FOREIN_KEY_GENERIC:
				cmp = DatumGetInt32(FunctionCall2Coll(&state->cmp, state->collation,
													  a->datum, b->datum));
				cmp = (cmp > 0) - (cmp < 0);
				break;
		}
	}
	if (cmp != 0)
		return cmp;
	return mode_rank(a->tidmode) - mode_rank(b->tidmode);
}

static void
set_lower(ForeinScanOpaque so, ForeinState *state, ForeinSearchKey *key)
{
	if (!so->have_lower || compare_bounds(state, key, &so->lower) > 0)
		so->lower = *key;
	so->have_lower = true;
}

static void
set_upper(ForeinScanOpaque so, ForeinState *state, ForeinSearchKey *key)
{
	if (!so->have_upper || compare_bounds(state, key, &so->upper) < 0)
		so->upper = *key;
	so->have_upper = true;
}

/* Narrows [lower, upper) by "column <strategy> key" */
static void
apply_bound(ForeinScanOpaque so, ForeinState *state, StrategyNumber strategy,
			ForeinSearchKey key)
{
	switch (strategy)
	{
		case BTLessStrategyNumber:
			key.tidmode = FOREIN_TID_BEFORE;
			set_upper(so, state, &key);
			break;
		case BTLessEqualStrategyNumber:
			key.tidmode = FOREIN_TID_AFTER;
			set_upper(so, state, &key);
			break;
		case BTEqualStrategyNumber:
			key.tidmode = FOREIN_TID_BEFORE;
			set_lower(so, state, &key);
			key.tidmode = FOREIN_TID_AFTER;
			set_upper(so, state, &key);
			break;
		case BTGreaterEqualStrategyNumber:
			key.tidmode = FOREIN_TID_BEFORE;
			set_lower(so, state, &key);
			break;
		case BTGreaterStrategyNumber:
			key.tidmode = FOREIN_TID_AFTER;
			set_lower(so, state, &key);
			break;
		default:
			elog(ERROR, "forein: unknown strategy %d", strategy);
	}
}

static ForeinState *sort_state;

static int
compare_elems(const void *a, const void *b)
{
	return compare_bounds(sort_state, (const ForeinSearchKey *) a,
						  (const ForeinSearchKey *) b);
}

/*
 * The non-NULL elements of an array scan key as search keys, sorted and
 * distinct.  Returns the count (0: nothing can match).
 */
static int
array_elements(ForeinState *state, ScanKey sk, ForeinSearchKey **out)
{
	ArrayType  *arr = DatumGetArrayTypeP(sk->sk_argument);
	Oid			elemtype = ARR_ELEMTYPE(arr);
	int16		elmlen;
	bool		elmbyval;
	char		elmalign;
	Datum	   *values;
	bool	   *nulls;
	int			n;
	int			i;
	int			m = 0;
	ForeinSearchKey *keys;

	get_typlenbyvalalign(elemtype, &elmlen, &elmbyval, &elmalign);
	deconstruct_array(arr, elemtype, elmlen, elmbyval, elmalign, &values, &nulls, &n);
	keys = palloc(sizeof(ForeinSearchKey) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		ScanKeyData one = *sk;

		if (nulls[i])
			continue;
		one.sk_flags &= ~SK_SEARCHARRAY;
		one.sk_argument = values[i];
		if (!forein_key_from_scankey(state, &one, NULL, &keys[m]) ||
			keys[m].cmp != &state->cmp)
			elog(ERROR, "forein: unsupported array element type %u", elemtype);
		keys[m].tidmode = FOREIN_TID_BEFORE;
		m++;
	}
	pfree(values);
	pfree(nulls);
	if (m > 1)
	{
		int			j = 0;

		sort_state = state;
		qsort(keys, m, sizeof(ForeinSearchKey), compare_elems);
		for (i = 1; i < m; i++)
			if (compare_bounds(state, &keys[i], &keys[j]) != 0)
				keys[++j] = keys[i];
		m = j + 1;
	}
	*out = keys;
	return m;
}

/* Keeps the elements of a that also are in b (both sorted, distinct) */
static int
intersect_elements(ForeinState *state, ForeinSearchKey *a, int na,
				   const ForeinSearchKey *b, int nb)
{
	int			i = 0,
				j = 0,
				m = 0;

	while (i < na && j < nb)
	{
		int			c = compare_bounds(state, &a[i], &b[j]);

		if (c == 0)
			a[m++] = a[i++], j++;
		else if (c < 0)
			i++;
		else
			j++;
	}
	return m;
}

/* Sets [lower, upper) to the current array element */
static void
set_element_bounds(ForeinScanOpaque so)
{
	so->lower = so->elems[so->elem];
	so->lower.tidmode = FOREIN_TID_BEFORE;
	so->upper = so->elems[so->elem];
	so->upper.tidmode = FOREIN_TID_AFTER;
	so->have_lower = so->have_upper = true;
}

/* Collapses the scan keys into [lower, upper) */
static void
preprocess_keys(IndexScanDesc scan)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;
	ForeinState *state = forein_get_state(scan->indexRelation);
	int			i;

	so->qual_ok = true;
	so->have_lower = so->have_upper = false;
	so->want_null = so->want_notnull = false;
	if (so->nelems >= 0 && so->elems)
		pfree(so->elems);
	so->elems = NULL;
	so->nelems = -1;
	so->elem = 0;

	for (i = 0; i < scan->numberOfKeys; i++)
	{
		ScanKey		sk = &scan->keyData[i];
		ForeinSearchKey key;
		FmgrInfo	cmpbuf;

		if ((sk->sk_flags & SK_SEARCHARRAY) && !(sk->sk_flags & SK_ISNULL))
		{
			ForeinSearchKey *elems;
			int			n = array_elements(state, sk, &elems);

			so->want_notnull = true;
			if (n == 0)
			{
				so->qual_ok = false;
				continue;
			}
			if (sk->sk_strategy == BTEqualStrategyNumber)
			{
				if (so->nelems < 0)
				{
					so->elems = elems;
					so->nelems = n;
				}
				else
				{
					so->nelems = intersect_elements(state, so->elems, so->nelems,
													elems, n);
					pfree(elems);
				}
				continue;
			}
			/* x < ANY(a) is x < max(a); x > ANY(a) is x > min(a) */
			key = (sk->sk_strategy == BTLessStrategyNumber ||
				   sk->sk_strategy == BTLessEqualStrategyNumber) ? elems[n - 1] : elems[0];
			pfree(elems);
			apply_bound(so, state, sk->sk_strategy, key);
			continue;
		}

		if (sk->sk_flags & SK_ISNULL)
		{
			if (sk->sk_flags & SK_SEARCHNULL)
				so->want_null = true;
			else if (sk->sk_flags & SK_SEARCHNOTNULL)
				so->want_notnull = true;
			else
				so->qual_ok = false;	/* a comparison with NULL */
			continue;
		}
		if (!forein_key_from_scankey(state, sk, &cmpbuf, &key) ||
			key.cmp != &state->cmp)
			elog(ERROR, "forein: unsupported scan key type %u for index \"%s\"",
				 sk->sk_subtype, RelationGetRelationName(scan->indexRelation));
		so->want_notnull = true;
		apply_bound(so, state, sk->sk_strategy, key);
	}

	if (so->want_null && so->want_notnull)
		so->qual_ok = false;
	else if (so->want_null)
	{
		ForeinSearchKey key;

		forein_key_from_datum(state, (Datum) 0, true, &key);
		so->lower = key;
		so->have_lower = true;
	}
	else if (so->want_notnull)
	{
		ForeinSearchKey key;

		/* comparisons never match NULLs, which sort last: stop before them */
		forein_key_from_datum(state, (Datum) 0, true, &key);
		set_upper(so, state, &key);
	}
	if (so->nelems >= 0)
	{
		/* keep the elements inside the other bounds */
		int			m = 0;

		if (so->want_null)
			so->qual_ok = false;
		for (i = 0; i < so->nelems; i++)
		{
			ForeinSearchKey lo = so->elems[i];
			ForeinSearchKey hi = so->elems[i];

			lo.tidmode = FOREIN_TID_BEFORE;
			hi.tidmode = FOREIN_TID_AFTER;
			if (so->have_lower && compare_bounds(state, &hi, &so->lower) <= 0)
				continue;
			if (so->have_upper && compare_bounds(state, &lo, &so->upper) >= 0)
				continue;
			so->elems[m++] = so->elems[i];
		}
		so->nelems = m;
		if (m == 0)
			so->qual_ok = false;
		else
			set_element_bounds(so);
		return;
	}
	if (so->have_lower && so->have_upper &&
		compare_bounds(state, &so->lower, &so->upper) >= 0)
		so->qual_ok = false;
}

/*
 * Moves to the next array element in direction dir; false when there is
 * none (or no array key).
 */
static bool
next_element(ForeinScanOpaque so, ScanDirection dir)
{
	int			next = so->elem + (ScanDirectionIsBackward(dir) ? -1 : 1);

	if (so->nelems < 0 || next < 0 || next >= so->nelems)
		return false;
	so->elem = next;
	set_element_bounds(so);
	return true;
}

IndexScanDesc
forein_beginscan(Relation r, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(r, nkeys, norderbys);
	ForeinScanOpaque so = palloc0(sizeof(ForeinScanOpaqueData));

	so->pos.buf = InvalidBuffer;
	so->nelems = -1;
	so->pos.items = palloc(sizeof(ForeinScanItem) * MaxIndexTuplesPerPage);
	so->mark.items = palloc(sizeof(ForeinScanItem) * MaxIndexTuplesPerPage);
	scan->xs_itupdesc = RelationGetDescr(r);
	scan->opaque = so;
	return scan;
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

	release_pos(&so->pos);
	so->started = false;
	so->mark_valid = false;
	if (scankey && scan->numberOfKeys > 0)
		memmove(scan->keyData, scankey, scan->numberOfKeys * sizeof(ScanKeyData));
	if (scan->xs_want_itup && so->pos.tuples == NULL)
	{
		so->pos.tuples = palloc(BLCKSZ);
		so->mark.tuples = palloc(BLCKSZ);
	}
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
	pos->right = opaque->right;
	pos->leftmost = opaque->left == InvalidBlockNumber;
	if (pos->lokey)
		pfree(pos->lokey);
	pos->lokey = NULL;
	if (!pos->leftmost)
		pos->lokey = forein_make_bound((IndexTuple) PageGetItem(page, PageGetItemId(page, FOREIN_LOKEY)));
	pos->nextTupleOffset = 0;

	if (ForeinPageIsDeleted(page))
		maxoff = InvalidOffsetNumber;	/* empty; only its right link counts */
	else if (so->have_lower)
		start = forein_binsearch_leaf(state, page, &so->lower);

	for (off = start; off <= maxoff; off++)
	{
		IndexTuple	itup = (IndexTuple) PageGetItem(page, PageGetItemId(page, off));
		ForeinScanItem *item = &pos->items[n];

		if (so->have_upper && forein_compare(state, &so->upper, itup) <= 0)
		{
			end_hit = true;
			break;
		}
		item->heapTid = itup->t_tid;
		item->offnum = off;
		if (scan->xs_want_itup)
		{
			Size		size = IndexTupleSize(itup);

			item->tupleOffset = pos->nextTupleOffset;
			memcpy(pos->tuples + pos->nextTupleOffset, itup, size);
			pos->nextTupleOffset += MAXALIGN(size);
		}
		n++;
	}
	pos->firstItem = 0;
	pos->lastItem = n - 1;
	pos->itemIndex = ScanDirectionIsBackward(dir) ? n - 1 : 0;
	pos->moreRight = !end_hit && opaque->right != InvalidBlockNumber;
	pos->moreLeft = start == FOREIN_FIRST_ITEM && !pos->leftmost &&
		!ForeinPageIsDeleted(page);

	if (pos->hikey)
		pfree(pos->hikey);
	pos->hikey = NULL;
	if (opaque->right != InvalidBlockNumber && !ForeinPageIsDeleted(page))
		pos->hikey = forein_make_bound((IndexTuple) PageGetItem(page, PageGetItemId(page, FOREIN_HIKEY)));

	/*
	 * Keep the pin unless the snapshot is MVCC and the heap is visited for
	 * every entry: VACUUM's cleanup lock then waits for us, so a TID we are
	 * about to return (or an index-only answer) cannot be recycled meanwhile.
	 */
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	if (IsMVCCSnapshot(scan->xs_snapshot) && !scan->xs_want_itup)
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
	return forein_descend(index, state, &key, 0, BUFFER_LOCK_SHARE, NULL, true);
}

/* Reads leaves in direction dir until one has entries; false at the end */
static bool
step_page(IndexScanDesc scan, ScanDirection dir)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;
	ForeinState *state = forein_get_state(scan->indexRelation);
	Relation	index = scan->indexRelation;
	ForeinScanPos *pos = &so->pos;

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
			buf = forein_descend(index, state, &key, 0, BUFFER_LOCK_SHARE, NULL, true);
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
			forein_descend(index, state, &so->lower, 0, BUFFER_LOCK_SHARE, NULL, true) :
			forein_get_endpoint(index, state, false);
	else
		buf = so->have_upper ?
			forein_descend(index, state, &so->upper, 0, BUFFER_LOCK_SHARE, NULL, true) :
			forein_get_endpoint(index, state, true);
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
	ForeinScanPos *pos = &so->pos;

	bool		found;

	if (!so->qual_ok)
		return false;
	if (!so->started)
	{
		so->started = true;
		if (so->nelems > 0)
		{
			so->elem = ScanDirectionIsBackward(dir) ? so->nelems - 1 : 0;
			set_element_bounds(so);
		}
		found = first_position(scan, dir);
	}
	else if (ScanDirectionIsForward(dir))
		found = ++pos->itemIndex <= pos->lastItem || step_page(scan, dir);
	else
		found = --pos->itemIndex >= pos->firstItem || step_page(scan, dir);

	/* this element's entries are done: on to the next one */
	while (!found && next_element(so, dir))
		found = first_position(scan, dir);
	if (!found)
		return false;
	return_item(scan);
	return true;
}

int64
forein_getbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;
	int64		ntids = 0;

	if (!so->qual_ok)
		return 0;
	so->started = true;
	if (so->nelems > 0)
	{
		so->elem = 0;
		set_element_bounds(so);
	}
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
	} while (next_element(so, ForwardScanDirection));
	return ntids;
}

void
forein_endscan(IndexScanDesc scan)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;

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
	pfree(so->mark.items);
	if (so->pos.tuples)
	{
		pfree(so->pos.tuples);
		pfree(so->mark.tuples);
	}
	pfree(so);
}

/* Copies a scan position (no pin: entries are copies) */
static void
copy_pos(ForeinScanPos *dst, const ForeinScanPos *src)
{
	ForeinScanItem *items = dst->items;
	char	   *tuples = dst->tuples;

	if (dst->lokey)
		pfree(dst->lokey);
	if (dst->hikey)
		pfree(dst->hikey);
	*dst = *src;
	dst->buf = InvalidBuffer;
	dst->items = items;
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

	if (!so->started)
	{
		so->mark_valid = false;
		return;
	}
	copy_pos(&so->mark, &so->pos);
	so->mark_elem = so->elem;
	so->mark_valid = true;
}

void
forein_restrpos(IndexScanDesc scan)
{
	ForeinScanOpaque so = (ForeinScanOpaque) scan->opaque;

	if (!so->mark_valid)
	{
		/* marked before the first fetch: start over */
		release_pos(&so->pos);
		so->started = false;
		return;
	}
	release_pos(&so->pos);
	copy_pos(&so->pos, &so->mark);
	if (so->nelems > 0)
	{
		so->elem = so->mark_elem;
		set_element_bounds(so);
	}
}

bool
forein_canreturn(Relation index, int attno)
{
	return true;
}
