#!/usr/bin/env bash
# Reproduces Honeycomb's section 6 on the fpga backend's store
# (docs/fpga-experiments.md): YCSB A-F (uniform and Zipf), the cloud-storage
# workload (3-item SCANs, 50-100 % reads), the SCAN size sweep, the cache
# ablation (FPGA only) and MVCC on/off. The baseline (forein's engine tree
# on CPU threads) is measured; Honeycomb's writes are measured on the CPU
# and its GET/SCAN rate comes from the accelerator model fed with what its
# requests really read (tests/bench/fpga_experiments.cc). Writes CSVs to
# docs/bench/fpga/ and renders PNGs there with gnuplot.
#
#   bash tests/bench/run_fpga_experiments.sh <build-dir> [--quick] [-- extra flags]
#
# Configures <build-dir> (Release) if it has no CMakeCache.txt and builds
# the fpga_experiments target (-j2). --quick: 200,000 keys (2,000,000 for
# the cache ablation) and 0.3 s per point (a smoke test); otherwise
# 2,000,000 keys (20,000,000: a 4-level tree, as the paper's) and 1 s per
# point. --plots-only: redraw the PNGs from the CSVs already in
# docs/bench/fpga. Flags after -- go to fpga_experiments (e.g. --keys 4000000).
# Needs gnuplot (apt-get install -y gnuplot-nox) for the PNGs; without it
# the CSVs are still written and the script exits 1.
# BENCH_OUT=<dir> writes the CSVs and PNGs there instead of docs/bench/fpga.
set -euo pipefail

