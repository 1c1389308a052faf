#!/usr/bin/env bash
# Reproduces DPA-Store's section 4 in the model (docs/dpa.md, "The DPA
# model"): the store really runs every operation and counts its DPA lines,
# L3 lines, host DMAs and stitched bytes; forein/dpa/model.h turns them into the
# paper's latency and throughput (tests/bench/dpa_experiments.cc).
# Experiments: GET / RANGE / INSERT / UPDATE-only (with latency.csv: each
# op's latency alone and at the paper's queue depth), YCSB A-F, the
# hot-entry cache on/off (uniform, Zipf 0.99), error bound sweeps, traverser
# counts, the client queue-depth sweep (qdepth: the thread/queue model,
# forein/dpa/thread_model.h), and DPA memory per data set beside Table 1. Writes CSVs to docs/bench/dpa/
# and renders PNGs there with gnuplot. Also measures dpa hints against the
# root start on the engine's tree (dpa_host_speedup: engine_hints.csv). The
# PostgreSQL probes (1M nested-loop probes vs btree) are a separate command:
#   ROWS=1000000 PROBES=1000000 REPS=5 BACKENDS="none switch_lpm dpa" \
#     bash tests/bench/run_pg_offload_bench.sh
#
#   bash tests/bench/run_dpa_experiments.sh <build-dir> [--smoke | --plots-only] [-- extra flags]
#
# Configures <build-dir> (Release) if it has no CMakeCache.txt and builds
# the dpa_experiments target (-j2). --smoke: 100,000 keys, 20,000 operations
# per point, 200,000 keys for the memory table (about 30 s); otherwise
# dpa_experiments' defaults (2,000,000 keys, 200,000 operations per point,
# 10,000,000 keys for the memory table). --plots-only: redraw the PNGs from
# the CSVs already in docs/bench/dpa. Flags after -- go to dpa_experiments
# (e.g. --keys 4000000 --memory-keys 50000000). Needs gnuplot
# (apt-get install -y gnuplot-nox) for the PNGs; without it the CSVs are
# still written and the script exits 1.
# BENCH_OUT=<dir> writes the CSVs and PNGs there instead of docs/bench/dpa.
set -euo pipefail

usage() {
  echo "usage: $0 <build-dir> [--smoke | --plots-only] [-- extra dpa_experiments flags]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
build=$1
shift
smoke=0
plots_only=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) smoke=1; shift ;;
    --plots-only) plots_only=1; shift ;;
    --) shift; extra=("$@"); break ;;
    *) usage ;;
  esac
done

