set terminal pngcairo size 900,540 noenhanced
set output 'atoms_speedup.png'
set title 'Atom table: the paper''s benchmark, 240000 sequences - speedup over YAP original (rwlock, chained)'
set xlabel 'threads'
set ylabel 'throughput / YAP original (rwlock, chained)''s'
set logscale x 2
set key top right
set grid
set yrange [0:*]
set datafile missing '-'
plot for [i=2:8] 'atoms_speedup.dat' using 1:i with linespoints lw 2 title columnhead(i)
