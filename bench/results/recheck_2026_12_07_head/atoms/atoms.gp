set terminal pngcairo size 900,540 noenhanced
set output 'atoms.png'
set title 'Atom table: the paper''s benchmark, 240000 sequences - median k sequences/s'
set xlabel 'threads'
set ylabel 'k sequences/s'
set logscale x 2
set key top right
set grid
set yrange [0:*]
set datafile missing '-'
plot for [i=2:8] 'atoms.dat' using 1:i with linespoints lw 2 title columnhead(i)
