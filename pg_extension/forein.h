/*-------------------------------------------------------------------------
 *
 * forein.h
 *	  Shared declarations of the forein index access method.
 *
 * A forein index is a Lehman-Yao B+tree (right links, high keys, like
 * nbtree) kept in the index relation's pages through the buffer manager and
 * WAL-logged with generic WAL.  What it adds over nbtree is that every node
 * also knows its low key, so a node suggested by offload hardware (a hint)
 * can be validated on the page: live, right level, lo <= key < hi, else move
 * right along the sibling link or fall back to the root.
 *
 * Page layout (standard PageHeaderData, line pointers, special space):
 *
 *	 offset 1  high key: (key, heap TID) bound, exclusive.  Meaningless
 *			   (a placeholder) when the page is rightmost (right link invalid)
 *	 offset 2  low key: (key, heap TID) bound, inclusive.  Meaningless when
 *			   the page is leftmost (left link invalid)
 *	 offset 3+ items, ascending by (key, heap TID):
 *			   leaf:  plain index tuples (t_tid = heap TID)
 *			   inner: downlinks; t_tid = the separator's heap TID, the child
 *			   block in a 4-byte trailer (FOREIN_DOWNLINK).  A downlink's
 *			   child holds the keys from its separator up to the next one.
 *	 special   ForeinPageOpaqueData; on inner pages first_child is the child
 *			   holding the keys from the low key up to the first downlink's
 *			   separator.  Keeping it out of the items (format version 2)
 *			   lets an inner page hold its two bounds and a single downlink
 *			   of the largest key, so the key limit is btree's 1/3 page.
 *
 * Keys are unique as (key, heap TID), so every bound and separator is a
 * strict position.  A key is one or more key columns, each ASC or DESC with
 * NULLs last or first, as btree orders them; INCLUDE columns follow the key
 * columns in leaf tuples (and in bounds copied from them) but never count
 * in comparisons.
 *
 * Locking (nbtree's README rules): readers hold one buffer content lock at a
 * time and move right when the search key is >= the high key.  Writers lock
 * leftmost-first within a level and child-before-parent; no one locks a child
 * while holding its parent.  A split is two WAL records: the split itself
 * (left, new right, old right sibling) which flags the left page
 * INCOMPLETE_SPLIT, then the downlink insertion into the parent which clears
 * it.  A crash between them leaves a valid tree (the right page is reached
 * by the right link); the next inserter that meets the flag finishes it.
 *
 * Portions Copyright (c) 2026, forein developers
 *
 * pg_extension/forein.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef FOREIN_H
#define FOREIN_H

#include "access/amapi.h"
#include "access/generic_xlog.h"
#include "access/itup.h"
#include "access/relscan.h"
#include "access/sdir.h"
#include "access/skey.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "utils/relcache.h"

#include "forein/word.h"		/* offload words, shared with the engine */

/* Support procedure numbers */
#define FOREIN_CMP_PROC			1	/* btree-style 3-way comparison */
#define FOREIN_NPROC			1

/* Strategy numbers: the btree ones */
#define FOREIN_NSTRATEGIES		5

/* Line pointer offsets */
#define FOREIN_HIKEY			((OffsetNumber) 1)
#define FOREIN_LOKEY			((OffsetNumber) 2)
#define FOREIN_FIRST_ITEM		((OffsetNumber) 3)

#define FOREIN_METAPAGE_BLKNO	((BlockNumber) 0)
#define FOREIN_MAGIC			0x46524e31	/* "FRN1" */
#define FOREIN_VERSION			2	/* 2: first_child in the special space */
#define FOREIN_PAGE_ID			0xFE1E	/* in every page's special space */

/* Page flags */
#define FOREIN_META				(1 << 0)
#define FOREIN_ROOT				(1 << 1)
#define FOREIN_DELETED			(1 << 2)	/* unlinked; FOREIN_DELETED_STAMP */
#define FOREIN_INCOMPLETE_SPLIT (1 << 3)	/* right sibling lacks a downlink */

