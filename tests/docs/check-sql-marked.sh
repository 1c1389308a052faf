#!/usr/bin/env bash
# check-sql-marked.sh: every ```sql block of the given docs says whether it
# runs: the line before its fence (blank lines aside) is either a
# run-doc-blocks.sh marker (<!-- runs: sqlite3 --> or <!-- runs: psql -->)
# or <!-- not run: REASON --> with a reason. Lists the blocks that say
# neither; exit status 1 when there are any.
#
#   tests/docs/check-sql-marked.sh DOC.md...
set -uo pipefail
[ $# -gt 0 ] || { echo "usage: $0 DOC.md..." >&2; exit 2; }
bad=0
for f in "$@"; do
	awk -v doc="$f" '
	BEGIN { marked = 0; infence = 0; bad = 0 }
	{
		if (infence) { if ($0 ~ /^ *(```|~~~)[ \t]*$/) infence = 0; next }
		if ($0 ~ /^ *(```|~~~)/) {
			if ($0 ~ /^ *(```|~~~)[ \t]*sql[ \t]*$/ && !marked) {
				print doc " line " NR ": a sql block with neither <!-- runs: KIND --> nor <!-- not run: REASON -->"
				bad = 1
			}
			infence = 1; marked = 0; next
		}
		if ($0 ~ /^[ \t]*$/) next
		marked = $0 ~ /^[ \t]*<!--[ \t]*runs:[ \t]*(sqlite3|psql)[ \t]*-->[ \t]*$/ ||
		         $0 ~ /^[ \t]*<!--[ \t]*not run:[ \t]*[^ \t].*-->[ \t]*$/
	}
	END { exit bad }' "$f" || bad=1
done
[ $bad -eq 0 ] && echo "check-sql-marked: every sql block of $* is marked"
exit $bad
