/*-------------------------------------------------------------------------
 *
 * forein_utils.c
 *	  Per-index state, key comparison, offload words and page helpers.
 *
 * Keys of the integer family, dates and timestamps compare as int64 without
 * a function call; uuids with memcmp; everything else (text) through the
 * opclass's support function 1 under the column's collation.  The offload
 * word of a key is the 64-bit order-preserving value the switch matches on
 * (shared/DESIGN.md, contract 1).
 *
 * pg_extension/forein_utils.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relscan.h"
#include "catalog/pg_type.h"
#include "forein.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_locale.h"
#include "utils/rel.h"
#include "utils/uuid.h"

#define WORD_SIGN ((uint64) 1 << 63)

static ForeinKeyKind
kind_of_type(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			return FOREIN_KEY_INT;
		case DATEOID:
			return FOREIN_KEY_DATE;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return FOREIN_KEY_TIMESTAMP;
		case UUIDOID:
			return FOREIN_KEY_UUID;
		default:
			return FOREIN_KEY_GENERIC;
	}
}

ForeinState *
forein_get_state(Relation index)
{
	ForeinState *state = (ForeinState *) index->rd_amcache;

	if (state == NULL)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(index->rd_indexcxt);

		state = palloc0(sizeof(ForeinState));
		state->typid = index->rd_opcintype[0];
		state->opfamily = index->rd_opfamily[0];
		state->collation = index->rd_indcollation[0];
		state->kind = kind_of_type(state->typid);
		get_typlenbyval(state->typid, &state->typlen, &state->typbyval);
		fmgr_info_copy(&state->cmp,
					   index_getprocinfo(index, 1, FOREIN_CMP_PROC),
					   CurrentMemoryContext);
		state->tupdesc = RelationGetDescr(index);
		if (state->kind != FOREIN_KEY_GENERIC)
			state->has_words = true;
		else
			state->has_words = (state->typid == TEXTOID &&
								OidIsValid(state->collation) &&
								lc_collate_is_c(state->collation));
		state->root = InvalidBlockNumber;
		MemoryContextSwitchTo(oldcxt);
		index->rd_amcache = state;
	}
	return state;
}

/* int64 value of a key of the INT/DATE/TIMESTAMP kinds, given its type */
static int64
int_value(Datum value, Oid typid)
{
	switch (typid)
	{
		case INT2OID:
			return DatumGetInt16(value);
		case INT4OID:
			return DatumGetInt32(value);
		case INT8OID:
			return DatumGetInt64(value);
		case DATEOID:
			return DatumGetDateADT(value);
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return DatumGetInt64(value);
		default:
			elog(ERROR, "forein: unexpected key type %u", typid);
			return 0;			/* keep compiler quiet */
	}
}

static uint64
bytes_word(const unsigned char *p, Size len)
{
	uint64		w = 0;
	Size		i;

	for (i = 0; i < 8; i++)
		w = (w << 8) | (i < len ? p[i] : 0);
	return w;
}

/* The offload word of a non-NULL key value */
static uint64
value_word(ForeinState *state, ForeinSearchKey *key)
{
	switch (state->kind)
	{
		case FOREIN_KEY_INT:
		case FOREIN_KEY_DATE:
		case FOREIN_KEY_TIMESTAMP:
			return (uint64) key->ival ^ WORD_SIGN;
		case FOREIN_KEY_UUID:
			return bytes_word(DatumGetUUIDP(key->datum)->data, UUID_LEN);
		case FOREIN_KEY_GENERIC:
			if (state->has_words)
			{
				text	   *t = DatumGetTextPP(key->datum);
				uint64		w = bytes_word((unsigned char *) VARDATA_ANY(t),
										   VARSIZE_ANY_EXHDR(t));

				if ((Pointer) t != DatumGetPointer(key->datum))
					pfree(t);
				return w;
			}
			return 0;
	}
	return 0;
}

static void
set_value(ForeinState *state, ForeinSearchKey *key, Datum value, Oid typid)
{
	switch (state->kind)
	{
		case FOREIN_KEY_INT:
		case FOREIN_KEY_DATE:
		case FOREIN_KEY_TIMESTAMP:
			key->ival = int_value(value, typid);
			break;
		case FOREIN_KEY_UUID:
		case FOREIN_KEY_GENERIC:
			key->datum = value;
			break;
	}
	key->word = value_word(state, key);
}

