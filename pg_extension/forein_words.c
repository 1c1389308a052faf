/*-------------------------------------------------------------------------
 *
 * forein_words.c
 *	  Offload words of every key type forein has an operator class for.
 *
 * A key's word is the 64-bit value the offload hardware matches on
 * (docs/design.md, contract 1): it must never contradict the operator
 * class's order (a < b implies word(a) <= word(b), equal keys have equal
 * words); ties are fine, the tree's comparison tells keys apart.  Types the
 * engine also indexes use its definitions (forein/word.h); the others
 * (PostgreSQL-only types) are defined here:
 *
 *	 float4, float8	the IEEE bits of the value as a double, flipped so that
 *					unsigned order is numeric order; -0 is +0, NaN (after
 *					+Infinity in PostgreSQL, all NaNs equal) the largest word
 *	 numeric		the word of its nearest double (numeric_float8_no_overflow,
 *					monotone: rounding only ties words)
 *	 bool, oid		the value as an integer
 *	 interval		interval_cmp_value's 128-bit span divided by 2^11, which
 *					fits int64 exactly (see interval_word)
 *	 inet, cidr		family, masked address, mask length, address (inet_word)
 *	 bytea, *_pattern_ops	the first 8 bytes (memcmp order)
 *	 text, varchar, bpchar, name	the first 8 bytes of the sort key under
 *					the column's collation (bpchar without trailing spaces)
 *
 * How a column's words are made depends on its type, its collation and
 * its operator family's comparison function (text_pattern_ops orders text
 * by bytes, text_ops by collation).
 *
 * pg_extension/forein_words.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>
#include <sys/socket.h>

#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "forein.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/inet.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#ifdef USE_ICU
#include <unicode/ucol.h>
#include <unicode/uiter.h>
#endif

static const char *const no_word_for_type =
	"its key type has no order-preserving offload word";

/*
 * The comparison function an operator class of the type must use for the
 * words to follow its order; InvalidOid for the types whose order the
 * access method itself hard-codes (the integer-like kinds, uuid).
 */
static Oid
expected_cmp(ForeinWordsOf of)
{
	switch (of)
	{
		case FOREIN_WORDS_FLOAT4:
			return F_BTFLOAT4CMP;
		case FOREIN_WORDS_FLOAT8:
			return F_BTFLOAT8CMP;
		case FOREIN_WORDS_NUMERIC:
			return F_NUMERIC_CMP;
		case FOREIN_WORDS_BOOL:
			return F_BTBOOLCMP;
		case FOREIN_WORDS_OID:
			return F_BTOIDCMP;
		case FOREIN_WORDS_INTERVAL:
			return F_INTERVAL_CMP;
		case FOREIN_WORDS_INET:
			return F_NETWORK_CMP;
		case FOREIN_WORDS_BYTEA:
			return F_BYTEACMP;
		case FOREIN_WORDS_TEXT:
			return F_BTTEXTCMP;
		case FOREIN_WORDS_TEXT_PATTERN:
			return F_BTTEXT_PATTERN_CMP;
		case FOREIN_WORDS_BPCHAR:
			return F_BPCHARCMP;
		case FOREIN_WORDS_BPCHAR_PATTERN:
			return F_BTBPCHAR_PATTERN_CMP;
		case FOREIN_WORDS_NAME:
			return F_BTNAMECMP;
		default:
			return InvalidOid;
	}
}

/*
 * How a collated type's words are made, or why it has none.  A word must
 * never contradict the collation's order; any deterministic collation's sort
 * key (strxfrm, ICU's) compares like the strings do.  A nondeterministic
 * collation's equal strings may have different sort keys, so such an index
 * gets no words (and no offload hints).
 */
static void
choose_collation_words(ForeinWords *w, Oid collation)
{
	pg_locale_t locale;

	if (!OidIsValid(collation))
	{
		w->no_words_reason = "its key has no collation";
		return;
	}
	if (lc_collate_is_c(collation))
	{
		w->text_words = FOREIN_TEXT_WORDS_BYTES;
		w->has_words = true;
		return;
	}
	locale = pg_newlocale_from_collation(collation);
	if (locale && !locale->deterministic)
	{
		w->no_words_reason = "its key's collation is nondeterministic";
		return;
	}
	if (locale && locale->provider == COLLPROVIDER_ICU)
	{
#ifdef USE_ICU
		w->text_words = FOREIN_TEXT_WORDS_ICU;
#else
		w->no_words_reason = "its key's collation is an ICU collation and forein was built without ICU";
		return;
#endif
	}
	else
		w->text_words = FOREIN_TEXT_WORDS_LIBC;
	w->locale = locale;
	w->has_words = true;
}

