set terminal pngcairo size 900,540 noenhanced
set output 'pool_uts.png'
set title 'Pool: unbalanced tree search, 100000 roots - median M nodes/s'
set xlabel 'threads'
set ylabel 'M nodes/s'
set logscale x 2
set key top right
set grid
set yrange [0:*]
set datafile missing '-'
plot for [i=2:4] 'pool_uts.dat' using 1:i with linespoints lw 2 title columnhead(i)