void
forein_key_from_datum(ForeinState *state, Datum value, bool isnull,
					  ForeinSearchKey *key)
{
	memset(key, 0, sizeof(*key));
	key->cmp = &state->cmp;
	key->tidmode = FOREIN_TID_BEFORE;
	if (isnull)
	{
		key->isnull = true;
		key->word = PG_UINT64_MAX;
		return;
	}
	set_value(state, key, value, state->typid);
}

/*
 * Builds a search key from a comparison scan key.  cmpbuf receives the
 * cross-type comparison proc for the generic kind.  Returns false if the
 * argument's type cannot be compared (never for the shipped opclasses).
 */
bool
forein_key_from_scankey(ForeinState *state, ScanKey sk, FmgrInfo *cmpbuf,
						ForeinSearchKey *key)
{
	Oid			argtype = OidIsValid(sk->sk_subtype) ? sk->sk_subtype : state->typid;

	memset(key, 0, sizeof(*key));
	key->tidmode = FOREIN_TID_BEFORE;
	key->cmp = &state->cmp;
	if (state->kind == FOREIN_KEY_INT)
	{
		if (argtype != INT2OID && argtype != INT4OID && argtype != INT8OID)
			return false;
	}
	else if (argtype != state->typid)
	{
		Oid			proc;

		if (state->kind != FOREIN_KEY_GENERIC)
			return false;
		proc = get_opfamily_proc(state->opfamily, state->typid, argtype,
								 FOREIN_CMP_PROC);
		if (!OidIsValid(proc) || cmpbuf == NULL)
			return false;
		fmgr_info(proc, cmpbuf);
		key->cmp = cmpbuf;
	}
	set_value(state, key, sk->sk_argument, argtype);
	return true;
}

static inline char *
tuple_data(IndexTuple itup)
{
	return (char *) itup + IndexInfoFindDataOffset(itup->t_info);
}

/* The key of an index tuple as a search key at exactly its heap TID */
void
forein_key_from_tuple(ForeinState *state, IndexTuple itup,
					  ForeinSearchKey *key)
{
	memset(key, 0, sizeof(*key));
	key->cmp = &state->cmp;
	key->tidmode = FOREIN_TID_EXACT;
	key->tid = itup->t_tid;
	if (IndexTupleHasNulls(itup))
	{
		key->isnull = true;
		key->word = PG_UINT64_MAX;
		return;
	}
	set_value(state, key,
			  fetch_att(tuple_data(itup), state->typbyval, state->typlen),
			  state->typid);
}

/* The offload word of a tuple's key */
uint64
forein_tuple_word(ForeinState *state, IndexTuple itup)
{
	ForeinSearchKey key;

	forein_key_from_tuple(state, itup, &key);
	return key.word;
}

static inline int
compare_tid(const ForeinSearchKey *key, ItemPointer tid)
{
	switch (key->tidmode)
	{
		case FOREIN_TID_BEFORE:
			return ForeinTidIsMinimal(tid) ? 0 : -1;
		case FOREIN_TID_AFTER:
			return 1;
		case FOREIN_TID_EXACT:
			return ItemPointerCompare((ItemPointer) &key->tid, tid);
		case FOREIN_TID_JUST_BEFORE:
			return ItemPointerCompare((ItemPointer) &key->tid, tid) <= 0 ? -1 : 1;
	}
	return 0;
}

/* Three-way comparison of a search key with an index tuple's (key, TID) */
int
forein_compare(ForeinState *state, const ForeinSearchKey *key, IndexTuple itup)
{
	bool		tnull = IndexTupleHasNulls(itup);
	int			cmp = 0;

	if (key->unbounded)
		return -1;
	if (key->isnull || tnull)
	{
		if (!tnull)
			return 1;			/* NULL sorts after every value */
		if (!key->isnull)
			return -1;
		return compare_tid(key, &itup->t_tid);
	}

	switch (state->kind)
	{
		case FOREIN_KEY_INT:
		case FOREIN_KEY_DATE:
		case FOREIN_KEY_TIMESTAMP:
			{
				int64		v;

				if (state->typlen == 2)
					v = *(int16 *) tuple_data(itup);
				else if (state->typlen == 4)
					v = *(int32 *) tuple_data(itup);
				else
					v = *(int64 *) tuple_data(itup);
				cmp = (key->ival > v) - (key->ival < v);
				break;
			}
		case FOREIN_KEY_UUID:
			cmp = memcmp(DatumGetUUIDP(key->datum)->data, tuple_data(itup),
						 UUID_LEN);
			break;
		case FOREIN_KEY_GENERIC:
			{
				/* proc(index value, argument); we want argument - value */
				int32		r = DatumGetInt32(FunctionCall2Coll(key->cmp,
																state->collation,
																fetch_att(tuple_data(itup),
																		  state->typbyval,
																		  state->typlen),
																key->datum));

				cmp = (r < 0) - (r > 0);
				break;
			}
	}
	if (cmp != 0)
		return cmp;
	return compare_tid(key, &itup->t_tid);
}

