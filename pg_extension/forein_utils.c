/*-------------------------------------------------------------------------
 *
 * forein_utils.c
 *	  Per-index state, key comparison, offload words and page helpers.
 *
 * Keys of the integer family, dates and timestamps compare as int64 without
 * a function call; uuids with memcmp; everything else through the
 * opclass's support function 1 under the column's collation, and keys of
 * another type of the column's family through the family's cross-type
 * proc.  The offload word of a key is the 64-bit order-preserving value the
 * switch matches on (docs/design.md, contract 1) of its leading column:
 * forein/word.h's definitions, shared with the engine, for the types the
 * engine has, forein_words.c's for the others (a text key's is the first 8
 * bytes of its sort key under the index's collation, like btree's
 * abbreviated keys).
 *
 * pg_extension/forein_utils.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relscan.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "pgstat.h"
#include "port/pg_bitutils.h"
#include "forein.h"
#include "forein_xlog.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/uuid.h"

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

static void
init_column(ForeinColumn *col, Oid typid, Oid collation)
{
	col->typid = typid;
	col->collation = collation;
	col->kind = kind_of_type(typid);
	get_typlenbyval(typid, &col->typlen, &col->typbyval);
}

/*
 * The key-type part of a state for a one-column key: kind, type, collation
 * and how words are made (by forein_words.c, from the type, collation and
 * operator family).  Enough for forein_datum_word (forein_debug_word uses it
 * alone).
 */
void
forein_init_key_state(ForeinState *state, Oid typid, Oid collation, Oid opfamily)
{
	state->nkeys = state->natts = 1;
	init_column(&state->cols[0], typid, collation);
	state->cols[0].opfamily = opfamily;
	forein_words_init(&state->words, typid, collation, opfamily);
	state->has_words = state->words.has_words;
	state->no_words_reason = state->words.no_words_reason;
}

ForeinState *
forein_get_state(Relation index)
{
	ForeinState *state = (ForeinState *) index->rd_amcache;

	if (state == NULL)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(index->rd_indexcxt);
		int			i;

		state = palloc0(ForeinStateSize(IndexRelationGetNumberOfKeyAttributes(index)));
		forein_init_key_state(state, index->rd_opcintype[0],
							  index->rd_indcollation[0], index->rd_opfamily[0]);
		state->nkeys = IndexRelationGetNumberOfKeyAttributes(index);
		state->natts = IndexRelationGetNumberOfAttributes(index);
		for (i = 0; i < state->nkeys; i++)
		{
			ForeinColumn *col = &state->cols[i];

			if (i > 0)
				init_column(col, index->rd_opcintype[i], index->rd_indcollation[i]);
			col->opfamily = index->rd_opfamily[i];
			col->desc = (index->rd_indoption[i] & INDOPTION_DESC) != 0;
			col->nulls_first = (index->rd_indoption[i] & INDOPTION_NULLS_FIRST) != 0;
			fmgr_info_copy(&col->cmp,
						   index_getprocinfo(index, i + 1, FOREIN_CMP_PROC),
						   CurrentMemoryContext);
		}
		state->tupdesc = RelationGetDescr(index);
		state->root = InvalidBlockNumber;
		state->cache_cxt = index->rd_indexcxt;
		MemoryContextSwitchTo(oldcxt);
		index->rd_amcache = state;
	}
	return state;
}

/*
 * The comparison proc of column col against a value of argtype, from the
 * column's operator family (cached in the state); NULL if there is none.
 */
static FmgrInfo *
cross_proc(ForeinState *state, ForeinColumn *col, Oid argtype)
{
	Oid			proc;
	int			i;
	MemoryContext oldcxt;

	for (i = 0; i < col->ncross; i++)
		if (col->cross_type[i] == argtype)
			return &col->cross_cmp[i];
	proc = get_opfamily_proc(col->opfamily, col->typid, argtype, FOREIN_CMP_PROC);
	if (!OidIsValid(proc) || col->ncross == FOREIN_CROSS_CACHE ||
		state->cache_cxt == NULL)
		return NULL;
	oldcxt = MemoryContextSwitchTo(state->cache_cxt);
	fmgr_info(proc, &col->cross_cmp[col->ncross]);
	MemoryContextSwitchTo(oldcxt);
	col->cross_type[col->ncross] = argtype;
	return &col->cross_cmp[col->ncross++];
}

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