typedef struct ForeinPageOpaqueData
{
	BlockNumber left;			/* InvalidBlockNumber: leftmost (lo = -inf) */
	BlockNumber right;			/* InvalidBlockNumber: rightmost (hi = +inf) */
	uint32		version;		/* bumped on every split and range change */
	uint16		level;			/* 0 = leaf */
	uint16		flags;
	BlockNumber first_child;	/* inner pages; InvalidBlockNumber on leaves */
	uint16		unused;
	uint16		page_id;		/* FOREIN_PAGE_ID, the page's last bytes */
} ForeinPageOpaqueData;

typedef ForeinPageOpaqueData *ForeinPageOpaque;

/*
 * A deleted page (an empty leaf) keeps its bounds and, as its only item
 * (at FOREIN_FIRST_ITEM), the FullTransactionId stamped at deletion: it may
 * be recycled once no snapshot is older.  Keeping the stamp out of the
 * special space keeps that at 24 bytes, which the key limit needs.
 */
#define FOREIN_DELETED_STAMP	FOREIN_FIRST_ITEM

#define ForeinPageGetOpaque(page) \
	((ForeinPageOpaque) PageGetSpecialPointer(page))
#define ForeinPageIsLeaf(page)		(ForeinPageGetOpaque(page)->level == 0)
#define ForeinPageIsDeleted(page) \
	((ForeinPageGetOpaque(page)->flags & FOREIN_DELETED) != 0)
#define ForeinPageIsRightmost(page) \
	(ForeinPageGetOpaque(page)->right == InvalidBlockNumber)
#define ForeinPageIsLeftmost(page) \
	(ForeinPageGetOpaque(page)->left == InvalidBlockNumber)

/* Metapage contents (after the page header) */
typedef struct ForeinMetaPageData
{
	uint32		magic;
	uint32		version;
	BlockNumber root;
	uint32		root_level;
	uint32		fillfactor;		/* leaf fill target when built, percent */
} ForeinMetaPageData;

#define ForeinPageGetMeta(page) ((ForeinMetaPageData *) PageGetContents(page))

/*
 * An inner item's child block lives in the last 4 bytes of the tuple, which
 * is 8 bytes longer than the key tuple it was made from; the AM-reserved
 * t_info bit marks such a downlink so that its key can be copied out as a
 * bound (forein_make_bound).
 */
#define FOREIN_DOWNLINK_BIT		INDEX_AM_RESERVED_BIT
#define FOREIN_DOWNLINK_EXTRA	MAXALIGN(sizeof(BlockNumber))
#define FOREIN_DOWNLINK(itup) \
	(*(BlockNumber *) ((char *) (itup) + IndexTupleSize(itup) - sizeof(BlockNumber)))

/*
 * On leaf pages the same bit marks a posting tuple (forein_posting.c): one
 * key and several heap TIDs.
 */
#define FOREIN_POSTING_BIT		INDEX_AM_RESERVED_BIT
#define ForeinTupleIsPosting(itup) (((itup)->t_info & FOREIN_POSTING_BIT) != 0)
#define FOREIN_MAX_POSTING_SIZE	(BLCKSZ / 8)
/* The most heap TIDs one leaf page can hold (as nbtree's MaxTIDsPerBTreePage) */
#define FOREIN_MAX_TIDS_PER_PAGE ((int) (BLCKSZ / sizeof(ItemPointerData)))

/*
 * The largest index tuple, btree's 1/3 of a page (2,704 bytes at 8 kB): any
 * page must hold its two bounds and one item (on an inner page a downlink,
 * the key plus FOREIN_DOWNLINK_EXTRA), so a split always finds a point that
 * leaves both halves fitting.
 */
#define FOREIN_MAX_ITEM_SIZE \
	(MAXALIGN_DOWN((BLCKSZ - MAXALIGN(SizeOfPageHeaderData + 3 * sizeof(ItemIdData)) - \
					MAXALIGN(sizeof(ForeinPageOpaqueData)) - FOREIN_DOWNLINK_EXTRA) / 3))

/*
 * On an inner page the position FOREIN_FIRST_CHILD (the low key's offset)
 * stands for first_child: its separator is the low key.  Positions from
 * FOREIN_FIRST_ITEM on are the downlink items.
 */
#define FOREIN_FIRST_CHILD		FOREIN_LOKEY

/*
 * The child at position off of an inner page (copied: a trailer read from
 * a page need not be aligned)
 */
