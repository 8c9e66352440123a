set terminal pngcairo size 900,560
set output 'bench/results/mpi/efficiency.png'
set title 'Distributed farm efficiency vs batch size (2 workers, mpiexec -np 3)'
set xlabel 'batch size (tasks per message)'
set ylabel 'efficiency'
set logscale x 2
set yrange [0:1.05]
set key bottom right
set grid
plot 'bench/results/mpi/efficiency.dat' using 1:2 with linespoints lw 2 title 'lfcore::mpi::farm, 10 us', \
     '' using 1:3 with linespoints lw 2 title 'hand-written MPI, 10 us', \
     '' using 1:4 with lines dt 2 title 'single-process farm, 10 us', \
     '' using 1:5 with linespoints lw 2 title 'lfcore::mpi::farm, 100 us', \
     '' using 1:6 with linespoints lw 2 title 'hand-written MPI, 100 us', \
     '' using 1:7 with lines dt 2 title 'single-process farm, 100 us'
