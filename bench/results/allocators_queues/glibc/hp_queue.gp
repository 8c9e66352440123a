set terminal pngcairo size 900,540 noenhanced
set output 'hp_queue.png'
set title 'Michael-Scott queue on hazard pointers - median Mops/s'
set xlabel 'threads'
set ylabel 'Mops/s'
set logscale x 2
set key top right
set grid
set yrange [0:*]
set datafile missing '-'
plot for [i=2:4] 'hp_queue.dat' using 1:i with linespoints lw 2 title columnhead(i)