static inline BlockNumber
forein_inner_child(Page page, OffsetNumber off)
{
	IndexTuple	itup;
	BlockNumber child;

	if (off == FOREIN_FIRST_CHILD)
		return ForeinPageGetOpaque(page)->first_child;
	itup = (IndexTuple) PageGetItem(page, PageGetItemId(page, off));
	memcpy(&child, (char *) itup + IndexTupleSize(itup) - sizeof(BlockNumber),
		   sizeof(BlockNumber));
	return child;
}

/* How keys of an index column compare; chosen from the column's type */
typedef enum ForeinKeyKind
{
	FOREIN_KEY_INT,				/* int2/int4/int8: compared as int64 */
	FOREIN_KEY_DATE,			/* int32 day number, as int64 */
	FOREIN_KEY_TIMESTAMP,		/* timestamp, timestamptz: int64 */
	FOREIN_KEY_UUID,			/* 16 bytes, memcmp */
	FOREIN_KEY_GENERIC			/* support proc 1 under the collation (text) */
} ForeinKeyKind;

/*
 * How the offload word of a text key is computed (forein_words.c,
 * string_word): the first 8 bytes, big-endian and zero padded, of the key's
 * bytes under the "C"/"POSIX" collation, of its strxfrm under any other
 * libc collation, of its ICU sort key under an ICU collation.
 */
typedef enum ForeinTextWords
{
	FOREIN_TEXT_WORDS_NONE,		/* no order-preserving word */
	FOREIN_TEXT_WORDS_BYTES,	/* C/POSIX: the bytes themselves */
	FOREIN_TEXT_WORDS_LIBC,		/* strxfrm(_l) */
	FOREIN_TEXT_WORDS_ICU		/* ucol_nextSortKeyPart */
} ForeinTextWords;

struct pg_locale_struct;

/*
 * forein_words.c: how the offload words of a column are made (by its type,
 * collation and operator family), or why it has none.
 */
typedef enum ForeinWordsOf
{
	FOREIN_WORDS_NONE,
	FOREIN_WORDS_INT,			/* int2/int4/int8 (forein/word.h) */
	FOREIN_WORDS_DATE,
	FOREIN_WORDS_TIMESTAMP,		/* timestamp, timestamptz */
	FOREIN_WORDS_UUID,
	FOREIN_WORDS_FLOAT4,
	FOREIN_WORDS_FLOAT8,
	FOREIN_WORDS_NUMERIC,
	FOREIN_WORDS_BOOL,
	FOREIN_WORDS_OID,
	FOREIN_WORDS_INTERVAL,
	FOREIN_WORDS_INET,			/* inet, cidr */
	FOREIN_WORDS_BYTEA,
	FOREIN_WORDS_TEXT,			/* text, varchar under the collation */
	FOREIN_WORDS_TEXT_PATTERN,	/* text_pattern_ops: bytes */
	FOREIN_WORDS_BPCHAR,		/* char(n) under the collation */
	FOREIN_WORDS_BPCHAR_PATTERN,	/* bpchar_pattern_ops: bytes */
	FOREIN_WORDS_NAME			/* name under the collation */
} ForeinWordsOf;

typedef struct ForeinWords
{
	bool		has_words;		/* the words are order-preserving */
	const char *no_words_reason;	/* !has_words: why, for messages */
	/* private to forein_words.c */
	Oid			typid;
	ForeinWordsOf of;
	ForeinTextWords text_words; /* strings: bytes, strxfrm or ICU sort key */
	struct pg_locale_struct *locale;	/* LIBC, ICU: the collation's locale
										 * (NULL: the database's libc one) */
} ForeinWords;

extern void forein_words_init(ForeinWords *w, Oid typid, Oid collation,
							  Oid opfamily);
extern uint64 forein_words_value(const ForeinWords *w, Datum value);
extern bool forein_words_bytes_order(const ForeinWords *w);
extern uint64 forein_words_arg_value(const ForeinWords *w, Oid argtype,
									 Datum value);

/*
 * One key column of an index: how its values compare, in index order
 * (desc: the column is DESC; nulls_first: NULLs come before its values).
 * Cross-type comparison procs (scan keys of another type of the column's
 * operator family) are looked up once and cached here.
 */
#define FOREIN_CROSS_CACHE 4

