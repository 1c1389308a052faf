/*
 * forein/word.h: the one definition of offload words (docs/design.md,
 * contract 1), shared by the C++ engine (forein/key.h, engine/src/key.cc)
 * and the PostgreSQL access method (pg_extension/forein_utils.c).
 *
 * Plain C99 that also compiles as C++20: static inline functions on
 * <stdint.h> types, no PostgreSQL and no C++ library dependencies.
 *
 * A key's word is a 64-bit value that never contradicts key order
 * (a < b implies word(a) <= word(b)); keys sharing a word are told apart by
 * the tree's full comparison.
 *
 *   integers (int2/int4/int8), dates (int32 days since 2000-01-01),
 *   timestamps and timestamptz (int64 microseconds since 2000-01-01, as
 *   PostgreSQL stores them, infinities included): the value as int64 with
 *   the sign bit flipped, so INT64_MIN..INT64_MAX map onto 0..2^64-1 in
 *   order.
 *   byte strings (engine keys, text under the "C" collation, and the sort
 *   key of text under any other deterministic collation), uuids: the first
 *   8 bytes read big-endian, zero padded.
 *
 * A node holding the keys [lo, hi) owns the word interval
 * [ceil(lo), ceil(hi)), hi beyond 2^64-1 meaning "through 2^64-1"
 * (forein_word_interval).  A bound's word-ceiling is its key's word when the
 * bound owns that word (no smaller key with the same word lies left of the
 * bound), else the next word, which is past the end of word space for
 * 2^64-1 (forein_word_ceil).  What "owns" means depends on the key domain:
 * the engine's byte strings own their word when they are the word's
 * smallest key (forein_word_bytes_own_word); the PostgreSQL AM's bounds own
 * it when their heap TID is the minimal (0,0).
 */
#ifndef FOREIN_WORD_H
#define FOREIN_WORD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes in a word. */
#define FOREIN_WORD_BYTES 8

/* The sign bit flipped by the integer encodings. */
#define FOREIN_WORD_SIGN (UINT64_C(1) << 63)

/* The largest word. */
#define FOREIN_WORD_MAX UINT64_MAX

/*
 * Sibling steps a descent may take right of a hinted start node before the
 * hint is dropped (engine: Tree::Impl::move_right; PostgreSQL AM:
 * forein_search.c).  A far-off hint costs no more than this.
 */
#define FOREIN_MAX_HINT_MOVE_RIGHTS 8

/* int2, int4, int8 (and any signed integer widened to int64). */
static inline uint64_t
forein_word_int64(int64_t v)
{
	return (uint64_t) v ^ FOREIN_WORD_SIGN;
}

/* The inverse of forein_word_int64. */
static inline int64_t
forein_word_to_int64(uint64_t w)
{
	return (int64_t) (w ^ FOREIN_WORD_SIGN);
}

/* PostgreSQL date: days since 2000-01-01 (infinities: INT32_MIN/MAX). */
static inline uint64_t
forein_word_date(int32_t days)
{
	return forein_word_int64(days);
}

/*
 * PostgreSQL timestamp and timestamptz: microseconds since 2000-01-01 UTC
 * (infinities: INT64_MIN/MAX).
 */
static inline uint64_t
forein_word_timestamp(int64_t micros)
{
	return forein_word_int64(micros);
}

/* Byte strings: the first 8 bytes big-endian, zero padded. */
static inline uint64_t
forein_word_bytes(const void *data, size_t len)
{
	const unsigned char *p = (const unsigned char *) data;
	uint64_t	w = 0;
	size_t		i;

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* The lookup path's common case: one load and a byte swap. */
	if (len >= FOREIN_WORD_BYTES)
	{
		memcpy(&w, p, sizeof(w));
		return __builtin_bswap64(w);
	}
#endif
	for (i = 0; i < FOREIN_WORD_BYTES; i++)
		w = (w << 8) | (uint64_t) (i < len ? p[i] : 0);
	return w;
}

/* uuid: its first 8 bytes (of 16), big-endian. */
static inline uint64_t
forein_word_uuid(const unsigned char *uuid16)
{
	return forein_word_bytes(uuid16, 16);
}

/*
 * Whether a byte string is the smallest key of its word (memcmp order,
 * shorter first): at most 8 bytes and no trailing zero byte.
 */
static inline bool
forein_word_bytes_own_word(const void *data, size_t len)
{
	const unsigned char *p = (const unsigned char *) data;

	return len <= FOREIN_WORD_BYTES && (len == 0 || p[len - 1] != 0);
}

/*
 * The first word a bound owns: its key's word `word` if it owns that word,
 * else the next one.  Returns false, with *ceil = 0, when that is past the
 * end of word space (word 2^64-1 not owned).
 */
static inline bool
forein_word_ceil(uint64_t word, bool owns_word, uint64_t *ceil)
{
	if (owns_word)
	{
		*ceil = word;
		return true;
	}
	if (word == FOREIN_WORD_MAX)
	{
		*ceil = 0;
		return false;
	}
	*ceil = word + 1;
	return true;
}

/* A node's word interval [lo, hi) (hi_inf: through 2^64 - 1). */
typedef struct ForeinWordInterval
{
	uint64_t	lo;
	uint64_t	hi;
	bool		hi_inf;
} ForeinWordInterval;

/*
 * The word interval of a node from its bounds.  has_lo false: the leftmost
 * node (from word 0); has_hi false: the rightmost node (through 2^64-1).
 * A low bound past the end gives the empty interval [2^64-1, 2^64-1): no
 * word's first key lies in the node (it holds only keys sharing the last
 * word with its left neighbour); a high bound past the end gives hi_inf.
 */
static inline ForeinWordInterval
forein_word_interval(bool has_lo, uint64_t lo_word, bool lo_owns,
					 bool has_hi, uint64_t hi_word, bool hi_owns)
{
	ForeinWordInterval iv;
	uint64_t	c;

	iv.lo = 0;
	iv.hi = 0;
	iv.hi_inf = false;
	if (has_lo)
	{
		if (!forein_word_ceil(lo_word, lo_owns, &c))
		{
			iv.lo = FOREIN_WORD_MAX;
			iv.hi = FOREIN_WORD_MAX;
			return iv;
		}
		iv.lo = c;
	}
	if (!has_hi || !forein_word_ceil(hi_word, hi_owns, &c))
		iv.hi_inf = true;
	else
		iv.hi = c;
	return iv;
}

#ifdef __cplusplus
}
#endif

#endif							/* FOREIN_WORD_H */
