#!/usr/bin/env bash
# Reproduces FOREIN's Fig 7a/7b, Fig 8a/8b (forein_experiments: computed,
# machine-independent) and Fig 9 / Fig 10 (forein_throughput: timed)
# (docs/forein-experiments.md): writes CSVs to docs/bench/forein/ and renders
# PNG plots there with gnuplot. Builds nothing: build the targets first, e.g.
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
#   cmake --build build -j2 --target forein_experiments forein_throughput
#
#   bash tests/bench/run_forein_experiments.sh <build-dir> [--sizes N,N,...] [--no-variants] [--quick]
#
# Three tree configurations:
#   (main)    8 KiB pages, bulk_load at 90% fill: the project's default tree
#   _small    4 KiB pages, bulk_load at 10% fill: ~16 keys per leaf, fan-out
#             ~25, close to the paper's deep tree (its root is L6)
#   _insert   8 KiB pages, keys put() in random order (splits, ~70% full
#             leaves, suffix-truncated leaf separators); fig7 and fig8a only
# Fig 9/10 run on the main and _small trees (1M keys, 73,000 LPM entries).
# --no-variants runs the main configuration only. --sizes replaces the
# default dataset sizes 100000,1000000,10000000 (fig7, fig8a). --quick (a
# smoke test, ~30 s): sizes 10000,100000, the figures' fixed data set
# 100,000 keys, Fig 9/10 with 50,000 requests, one repetition, uniform and
# Zipf 0.99, main configuration only. BENCH_OUT=<dir> writes there instead
# of docs/bench/forein.
# Needs gnuplot (apt-get install -y gnuplot-nox) for the PNGs; without it
# the CSVs are still written and the script exits 1.
set -euo pipefail

usage() {
  echo "usage: $0 <build-dir> [--sizes N,N,...] [--no-variants] [--quick]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
build=$1
shift
sizes=100000,1000000,10000000
variants=1
fixed=1000000  # the data set of the figures drawn at one size
timed=()       # extra flags of the timed figures
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) [ $# -ge 2 ] || usage; sizes=$2; shift 2 ;;
    --no-variants) variants=0; shift ;;
    --quick) sizes=10000,100000; fixed=100000; variants=0
             timed=(--ops 50000 --reps 1 --zipf 0,0.99 --ratios 0,0.1); shift ;;
    *) usage ;;
  esac
done