typedef struct ForeinColumn
{
	ForeinKeyKind kind;
	Oid			typid;			/* the opclass input type */
	Oid			opfamily;
	Oid			collation;
	int16		typlen;
	bool		typbyval;
	bool		desc;
	bool		nulls_first;
	FmgrInfo	cmp;			/* support proc 1 for (typid, typid) */
	int			ncross;
	Oid			cross_type[FOREIN_CROSS_CACHE];
	FmgrInfo	cross_cmp[FOREIN_CROSS_CACHE];
} ForeinColumn;

/*
 * Per-index state, cached in rd_amcache.  The offload word of a key is the
 * word of its leading column (flipped for DESC), so the word fields describe
 * column 0.
 */
typedef struct ForeinState
{
	int			nkeys;			/* key columns (INCLUDE columns follow) */
	int			natts;			/* all columns */
	bool		has_words;		/* offload words are order-preserving */
	const char *no_words_reason;	/* !has_words: why, for messages */
	ForeinWords words;			/* how column 0's words are made */
	TupleDesc	tupdesc;
	MemoryContext cache_cxt;	/* for cached cross-type procs (NULL: none) */
	BlockNumber root;			/* cached from the metapage; see forein_get_root */
	uint32		root_level;
	bool		backend_known;	/* backend_id is set */
	int			backend_id;		/* forein_index_backend, from the reloptions */
	ForeinColumn cols[FLEXIBLE_ARRAY_MEMBER];	/* nkeys of them */
} ForeinState;

#define ForeinStateSize(nkeys) (offsetof(ForeinState, cols) + (nkeys) * sizeof(ForeinColumn))

/*
 * A search position in key order: a key (or NULL, or unbounded) plus where
 * among the heap TIDs of equal keys it falls.
 */
typedef enum ForeinTidMode
{
	FOREIN_TID_BEFORE = -1,		/* before every (key, tid) with this key */
	FOREIN_TID_EXACT = 0,		/* exactly (key, tid) */
	FOREIN_TID_AFTER = 1,		/* after every (key, tid) with this key */
	FOREIN_TID_JUST_BEFORE = 2	/* just before (key, tid): its predecessor */
} ForeinTidMode;

/*
 * A heap TID of (0,0) in a bound or separator means "before every real TID
 * of this key": a separator between different keys needs no TID (nbtree's
 * suffix truncation), so a search for the key's first entry lands on the
 * page that holds it.  FOREIN_TID_BEFORE compares equal to it.
 */
#define ForeinTidIsMinimal(tid) \
	(ItemPointerGetBlockNumberNoCheck(tid) == 0 && \
	 ItemPointerGetOffsetNumberNoCheck(tid) == 0)

/* One column's value in a search key */
typedef struct ForeinKeyValue
{
	bool		isnull;
	bool		use_proc;		/* compare with cmp (a cross-type proc) */
	int64		ival;			/* INT, DATE, TIMESTAMP kinds */
	Datum		datum;			/* UUID, GENERIC kinds, and use_proc */
	FmgrInfo   *cmp;			/* use_proc: proc(column type, argument type) */
} ForeinKeyValue;

/*
 * A search key gives the first nvals key columns; a key with fewer values
 * than the index has key columns stands for all keys with that prefix, and
 * its TID mode must be BEFORE or AFTER (before or after all of them).
 */
typedef struct ForeinSearchKey
{
	bool		unbounded;		/* minus infinity (with TID_BEFORE) */
	bool		has_word;		/* word is the leading column's word */
	int			nvals;
	ForeinTidMode tidmode;
	ItemPointerData tid;		/* with FOREIN_TID_EXACT */
	uint64		word;			/* offload word of the key */
	ForeinKeyValue vals[INDEX_MAX_KEYS];
} ForeinSearchKey;

/* One level of the path a writer descended, for parent insertion */
typedef struct ForeinStackData
{
	BlockNumber blkno;
	struct ForeinStackData *parent;
} ForeinStackData;

typedef ForeinStackData *ForeinStack;

/* How a descent started, for statistics */
typedef enum ForeinStart
{
	FOREIN_START_ROOT,			/* no hint */
	FOREIN_START_HINT,			/* the primary hint validated */
	FOREIN_START_SECONDARY,		/* the bottom-line hint validated */
	FOREIN_START_FALLBACK		/* hints given, none validated: root */
} ForeinStart;