/* The offload word of a non-NULL leading-column value (ASC order) */
static uint64
value_word(ForeinState *state, const ForeinKeyValue *kv)
{
	switch (state->cols[0].kind)
	{
		case FOREIN_KEY_INT:
			return forein_word_int64(kv->ival);
		case FOREIN_KEY_DATE:
			return forein_word_date((int32) kv->ival);
		case FOREIN_KEY_TIMESTAMP:
			return forein_word_timestamp(kv->ival);
		case FOREIN_KEY_UUID:
			return forein_word_uuid(DatumGetUUIDP(kv->datum)->data);
		case FOREIN_KEY_GENERIC:
			return forein_words_value(&state->words, kv->datum);
	}
	return 0;
}

/*
 * Sets the key's word from its leading value: the column's word, flipped
 * for a DESC column, with NULLs at the end their column sorts them to, so
 * that words never contradict the index's order.
 */
static void
set_word(ForeinState *state, ForeinSearchKey *key)
{
	const ForeinColumn *col = &state->cols[0];
	const ForeinKeyValue *kv = &key->vals[0];

	key->has_word = false;
	key->word = 0;
	if (key->unbounded || key->nvals == 0 || kv->use_proc)
		return;
	key->has_word = state->has_words;
	if (kv->isnull)
		key->word = col->nulls_first ? 0 : PG_UINT64_MAX;
	else
	{
		key->word = value_word(state, kv);
		if (col->desc)
			key->word = ~key->word;
	}
}

/*
 * A search value of column i from a non-NULL argument of type argtype.
 * Integer-family arguments compare as int64; an argument of the column's
 * own type by the column's kind; any other type through the cross-type
 * proc of the column's family (false when it has none).
 */
bool
forein_value_from_arg(ForeinState *state, int i, Datum value, Oid argtype,
					  ForeinKeyValue *kv)
{
	ForeinColumn *col = &state->cols[i];

	memset(kv, 0, sizeof(*kv));
	if (!OidIsValid(argtype))
		argtype = col->typid;
	if (col->kind == FOREIN_KEY_INT &&
		(argtype == INT2OID || argtype == INT4OID || argtype == INT8OID))
	{
		kv->ival = int_value(value, argtype);
		return true;
	}
	if (argtype != col->typid)
	{
		kv->cmp = cross_proc(state, col, argtype);
		kv->use_proc = true;
		kv->datum = value;
		return kv->cmp != NULL;
	}
	switch (col->kind)
	{
		case FOREIN_KEY_INT:
		case FOREIN_KEY_DATE:
		case FOREIN_KEY_TIMESTAMP:
			kv->ival = int_value(value, argtype);
			break;
		case FOREIN_KEY_UUID:
		case FOREIN_KEY_GENERIC:
			kv->datum = value;
			break;
	}
	return true;
}

/* A one-value search key (column 0), TID mode BEFORE */
void
forein_key_from_datum(ForeinState *state, Datum value, bool isnull,
					  ForeinSearchKey *key)
{
	key->unbounded = false;
	key->nvals = 1;
	key->tidmode = FOREIN_TID_BEFORE;
	ItemPointerSetInvalid(&key->tid);
	memset(&key->vals[0], 0, sizeof(ForeinKeyValue));
	if (isnull)
		key->vals[0].isnull = true;
	else
		(void) forein_value_from_arg(state, 0, value, state->cols[0].typid,
									 &key->vals[0]);
	set_word(state, key);
}

/* Recomputes a search key's word after its values were set by hand */
void
forein_key_set_word(ForeinState *state, ForeinSearchKey *key)
{
	set_word(state, key);
}

