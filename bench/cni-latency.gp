# The CNI plot of docs/benchmarks.md: ADD latency (left) and DEL latency (right), p50 and p99,
# against N, per plugin; log scales in both. scripts/bench.sh runs
#   gnuplot -c bench/cni-latency.gp PNG DATA_DIR MACHINE ZERO_AT [FLOOR_MS]
# DATA_DIR holds plot-{hostport,portmap,hostportAgent}.dat ("N addP50 addP99 delP50 delP99" per
# line), MACHINE is the subtitle, ZERO_AT where N = 0 is drawn on the log scale, FLOOR_MS
# (optional) the p50 of a bare process start, drawn as a dashed line with the goal (floor + 1 ms).
png = ARG1
data = ARG2
machine = ARG3
zeroAt = ARG4

set terminal pngcairo size 1400,600 font "sans,10"
set output png
set multiplot layout 1,2 title "CNI latency vs mappings already installed\n{/*0.8 ".machine."}"
set xlabel sprintf("mappings already installed (N, log scale; N = 0 drawn at %s)", zeroAt)
set logscale x
set logscale y
set grid ytics mytics xtics
set key left top box opaque font ",9"
set xrange [zeroAt * 0.7:200000]
set yrange [0.3:*]
hasFloor = (ARGC >= 5 && strlen(ARG5) > 0)
if (hasFloor) {
  floor = real(ARG5)
  set arrow 1 from graph 0, first floor to graph 1, first floor nohead dt 2 lw 1 lc rgb "#999999"
  set label 1 "bare process start (/bin/true) p50" at graph 0.98, first floor * 0.85 right tc rgb "#999999"
  set arrow 2 from graph 0, first floor + 1 to graph 1, first floor + 1 nohead dt 3 lw 1.5 lc rgb "#555555"
  set label 2 "goal: floor + 1 ms" at graph 0.98, first (floor + 1) * 1.12 right tc rgb "#555555"
}
set style line 1 lc rgb "#1b7837" lw 2.5 pt 7 ps 1.2
set style line 2 lc rgb "#1b7837" lw 1.2 dt 2 pt 6 ps 1.0
set style line 3 lc rgb "#c51b7d" lw 2.5 pt 5 ps 1.2
set style line 4 lc rgb "#c51b7d" lw 1.2 dt 2 pt 4 ps 1.0
set style line 5 lc rgb "#2166ac" lw 2.0 pt 9 ps 1.2
set style line 6 lc rgb "#2166ac" lw 1.2 dt 2 pt 8 ps 1.0
do for [panel = 0:1] {
  column = 2 + 2 * panel
  set title (panel == 0 ? "ADD" : "DEL")
  set ylabel (panel == 0 ? "ADD" : "DEL") . " latency, ms (log scale)"
  plot data."/plot-portmap.dat" using 1:column with linespoints ls 3 title "portmap (Debian) p50", \
       data."/plot-portmap.dat" using 1:column + 1 with linespoints ls 4 title "portmap p99", \
       data."/plot-hostport.dat" using 1:column with linespoints ls 1 title "hostport standalone p50", \
       data."/plot-hostport.dat" using 1:column + 1 with linespoints ls 2 title "hostport standalone p99", \
       data."/plot-hostportAgent.dat" using 1:column with linespoints ls 5 title "hostport + agent p50", \
       data."/plot-hostportAgent.dat" using 1:column + 1 with linespoints ls 6 title "hostport + agent p99"
}
unset multiplot