/*
 * One scan's descents, counted as forein_offload_count counts them for
 * forein_stats (forein_descend_counted), for EXPLAIN ANALYZE
 * (forein_explain.c).  Totals over the scan's rescans.
 */
typedef struct ForeinScanCounts
{
	uint64		lookups;
	uint64		hint_hits;
	uint64		move_rights;
	uint64		fallbacks;
} ForeinScanCounts;

/* Scan state */
typedef struct ForeinScanItem
{
	ItemPointerData heapTid;
	OffsetNumber offnum;
	uint16		tupleOffset;	/* into currTuples, for index-only scans */
} ForeinScanItem;

/*
 * A scan's first room for entries: a point lookup returns one.  A page that
 * yields more gets room for FOREIN_MAX_TIDS_PER_PAGE (13 kB, too big for a
 * memory context's free lists: a malloc and free for every scan).
 */
#define FOREIN_SCAN_FIRST_ITEMS	32

typedef struct ForeinScanPos
{
	Buffer		buf;			/* pinned leaf, or InvalidBuffer */
	BlockNumber blkno;
	BlockNumber right;			/* the leaf's right link when read */
	bool		leftmost;		/* the leaf had no left sibling */
	bool		moreLeft;
	bool		moreRight;
	IndexTuple	lokey;			/* copy of the leaf's low key (palloc'd) */
	IndexTuple	hikey;			/* copy of its high key; NULL if rightmost */
	XLogRecPtr	lsn;			/* the leaf's LSN when read (for killing entries) */
	int			firstItem;
	int			lastItem;
	int			itemIndex;
	ForeinScanItem *items;		/* room for maxItems */
	int			maxItems;		/* FOREIN_SCAN_FIRST_ITEMS, or a page's worth */
	char	   *tuples;			/* copies of tuples for index-only scans */
	int			nextTupleOffset;
} ForeinScanPos;

/*
 * A scan key as the scan checks it on the entries it reads.  Keys the
 * scan's range already guarantees (the equalities of the leading columns,
 * the bounds of the next one) are "implied" and not checked again; the
 * others filter entries inside the range, as nbtree's non-required keys do.
 */
typedef struct ForeinScanCond
{
	int			col;			/* key column, 0-based */
	StrategyNumber strategy;	/* 0: a NULL test */
	bool		want_null;		/* NULL test: IS NULL (else IS NOT NULL) */
	ForeinKeyValue arg;
	ForeinKeyValue *elems;		/* = ANY(array) etc.: the non-NULL elements */
	int			nelems;			/* -1: not an array key */
	bool		sorted;			/* elems ascending and distinct */
	bool		implied;
} ForeinScanCond;

/* A leading column with an equality: one value, or an array's elements */
typedef struct ForeinPrefixColumn
{
	const ForeinKeyValue *vals; /* in index order, distinct */
	int			nvals;
	int			cur;			/* the value of the current range */
	int			mark;
} ForeinPrefixColumn;

typedef struct ForeinScanOpaqueData
{
	bool		qual_ok;		/* false: the quals can never match */
	bool		started;

	/*
	 * The scan keys, and which of them filter entries.  conds lives as long
	 * as the scan (the number of keys is fixed); keycxt, made at the first
	 * rescan that needs it (array keys), holds what the keys need until the
	 * next rescan.
	 */
	MemoryContext scancxt;
	MemoryContext keycxt;
	ForeinScanCond *conds;
	int			nconds;
	int			nfilters;

	int			nprefix;		/* see prefix below */
	bool		has_arrays;
	bool		have_lo;
	bool		lo_incl;
	bool		have_hi;
	bool		hi_incl;
	bool		have_lower;
	bool		have_upper;

	ForeinScanPos pos;
	ForeinScanPos mark;
	bool		mark_valid;

	/* pos's entries whose heap tuples the executor found dead to all */
	int		   *killed;			/* item indexes; FOREIN_MAX_TIDS_PER_PAGE room */
	int			nkilled;

	ForeinScanCounts counts;	/* this scan's descents, for EXPLAIN */

	/*
	 * The fields below are written before they are read (beginscan does not
	 * clear them: they take kilobytes, and a point lookup uses one value).
	 *
	 * The range: columns 0..nprefix-1 equal one value each (arrays: one
	 * range per combination of their elements, in index order), column
	 * nprefix between its bounds lo and hi (index order; NULL values stand
	 * for "the NULLs" when only NULLs are excluded).
	 */
	ForeinKeyValue lo;			/* with have_lo */
	ForeinKeyValue hi;			/* with have_hi */
	ForeinPrefixColumn prefix[INDEX_MAX_KEYS];

	/* the current range as (key, TID) positions: [lower, upper) */
	ForeinSearchKey lower;		/* first position to return (have_lower) */
	ForeinSearchKey upper;		/* first position past the range (have_upper) */
} ForeinScanOpaqueData;

