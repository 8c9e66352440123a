set terminal pngcairo size 900,540 noenhanced
set output 'farm_grain_100us.png'
set title 'Farm: tasks of 100 us, 10000 tasks - median k tasks/s'
set xlabel 'threads'
set ylabel 'k tasks/s'
set logscale x 2
set key top right
set grid
set yrange [0:*]
set datafile missing '-'
plot for [i=2:9] 'farm_grain_100us.dat' using 1:i with linespoints lw 2 title columnhead(i)