root=$(cd "$(dirname "$0")/../.." && pwd)
case "$build" in
  /*) ;;
  *) build="$PWD/$build" ;;
esac
exp="$build/tests/bench/dpa_experiments"
if [ $plots_only = 0 ]; then
  if [ ! -f "$build/CMakeCache.txt" ]; then
    echo "run_dpa_experiments: configuring $build (Release)"
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  cmake --build "$build" -j2 --target dpa_experiments dpa_host_speedup >/dev/null
  [ -x "$exp" ] || { echo "run_dpa_experiments: $exp not built" >&2; exit 1; }
fi

have_gnuplot=1
if ! command -v gnuplot >/dev/null 2>&1; then
  have_gnuplot=0
  echo "run_dpa_experiments: gnuplot not found; CSVs will be written but no PNGs." >&2
  echo "  install it with:  apt-get install -y gnuplot-nox" >&2
fi

cd "$root"
out=${BENCH_OUT:-docs/bench/dpa}  # BENCH_OUT: elsewhere (the smoke test)
mkdir -p "$out"

if [ $plots_only = 0 ]; then
  btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo "none")
  [ -z "$(git status --porcelain 2>/dev/null | head -1)" ] || commit="$commit, working tree modified"
  echo "== DPA-Store (dpa backend) section 4 experiments, in the model"
  echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "machine:  $(uname -srm), $(nproc) cores online"
  echo "cpu:      $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
  echo "memory:   $(free -g | awk '/^Mem:/ {print $2 " GiB total, " $7 " GiB available"}')"
  echo "load:     $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
  echo "build:    $build (CMAKE_BUILD_TYPE=${btype:-none})"
  echo "commit:   $commit"
  echo "command:  $0 $build$([ $smoke = 1 ] && echo ' --smoke')${extra[*]:+ -- ${extra[*]}}"
  echo
  sizing=()
  [ $smoke = 1 ] && sizing=(--smoke)
  echo "\$ $exp ${sizing[*]} --out $out ${extra[*]}"
  "$exp" "${sizing[@]}" --out "$out" "${extra[@]}"
  # Measured, not modelled: dpa hints vs the root start on the engine's tree
  # (tests/bench/dpa_host_speedup.cc; engine_hints.csv).
  host=(--keys 1000000,10000000 --ops 1000000 --reps 5)
  [ $smoke = 1 ] && host=(--keys 100000 --ops 100000 --reps 1 --train 100000)
  echo "\$ $build/tests/bench/dpa_host_speedup ${host[*]} --out $out"
  "$build/tests/bench/dpa_host_speedup" "${host[@]}" --out "$out"
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
fi

if [ $have_gnuplot = 0 ]; then
  echo "run_dpa_experiments: CSVs are in $out; PNGs skipped (apt-get install -y gnuplot-nox)" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
term="set terminal pngcairo size 900,600 font 'DejaVu Sans,11'"
gnuplot -e "set terminal pngcairo" >/dev/null 2>&1 || term="set terminal png size 900,600"

# col CSV NAME: the index (1-based) of the header column NAME.
col() { awk -F, -v name="$2" 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == name) print i; exit}' "$1"; }

if [ -f "$out/ops.csv" ]; then
  m=$(col "$out/ops.csv" mops)
  p=$(col "$out/ops.csv" paper_mops)
  # one line per op: op, then modelled Mops per data set, then the paper's
  awk -F, -v m="$m" -v p="$p" 'NR > 1 {
      if (!($2 in seen)) {order[++n] = $2; seen[$2] = 1}
      if (!($1 in dseen)) {dorder[++nd] = $1; dseen[$1] = 1}
      v[$2, $1] = $m; gsub(/[<=]/, "", $p); paper[$2] = $p}
    END {printf "op"; for (j = 1; j <= nd; j++) printf " %s", dorder[j]; print " paper";
      for (i = 1; i <= n; i++) {printf "%s", order[i]; for (j = 1; j <= nd; j++) printf " %s", v[order[i], dorder[j]];
        print " " paper[order[i]]}}' "$out/ops.csv" > "$tmp/ops.dat"
  ncols=$(head -1 "$tmp/ops.dat" | wc -w)
  gnuplot <<EOF
$term
set output '$out/ops.png'
set title "GET / RANGE (10) / UPDATE-only / INSERT: modelled (176 traversers) vs the paper"
set ylabel 'Mops/s'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key autotitle columnhead inside right top
set grid y
set yrange [0:*]
plot for [i=2:$ncols] '$tmp/ops.dat' using i:xtic(1)
EOF
fi

if [ -f "$out/ycsb.csv" ]; then
  m=$(col "$out/ycsb.csv" mops)
  awk -F, -v m="$m" 'NR > 1 {
      if (!($2 in seen)) {order[++n] = $2; seen[$2] = 1}
      if (!($1 in dseen)) {dorder[++nd] = $1; dseen[$1] = 1}
      v[$2, $1] = $m}
    END {printf "workload"; for (j = 1; j <= nd; j++) printf " %s", dorder[j]; print "";
      for (i = 1; i <= n; i++) {printf "%s", order[i]; for (j = 1; j <= nd; j++) printf " %s", v[order[i], dorder[j]]; print ""}}' \
    "$out/ycsb.csv" > "$tmp/ycsb.dat"
  ncols=$(head -1 "$tmp/ycsb.dat" | wc -w)
  gnuplot <<EOF
$term
set output '$out/ycsb.png'
set title "YCSB A-F, uniform keys (paper Fig 15): modelled"
set ylabel 'Mops/s'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key autotitle columnhead inside right top
set grid y
set yrange [0:*]
plot for [i=2:$ncols] '$tmp/ycsb.dat' using i:xtic(1)
EOF
fi

if [ -f "$out/hot.csv" ]; then
  m=$(col "$out/hot.csv" mops)
  awk -F, -v m="$m" 'NR > 1 {print "\"" $2 ", cache " $3 "\"", $m, $4}' "$out/hot.csv" > "$tmp/hot.dat"
  gnuplot <<EOF
$term
set output '$out/hot.png'
set title "Hot-entry cache on/off, GET only (paper 4.2.4: up to +30 % under skew): modelled"
set ylabel 'Mops/s'
set y2label 'hot-cache hit ratio'
set y2tics
set y2range [0:1]
set yrange [0:*]
set style fill solid 0.8 border -1
set boxwidth 0.6
set key outside right top
set grid y
plot '$tmp/hot.dat' using 0:2:xtic(1) with boxes lc rgb '#0072b2' title 'throughput', \
     '' using 0:3 axes x1y2 with linespoints lw 2 pt 7 lc rgb '#d55e00' title 'hit ratio'
EOF
fi

if [ -f "$out/eps.csv" ]; then
  m=$(col "$out/eps.csv" mops)
  plots=""
  for which in leaf inner; do
    for d in $(awk -F, 'NR > 1 {print $1}' "$out/eps.csv" | sort -u); do
      if [ $which = leaf ]; then x=4; else x=3; fi
      awk -F, -v w=$which -v d="$d" -v m="$m" -v x=$x 'NR > 1 && $1 == d && $2 == w {print $x, $m}' \
        "$out/eps.csv" > "$tmp/eps_${which}_$d.dat"
      plots="$plots${plots:+, }'$tmp/eps_${which}_$d.dat' using 1:2 with linespoints lw 2 title '$d, $which'"
    done
  done
  gnuplot <<EOF
$term
set output '$out/eps.png'
set title "Error bound (paper 4.2.4, Fig 11): GET, uniform, modelled (other bound at its default)"
set xlabel 'epsilon'
set ylabel 'Mops/s'
set logscale x 2
set yrange [0:*]
set key outside right top
set grid
plot $plots
EOF
fi

if [ -f "$out/threads.csv" ]; then
  m=$(col "$out/threads.csv" mops)
  awk -F, -v m="$m" 'NR > 1 {print $2, $m}' "$out/threads.csv" > "$tmp/threads.dat"
  gnuplot <<EOF
$term
set output '$out/threads.png'
set title "Traverser threads (paper 4.2.2, Fig 9): GET, uniform, modelled (B3140L packet ceiling 44.9)"
set xlabel 'traverser threads'
set ylabel 'Mops/s'
set yrange [0:*]
set key outside right top
set grid
plot '$tmp/threads.dat' using 1:2 with linespoints lw 2 pt 7 title 'model'
EOF
fi

if [ -f "$out/qdepth.csv" ]; then
  m=$(col "$out/qdepth.csv" mops)
  r=$(col "$out/qdepth.csv" response_us)
  plots=""
  i=0
  while IFS= read -r w; do
    i=$((i + 1))
    awk -F, -v w="$w" -v m="$m" -v r="$r" 'NR > 1 && $2 == w {print $3, $m, $r}' "$out/qdepth.csv" > "$tmp/qd_$i.dat"
    plots="$plots${plots:+, }'$tmp/qd_$i.dat' using 1:2 with linespoints lw 2 pt 7 lc $i title '$w: Mops', '$tmp/qd_$i.dat' using 1:3 axes x1y2 with linespoints lw 1 dt 2 pt 6 lc $i title '$w: response us'"
  done < <(awk -F, 'NR > 1 && !seen[$2]++ {print $2}' "$out/qdepth.csv")
  gnuplot <<EOF
$term
set output '$out/qdepth.png'
set title "Client queue depth (paper 4.2.3, Fig 10): 6 x 31 client threads, mean value analysis of the thread model"
set xlabel 'requests in flight per client thread'
set ylabel 'Mops/s'
set y2label 'response time (us, Little)'
set y2tics
set logscale x 2
set yrange [0:*]
set y2range [0:*]
set key outside bottom center horizontal maxrows 3
set grid
plot $plots
EOF
fi

if [ -f "$out/latency.csv" ]; then
  a=$(col "$out/latency.csv" dpa_us)
  b=$(col "$out/latency.csv" packet_us)
  c=$(col "$out/latency.csv" wire_us)
  d=$(awk -F, 'NR == 2 {print $1}' "$out/latency.csv")
  awk -F, -v d="$d" -v a="$a" -v b="$b" -v c="$c" 'NR > 1 && $1 == d {print $2, $a, $b, $c}' "$out/latency.csv" > "$tmp/lat.dat"
  gnuplot <<EOF
$term
set output '$out/latency.png'
set title "Latency of one request alone ($d): modelled DPA time + packet engine (1 / ping rate) + wire"
set ylabel 'us'
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.6
set key outside right top
set grid y
set yrange [0:*]
plot '$tmp/lat.dat' using 2:xtic(1) title 'DPA (4.2.6 formula)', '' using 3 title 'packet engine', '' using 4 title 'wire, 100 Gb/s'
EOF
fi

if [ -f "$out/memory.csv" ]; then
  a=$(col "$out/memory.csv" dpa_mb_at_50m)
  b=$(col "$out/memory.csv" paper_mb_at_50m)
  awk -F, -v a="$a" -v b="$b" 'NR > 1 {print $1, $a, ($b == "" ? "0" : $b)}' "$out/memory.csv" > "$tmp/memory.dat"
  gnuplot <<EOF
$term
set output '$out/memory.png'
set title "DPA memory at 50M keys (paper Table 1): ours scaled from the run's key count"
set ylabel 'MB'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key inside left top
set grid y
set yrange [0:*]
plot '$tmp/memory.dat' using 2:xtic(1) title 'model (stand-in data set)' lc rgb '#0072b2', \
     '' using 3 title 'paper Table 1 (0: no counterpart)' lc rgb '#555555'
EOF
fi
echo "run_dpa_experiments: CSVs and PNGs in $out"
