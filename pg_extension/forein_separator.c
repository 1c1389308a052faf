/*-------------------------------------------------------------------------
 *
 * forein_separator.c
 *	  Where to cut between two leaves, and the separator of the cut.
 *
 * A switch_lpm table (FOREIN) spends one LPM entry per aligned prefix of a
 * node's word interval [lo, hi): a leaf of 366 consecutive integers at an
 * arbitrary offset costs about nine entries, one whose bounds are multiples
 * of 64 costs two.  So where a build or a split may choose among several
 * cuts near its fill target, it takes the one whose separator word has the
 * most trailing zero bits.  That costs nothing at lookup time and changes
 * no page's fill by more than the window the caller allows; with 73,000
 * entries it lets the table hold every leaf of a 10M-key integer index
 * instead of a quarter of them (docs/postgresql.md, "Leaf bounds").
 *
 * For a single integer-like key column (int2, int4, int8, date, timestamp)
 * the separator need not be a key of the index: any value v with
 * left < v <= right divides the two leaves.  The one with the most
 * trailing zero bits in word space is taken, so sparse keys get aligned
 * bounds too (not next to -infinity or infinity, where it could fall
 * outside a date's or timestamp's range).  Other types use the right item's
 * key, as before.
 *
 * pg_extension/forein_separator.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tupmacs.h"
#include "forein.h"
#include "port/pg_bitutils.h"
#include "utils/date.h"
#include "utils/timestamp.h"

/*
 * Can the separator be any value between two keys?  One key column whose
 * values are integers with words forein_word_int64(value): every integer
 * strictly between two values of the type is a value of it too.
 */
static bool
synthetic_separators(ForeinState *state)
{
	if (!state->has_words || state->nkeys != 1)
		return false;
	switch (state->cols[0].kind)
	{
		case FOREIN_KEY_INT:
		case FOREIN_KEY_DATE:
		case FOREIN_KEY_TIMESTAMP:
			return true;
		default:
			return false;
	}
}

static inline int
trailing_zeros(uint64 w)
{
	return w == 0 ? 64 : pg_rightmost_one_pos64(w);
}

/*
 * The word in (lo, hi] with the most trailing zero bits (lo < hi): hi with
 * every bit below the highest bit where lo and hi differ cleared.  No
 * multiple of a larger power of two lies in (lo, hi]: both share the bits
 * above that one.
 */
static uint64
most_aligned_word(uint64 lo, uint64 hi)
{
	int			d = pg_leftmost_one_pos64(lo ^ hi);

	return hi & ~((UINT64CONST(1) << d) - 1);
}

/* The byte width of the leading column (2, 4 or 8: the integer-like types) */
static inline int16
leading_len(ForeinState *state)
{
	return TupleDescAttr(state->tupdesc, 0)->attlen;
}

/* The leading key value of an index tuple, non-NULL, as an int64 */
static bool
leading_int(ForeinState *state, IndexTuple itup, int64 *value)
{
	bool		isnull;
	Datum		d = index_getattr(itup, 1, state->tupdesc, &isnull);
	int16		len = leading_len(state);

	if (isnull)
		return false;
	*value = len == 2 ? DatumGetInt16(d) : len == 4 ? DatumGetInt32(d) : DatumGetInt64(d);
	return true;
}

/*
 * Whether a value lies in its type's valid range: a value between
 * -infinity and the first date or timestamp could be out of range (its
 * text form an error), while every value between two finite ones is valid.
 */
static bool
finite_value(ForeinState *state, int64 v)
{
	switch (state->cols[0].kind)
	{
		case FOREIN_KEY_DATE:
			return !DATE_NOT_FINITE((DateADT) v);
		case FOREIN_KEY_TIMESTAMP:
			return !TIMESTAMP_NOT_FINITE((Timestamp) v);
		default:
			return true;
	}
}

/* A column's word of an integer value, DESC flipped (as set_word does) */
static inline uint64
int_word(ForeinState *state, int64 v)
{
	uint64		w = forein_word_int64(v);

	return state->cols[0].desc ? ~w : w;
}

static inline int64
word_int(ForeinState *state, uint64 w)
{
	return forein_word_to_int64(state->cols[0].desc ? ~w : w);
}

/*
 * The synthetic separator's word for a cut between the leaf items left and
 * right (different keys), false when the keys are NULL or the column has
 * no synthetic separators.
 */
static bool
synthetic_word(ForeinState *state, IndexTuple left, IndexTuple right,
			   uint64 *word)
{
	int64		l;
	int64		r;
	uint64		wl;
	uint64		wr;

	if (!synthetic_separators(state) ||
		!leading_int(state, left, &l) || !leading_int(state, right, &r) ||
		!finite_value(state, l) || !finite_value(state, r))
		return false;
	wl = int_word(state, l);
	wr = int_word(state, r);
	if (wl >= wr)
		return false;			/* not in index order: leave it alone */
	*word = most_aligned_word(wl, wr);
	return true;
}

/*
 * How well a cut between the adjacent leaf items left and right suits the
 * LPM tables: the trailing zero bits of its separator's word, or -1 when
 * both hold the same key (the cut splits a run of duplicates, which no
 * caller wants).  0 for every cut when the index has no offload words.
 */
int
forein_cut_alignment(ForeinState *state, IndexTuple left, IndexTuple right)
{
	uint64		word;

	if (forein_keys_equal(state, left, right))
		return -1;
	if (!state->has_words)
		return 0;
	if (!synthetic_word(state, left, right, &word))
		word = forein_tuple_word(state, right);
	return trailing_zeros(word);
}

/*
 * The separator of a cut between the adjacent leaf items left and right:
 * the high key of the left page and the low key of the right one.  Between
 * duplicates, right's key and TID.  Between different keys a key alone
 * (TID (0,0)) suffices, so a search for right's first entry starts on the
 * right page: right's key, or the most aligned integer above left's.
 */
IndexTuple
forein_leaf_separator(ForeinState *state, IndexTuple left, IndexTuple right)
{
	IndexTuple	sep = forein_posting_key(right);
	uint64		word;
	char	   *data;
	int64		v;
	int16		len;

	if (forein_keys_equal(state, left, right))
		return sep;
	ItemPointerSet(&sep->t_tid, 0, 0);
	if (!synthetic_word(state, left, right, &word))
		return sep;

	/*
	 * The leading column is fixed-width, by value and not NULL, so it sits
	 * at the tuple's data offset whatever follows it.
	 */
	data = (char *) sep + IndexInfoFindDataOffset(sep->t_info);
	v = word_int(state, word);
	len = leading_len(state);
	store_att_byval(data, len == 2 ? Int16GetDatum((int16) v) :
					len == 4 ? Int32GetDatum((int32) v) : Int64GetDatum(v), len);
	return sep;
}
