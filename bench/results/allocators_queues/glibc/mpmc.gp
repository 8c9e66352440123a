set terminal pngcairo size 900,540 noenhanced
set output 'mpmc.png'
set title 'MPMC queues: threads/2 producers, threads/2 consumers - median Mops/s'
set xlabel 'threads'
set ylabel 'Mops/s'
set logscale x 2
set key top right
set grid
set yrange [0:*]
set datafile missing '-'
plot for [i=2:12] 'mpmc.dat' using 1:i with linespoints lw 2 title columnhead(i)