typedef ForeinScanOpaqueData *ForeinScanOpaque;

/* Reloptions */
typedef struct ForeinOptions
{
	int32		vl_len_;		/* varlena header (do not touch directly!) */
	int			fillfactor;
	int			offload_offset; /* string: a registered offload backend */
	int			offload_capacity;	/* 0: the server's (forein_server_capacity) */
	int			offload_settings_offset;	/* string: the backend's own settings */
	int			lpm_entries;	/* deprecated: offload_capacity (switch_lpm) */
	bool		deduplicate_items;	/* posting lists (forein_posting.c) */
	bool		align_leaves;	/* aligned leaf cuts (forein_separator.c) */
	float8		vacuum_cleanup_index_scale_factor;	/* btree's; no effect */
} ForeinOptions;

#define FOREIN_DEFAULT_FILLFACTOR	90
#define FOREIN_MIN_FILLFACTOR		10
#define FOREIN_INNER_FILLFACTOR		70

/* forein_handler.c */
extern bytea *forein_options(Datum reloptions, bool validate);
extern void forein_costestimate(PlannerInfo *root, IndexPath *path,
								double loop_count, Cost *indexStartupCost,
								Cost *indexTotalCost,
								Selectivity *indexSelectivity,
								double *indexCorrelation, double *indexPages);
extern bool forein_validate(Oid opclassoid);
extern int	forein_index_backend(Relation index);
extern char *forein_index_offload_settings(Relation index);
extern bool forein_index_offloaded(Relation index);
extern int	forein_index_fillfactor(Relation index);
extern bool forein_index_dedup(Relation index);
extern bool forein_index_align_leaves(Relation index);

/* forein_utils.c */
extern ForeinState *forein_get_state(Relation index);
extern void forein_init_page(Page page, uint16 flags, uint16 level);
extern void forein_init_metapage(Page page, BlockNumber root, uint32 level,
								 int fillfactor);
extern Buffer forein_getbuf(Relation index, BlockNumber blkno, int access);
extern Buffer forein_read_hinted(Relation index, BlockNumber blkno);
extern Buffer forein_newbuf(Relation index);
extern void forein_relbuf(Buffer buf);
extern OffsetNumber forein_first_dead_mark(Page page, OffsetNumber before);

/*
 * Whether a page image (possibly not validated yet: a WAL mask's) is a live
 * leaf: not new, not the metapage, not deleted.
 */
static inline bool
forein_page_is_leaf_image(Page page)
{
	return !PageIsNew(page) &&
		PageGetSpecialSize(page) == MAXALIGN(sizeof(ForeinPageOpaqueData)) &&
		ForeinPageGetOpaque(page)->page_id == FOREIN_PAGE_ID &&
		ForeinPageIsLeaf(page) &&
		(ForeinPageGetOpaque(page)->flags & (FOREIN_META | FOREIN_DELETED)) == 0;
}

/* A leaf entry a scan marked LP_DEAD (kill_items in forein_scan.c) */
static inline bool
forein_leaf_is_marked(Page page, OffsetNumber off)
{
	ItemId		iid = PageGetItemId(page, off);

	return ItemIdIsDead(iid) && ItemIdHasStorage(iid);
}
extern GenericXLogState *forein_xlog_start(Relation index);
extern Page forein_register_page(GenericXLogState *xs, Buffer buf, int flags);
extern void forein_xlog_finish(GenericXLogState *xs);
extern void forein_xlog_abort(GenericXLogState *xs);