int
forein_compare_tuples(ForeinState *state, IndexTuple a, IndexTuple b)
{
	ForeinSearchKey key;

	forein_key_from_tuple(state, a, &key);
	return forein_compare(state, &key, b);
}

/* lo <= key: the page's low key does not exceed the search key */
bool
forein_page_lo_le(ForeinState *state, Page page, const ForeinSearchKey *key)
{
	if (ForeinPageIsLeftmost(page))
		return true;
	return forein_compare(state, key,
						  (IndexTuple) PageGetItem(page, PageGetItemId(page, FOREIN_LOKEY))) >= 0;
}

/* hi <= key: the key lies right of the page (move right) */
bool
forein_page_hi_le(ForeinState *state, Page page, const ForeinSearchKey *key)
{
	if (ForeinPageIsRightmost(page))
		return false;
	return forein_compare(state, key,
						  (IndexTuple) PageGetItem(page, PageGetItemId(page, FOREIN_HIKEY))) >= 0;
}

/*
 * A bound's offload word, as the first word the bound owns: a bound with a
 * real heap TID leaves its key's word to the left neighbour, which holds the
 * entries of that key with smaller TIDs.
 */
static uint64
bound_word(ForeinState *state, IndexTuple bound, bool *overflow)
{
	uint64		w = forein_tuple_word(state, bound);

	*overflow = false;
	if (ForeinTidIsMinimal(&bound->t_tid))
		return w;
	if (w == PG_UINT64_MAX)
		*overflow = true;
	return w + 1;
}

/* The page's word interval [lo, hi) (hi_inf: through 2^64 - 1) */
void
forein_page_interval(ForeinState *state, Page page, uint64 *lo, uint64 *hi,
					 bool *hi_inf)
{
	bool		overflow;

	*lo = 0;
	if (!ForeinPageIsLeftmost(page))
	{
		*lo = bound_word(state, (IndexTuple) PageGetItem(page, PageGetItemId(page, FOREIN_LOKEY)),
						 &overflow);
		if (overflow)
			*lo = PG_UINT64_MAX;
	}
	*hi_inf = ForeinPageIsRightmost(page);
	*hi = 0;
	if (!*hi_inf)
	{
		*hi = bound_word(state, (IndexTuple) PageGetItem(page, PageGetItemId(page, FOREIN_HIKEY)),
						 &overflow);
		if (overflow)
			*hi_inf = true;
	}
}

/* A copy of a tuple's key and TID, without a downlink's trailer */
IndexTuple
forein_make_bound(IndexTuple itup)
{
	Size		size = IndexTupleSize(itup);
	IndexTuple	bound;

	if (itup->t_info & FOREIN_DOWNLINK_BIT)
		size -= FOREIN_DOWNLINK_EXTRA;
	bound = palloc(size);
	memcpy(bound, itup, size);
	bound->t_info = (itup->t_info & ~(INDEX_SIZE_MASK | FOREIN_DOWNLINK_BIT)) | size;
	return bound;
}

/* A downlink: the separator's key and TID plus the child block trailer */
IndexTuple
forein_make_downlink(IndexTuple sep, BlockNumber child)
{
	IndexTuple	bound = forein_make_bound(sep);
	Size		keysize = IndexTupleSize(bound);
	Size		size = keysize + FOREIN_DOWNLINK_EXTRA;
	IndexTuple	itup = palloc0(size);

	memcpy(itup, bound, keysize);
	itup->t_info = (bound->t_info & ~INDEX_SIZE_MASK) | size | FOREIN_DOWNLINK_BIT;
	FOREIN_DOWNLINK(itup) = child;
	pfree(bound);
	return itup;
}

/* Whether two tuples hold equal keys (TIDs ignored) */
bool
forein_keys_equal(ForeinState *state, IndexTuple a, IndexTuple b)
{
	ForeinSearchKey key;

	forein_key_from_tuple(state, a, &key);
	key.tidmode = FOREIN_TID_AFTER;
	if (forein_compare(state, &key, b) <= 0)
		return false;			/* a < b */
	key.tidmode = FOREIN_TID_BEFORE;
	return forein_compare(state, &key, b) <= 0;
}