/* The key of an index tuple as a search key at exactly its heap TID */
void
forein_key_from_tuple(ForeinState *state, IndexTuple itup,
					  ForeinSearchKey *key)
{
	int			i;

	key->unbounded = false;
	key->nvals = state->nkeys;
	key->tidmode = FOREIN_TID_EXACT;
	key->tid = itup->t_tid;
	for (i = 0; i < state->nkeys; i++)
	{
		ForeinKeyValue *kv = &key->vals[i];
		bool		isnull;
		Datum		value = index_getattr(itup, i + 1, state->tupdesc, &isnull);

		memset(kv, 0, sizeof(*kv));
		kv->isnull = isnull;
		if (!isnull)
			(void) forein_value_from_arg(state, i, value, state->cols[i].typid, kv);
	}
	set_word(state, key);
}

/* The offload word of a tuple's key (its leading column's) */
uint64
forein_tuple_word(ForeinState *state, IndexTuple itup)
{
	ForeinSearchKey key;
	bool		isnull;
	Datum		value = index_getattr(itup, 1, state->tupdesc, &isnull);

	forein_key_from_datum(state, value, isnull, &key);
	return key.word;
}

/* The offload word of a non-NULL value of the index's leading key type */
uint64
forein_datum_word(ForeinState *state, Datum value)
{
	ForeinSearchKey key;

	forein_key_from_datum(state, value, false, &key);
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

/* int64 value of a stored INT/DATE/TIMESTAMP-kind datum */
static inline int64
stored_int(const ForeinColumn *col, Datum value)
{
	if (col->typlen == 2)
		return DatumGetInt16(value);
	if (col->typlen == 4)
		return DatumGetInt32(value);
	return DatumGetInt64(value);
}

/*
 * Three-way comparison of a search value with a stored non-NULL value of
 * column col, in the values' own (ascending) order.
 */
int
forein_compare_value(const ForeinColumn *col, const ForeinKeyValue *kv,
					 Datum stored)
{
	int32		r;

	if (kv->use_proc)
	{
		/* proc(stored value, argument); we want argument - stored */
		r = DatumGetInt32(FunctionCall2Coll(kv->cmp, col->collation, stored,
											kv->datum));
		return (r < 0) - (r > 0);
	}
	switch (col->kind)
	{
		case FOREIN_KEY_INT:
		case FOREIN_KEY_DATE:
		case FOREIN_KEY_TIMESTAMP:
			{
				int64		v = stored_int(col, stored);

				return (kv->ival > v) - (kv->ival < v);
			}
		case FOREIN_KEY_UUID:
			r = memcmp(DatumGetUUIDP(kv->datum)->data,
					   DatumGetUUIDP(stored)->data, UUID_LEN);
			return (r > 0) - (r < 0);
		case FOREIN_KEY_GENERIC:
			r = DatumGetInt32(FunctionCall2Coll((FmgrInfo *) &col->cmp,
												col->collation, stored,
												kv->datum));
			return (r < 0) - (r > 0);
	}
	return 0;
}

/* A search value against a stored value (either NULL), in index order */
static inline int
compare_column(const ForeinColumn *col, const ForeinKeyValue *kv,
			   Datum stored, bool snull)
{
	int			cmp;

	if (kv->isnull || snull)
	{
		if (kv->isnull && snull)
			return 0;
		/* a NULL search value against a value, or the other way round */
		cmp = kv->isnull ? 1 : -1;
		return col->nulls_first ? -cmp : cmp;
	}
	cmp = forein_compare_value(col, kv, stored);
	return col->desc ? -cmp : cmp;
}

/*
 * Three-way comparison of a search key with an index tuple's (key, TID):
 * key columns in index order (INCLUDE columns never count), then the heap
 * TID.  A key with fewer values than key columns is a prefix: before or
 * after every tuple that shares it.
 */
int
forein_compare(ForeinState *state, const ForeinSearchKey *key, IndexTuple itup)
{
	int			i;

	if (key->unbounded)
		return -1;
	for (i = 0; i < key->nvals; i++)
	{
		bool		snull;
		Datum		stored = index_getattr(itup, i + 1, state->tupdesc, &snull);
		int			cmp = compare_column(&state->cols[i], &key->vals[i], stored, snull);

		if (cmp != 0)
			return cmp;
	}
	if (key->nvals < state->nkeys)
		return key->tidmode == FOREIN_TID_BEFORE ? -1 : 1;
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
 * The page's word interval [lo, hi) (hi_inf: through 2^64 - 1), by
 * forein/word.h's rule.  A bound owns its key's word when its heap TID is
 * minimal; a bound with a real TID leaves the word to the left neighbour,
 * which holds the entries of that key with smaller TIDs.
 */
void
forein_page_interval(ForeinState *state, Page page, uint64 *lo, uint64 *hi,
					 bool *hi_inf)
{
	bool		has_lo = !ForeinPageIsLeftmost(page);
	bool		has_hi = !ForeinPageIsRightmost(page);
	IndexTuple	lob = NULL;
	IndexTuple	hib = NULL;
	ForeinWordInterval iv;

	if (has_lo)
		lob = (IndexTuple) PageGetItem(page, PageGetItemId(page, FOREIN_LOKEY));
	if (has_hi)
		hib = (IndexTuple) PageGetItem(page, PageGetItemId(page, FOREIN_HIKEY));
	/*
	 * A bound owns its word only if nothing of that word sorts before it:
	 * a minimal TID with no later key columns (with more columns, smaller
	 * values of the later columns may share the leading value).
	 */
	iv = forein_word_interval(has_lo, has_lo ? forein_tuple_word(state, lob) : 0,
							  has_lo && state->nkeys == 1 &&
							  ForeinTidIsMinimal(&lob->t_tid),
							  has_hi, has_hi ? forein_tuple_word(state, hib) : 0,
							  has_hi && state->nkeys == 1 &&
							  ForeinTidIsMinimal(&hib->t_tid));
	*lo = iv.lo;
	*hi = iv.hi;
	*hi_inf = iv.hi_inf;
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

/* The stand-in bound of a leftmost/rightmost page: all NULLs */
IndexTuple
forein_make_placeholder(ForeinState *state)
{
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	IndexTuple	itup;
	int			i;

	for (i = 0; i < state->natts; i++)
	{
		values[i] = (Datum) 0;
		isnull[i] = true;
	}
	itup = index_form_tuple(state->tupdesc, values, isnull);

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
	opaque->first_child = InvalidBlockNumber;
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
 * Where each block of a hinted index was last found in shared buffers (may
 * be out of date: ReadRecentBuffer checks).  One direct array per index,
 * indexed by block number, four bytes a block: every block keeps its entry,
 * yet the array stays small enough for the CPU cache (100 kB for pgbench's
 * accounts index at scale 100).  A hashed table of 16,384 entries shared by
 * all indexes held about half of that index's 26,000 leaves, and each miss
 * paid the shared buffer table's lookup.  A backend keeps the arrays of its
 * FOREIN_RECENT_INDEXES most recently hinted indexes, keyed by relfilenode
 * (nothing tied to a relcache entry that could leak when one is rebuilt),
 * each of at most FOREIN_RECENT_MAX_BLOCKS entries; later blocks are read
 * without one.
 */
typedef struct ForeinRecentIndex
{
	Oid			relnode;		/* relfilenode; InvalidOid: unused */
	uint32		nblocks;		/* entries in bufs */
	uint64		last_use;
	Buffer	   *bufs;			/* InvalidBuffer: not known */
} ForeinRecentIndex;

#define FOREIN_RECENT_INDEXES		4
#define FOREIN_RECENT_MAX_BLOCKS	(1 << 20)	/* 4 MB: an 8 GB index */

static ForeinRecentIndex recent_indexes[FOREIN_RECENT_INDEXES];
static uint64 recent_clock = 0;

/* The entry of block blkno of the index with relfilenode relnode, or NULL */
static Buffer *
recent_entry(Oid relnode, BlockNumber blkno)
{
	ForeinRecentIndex *ri = NULL;
	ForeinRecentIndex *victim = &recent_indexes[0];
	int			i;

	if (blkno >= FOREIN_RECENT_MAX_BLOCKS)
		return NULL;
	for (i = 0; i < FOREIN_RECENT_INDEXES && ri == NULL; i++)
	{
		if (recent_indexes[i].relnode == relnode)
			ri = &recent_indexes[i];
		else if (recent_indexes[i].last_use < victim->last_use)
			victim = &recent_indexes[i];
	}
	if (ri == NULL)
	{
		/* the least recently used array is forgotten, its memory reused */
		ri = victim;
		ri->relnode = relnode;
		if (ri->bufs != NULL)
			memset(ri->bufs, 0, ri->nblocks * sizeof(Buffer));
	}
	ri->last_use = ++recent_clock;
	if (blkno >= ri->nblocks)
	{
		uint32		n = Min(Max(pg_nextpower2_32(blkno + 1), 1024),
							FOREIN_RECENT_MAX_BLOCKS);

		StaticAssertStmt(InvalidBuffer == 0, "arrays are zeroed to InvalidBuffer");
		if (ri->bufs == NULL)
			ri->bufs = MemoryContextAllocZero(TopMemoryContext, n * sizeof(Buffer));
		else
		{
			ri->bufs = repalloc(ri->bufs, n * sizeof(Buffer));
			memset(ri->bufs + ri->nblocks, 0, (n - ri->nblocks) * sizeof(Buffer));
		}
		ri->nblocks = n;
	}
	return &ri->bufs[blkno];
}

/*
 * Starts loading the two cache lines of a page that a hinted read checks
 * first: the header (with the first line pointers) and the last line, with
 * the special space (at a fixed offset on forein pages, so its load need not
 * wait for pd_special) and, on a page written in key order, the first
 * item's tuple.  Only an address is computed: a prefetch never faults, and
 * a useless one costs a cache line.
 */
static inline void
prefetch_page_ends(Buffer buf)
{
#if defined(__GNUC__) || defined(__clang__)
	char	   *page = (char *) BufferGetBlock(buf);

	__builtin_prefetch(page);
	__builtin_prefetch(page + BLCKSZ - 1);
#endif
}

/*
 * Pins a node named by a hint (unlocked).  The hint names the block before
 * anything of it was touched, and btree's descent reaches a leaf through
 * upper pages that stay in the CPU cache, so a hinted read is a chain of
 * cache misses unless they overlap.  Two things make them overlap: this
 * backend remembers which buffer held each hinted block, and
 * ReadRecentBuffer (as recovery uses a WAL record's recent buffer) pins it
 * without the shared buffer table's lookup and partition lock, after
 * checking that the buffer still holds the block; and the page's header and
 * special space are prefetched before the pin and the content lock.
 */
Buffer
forein_read_hinted(Relation index, BlockNumber blkno)
{
#if PG_VERSION_NUM >= 160000
	RelFileLocator rnode = index->rd_locator;
	Oid			relnode = rnode.relNumber;
#else
	RelFileNode rnode = index->rd_node;
	Oid			relnode = rnode.relNode;
#endif
	Buffer	   *recent;
	Buffer		buf;

	if (RelationUsesLocalBuffers(index))
		return ReadBuffer(index, blkno);
	recent = recent_entry(relnode, blkno);
	if (recent != NULL && BufferIsValid(*recent))
	{
		prefetch_page_ends(*recent);
		if (ReadRecentBuffer(rnode, MAIN_FORKNUM, blkno, *recent))
		{
			/* the statistics ReadBuffer keeps (ReadRecentBuffer counts usage) */
			pgstat_count_buffer_read(index);
			pgstat_count_buffer_hit(index);
			return *recent;
		}
	}
	buf = ReadBuffer(index, blkno);
	prefetch_page_ends(buf);
	if (recent != NULL)
		*recent = buf;
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
			Page		page = BufferGetPage(buf);

			if (forein_page_recyclable(page))
			{
				if (!PageIsNew(page))
				{
					FullTransactionId stamp;

					memcpy(&stamp, PageGetItem(page, PageGetItemId(page, FOREIN_DELETED_STAMP)),
						   sizeof(stamp));
					forein_log_reuse_page(index, blkno, stamp);
				}
				return buf;
			}
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
 * LP_DEAD marks on a leaf's entries (kill_items in forein_scan.c) are hints
 * written without WAL of their own.  Generic WAL's replay check compares
 * whole pages (no mask for line pointer flags, unlike btree_mask), so a
 * leaf changed under WAL must bring its marks to the standby in the same
 * record, or the standby's copy differs and replay stops with
 * "inconsistent page found".  Harmless there: standby scans ignore marks,
 * and a transaction begun after promotion sees the deletes that made them.
 */
/* A leaf (not the metapage, whose level is 0 too, nor a deleted page) */
/* The first marked entry of a leaf before offset `before`, or InvalidOffsetNumber */
OffsetNumber
forein_first_dead_mark(Page page, OffsetNumber before)
{
	OffsetNumber last;
	OffsetNumber off;

	if (!forein_page_is_leaf_image(page))
		return InvalidOffsetNumber;
	last = Min(PageGetMaxOffsetNumber(page), before - 1);
	for (off = FOREIN_FIRST_ITEM; off <= last; off++)
		if (forein_leaf_is_marked(page, off))
			return off;
	return InvalidOffsetNumber;
}

/*
 * Generic WAL records over index pages.  A record holds what differs
 * between each page and its working copy, and replay must rebuild the
 * copy exactly, marks included.  Marks on the copy where the page has none
 * differ already, and so do marks the copy dropped (replay clears them);
 * a mark on both would not be in the record, so forein_xlog_finish takes
 * it off the page (locked exclusively, about to be overwritten by the copy)
 * just before the record is made.  The standby then holds exactly the
 * primary's page after every record, and between records only the primary
 * gains marks.  One record is built at a time per backend.
 */
static Buffer xlog_bufs[MAX_GENERIC_XLOG_PAGES];
static Page xlog_copies[MAX_GENERIC_XLOG_PAGES];
static int	xlog_npages;

GenericXLogState *
forein_xlog_start(Relation index)
{
	xlog_npages = 0;
	return GenericXLogStart(index);
}

Page
forein_register_page(GenericXLogState *xs, Buffer buf, int flags)
{
	Page		copy = GenericXLogRegisterBuffer(xs, buf, flags);
	int			i;

	for (i = 0; i < xlog_npages; i++)
		if (xlog_bufs[i] == buf)
			return copy;
	Assert(xlog_npages < MAX_GENERIC_XLOG_PAGES);
	xlog_bufs[xlog_npages] = buf;
	xlog_copies[xlog_npages++] = copy;
	return copy;
}

void
forein_xlog_finish(GenericXLogState *xs)
{
	int			i;

	for (i = 0; i < xlog_npages; i++)
	{
		Page		page = BufferGetPage(xlog_bufs[i]);
		Page		copy = xlog_copies[i];
		OffsetNumber off;
		OffsetNumber last;

		if (!forein_page_is_leaf_image(page) || !forein_page_is_leaf_image(copy))
			continue;
		last = Min(PageGetMaxOffsetNumber(page), PageGetMaxOffsetNumber(copy));
		for (off = FOREIN_FIRST_ITEM; off <= last; off++)
			if (forein_leaf_is_marked(page, off) && forein_leaf_is_marked(copy, off))
				PageGetItemId(page, off)->lp_flags = LP_NORMAL;
	}
	xlog_npages = 0;
	GenericXLogFinish(xs);
}

void
forein_xlog_abort(GenericXLogState *xs)
{
	xlog_npages = 0;
	GenericXLogAbort(xs);
}

/*
 * "REINDEX INDEX schema.name": the command a HINT tells the user to run.
 */
static char *
reindex_command(Relation index)
{
	return psprintf("REINDEX INDEX %s",
					quote_qualified_identifier(get_namespace_name(RelationGetNamespace(index)),
											   RelationGetRelationName(index)));
}

/*
 * Errors out unless metapage (block 0 of index) is a forein metapage of
 * the on-disk format version this library reads (FOREIN_VERSION).  Every
 * path that reads an index passes here first: descents through
 * forein_get_root (scans, inserts, the planner's cost estimate), VACUUM,
 * forein_check and the SQL functions (forein_check_metapage).
 */
void
forein_verify_metapage(Relation index, Page metapage)
{
	ForeinMetaPageData *meta = ForeinPageGetMeta(metapage);

	if (PageIsNew(metapage) || meta->magic != FOREIN_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not a forein index or its metapage is corrupted",
						RelationGetRelationName(index)),
				 PageIsNew(metapage) ?
				 errdetail("Its metapage (block 0) is all zeroes.") :
				 errdetail("Its metapage (block 0) has magic number 0x%08X, expected 0x%08X.",
						   meta->magic, FOREIN_MAGIC),
				 errhint("Rebuild it with %s.", reindex_command(index))));
	if (meta->version != FOREIN_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" has on-disk format version %u, but this forein library reads only version %u",
						RelationGetRelationName(index), meta->version,
						FOREIN_VERSION),
				 errdetail("The format version is stored in the index's metapage (block 0); the index was written by another build of forein, or its metapage is corrupted."),
				 errhint("Rebuild it in the current format with %s.",
						 reindex_command(index))));
}

/* Reads the metapage and verifies it (forein_verify_metapage) */
void
forein_check_metapage(Relation index)
{
	Buffer		metabuf;

	if (RelationGetNumberOfBlocks(index) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not a forein index or its metapage is corrupted",
						RelationGetRelationName(index)),
				 errdetail("It has no blocks."),
				 errhint("Rebuild it with %s.", reindex_command(index))));
	metabuf = ReadBuffer(index, FOREIN_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	forein_verify_metapage(index, BufferGetPage(metabuf));
	UnlockReleaseBuffer(metabuf);
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
	forein_verify_metapage(index, metapage);
	meta = ForeinPageGetMeta(metapage);
	*root = meta->root;
	*level = meta->root_level;
	state->root = meta->root;
	state->root_level = meta->root_level;
	UnlockReleaseBuffer(metabuf);
}

