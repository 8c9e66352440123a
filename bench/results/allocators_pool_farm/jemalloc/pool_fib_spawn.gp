set terminal pngcairo size 900,540 noenhanced
set output 'pool_fib_spawn.png'
set title 'Pool: fib(30), a task per call - median M tasks/s'
set xlabel 'threads'
set ylabel 'M tasks/s'
set logscale x 2
set key top right
set grid
set yrange [0:*]
set datafile missing '-'
plot for [i=2:4] 'pool_fib_spawn.dat' using 1:i with linespoints lw 2 title columnhead(i)
