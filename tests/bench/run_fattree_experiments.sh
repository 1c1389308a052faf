#!/usr/bin/env bash
# Reproduces Fat-B+Tree's section V figures on the fattree backend
# (docs/fattree-experiments.md): RDMA latency vs scale / drift / nodes per
# layer / layers (modelled from packet walks over the real planner, device
# and image), Ethernet throughput ratio vs scale / read-write ratio / skew
# (modelled the same way), Ethernet throughput vs clients (the walks'
# server visits in a closed-loop model), and the engine's tree behind an OffloadManager
# over the fattree backend (measured). Writes CSVs to docs/bench/fattree/
# and renders PNGs there with gnuplot.
#
#   bash tests/bench/run_fattree_experiments.sh <build-dir> [--quick] [-- extra flags]
#
# Configures <build-dir> (Release) if it has no CMakeCache.txt and builds
# the fattree_experiments target (-j2) before running. --quick: smaller
# scales (Ethernet up to 2e7 keys, RDMA 1M..4M), for a smoke test (~30 s).
# Flags after -- go to every fattree_experiments call (e.g. --probes 50000).
# FOREIN_SEED=<n> replaces the default seed 42.
# Needs gnuplot (apt-get install -y gnuplot-nox) for the PNGs; without it
# the CSVs are still written and the script exits 1.
# BENCH_OUT=<dir> writes the CSVs and PNGs there instead of docs/bench/fattree.
set -euo pipefail