extern void forein_check_page(Relation index, Page page, BlockNumber blkno);
extern void forein_get_root(Relation index, BlockNumber *root, uint32 *level);
extern void forein_verify_metapage(Relation index, Page metapage);
extern void forein_check_metapage(Relation index);
extern List *forein_partition_indexes(Oid parentidx);
extern void forein_refuse_partitioned(Relation index);
extern void forein_key_from_datum(ForeinState *state, Datum value, bool isnull,
								  ForeinSearchKey *key);
extern bool forein_value_from_arg(ForeinState *state, int col, Datum value,
								  Oid argtype, ForeinKeyValue *kv);
extern void forein_key_set_word(ForeinState *state, ForeinSearchKey *key);
extern int	forein_compare_value(const ForeinColumn *col,
								 const ForeinKeyValue *kv, Datum stored);
extern void forein_key_from_tuple(ForeinState *state, IndexTuple itup,
								  ForeinSearchKey *key);
extern int	forein_compare(ForeinState *state, const ForeinSearchKey *key,
						   IndexTuple itup);
extern int	forein_compare_tuples(ForeinState *state, IndexTuple a,
								  IndexTuple b);
extern uint64 forein_tuple_word(ForeinState *state, IndexTuple itup);
extern uint64 forein_datum_word(ForeinState *state, Datum value);
extern void forein_init_key_state(ForeinState *state, Oid typid, Oid collation,
								  Oid opfamily);
extern bool forein_page_lo_le(ForeinState *state, Page page,
							  const ForeinSearchKey *key);
extern bool forein_page_hi_le(ForeinState *state, Page page,
							  const ForeinSearchKey *key);
extern void forein_page_interval(ForeinState *state, Page page, uint64 *lo,
								 uint64 *hi, bool *hi_inf);
extern IndexTuple forein_make_downlink(IndexTuple sep, BlockNumber child);
extern IndexTuple forein_make_placeholder(ForeinState *state);
extern IndexTuple forein_make_bound(IndexTuple itup);
extern bool forein_keys_equal(ForeinState *state, IndexTuple a, IndexTuple b);
extern Size forein_page_free(Page page);

/* forein_xlog.c: forein's WAL resource manager (when preloaded) */
#define FOREIN_RMGR_ID			161
extern bool forein_wal_rmgr_ready;
extern void forein_register_wal_rmgr(void);
extern XLogRecPtr forein_log_insert(Buffer buf, OffsetNumber off);
extern void forein_change_leaf(Relation index, Buffer buf, OffsetNumber *deleted,
							  int n_deleted, OffsetNumber *updated_off,
							  IndexTuple *updated, int n_updated, bool vacuum,
							  TransactionId horizon);

/* forein_posting.c */
extern int	forein_posting_count(IndexTuple itup);
extern ItemPointer forein_posting_tid(IndexTuple itup, int i);
extern ItemPointer forein_posting_last_tid(IndexTuple itup);
extern Size forein_posting_size(Size base, int n);
extern IndexTuple forein_form_posting(IndexTuple key, const ItemPointerData *tids,
									  int n);
extern IndexTuple forein_posting_key(IndexTuple itup);
extern Size forein_copy_key(char *dst, IndexTuple itup);
extern Size forein_tuple_key_size(IndexTuple itup);
extern bool forein_same_key_image(IndexTuple a, IndexTuple b);
extern int	forein_posting_max_tids(Size base);
extern IndexTuple forein_merge_run(IndexTuple *items, int n);
extern int	forein_dedup_items(IndexTuple *items, int n, IndexTuple *out,
							   uint16 *runs);
extern int	forein_posting_insert(IndexTuple post, IndexTuple itup,
								  IndexTuple *out);

/* forein_separator.c */
/*
 * How far (in bytes of a page) a leaf build or split may move a cut from
 * its fill target to get a better-aligned separator
 */
#define FOREIN_CUT_SLACK(target)	((target) / 16)
extern int	forein_cut_alignment(ForeinState *state, IndexTuple left,
								 IndexTuple right);
extern IndexTuple forein_leaf_separator(ForeinState *state, IndexTuple left,
										IndexTuple right);

/* forein_search.c */
extern OffsetNumber forein_binsearch_leaf(ForeinState *state, Page page,
										  const ForeinSearchKey *key);
