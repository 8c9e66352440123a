set terminal pngcairo size 900,540 noenhanced
set output 'pool_fib_cutoff.png'
set title 'Pool: fib(36), tasks in the top 12 levels - median M calls/s'
set xlabel 'threads'
set ylabel 'M calls/s'
set logscale x 2
set key top right
set grid
set yrange [0:*]
set datafile missing '-'
plot for [i=2:5] 'pool_fib_cutoff.dat' using 1:i with linespoints lw 2 title columnhead(i)
