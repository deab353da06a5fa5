package main

import (
	"fmt"
	"strings"
)

// plotTitle is an endpoint's label under its bars: short, on two lines.
func plotTitle(e *endpoint) string {
	path, rest, _ := strings.Cut(e.title, " ")
	if p, q, ok := strings.Cut(path, "?"); ok {
		path, rest = p, q
	}
	t := path + "\\n" + rest
	switch {
	case e.yardstick == "raw":
		t += "\\nvs raw REPLACE"
	case e.n > 1:
		t += "\\n" + strings.TrimSpace(human(e.b.rps*float64(e.n))) + " IDs/s"
	}
	return t
}

func us(v float64) string {
	if v >= 10000 {
		return fmt.Sprintf("%.1f ms", v/1000)
	}
	return fmt.Sprintf("%.0f µs", v)
}

// gnuplotScript draws bench.png: requests/s and p50/p99 per endpoint, ticketd
// next to its yardstick (the bare server; raw REPLACE for B=1), log scales.
const gnuplotScript = `set terminal pngcairo size 1500,640 font "DejaVu Sans,10"
set output "@PNG@"
set datafile separator whitespace
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border rgb "#333333"
set boxwidth 1
set logscale y
set grid ytics mytics lc rgb "#dddddd"
set xtics nomirror font ",9"
set key top right font ",9"
set bmargin 5
set multiplot layout 1,2 title "@TITLE@" font ",12"

set title "Throughput (requests/s, log scale)"
set ylabel "requests/s"
set yrange [100:1e6]
set format y "%.0s%c"
fmt(v) = v >= 1e6 ? sprintf("%.2fM", v/1e6) : v >= 1e4 ? sprintf("%.0fk", v/1e3) : v >= 1e3 ? sprintf("%.1fk", v/1e3) : sprintf("%.0f", v)
plot "@DAT@" using 3:xtic(1) title "yardstick (bare fasthttp; raw REPLACE for B=1)" lc rgb "#9e9e9e", \
     "" using 2 title "ticketd" lc rgb "#1f77b4", \
     "" using ($0-1.0/6):3:(fmt($3)) with labels offset 0,0.7 font ",8" notitle, \
     "" using ($0+1.0/6):2:(fmt($2)) with labels offset 0,0.7 font ",8" notitle

set title "Latency (log scale; wrk percentiles; 1k = 1 ms)"
set ylabel "µs"
set yrange [10:1e6]
set format y "%.0s%c"
lab(v) = v >= 1e4 ? sprintf("%.0fms", v/1e3) : v >= 1e3 ? sprintf("%.1fms", v/1e3) : sprintf("%.0f", v)
plot "@DAT@" using 6:xtic(1) title "yardstick p50" lc rgb "#c7c7c7", \
     "" using 7 title "yardstick p99" lc rgb "#7f7f7f", \
     "" using 4 title "ticketd p50" lc rgb "#9ecae1", \
     "" using 5 title "ticketd p99" lc rgb "#1f77b4", \
     "" using ($0-0.3):6:(lab($6)) with labels offset 0,0.7 font ",7" notitle, \
     "" using ($0-0.1):7:(lab($7)) with labels offset 0,0.7 font ",7" notitle, \
     "" using ($0+0.1):4:(lab($4)) with labels offset 0,0.7 font ",7" notitle, \
     "" using ($0+0.3):5:(lab($5)) with labels offset 0,0.7 font ",7" notitle
unset multiplot
`