/*
 * The indexes of the leaf partitions under a partitioned forein index, in
 * pg_inherits order (breadth first, by OID); nothing is locked.
 */
List *
forein_partition_indexes(Oid parentidx)
{
	List	   *all = find_all_inheritors(parentidx, NoLock, NULL);
	List	   *leaves = NIL;
	ListCell   *lc;

	foreach(lc, all)
	{
		Oid			relid = lfirst_oid(lc);

		if (get_rel_relkind(relid) == RELKIND_INDEX)
			leaves = lappend_oid(leaves, relid);
	}
	list_free(all);
	return leaves;
}

/*
 * Errors out on a partitioned forein index given to a SQL function that
 * reports on one index (forein_stats, forein_refresh, forein_offload_*):
 * the partitioned index has no storage, its partitions' indexes do.
 */
void
forein_refuse_partitioned(Relation index)
{
	List	   *leaves = forein_partition_indexes(RelationGetRelid(index));
	StringInfoData names;
	ListCell   *lc;
	int			n = 0;
	char	   *qname;

	initStringInfo(&names);
	foreach(lc, leaves)
	{
		char	   *name = get_rel_name(lfirst_oid(lc));

		if (name == NULL)
			continue;
		if (n == 10)
		{
			appendStringInfo(&names, " and %d more", list_length(leaves) - n);
			break;
		}
		appendStringInfo(&names, "%s%s", n > 0 ? ", " : "",
						 quote_identifier(name));
		n++;
	}
	qname = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(index)),
									   RelationGetRelationName(index));
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("index \"%s\" is a partitioned index",
					RelationGetRelationName(index)),
			 n > 0 ?
			 errdetail("This function reports on one index with storage; the indexes of the partitions hold the data: %s.",
					   names.data) :
			 errdetail("This function reports on one index with storage; the partitioned index has no partitions yet."),
			 errhint("Call it for each partition's index: SELECT relid FROM pg_partition_tree('%s') WHERE isleaf lists them.",
					 qname)));
}
