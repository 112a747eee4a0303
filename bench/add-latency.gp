# The plot of docs/benchmarks.md: CNI ADD latency (p50 and p99) against N, per plugin, log scale.
# scripts/bench.sh runs `gnuplot -c bench/add-latency.gp PNG DATA_DIR MACHINE [FLOOR_MS]`:
# DATA_DIR holds plot-{hostport,portmap,hostportAgent}.dat ("N p50 p99" per line), MACHINE is
# the subtitle, FLOOR_MS (optional) the p50 of a bare process start, drawn as a dotted line.
png = ARG1
data = ARG2
machine = ARG3

set terminal pngcairo size 900,560 font "sans,11"
set output png
set title "CNI ADD latency vs mappings already installed\n{/*0.8 ".machine."}"
set xlabel "mappings already installed (N)"
set ylabel "ADD latency, ms (log scale)"
set logscale y
set grid ytics mytics xtics
set key right center box opaque
set yrange [1:*]
set arrow from graph 0, first 3 to graph 1, first 3 nohead dt 3 lw 1.5 lc rgb "#555555"
set label "goal: hostport ADD p50 <= 3 ms" at graph 0.98, first 3.5 right tc rgb "#555555"
if (ARGC >= 4 && strlen(ARG4) > 0) {
  floor = real(ARG4)
  set arrow from graph 0, first floor to graph 1, first floor nohead dt 2 lw 1 lc rgb "#999999"
  set label "a bare process start (/bin/true) p50" at graph 0.98, first floor * 0.85 right tc rgb "#999999"
}
set style line 1 lc rgb "#1b7837" lw 2.5 pt 7 ps 1.2
set style line 2 lc rgb "#1b7837" lw 1.2 dt 2 pt 6 ps 1.0
set style line 3 lc rgb "#c51b7d" lw 2.5 pt 5 ps 1.2
set style line 4 lc rgb "#c51b7d" lw 1.2 dt 2 pt 4 ps 1.0
set style line 5 lc rgb "#2166ac" lw 2.0 pt 9 ps 1.2
plot data."/plot-portmap.dat" using 1:2 with linespoints ls 3 title "portmap (Debian 1.1.1) p50", \
     data."/plot-portmap.dat" using 1:3 with linespoints ls 4 title "portmap p99", \
     data."/plot-hostport.dat" using 1:2 with linespoints ls 1 title "hostport standalone p50", \
     data."/plot-hostport.dat" using 1:3 with linespoints ls 2 title "hostport standalone p99", \
     data."/plot-hostportAgent.dat" using 1:2 with linespoints ls 5 title "hostport + agent (dynamic port) p50"