void
forein_words_init(ForeinWords *w, Oid typid, Oid collation, Oid opfamily)
{
	Oid			cmp = InvalidOid;
	Oid			want;

	memset(w, 0, sizeof(*w));
	w->typid = typid;
	w->text_words = FOREIN_TEXT_WORDS_NONE;
	if (OidIsValid(opfamily))
		cmp = get_opfamily_proc(opfamily, typid, typid, FOREIN_CMP_PROC);

	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			w->of = FOREIN_WORDS_INT;
			break;
		case DATEOID:
			w->of = FOREIN_WORDS_DATE;
			break;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			w->of = FOREIN_WORDS_TIMESTAMP;
			break;
		case UUIDOID:
			w->of = FOREIN_WORDS_UUID;
			break;
		case FLOAT4OID:
			w->of = FOREIN_WORDS_FLOAT4;
			break;
		case FLOAT8OID:
			w->of = FOREIN_WORDS_FLOAT8;
			break;
		case NUMERICOID:
			w->of = FOREIN_WORDS_NUMERIC;
			break;
		case BOOLOID:
			w->of = FOREIN_WORDS_BOOL;
			break;
		case OIDOID:
			w->of = FOREIN_WORDS_OID;
			break;
		case INTERVALOID:
			w->of = FOREIN_WORDS_INTERVAL;
			break;
		case INETOID:
		case CIDROID:
			w->of = FOREIN_WORDS_INET;
			break;
		case BYTEAOID:
			w->of = FOREIN_WORDS_BYTEA;
			break;
		case TEXTOID:
		case VARCHAROID:
			w->of = cmp == F_BTTEXT_PATTERN_CMP ? FOREIN_WORDS_TEXT_PATTERN
				: FOREIN_WORDS_TEXT;
			break;
		case BPCHAROID:
			w->of = cmp == F_BTBPCHAR_PATTERN_CMP ? FOREIN_WORDS_BPCHAR_PATTERN
				: FOREIN_WORDS_BPCHAR;
			break;
		case NAMEOID:
			w->of = FOREIN_WORDS_NAME;
			break;
		default:
			w->of = FOREIN_WORDS_NONE;
			w->no_words_reason = no_word_for_type;
			return;
	}

	/* an operator class of the type ordering it some other way: no words */
	want = expected_cmp(w->of);
	if (OidIsValid(cmp) && OidIsValid(want) && cmp != want)
	{
		w->of = FOREIN_WORDS_NONE;
		w->no_words_reason = no_word_for_type;
		return;
	}

	switch (w->of)
	{
		case FOREIN_WORDS_TEXT:
		case FOREIN_WORDS_BPCHAR:
		case FOREIN_WORDS_NAME:
			choose_collation_words(w, collation);
			break;
		case FOREIN_WORDS_TEXT_PATTERN:
		case FOREIN_WORDS_BPCHAR_PATTERN:
			/* bytes, whatever the collation */
			w->text_words = FOREIN_TEXT_WORDS_BYTES;
			w->has_words = true;
			break;
		default:
			w->has_words = true;
			break;
	}
}

/*
 * The word of a string under the column's collation: the first 8 bytes
 * (big-endian, zero padded) of its bytes under "C"/"POSIX", of its full
 * strxfrm under another libc collation, of its ICU sort key (its first 8
 * bytes from ucol_nextSortKeyPart, as varstr_abbrev_convert gets them)
 * under an ICU collation.  One function for scan keys and the bounds and
 * tuples the refresh reads, so the words of both sides agree.
 */
