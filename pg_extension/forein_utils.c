/*-------------------------------------------------------------------------
 *
 * forein_utils.c
 *	  Per-index state, key comparison, offload words and page helpers.
 *
 * Keys of the integer family, dates and timestamps compare as int64 without
 * a function call; uuids with memcmp; everything else (text) through the
 * opclass's support function 1 under the column's collation.  The offload
 * word of a key is the 64-bit order-preserving value the switch matches on
 * (docs/design.md, contract 1), computed by forein/word.h, the definition
 * the engine shares.  A text key's word is the first 8 bytes of its sort key
 * under the index's collation (text_word), like btree's abbreviated keys.
 *
 * pg_extension/forein_utils.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relscan.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "forein.h"
#include "mb/pg_wchar.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_locale.h"
#include "utils/rel.h"
#include "utils/uuid.h"

#ifdef USE_ICU
#include <unicode/ucol.h>
#include <unicode/uiter.h>
#endif

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

/*
 * How a text index's words are made, or why it has none.  A word must never
 * contradict the collation's order; any deterministic collation's sort key
 * (strxfrm, ICU's) compares like the strings do.  A nondeterministic
 * collation's equal strings may have different sort keys, so such an index
 * gets no words (and no offload hints).
 */
pg_attribute_unused() static void
choose_text_words(ForeinState *state)
{
	pg_locale_t locale;

	state->has_words = false;
	state->text_words = FOREIN_TEXT_WORDS_NONE;
	state->locale = NULL;
	if (state->typid != TEXTOID)
	{
		state->no_words_reason = "its key type has no order-preserving offload word";
		return;
	}
	if (!OidIsValid(state->collation))
	{
		state->no_words_reason = "its key has no collation";
		return;
	}
	if (lc_collate_is_c(state->collation))
	{
		state->text_words = FOREIN_TEXT_WORDS_BYTES;
		state->has_words = true;
		return;
	}
	locale = pg_newlocale_from_collation(state->collation);
	if (locale && !locale->deterministic)
	{
		state->no_words_reason = "its key's collation is nondeterministic";
		return;
	}
	if (locale && locale->provider == COLLPROVIDER_ICU)
	{
#ifdef USE_ICU
		state->text_words = FOREIN_TEXT_WORDS_ICU;
#else
		state->no_words_reason = "its key's collation is an ICU collation and forein was built without ICU";
		return;
#endif
	}
	else
		state->text_words = FOREIN_TEXT_WORDS_LIBC;
	state->locale = locale;
	state->has_words = true;
}

/*
 * The key-type part of a state: kind, type, collation and how words are
 * made.  Enough for forein_datum_word (forein_debug_word uses it alone).
 */