usage() {
  echo "usage: $0 <build-dir> [--quick] [-- extra fattree_experiments flags]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
build=$1
shift
quick=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
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
  echo "run_fattree_experiments: configuring $build (Release)"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" -j2 --target fattree_experiments >/dev/null
exp="$build/tests/bench/fattree_experiments"
[ -x "$exp" ] || { echo "run_fattree_experiments: $exp not built" >&2; exit 1; }

have_gnuplot=1
if ! command -v gnuplot >/dev/null 2>&1; then
  have_gnuplot=0
  echo "run_fattree_experiments: gnuplot not found; CSVs will be written but no PNGs." >&2
  echo "  install it with:  apt-get install -y gnuplot-nox" >&2
fi

cd "$root"
out=${BENCH_OUT:-docs/bench/fattree}  # BENCH_OUT: elsewhere (the smoke test)
mkdir -p "$out"

compiler=unknown
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
if [ -n "$cxx" ]; then
  compiler="$("$cxx" --version 2>/dev/null | head -1) ($cxx, CMAKE_BUILD_TYPE=${btype:-none})"
fi
commit=$(git rev-parse --short HEAD 2>/dev/null || echo "none (no commits)")
if [ -n "$(git status --porcelain 2>/dev/null | head -1)" ]; then
  commit="$commit, working tree modified"
fi

echo "== Fat-B+Tree (fattree backend) section V experiments"
echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine:  $(uname -srm), $(nproc) cores online"
echo "cpu:      $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
echo "memory:   $(free -g | awk '/^Mem:/ {print $2 " GiB total, " $7 " GiB available"}')"
echo "load:     $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
echo "compiler: $compiler"
echo "gnuplot:  $(gnuplot --version 2>/dev/null || echo missing)"
echo "commit:   $commit"
echo "seed:     ${FOREIN_SEED:-42 (default; FOREIN_SEED unset)}"
echo "command:  $0 $build$([ $quick = 1 ] && echo ' --quick')${extra[*]:+ -- ${extra[*]}}"
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

if [ $quick = 1 ]; then
  scales=1000000,2000000,3000000,4000000
  eth_scales=10000000,20000000
  eth_keys=20000000
else
  scales=1000000,2000000,3000000,4000000,5000000,6000000,7000000,8000000,9000000,10000000
  eth_scales=10000000,20000000,50000000,100000000
  eth_keys=100000000
fi
# One RDMA round trip, in microseconds: measured on the remote-read path
# (docs/network-benchmark.md, "Remote reads": forein-load --remote-read
# through forein-switch to forein-mem-server, 2M keys, one lookup in
# flight, hints off: a median lookup of 7 READs took 352.3 us). RTT_US=
# overrides it; the paper's own figure (112.6 us / 7 = 16.09 us) is what
# fattree_experiments uses without --rtt-us.
rtt=(--rtt-us "${RTT_US:-50.33}")
run "$exp" rdma-scale --scales "$scales" --out "$out" "${rtt[@]}" "${extra[@]}"
run "$exp" rdma-drift --out "$out" "${rtt[@]}" "${extra[@]}"
run "$exp" rdma-nodes --out "$out" "${rtt[@]}" "${extra[@]}"
run "$exp" rdma-layers --out "$out" "${rtt[@]}" "${extra[@]}"
run "$exp" eth-scale --eth-scales "$eth_scales" --out "$out" "${extra[@]}"
run "$exp" eth-rw --eth-keys "$eth_keys" --out "$out" "${extra[@]}"
run "$exp" eth-skew --eth-keys "$eth_keys" --out "$out" "${extra[@]}"
run "$exp" eth-clients --eth-keys "$eth_keys" --out "$out" "${extra[@]}"
echo "load before the timed run: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
run "$exp" engine --out "$out" "${extra[@]}"
echo "load after the timed run: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"

if [ $have_gnuplot = 0 ]; then
  echo "run_fattree_experiments: CSVs are in $out; PNGs skipped (apt-get install -y gnuplot-nox)" >&2
  exit 1
fi

# ---------------------------------------------------------------------------
# Plots. cols() picks CSV columns by header name into a whitespace file.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
term="set terminal pngcairo size 900,600 font 'DejaVu Sans,11'"
gnuplot -e "set terminal pngcairo" >/dev/null 2>&1 || term="set terminal png size 900,600"

cols() {
  local csv=$1
  shift
  awk -F, -v names="$*" 'NR == 1 {for (i = 1; i <= NF; i++) c[$i] = i; n = split(names, want, " "); next}
    {line = ""; for (j = 1; j <= n; j++) line = line (j > 1 ? " " : "") $(c[want[j]]); print line}' "$csv"
}

# RDMA: latency (fattree, baseline, inline-value variant) vs the CSV's x column.
plot_rdma() {
  local name=$1 x=$2 xlabel=$3 title=$4 logx=${5:-}
  local csv="$out/$name.csv"
  [ -f "$csv" ] || return 0
  cols "$csv" "$x" latency_us base_latency_us inline_latency_us inline_base_us p99_us > "$tmp/$name.dat"
  gnuplot <<EOF
$term
set output '$out/$name.png'
set title "$title"
set xlabel '$xlabel'
set ylabel 'average query latency (us, modelled)'
$logx
set offsets graph 0.03, graph 0.03, 0, 0
set yrange [0:*]
set key outside right top
set grid
plot '$tmp/$name.dat' using 1:2 with linespoints lw 2 pt 7 lc rgb '#0072b2' title 'Fat-B+Tree (leaf + data)', \
     '' using 1:6 with linespoints lw 1 pt 6 dt 2 lc rgb '#0072b2' title 'Fat-B+Tree P99', \
     '' using 1:4 with linespoints lw 2 pt 5 lc rgb '#009e73' title 'Fat-B+Tree, value in leaf', \
     '' using 1:3 with linespoints lw 2 pt 9 lc rgb '#555555' title 'baseline (root)', \
     '' using 1:5 with linespoints lw 1 pt 8 dt 2 lc rgb '#555555' title 'baseline, value in leaf'
EOF
}

# Ethernet: throughput ratio per fixed cost k vs the CSV's x column.
plot_eth() {
  local name=$1 x=$2 xlabel=$3 title=$4 logx=${5:-}
  local csv="$out/$name.csv"
  [ -f "$csv" ] || return 0
  local ks plot="" i=2 k
  ks=$(head -1 "$csv" | tr ',' '\n' | grep '^ratio_k' || true)
  cols "$csv" "$x" $ks > "$tmp/$name.dat"
  for k in $ks; do
    plot="$plot${plot:+, }'$tmp/$name.dat' using 1:$i with linespoints lw 2 title 'fixed cost ${k#ratio_k} node visits'"
    i=$((i + 1))
  done
  gnuplot <<EOF
$term
set output '$out/$name.png'
set title "$title"
set xlabel '$xlabel'
set ylabel 'throughput ratio Fat-B+Tree / baseline (modelled)'
$logx
set offsets graph 0.03, graph 0.03, 0, 0
set yrange [1:*]
set key outside right top
set grid
plot $plot, 1.35 with lines dt 3 lc rgb 'black' title 'paper: up to 1.35x', 1.32 with lines dt 2 lc rgb 'gray' title 'paper: 1.32x'
EOF
}

plot_rdma rdma_scale keys 'database scale (keys)' 'RDMA latency vs scale (paper Fig 5), 16-branch tree, Zipf 0.99'
plot_rdma rdma_drift drift 'fraction of Zipf ranks changed between planning and queries' 'RDMA latency vs workload drift (paper Fig 6), 2M keys'
plot_rdma rdma_nodes layer_nodes 'nodes loaded per layer (fat root 600 ranges, 3 layers)' 'RDMA latency vs nodes per layer (paper Fig 8), 2M keys'
plot_rdma rdma_layers layers 'cached layers below the fat root' 'RDMA latency vs layers loaded (paper Fig 9), 2M keys'
plot_eth eth_scale keys 'database scale (keys)' 'Ethernet throughput ratio vs scale (paper Fig 10a), 90% reads' 'set logscale x'
plot_eth eth_rw read_fraction 'read fraction (writes start at the root)' 'Ethernet throughput ratio vs read/write ratio (paper Fig 10c)'
plot_eth eth_skew zipf 'Zipf exponent' 'Ethernet throughput ratio vs skew (paper Fig 10d), 90% reads'
# Ethernet throughput vs clients: KTPS at the largest fixed cost k the CSV
# has (the one whose servers saturate within 16 clients), with the paper's
# 1- and 16-client points.
csv="$out/eth_clients.csv"
if [ -f "$csv" ]; then
  kmax=$(cols "$csv" k | sort -g | tail -1)
  cols "$csv" k clients ktps base_ktps paper_ktps paper_base_ktps |
    awk -v k="$kmax" '$1 == k {print $2, $3, $4, ($5 == "" ? "NaN" : $5), ($6 == "" ? "NaN" : $6)}' > "$tmp/eth_clients.dat"
  knee=$(cols "$csv" k knee_clients base_knee_clients | awk -v k="$kmax" '$1 == k {printf "knee %.1f vs %.1f clients", $2, $3; exit}')
  gnuplot <<EOF
$term
set output '$out/eth_clients.png'
set title "Ethernet throughput vs clients (paper Fig 10b), 90% reads, 4 servers\\nclosed loop, fixed cost k = $kmax node visits ($knee)"
set xlabel 'computing clients (one request outstanding each)'
set ylabel 'throughput (KTPS, modelled)'
set xrange [0:17]
set yrange [0:*]
set key left top
set grid
plot '$tmp/eth_clients.dat' using 1:2 with linespoints lw 2 pt 7 lc rgb '#0072b2' title 'Fat-B+Tree (model)', \\
     '' using 1:3 with linespoints lw 2 pt 9 lc rgb '#555555' title 'baseline (model)', \\
     '' using 1:4 with points pt 6 ps 2 lw 2 lc rgb '#0072b2' title 'Fat-B+Tree (paper)', \\
     '' using 1:5 with points pt 8 ps 2 lw 2 lc rgb '#555555' title 'baseline (paper)'
EOF
fi
echo "wrote:"
ls -1 "$out" | sed "s|^|  $out/|"
