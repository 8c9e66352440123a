set terminal pngcairo size 900,540 noenhanced
set output 'pool_for.png'
set title 'Pool: parallel_for over 1000000000 iterations - median Mops/s'
set xlabel 'threads'
set ylabel 'Mops/s'
set logscale x 2
set key top right
set grid
set yrange [0:*]
set datafile missing '-'
plot for [i=2:4] 'pool_for.dat' using 1:i with linespoints lw 2 title columnhead(i)