/* The stand-in bound of a leftmost/rightmost page: a NULL key */
IndexTuple
forein_make_placeholder(ForeinState *state)
{
	Datum		value = (Datum) 0;
	bool		isnull = true;
	IndexTuple	itup = index_form_tuple(state->tupdesc, &value, &isnull);

	ItemPointerSet(&itup->t_tid, 0, 0);
	return itup;
}

Size
forein_page_free(Page page)
{
	return PageGetFreeSpace(page);
}

void
forein_init_page(Page page, uint16 flags, uint16 level)
{
	ForeinPageOpaque opaque;

	PageInit(page, BLCKSZ, sizeof(ForeinPageOpaqueData));
	opaque = ForeinPageGetOpaque(page);
	opaque->left = InvalidBlockNumber;
	opaque->right = InvalidBlockNumber;
	opaque->level = level;
	opaque->flags = flags;
	opaque->page_id = FOREIN_PAGE_ID;
}

void
forein_init_metapage(Page page, BlockNumber root, uint32 level, int fillfactor)
{
	ForeinMetaPageData *meta;

	forein_init_page(page, FOREIN_META, 0);
	meta = ForeinPageGetMeta(page);
	meta->magic = FOREIN_MAGIC;
	meta->version = FOREIN_VERSION;
	meta->root = root;
	meta->root_level = level;
	meta->fillfactor = fillfactor;
	((PageHeader) page)->pd_lower = ((char *) meta + sizeof(ForeinMetaPageData)) - (char *) page;
}

/* Errors out on a page that is not a forein page (corruption) */
void
forein_check_page(Relation index, Page page, BlockNumber blkno)
{
	if (PageIsNew(page))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" contains unexpected zero page at block %u",
						RelationGetRelationName(index), blkno),
				 errhint("Please REINDEX it.")));
	if (PageGetSpecialSize(page) != MAXALIGN(sizeof(ForeinPageOpaqueData)) ||
		ForeinPageGetOpaque(page)->page_id != FOREIN_PAGE_ID)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" contains corrupted page at block %u",
						RelationGetRelationName(index), blkno),
				 errhint("Please REINDEX it.")));
}

Buffer
forein_getbuf(Relation index, BlockNumber blkno, int access)
{
	Buffer		buf = ReadBuffer(index, blkno);

	LockBuffer(buf, access);
	forein_check_page(index, BufferGetPage(buf), blkno);
	return buf;
}

/*
 * An exclusively locked, unused page: a recyclable page from the free space
 * map if there is one, else a new block at the end.  Unreachable by anyone
 * else, so locking it while holding other locks cannot deadlock.
 */
Buffer
forein_newbuf(Relation index)
{
	Buffer		buf;
	bool		needLock;

	for (;;)
	{
		BlockNumber blkno = GetFreeIndexPage(index);

		if (blkno == InvalidBlockNumber)
			break;
		buf = ReadBuffer(index, blkno);
		if (ConditionalLockBuffer(buf))
		{
			if (forein_page_recyclable(BufferGetPage(buf)))
				return buf;
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		}
		ReleaseBuffer(buf);
	}

	needLock = !RELATION_IS_LOCAL(index);
	if (needLock)
		LockRelationForExtension(index, ExclusiveLock);
	buf = ReadBuffer(index, P_NEW);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	if (needLock)
		UnlockRelationForExtension(index, ExclusiveLock);
	return buf;
}

void
forein_relbuf(Buffer buf)
{
	UnlockReleaseBuffer(buf);
}

/*
 * The root from the metapage, cached per relcache entry.  A cached root that
 * has since been split is still a correct place to start (it is the
 * leftmost node of its level and never deleted; descents move right), so
 * callers re-read the metapage only when they see it lost FOREIN_ROOT.
 */
void
forein_get_root(Relation index, BlockNumber *root, uint32 *level)
{
	ForeinState *state = forein_get_state(index);
	Buffer		metabuf;
	Page		metapage;
	ForeinMetaPageData *meta;

	metabuf = ReadBuffer(index, FOREIN_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	metapage = BufferGetPage(metabuf);
	meta = ForeinPageGetMeta(metapage);
	if (PageIsNew(metapage) || meta->magic != FOREIN_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not a forein index or its metapage is corrupted",
						RelationGetRelationName(index))));
	if (meta->version != FOREIN_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" has version %u, expected %u",
						RelationGetRelationName(index), meta->version,
						FOREIN_VERSION),
				 errhint("REINDEX it.")));
	*root = meta->root;
	*level = meta->root_level;
	state->root = meta->root;
	state->root_level = meta->root_level;
	UnlockReleaseBuffer(metabuf);
}