static uint64
string_word(const ForeinWords *w, const char *data, Size len)
{
	switch (w->text_words)
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
				uint64		word;

				memcpy(src, data, len);
				src[len] = '\0';
				for (;;)
				{
					size_t		dstsize = dst == xbuf ? sizeof(xbuf) : xlen + 1;

#ifdef HAVE_LOCALE_T
					if (w->locale)
						xlen = strxfrm_l(dst, src, dstsize, w->locale->info.lt);
					else
#endif
						xlen = strxfrm(dst, src, dstsize);
					if (xlen < dstsize)
						break;
					dst = palloc(xlen + 1);
				}
				word = forein_word_bytes(dst, Min(xlen, (size_t) FOREIN_WORD_BYTES));
				if (dst != xbuf)
					pfree(dst);
				if (src != sbuf)
					pfree(src);
				return word;
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
				n = ucol_nextSortKeyPart(w->locale->info.icu.ucol, &iter,
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

/* The word of a varlena's bytes (text, bytea), optionally without trailing
 * spaces (bpchar) */
static uint64
varlena_word(const ForeinWords *w, Datum value, bool strip_spaces)
{
	struct varlena *v = PG_DETOAST_DATUM_PACKED(value);
	char	   *data = VARDATA_ANY(v);
	int			len = VARSIZE_ANY_EXHDR(v);
	uint64		word;

	if (strip_spaces)
		len = bpchartruelen(data, len);
	word = string_word(w, data, len);
	if ((Pointer) v != DatumGetPointer(value))
		pfree(v);
	return word;
}

/*
 * A double's bits as an unsigned number in numeric order: positive values
 * get the sign bit set, negative ones are complemented.  -0 = +0 and NaN is
 * the largest (PostgreSQL sorts NaN after +Infinity, all NaNs equal).
 */
static uint64
float8_word(float8 v)
{
	uint64		bits;

	if (isnan(v))
		return FOREIN_WORD_MAX;
	if (v == 0.0)
		v = 0.0;				/* -0 */
	memcpy(&bits, &v, sizeof(bits));
	return (bits & FOREIN_WORD_SIGN) ? ~bits : bits | FOREIN_WORD_SIGN;
}

/*
 * interval_cmp_value's span is time + (month * 30 + day) * USECS_PER_DAY
 * microseconds, a 128-bit number.  USECS_PER_DAY = 2^11 * 42187500, so
 * floor(span / 2^11) = days * 42187500 + floor(time / 2^11) exactly, and
 * its magnitude stays below 31 * 2^31 * 42187500 + 2^52 < 2^62: a monotone
 * int64 image of the span (spans within 2^11 microseconds tie).
 */
static uint64
interval_word(const Interval *iv)
{
	int64		days = (int64) iv->month * 30 + iv->day;
	int64		q = iv->time / 2048;

	StaticAssertStmt(USECS_PER_DAY == INT64CONST(2048) * 42187500,
					 "USECS_PER_DAY is 2^11 * 42187500");
	if (iv->time % 2048 < 0)
		q--;					/* floor, not truncation */
	return forein_word_int64(days * 42187500 + q);
}

/*
 * network_cmp orders by family (IPv4 first), then by the first
 * min(masklen) address bits, then by mask length, then by the whole
 * address.  That is the lexicographic order of (family, address masked to
 * its own mask length, mask length, address): keys that differ in the
 * common prefix differ there in their masked addresses too; keys equal
 * there with different mask lengths have masked addresses ordered like
 * their mask lengths or equal; keys with equal prefix and mask length have
 * equal masked addresses.  The word is that tuple's first 64 bits:
 * IPv4: 0, 32 masked bits, 6 bits of mask length, 25 address bits;
 * IPv6: 1, the first 63 masked bits.
 */
static uint64
inet_word(Datum value)
{
	inet	   *ip = DatumGetInetPP(value);
	int			bits = ip_bits(ip);
	unsigned char *addr = ip_addr(ip);
	unsigned char masked[16];
	uint64		word;
	int			i;

	for (i = 0; i < 16; i++)
	{
		int			keep = Max(Min(bits - 8 * i, 8), 0);

		masked[i] = i < ip_addrsize(ip) ?
			addr[i] & (unsigned char) (0xFF00 >> keep) : 0;
	}
	if (ip_family(ip) == PGSQL_AF_INET)
		word = (forein_word_bytes(masked, 4) >> 1) |
			((uint64) bits << 25) |
			(forein_word_bytes(addr, 4) >> 39);
	else
		word = FOREIN_WORD_SIGN | (forein_word_bytes(masked, 16) >> 1);
	if ((Pointer) ip != DatumGetPointer(value))
		pfree(ip);
	return word;
}

uint64
forein_words_value(const ForeinWords *w, Datum value)
{
	if (!w->has_words)
		return 0;
	switch (w->of)
	{
		case FOREIN_WORDS_NONE:
			return 0;
		case FOREIN_WORDS_INT:
			switch (w->typid)
			{
				case INT2OID:
					return forein_word_int64(DatumGetInt16(value));
				case INT4OID:
					return forein_word_int64(DatumGetInt32(value));
				default:
					return forein_word_int64(DatumGetInt64(value));
			}
		case FOREIN_WORDS_DATE:
			return forein_word_date(DatumGetDateADT(value));
		case FOREIN_WORDS_TIMESTAMP:
			return forein_word_timestamp(DatumGetTimestamp(value));
		case FOREIN_WORDS_UUID:
			return forein_word_uuid(DatumGetUUIDP(value)->data);
		case FOREIN_WORDS_FLOAT4:
			/* exact as a double: float4 and float8 keys share words */
			return float8_word((float8) DatumGetFloat4(value));
		case FOREIN_WORDS_FLOAT8:
			return float8_word(DatumGetFloat8(value));
		case FOREIN_WORDS_NUMERIC:
			/* NaN and the infinities map to the double's ones */
			return float8_word(DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
																  value)));
		case FOREIN_WORDS_BOOL:
			return forein_word_int64(DatumGetBool(value) ? 1 : 0);
		case FOREIN_WORDS_OID:
			return forein_word_int64((int64) DatumGetObjectId(value));
		case FOREIN_WORDS_INTERVAL:
			return interval_word(DatumGetIntervalP(value));
		case FOREIN_WORDS_INET:
			return inet_word(value);
		case FOREIN_WORDS_BYTEA:
		case FOREIN_WORDS_TEXT:
		case FOREIN_WORDS_TEXT_PATTERN:
			return varlena_word(w, value, false);
		case FOREIN_WORDS_BPCHAR:
		case FOREIN_WORDS_BPCHAR_PATTERN:
			/* bpchar compares without its trailing spaces */
			return varlena_word(w, value, true);
		case FOREIN_WORDS_NAME:
			{
				const char *s = NameStr(*DatumGetName(value));

				return string_word(w, s, strlen(s));
			}
	}
	return 0;
}