usage() {
  echo "usage: $0 <build-dir> [--quick | --plots-only] [-- extra fpga_experiments flags]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
build=$1
shift
quick=0
plots_only=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
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
if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "run_fpga_experiments: configuring $build (Release)"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" -j2 --target fpga_experiments >/dev/null
exp="$build/tests/bench/fpga_experiments"
[ -x "$exp" ] || { echo "run_fpga_experiments: $exp not built" >&2; exit 1; }

have_gnuplot=1
if ! command -v gnuplot >/dev/null 2>&1; then
  have_gnuplot=0
  echo "run_fpga_experiments: gnuplot not found; CSVs will be written but no PNGs." >&2
  echo "  install it with:  apt-get install -y gnuplot-nox" >&2
fi

cd "$root"
out=${BENCH_OUT:-docs/bench/fpga}  # BENCH_OUT: elsewhere (the smoke test)
mkdir -p "$out"
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
commit=$(git rev-parse --short HEAD 2>/dev/null || echo "none")
[ -z "$(git status --porcelain 2>/dev/null | head -1)" ] || commit="$commit, working tree modified"

echo "== Honeycomb (fpga backend) section 6 experiments"
echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine:  $(uname -srm), $(nproc) cores online"
echo "cpu:      $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
echo "memory:   $(free -g | awk '/^Mem:/ {print $2 " GiB total, " $7 " GiB available"}')"
echo "load:     $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
echo "build:    $build (CMAKE_BUILD_TYPE=${btype:-none})"
echo "commit:   $commit"
echo "command:  $0 $build$([ $quick = 1 ] && echo ' --quick')${extra[*]:+ -- ${extra[*]}}"
echo

if [ $quick = 1 ]; then
  sizing=(--keys 200000 --cache-keys 2000000 --seconds 0.3)
else
  sizing=(--keys 2000000 --cache-keys 20000000 --seconds 1)
fi
if [ $plots_only = 0 ]; then
  echo "\$ $exp ${sizing[*]} --out $out ${extra[*]}"
  "$exp" "${sizing[@]}" --out "$out" "${extra[@]}"
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
fi

if [ $have_gnuplot = 0 ]; then
  echo "run_fpga_experiments: CSVs are in $out; PNGs skipped (apt-get install -y gnuplot-nox)" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
term="set terminal pngcairo size 900,600 font 'DejaVu Sans,11'"
gnuplot -e "set terminal pngcairo" >/dev/null 2>&1 || term="set terminal png size 900,600"

# cols CSV NAME... : the named columns (header names) as a whitespace file.
cols() {
  local csv=$1
  shift
  awk -F, -v names="$*" 'NR == 1 {for (i = 1; i <= NF; i++) c[$i] = i; n = split(names, want, " "); next}
    {line = ""; for (j = 1; j <= n; j++) line = line (j > 1 ? " " : "") $(c[want[j]]); print line}' "$csv"
}

if [ -f "$out/ycsb.csv" ]; then
  for d in uniform zipf; do
    awk -F, -v d=$d 'NR > 1 && ($2 == d || (d == "zipf" && $2 == "latest")) {print $1, $5 / 1e6, $6 / 1e6, $7}' \
      "$out/ycsb.csv" > "$tmp/ycsb_$d.dat"
  done
  gnuplot <<EOF
$term
set output '$out/ycsb.png'
set ylabel 'Mops/s'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key inside left top
set grid y
set yrange [0:*]
set multiplot layout 1,2 title "YCSB A-F (paper Fig 10), 2 threads: baseline measured; Honeycomb = modelled NIC + measured CPU"
set title 'uniform'
plot '$tmp/ycsb_uniform.dat' using 2:xtic(1) title 'baseline (CPU)' lc rgb '#555555', '' using 3 title 'Honeycomb' lc rgb '#0072b2'
set title 'Zipf 0.99 (D: latest)'
plot '$tmp/ycsb_zipf.dat' using 2:xtic(1) title 'baseline (CPU)' lc rgb '#555555', '' using 3 title 'Honeycomb' lc rgb '#0072b2'
unset multiplot
EOF
fi

if [ -f "$out/cloud.csv" ]; then
  for d in uniform zipf; do
    awk -F, -v d=$d 'NR > 1 && $2 == d {print $1, $8}' "$out/cloud.csv" > "$tmp/cloud_$d.dat"
  done
  gnuplot <<EOF
$term
set output '$out/cloud.png'
set title "Cloud storage (paper Fig 11): 3-item SCANs + inserts, Honeycomb / baseline"
set xlabel 'reads (%)'
set ylabel 'throughput ratio'
set yrange [0:*]
set key outside right top
set grid
plot '$tmp/cloud_uniform.dat' using 1:2 with linespoints lw 2 pt 7 title 'uniform', \
     '$tmp/cloud_zipf.dat' using 1:2 with linespoints lw 2 pt 5 title 'Zipf 0.99', \
     1 with lines dt 3 lc rgb 'black' title 'parity'
EOF
fi

if [ -f "$out/scan_size.csv" ]; then
  cols "$out/scan_size.csv" items baseline_ops honeycomb_ops ratio > "$tmp/scan.dat"
  gnuplot <<EOF
$term
set output '$out/scan_size.png'
set title "SCAN size (paper Fig 13): read-only"
set xlabel 'items per SCAN'
set ylabel 'Mops/s'
set y2label 'Honeycomb / baseline'
set y2tics
set yrange [0:*]
set y2range [0:*]
set key outside right top
set grid
plot '$tmp/scan.dat' using 1:(\$2/1e6) with linespoints lw 2 pt 9 lc rgb '#555555' title 'baseline', \
     '' using 1:(\$3/1e6) with linespoints lw 2 pt 7 lc rgb '#0072b2' title 'Honeycomb', \
     '' using 1:4 axes x1y2 with linespoints dt 2 lc rgb '#d55e00' title 'ratio'
EOF
fi

if [ -f "$out/cache.csv" ]; then
  awk -F, 'NR > 1 {gsub(/"/, "", $1); print "\"" $1 "\"", $5 / 1e6, $7}' "$out/cache.csv" > "$tmp/cache.dat"
  gnuplot <<EOF
$term
set output '$out/cache.png'
set title "Cache and load balancer (paper Fig 16): 1-item SCAN, accelerator only (modelled)"
set ylabel 'Mreqs/s'
set y2label 'interior hit rate'
set y2tics
set y2range [0:1.05]
set yrange [0:*]
set bmargin 7
set style fill solid 0.8 border -1
set boxwidth 0.6
set xtics rotate by -20
set key outside right top
set grid y
plot '$tmp/cache.dat' using 0:2:xtic(1) with boxes lc rgb '#0072b2' title 'throughput', \
     '' using 0:3 axes x1y2 with linespoints lw 2 pt 7 lc rgb '#d55e00' title 'hit rate'
EOF
fi

if [ -f "$out/mvcc.csv" ]; then
  for m in on off; do
    awk -F, -v m=$m 'NR > 1 && $3 == m {print $1, $7 / 1e6}' "$out/mvcc.csv" > "$tmp/mvcc_$m.dat"
  done
  gnuplot <<EOF
$term
set output '$out/mvcc.png'
set title "MVCC on/off (paper Fig 15): cloud storage, uniform"
set xlabel 'reads (%)'
set ylabel 'Honeycomb Mops/s'
set yrange [0:*]
set key outside right top
set grid
plot '$tmp/mvcc_on.dat' using 1:2 with linespoints lw 2 pt 7 title 'MVCC on', \
     '$tmp/mvcc_off.dat' using 1:2 with linespoints lw 2 pt 5 title 'MVCC off'
EOF
fi
echo "run_fpga_experiments: CSVs and PNGs in $out"
