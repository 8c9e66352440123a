set terminal pngcairo size 900,540 noenhanced
set output 'map_count_zipf.png'
set title 'Maps: counting, zipfian keys (0.99), N = 1000000 - median Mops/s'
set xlabel 'threads'
set ylabel 'Mops/s'
set logscale x 2
set key top right
set grid
set yrange [0:*]
set datafile missing '-'
plot for [i=2:8] 'map_count_zipf.dat' using 1:i with linespoints lw 2 title columnhead(i)