extern OffsetNumber forein_inner_find_child(Page page, BlockNumber child);
/* (forein_vacuum.c; also replayed by forein_xlog_tree.c) */
extern void forein_set_downlink(Page page, OffsetNumber off, BlockNumber child);
extern OffsetNumber forein_binsearch_inner(ForeinState *state, Page page,
										   const ForeinSearchKey *key);
extern Buffer forein_moveright(Relation index, ForeinState *state, Buffer buf,
							   const ForeinSearchKey *key, int access);
extern Buffer forein_descend(Relation index, ForeinState *state,
							 const ForeinSearchKey *key, uint32 target_level,
							 int access, ForeinStack *stack, bool use_hints);
extern Buffer forein_descend_counted(Relation index, ForeinState *state,
									 const ForeinSearchKey *key,
									 uint32 target_level, int access,
									 ForeinStack *stack, bool use_hints,
									 ForeinScanCounts *counts);
extern void forein_free_stack(ForeinStack stack);
extern Buffer forein_get_endpoint(Relation index, ForeinState *state,
								  bool rightmost);
extern Buffer forein_get_endpoint_counted(Relation index, ForeinState *state,
										  bool rightmost,
										  ForeinScanCounts *counts);

/* forein_insert.c */
extern bool forein_insert(Relation index, Datum *values, bool *isnull,
						  ItemPointer ht_ctid, Relation heapRel,
						  IndexUniqueCheck checkUnique, bool indexUnchanged,
						  struct IndexInfo *indexInfo);
extern void forein_check_item_size(Relation index, Relation heap,
								   IndexTuple itup);
extern void forein_insert_downlink(Relation index, ForeinState *state,
								   Buffer lbuf, ForeinStack stack);

/* forein_build.c */
extern IndexBuildResult *forein_build(Relation heap, Relation index,
									  struct IndexInfo *indexInfo);
extern void forein_buildempty(Relation index);

/* forein_scan.c */
extern IndexScanDesc forein_beginscan(Relation r, int nkeys, int norderbys);
extern void forein_rescan(IndexScanDesc scan, ScanKey scankey, int nscankeys,
						  ScanKey orderbys, int norderbys);
extern bool forein_gettuple(IndexScanDesc scan, ScanDirection dir);
extern int64 forein_getbitmap(IndexScanDesc scan, TIDBitmap *tbm);
extern void forein_endscan(IndexScanDesc scan);
extern void forein_markpos(IndexScanDesc scan);
extern void forein_restrpos(IndexScanDesc scan);
extern bool forein_canreturn(Relation index, int attno);

/* forein_vacuum.c */
extern IndexBulkDeleteResult *forein_bulkdelete(IndexVacuumInfo *info,
												IndexBulkDeleteResult *stats,
												IndexBulkDeleteCallback callback,
												void *callback_state);
extern IndexBulkDeleteResult *forein_vacuumcleanup(IndexVacuumInfo *info,
												   IndexBulkDeleteResult *stats);
extern bool forein_page_recyclable(Page page);

/* forein_hooks.c */
extern void forein_hooks_init(void);

/* forein_explain.c */
extern bool forein_explain_hints;
extern void forein_explain_init(void);

/* forein_acl.c */
typedef enum ForeinPrivilege
{
	FOREIN_PRIV_SELECT,			/* read the index or its table */
	FOREIN_PRIV_OWNER			/* change what is offloaded */
} ForeinPrivilege;

extern Oid	forein_check_table_privilege(Oid indexoid, ForeinPrivilege need);
extern void forein_recheck_table(Oid indexoid, Oid heapoid);

/*
 * forein_hints.c: hints and statistics (forein_module.c: module load).
 * Without shared_preload_libraries every call is cheap and returns "no hint".
 */
typedef struct ForeinHint
{
	BlockNumber primary;		/* InvalidBlockNumber: none */
	uint16		primary_level;
	BlockNumber secondary;		/* the bottom-line layer's node */
	uint16		secondary_level;
} ForeinHint;

extern bool forein_offload_hint(Relation index, uint64 word, ForeinHint *hint);
extern void forein_offload_count(Relation index, ForeinStart start,
								 int move_rights, BlockNumber leaf);
extern void forein_offload_node_event(Relation index, BlockNumber blkno);
extern void forein_offload_init(void);

#endif							/* FOREIN_H */