root=$(cd "$(dirname "$0")/../.." && pwd)
case "$build" in
  /*) ;;
  *) build="$PWD/$build" ;;
esac
exp="$build/tests/bench/forein_experiments"
thr="$build/tests/bench/forein_throughput"
for x in "$exp" "$thr"; do
  if [ ! -x "$x" ]; then
    echo "run_forein_experiments: $x not found; build it first:" >&2
    echo "  cmake --build $build -j2 --target forein_experiments forein_throughput" >&2
    exit 1
  fi
done

have_gnuplot=1
if ! command -v gnuplot >/dev/null 2>&1; then
  have_gnuplot=0
  echo "run_forein_experiments: gnuplot not found; CSVs will be written but no PNGs." >&2
  echo "  install it with:  apt-get install -y gnuplot-nox" >&2
fi

cd "$root"
out=${BENCH_OUT:-docs/bench/forein}  # BENCH_OUT: elsewhere (the smoke test)
mkdir -p "$out"

compiler=unknown
if [ -f "$build/CMakeCache.txt" ]; then
  cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
  btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
  if [ -n "$cxx" ]; then
    compiler="$("$cxx" --version 2>/dev/null | head -1) ($cxx, CMAKE_BUILD_TYPE=${btype:-none})"
  fi
fi
commit=$(git rev-parse --short HEAD 2>/dev/null || echo "none (no commits)")
if [ -n "$(git status --porcelain 2>/dev/null | head -1)" ]; then
  commit="$commit, working tree modified"
fi

echo "== FOREIN Fig 7 / Fig 8 / Fig 9 / Fig 10 experiments"
echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine:  $(uname -srm), $(nproc) cores online"
echo "cpu:      $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
echo "memory:   $(free -g | awk '/^Mem:/ {print $2 " GiB total, " $7 " GiB available"}')"
echo "load:     $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
echo "compiler: $compiler"
echo "gnuplot:  $(gnuplot --version 2>/dev/null || echo missing)"
echo "commit:   $commit"
echo "command:  $0 $build --sizes $sizes$([ $variants = 0 ] && echo ' --no-variants')$([ ${#timed[@]} = 0 ] || echo ' --quick')"
echo

run() {
  echo "\$ $*"
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "  (%e s wall, %M KiB max RSS)" "$@"
  else
    "$@"
  fi
  echo
}

# Main configuration: one subcommand per figure.
run "$exp" fig7 --sizes "$sizes" --size "$fixed" --out "$out"
run "$exp" fig8a --sizes "$sizes" --nodes 3200 --budget 73000 --out "$out"
run "$exp" fig8b --size "$fixed" --out "$out"
if [ $variants = 1 ]; then
  run "$exp" all --page-size 4096 --fill 10 --sizes "$sizes" --size 1000000 --out "$out" --tag small
  run "$exp" fig7 --load insert --sizes "$sizes" --out "$out" --tag insert
  run "$exp" fig8a --load insert --sizes "$sizes" --out "$out" --tag insert
fi

# Fig 9 / Fig 10: timed. Modes interleaved per rep; ratios from the same run.
echo "load before the timed runs: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
run "$thr" fig9 --size "$fixed" --budget 73000 "${timed[@]}" --out "$out"
run "$thr" fig10 --size "$fixed" --budget 73000 "${timed[@]}" --out "$out"
if [ $variants = 1 ]; then
  run "$thr" fig9 --size 1000000 --budget 73000 --page-size 4096 --fill 10 --out "$out" --tag small
  run "$thr" fig10 --size 1000000 --budget 73000 --page-size 4096 --fill 10 --out "$out" --tag small
fi
echo "load after the timed runs: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"

if [ $have_gnuplot = 0 ]; then
  echo "run_forein_experiments: CSVs are in $out; PNGs skipped (apt-get install -y gnuplot-nox)" >&2
  exit 1
fi

# ---------------------------------------------------------------------------
# Plots. awk splits the long CSVs into one whitespace-separated file per
# series under $tmp; gnuplot draws them.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
term="set terminal pngcairo size 900,600 font 'DejaVu Sans,11'"
gnuplot -e "set terminal pngcairo" >/dev/null 2>&1 || term="set terminal png size 900,600"

# fig7a[_tag]: average cover size per layer vs dataset size (wide CSV).
plot_fig7a() {
  local tag=$1 title=$2 csv="$out/fig7a$1.csv"
  [ -f "$csv" ] || return 0
  local ncol
  ncol=$(head -1 "$csv" | awk -F, '{print NF}')
  gnuplot <<EOF
$term
set output '$out/fig7a$tag.png'
set datafile separator ','
set datafile missing 'NaN'
set title "Fig 7a: average prefix-cover size per layer ($title)"
set xlabel 'dataset size (keys)'
set ylabel 'average prefix-cover size (LPM entries per node)'
set logscale x
set xrange [*:*]
set offsets graph 0.05, graph 0.05, 0, 0
set yrange [0:*]
set key outside right top title 'layer'
set grid
plot for [c=2:$ncol] '$csv' using 1:c with linespoints lw 2 pt c title columnheader(c)
EOF
}

# fig7b[_tag]: distribution of cover sizes per layer at one dataset size.
plot_fig7b() {
  local tag=$1 title=$2 keys=$3 csv="$out/fig7b$1.csv"
  [ -f "$csv" ] || return 0
  local layers plot="" l f
  layers=$(awk -F, -v k="$keys" 'NR > 1 && $1 == k {print $2}' "$csv" | awk '!seen[$0]++')
  for l in $layers; do
    # Skip the root layer (one node) and hollow-kept inner layers (noise).
    local n
    n=$(awk -F, -v k="$keys" -v l="$l" 'NR > 1 && $1 == k && $2 == l {s += $4} END {print s}' "$csv")
    [ "$n" -le 1 ] && continue
    case "$l" in L0\*|L0) ;; *\*) continue ;; esac
    f="$tmp/7b$tag-$(echo "$l" | tr '*' 's').dat"
    awk -F, -v k="$keys" -v l="$l" 'NR > 1 && $1 == k && $2 == l {print $3, $5}' "$csv" > "$f"
    plot="$plot${plot:+, }'$f' using 1:2 with linespoints lw 2 title '$l ($n nodes)'"
  done
  [ -n "$plot" ] || return 0
  gnuplot <<EOF
$term
set output '$out/fig7b$tag.png'
set title "Fig 7b: distribution of prefix-cover sizes, $keys keys ($title)"
set xlabel 'prefix-cover size (LPM entries of one node)'
set ylabel 'fraction of the layer''s nodes'
set yrange [0:*]
set xrange [0:*]
set key outside right top title 'layer'
set grid
plot $plot
EOF
}

# fig8a[_tag]: AMA vs dataset size at 3,200 installed nodes, per Zipf.
plot_fig8a() {
  local tag=$1 title=$2 csv="$out/fig8a$1.csv"
  [ -f "$csv" ] || return 0
  # columns: 4 keys, 5 height, 8 zipf, 9 baseline, 10 target, 15 ama
  local plot="" z f
  for z in $(awk -F, 'NR > 1 {print $8}' "$csv" | awk '!seen[$0]++'); do
    f="$tmp/8a$tag-$z.dat"
    awk -F, -v z="$z" 'NR > 1 && $8 == z {print $4, $15, $18, $21}' "$csv" > "$f"
    plot="$plot${plot:+, }'$f' using 1:2 with linespoints lw 2 title 'Zipf $z, 3200 nodes'"
  done
  f="$tmp/8a$tag-base.dat"
  awk -F, 'NR > 1 && !seen[$4]++ {print $4, $9}' "$csv" > "$f"
  plot="$plot, '$f' using 1:2 with linespoints lw 2 dt 2 lc rgb 'black' title 'no offload (height)'"
  gnuplot <<EOF
$term
set output '$out/fig8a$tag.png'
set title "Fig 8a: AMA vs dataset size, 3,200 installed nodes ($title)"
set xlabel 'dataset size (keys)'
set ylabel 'AMA (nodes visited per lookup)'
set logscale x
set offsets graph 0.05, graph 0.05, 0, 0
set yrange [0:*]
set key outside right top
set grid
plot $plot
EOF
}

# fig8b[_tag]: AMA vs installed nodes at 1M keys, per Zipf (categorical x).
plot_fig8b() {
  local tag=$1 title=$2 csv="$out/fig8b$1.csv"
  [ -f "$csv" ] || return 0
  # columns: 4 keys, 6 zipf, 7 point, 8 target, 9 installed, 13 ama
  local plot="" z f keys
  keys=$(awk -F, 'NR == 2 {print $4}' "$csv")
  for z in $(awk -F, 'NR > 1 {print $6}' "$csv" | awk '!seen[$0]++'); do
    f="$tmp/8b$tag-$z.dat"
    awk -F, -v z="$z" 'NR > 1 && $6 == z {print $7, $8, $13}' "$csv" > "$f"
    plot="$plot${plot:+, }'$f' using 1:3:xtic(2) with linespoints lw 2 title 'Zipf $z'"
  done
  gnuplot <<EOF
$term
set output '$out/fig8b$tag.png'
set title "Fig 8b: AMA vs installed nodes, $keys keys ($title)"
set xlabel 'installed nodes (greedy, Algorithm 1); 0 = no offload'
set ylabel 'AMA (nodes visited per lookup)'
set xtics rotate by -45
set offsets graph 0.03, graph 0.03, 0, 0
set yrange [0:*]
set key outside right top
set grid
plot $plot
EOF
}

# Columns by header name: cols CSV NAME... prints them, one row per line
# (zipf 0 is printed as "uniform").
cols() {
  local csv=$1
  shift
  awk -F, -v names="$*" 'NR == 1 {for (i = 1; i <= NF; i++) c[$i] = i; n = split(names, want, " "); next}
    {line = ""; for (j = 1; j <= n; j++) {v = $(c[want[j]]); if (want[j] == "zipf" && v == 0) v = "uniform"; line = line (j > 1 ? " " : "") v}; print line}' "$csv"
}

# fig9[_tag]: (a) Get throughput vs skew per mode, (b) speedup vs skew.
plot_fig9() {
  local tag=$1 title=$2 csv="$out/fig9$1.csv"
  [ -f "$csv" ] || return 0
  cols "$csv" zipf root_mops host_mops inproc_mops oracle_mops > "$tmp/9a$tag.dat"
  cols "$csv" zipf speedup_host speedup_host_min speedup_host_max speedup_inproc \
    speedup_inproc_min speedup_inproc_max speedup_oracle speedup_oracle_min speedup_oracle_max > "$tmp/9b$tag.dat"
  gnuplot <<EOF
set terminal pngcairo size 1300,520 font 'DejaVu Sans,11'
set output '$out/fig9$tag.png'
set multiplot layout 1,2 title "Fig 9: static Gets, 1M keys, 73,000 LPM entries ($title)"
set grid
set xlabel 'key distribution (Zipf exponent)'
set offsets 0.3, 0.3, 0, 0
set title '(a) throughput (median of reps)'
set ylabel 'Gets per second (millions)'
set yrange [0:*]
set key bottom right
plot '$tmp/9a$tag.dat' using 0:2:xtic(1) with linespoints lw 2 pt 7 lc rgb '#555555' title 'no hints (root)', \
     '' using 0:3 with linespoints lw 2 pt 5 lc rgb '#0072b2' title 'host-side (hints precomputed)', \
     '' using 0:4 with linespoints lw 2 pt 9 lc rgb '#009e73' title 'in-process (LPM lookup timed)', \
     '' using 0:5 with linespoints lw 2 pt 13 dt 2 lc rgb '#e69f00' title 'oracle leaf hint (ceiling)'
set title '(b) speedup ratio (median of reps; bars: min-max)'
set ylabel 'throughput with hints / without'
set yrange [0:*]
set key bottom right
plot '$tmp/9b$tag.dat' using 0:2:3:4:xtic(1) with yerrorlines lw 2 pt 5 lc rgb '#0072b2' title 'host-side', \
     '' using 0:5:6:7 with yerrorlines lw 2 pt 9 lc rgb '#009e73' title 'in-process', \
     '' using 0:8:9:10 with yerrorlines lw 2 pt 13 dt 2 lc rgb '#e69f00' title 'oracle', \
     1 with lines lc rgb 'black' dt 3 title 'no gain (1.0)'
unset multiplot
EOF
}

# fig10_<series>[_tag]: dynamic workload throughput and speedup vs skew
# (series skew) or vs dynamic ratio (series ratio).
plot_fig10() {
  local series=$1 tag=$2 title=$3 csv="$out/fig10_$1$2.csv" x xlabel sub
  [ -f "$csv" ] || return 0
  if [ "$series" = skew ]; then
    x=zipf
    xlabel='key distribution (Zipf exponent)'
  else
    x=ratio
    xlabel='dynamic ratio (fraction of Put/Delete)'
  fi
  sub=$(awk -F, 'NR == 2 {print ($1 == "skew" ? "dynamic ratio " $6 : "Zipf " $5) ", refresh every " $13 " updates, install delay " $14 " us"}' "$csv")
  cols "$csv" $x root_mops host_mops inproc_mops inproc_all_mops > "$tmp/10a$series$tag.dat"
  cols "$csv" $x speedup_host speedup_host_min speedup_host_max speedup_inproc speedup_inproc_min \
    speedup_inproc_max speedup_inproc_all speedup_inproc_all_min speedup_inproc_all_max > "$tmp/10b$series$tag.dat"
  gnuplot <<EOF
set terminal pngcairo size 1300,520 font 'DejaVu Sans,11'
set output '$out/fig10_$series$tag.png'
set multiplot layout 1,2 title "Fig 10: dynamic Get/Put/Delete, 1M keys, 73,000 LPM entries ($title); $sub"
set grid
set xlabel '$xlabel'
set offsets 0.3, 0.3, 0, 0
set title '(a) throughput (median of reps)'
set ylabel 'operations per second (millions)'
set yrange [0:*]
set key bottom left
plot '$tmp/10a$series$tag.dat' using 0:2:xtic(1) with linespoints lw 2 pt 7 lc rgb '#555555' title 'no hints (root)', \
     '' using 0:3 with linespoints lw 2 pt 5 lc rgb '#0072b2' title 'host-side (hints precomputed)', \
     '' using 0:4 with linespoints lw 2 pt 9 lc rgb '#009e73' title 'in-process (LPM lookup timed)', \
     '' using 0:5 with linespoints lw 2 pt 11 dt 2 lc rgb '#d55e00' title 'in-process + manager work'
set title '(b) speedup ratio (median of reps; bars: min-max)'
set ylabel 'throughput with hints / without'
set yrange [0:*]
set key bottom left
plot '$tmp/10b$series$tag.dat' using 0:2:3:4:xtic(1) with yerrorlines lw 2 pt 5 lc rgb '#0072b2' title 'host-side', \
     '' using 0:5:6:7 with yerrorlines lw 2 pt 9 lc rgb '#009e73' title 'in-process', \
     '' using 0:8:9:10 with yerrorlines lw 2 pt 11 dt 2 lc rgb '#d55e00' title 'in-process + manager work', \
     1 with lines lc rgb 'black' dt 3 title 'no gain (1.0)'
unset multiplot
EOF
}

main_title="8 KiB pages, bulk load 90%"
plot_fig7a "" "$main_title"
plot_fig7b "" "$main_title" 1000000
plot_fig8a "" "$main_title"
plot_fig8b "" "$main_title"
plot_fig9 "" "$main_title"
plot_fig10 skew "" "$main_title"
plot_fig10 ratio "" "$main_title"
if [ $variants = 1 ]; then
  small_title="4 KiB pages, bulk load 10%"
  plot_fig7a _small "$small_title"
  plot_fig7b _small "$small_title" 1000000
  plot_fig8a _small "$small_title"
  plot_fig8b _small "$small_title"
  plot_fig9 _small "$small_title"
  plot_fig10 skew _small "$small_title"
  plot_fig10 ratio _small "$small_title"
  insert_title="8 KiB pages, random-order inserts"
  plot_fig7a _insert "$insert_title"
  plot_fig7b _insert "$insert_title" 1000000
  plot_fig8a _insert "$insert_title"
fi
echo "wrote:"
ls -1 "$out" | sed "s|^|  $out/|"