/*
 * Whether the column's values are text ordered as their bytes (memcmp, the
 * shorter first on a tie): text under "C"/"POSIX", text_pattern_ops.
 */
bool
forein_words_bytes_order(const ForeinWords *w)
{
	return (w->of == FOREIN_WORDS_TEXT || w->of == FOREIN_WORDS_TEXT_PATTERN) &&
		w->text_words == FOREIN_TEXT_WORDS_BYTES;
}

/*
 * The word, in the column's word space, of a scan key argument of another
 * type of the operator family: float8 for a float4 column (and the reverse:
 * both are words of doubles), name for a text column and text for a name
 * column (both compare as strings under the column's collation).  0 for a
 * pair it does not know: a word that breaks the contract only costs a hint
 * that validation rejects, never a wrong answer.
 */
uint64
forein_words_arg_value(const ForeinWords *w, Oid argtype, Datum value)
{
	if (argtype == w->typid || !w->has_words)
		return forein_words_value(w, value);
	switch (w->of)
	{
		case FOREIN_WORDS_FLOAT4:
		case FOREIN_WORDS_FLOAT8:
			if (argtype == FLOAT4OID)
				return float8_word((float8) DatumGetFloat4(value));
			if (argtype == FLOAT8OID)
				return float8_word(DatumGetFloat8(value));
			break;
		case FOREIN_WORDS_TEXT:
		case FOREIN_WORDS_NAME:
			if (argtype == NAMEOID)
			{
				const char *s = NameStr(*DatumGetName(value));

				return string_word(w, s, strlen(s));
			}
			if (argtype == TEXTOID || argtype == VARCHAROID)
				return varlena_word(w, value, false);
			break;
		default:
			break;
	}
	return 0;
}
