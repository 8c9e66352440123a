set terminal pngcairo size 900,540 noenhanced
set output 'farm_manager_trace.png'
set datafile separator ','
set title 'Autonomic farm: keep_up, stepped arrivals'
set xlabel 'time (s)'
set ylabel 'workers'
set y2label 'T_A, T_w (us)'
set ytics nomirror
set y2tics
set yrange [0:9]
set y2range [0:*]
set grid
set key top left
plot 'farm_manager_trace.csv' every ::1 using 1:15 with steps lw 2 title 'active workers', '' every ::1 using 1:10 with steps lw 1 dt 2 title 'model ceil(T_w/T_A x 1.1)', '' every ::1 using 1:3 axes x1y2 with lines title 'T_A (us)', '' every ::1 using 1:4 axes x1y2 with lines title 'T_w (us)'