void
forein_init_key_state(ForeinState *state, Oid typid, Oid collation)
{
	state->typid = typid;
	state->collation = collation;
	state->kind = kind_of_type(typid);
	get_typlenbyval(typid, &state->typlen, &state->typbyval);
	if (state->kind != FOREIN_KEY_GENERIC)
	{
		state->has_words = true;
		state->no_words_reason = NULL;
	}
	else
	{
		forein_words_init(&state->words, typid, collation, state->opfamily);
		state->has_words = state->words.has_words;
		state->no_words_reason = state->words.no_words_reason;
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
		state->opfamily = index->rd_opfamily[0];	/* words depend on it */
		forein_init_key_state(state, index->rd_opcintype[0],
							  index->rd_indcollation[0]);
		fmgr_info_copy(&state->cmp,
					   index_getprocinfo(index, 1, FOREIN_CMP_PROC),
					   CurrentMemoryContext);
		state->tupdesc = RelationGetDescr(index);
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

/*
 * The word of a text value under the index's collation: the first 8 bytes
 * (big-endian, zero padded) of its bytes under "C"/"POSIX", of its full
 * strxfrm under another libc collation, of its ICU sort key (its first 8
 * bytes from ucol_nextSortKeyPart, as varstr_abbrev_convert gets them)
 * under an ICU collation.  One function for scan keys and the bounds and
 * tuples the refresh reads, so the words of both sides agree.
 */
pg_attribute_unused() static uint64
text_word(ForeinState *state, const char *data, Size len)
{
	switch (state->text_words)
	{
		case FOREIN_TEXT_WORDS_NONE:
			return 0;
		case FOREIN_TEXT_WORDS_BYTES:
			return forein_word_bytes(data, len);
		case FOREIN_TEXT_WORDS_LIBC:
			{
				/* strxfrm wants a NUL-terminated string, and its output is
				 * only defined when the whole transformation fits */
				char		sbuf[1024];
				char		xbuf[1024];
				char	   *src = len < sizeof(sbuf) ? sbuf : palloc(len + 1);
				char	   *dst = xbuf;
				size_t		xlen;
				uint64		w;

				memcpy(src, data, len);
				src[len] = '\0';
				for (;;)
				{
					size_t		dstsize = dst == xbuf ? sizeof(xbuf) : xlen + 1;

#ifdef HAVE_LOCALE_T
					if (state->locale)
						xlen = strxfrm_l(dst, src, dstsize, state->locale->info.lt);
					else
#endif
						xlen = strxfrm(dst, src, dstsize);
					if (xlen < dstsize)
						break;
					dst = palloc(xlen + 1);
				}
				w = forein_word_bytes(dst, Min(xlen, (size_t) FOREIN_WORD_BYTES));
				if (dst != xbuf)
					pfree(dst);
				if (src != sbuf)
					pfree(src);
				return w;
			}
		case FOREIN_TEXT_WORDS_ICU:
#ifdef USE_ICU
			{
				UCharIterator iter;
				uint32_t	iterstate[2] = {0, 0};
				UErrorCode	status = U_ZERO_ERROR;
				uint8_t		key[FOREIN_WORD_BYTES];
				UChar	   *uchar = NULL;
				int32_t		n;

				if (GetDatabaseEncoding() == PG_UTF8)
					uiter_setUTF8(&iter, data, (int32_t) len);
				else
				{
					int32_t		ulen = icu_to_uchar(&uchar, data, len);

					uiter_setString(&iter, uchar, ulen);
				}
				n = ucol_nextSortKeyPart(state->locale->info.icu.ucol, &iter,
										 iterstate, key, sizeof(key), &status);
				if (U_FAILURE(status))
					ereport(ERROR,
							(errmsg("sort key generation failed: %s",
									u_errorName(status))));
				if (uchar)
					pfree(uchar);
				return forein_word_bytes(key, (size_t) n);
			}
#else
			return 0;
#endif
	}
	return 0;
}

/* The offload word of a non-NULL key value */
static uint64
value_word(ForeinState *state, ForeinSearchKey *key)
{
	switch (state->kind)
	{
		case FOREIN_KEY_INT:
			return forein_word_int64(key->ival);
		case FOREIN_KEY_DATE:
			return forein_word_date((int32) key->ival);
		case FOREIN_KEY_TIMESTAMP:
			return forein_word_timestamp(key->ival);
		case FOREIN_KEY_UUID:
			return forein_word_uuid(DatumGetUUIDP(key->datum)->data);
		case FOREIN_KEY_GENERIC:
			return forein_words_value(&state->words, key->datum);
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
	/* a cross-type argument's word, in the index type's word space */
	if (state->kind == FOREIN_KEY_GENERIC && typid != state->typid)
		key->word = forein_words_arg_value(&state->words, typid, value);
	else
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

/* The offload word of a non-NULL value of the index's key type */
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
	iv = forein_word_interval(has_lo, has_lo ? forein_tuple_word(state, lob) : 0,
							  has_lo && ForeinTidIsMinimal(&lob->t_tid),
							  has_hi, has_hi ? forein_tuple_word(state, hib) : 0,
							  has_hi && ForeinTidIsMinimal(&hib->t_tid));
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
