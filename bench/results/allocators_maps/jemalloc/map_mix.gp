set terminal pngcairo size 900,540 noenhanced
set output 'map_mix.png'
set title 'Maps: 90% find, 5% insert, 5% erase, uniform keys, N = 1000000 - median Mops/s'
set xlabel 'threads'
set ylabel 'Mops/s'
set logscale x 2
set key top right
set grid
set yrange [0:*]
set datafile missing '-'
plot for [i=2:9] 'map_mix.dat' using 1:i with linespoints lw 2 title columnhead(i)
