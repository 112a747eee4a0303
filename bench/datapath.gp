# The datapath plot of docs/benchmarks.md: new TCP connections/s (left) and UDP first-packet
# latency p50 and p99 (right) against N, through the host port and straight to the pod, per
# plugin; log scale in N. scripts/bench.sh runs
#   gnuplot -c bench/datapath.gp PNG DATA_DIR MACHINE ZERO_AT
# DATA_DIR holds datapath-{hostport,portmap}.dat ("N viaConnPerS directConnPerS udpP50 udpP99
# udpDirectP50" per line; NaN where UDP was not measured).
png = ARG1
data = ARG2
machine = ARG3
zeroAt = ARG4

set terminal pngcairo size 1400,600 font "sans,10"
set output png
set multiplot layout 1,2 title "Datapath vs mappings already installed\n{/*0.8 ".machine."}"
set xlabel sprintf("mappings already installed (N, log scale; N = 0 drawn at %s)", zeroAt)
set logscale x
set grid ytics xtics
set key left bottom box opaque font ",9"
set xrange [zeroAt * 0.7:200000]
set style line 1 lc rgb "#1b7837" lw 2.5 pt 7 ps 1.2
set style line 2 lc rgb "#1b7837" lw 1.2 dt 2 pt 6 ps 1.0
set style line 3 lc rgb "#c51b7d" lw 2.5 pt 5 ps 1.2
set style line 4 lc rgb "#c51b7d" lw 1.2 dt 2 pt 4 ps 1.0
set style line 7 lc rgb "#777777" lw 1.2 dt 3 pt 1 ps 1.0

set title "new TCP connections/s, node netns -> nodeIP:hostPort"
set ylabel "connections/s (median of rounds)"
set yrange [0:*]
plot data."/datapath-hostport.dat" using 1:2 with linespoints ls 1 title "hostport via hostPort", \
     data."/datapath-hostport.dat" using 1:3 with linespoints ls 2 title "hostport run: direct to pod", \
     data."/datapath-portmap.dat" using 1:2 with linespoints ls 3 title "portmap via hostPort", \
     data."/datapath-portmap.dat" using 1:3 with linespoints ls 4 title "portmap run: direct to pod"

set title "UDP first packet (new conntrack entry): request -> echo"
set ylabel "round trip, µs"
set key left top
plot data."/datapath-hostport.dat" using 1:($4 * 1000) with linespoints ls 1 title "hostport p50", \
     data."/datapath-hostport.dat" using 1:($5 * 1000) with linespoints ls 2 title "hostport p99", \
     data."/datapath-hostport.dat" using 1:($6 * 1000) with linespoints ls 7 title "hostport run: direct p50", \
     data."/datapath-portmap.dat" using 1:($4 * 1000) with linespoints ls 3 title "portmap p50", \
     data."/datapath-portmap.dat" using 1:($5 * 1000) with linespoints ls 4 title "portmap p99"
unset multiplot
