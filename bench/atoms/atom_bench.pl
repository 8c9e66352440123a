% bench/atoms/atom_bench.pl - the atom-table benchmark of Moreno, Areias and
% Rocha (Fig. 6-8 of ../shared/seeds/lock-free-atom-table.txt), for SWI-Prolog.
%
%   swipl bench/atoms/atom_bench.pl -- SEQFILE THREADS
%
% SEQFILE holds atom_dataset(N) and atom_seq(I, Atom) for I in [0, N); the
% scalability runner writes it from the same sequences its C++ contenders use.
% Prints "Time: Milliseconds" (wall time of the threads only, as Fig. 6).
%
% Two changes to the published program: a batch is cut at the end of the
% dataset (IL is min(I + WO, DS)) and the test is I < DS, so that no thread
% asks for a sequence past the last (atom_seq/2 would fail and make the
% thread fail); and the mutex is created with an alias at start-up.
:- initialization(main, main).
:- dynamic qsize/1.
qsize(0).

main :-
    current_prolog_flag(argv, [SeqFile, ThreadsArg]),
    atom_number(ThreadsArg, T),
    load_files(SeqFile, [silent(true)]),
    mutex_create(_, [alias(qlock)]),
    benchmark(2000, T).

% Fig. 6: time the threads.
benchmark(WO, T) :-
    atom_dataset(DS),
    statistics(walltime, [InitTime, _]),
    findall(Id, (between(1, T, _), thread_create(worker(DS, WO), Id, [])), Ids),
    forall(member(I, Ids), thread_join(I, _)),
    statistics(walltime, [EndTime, _]),
    Time is EndTime - InitTime,
    format("Time: ~w~n", [Time]).

% Fig. 7: the naive scheduler, batches of WO sequences behind a mutex.
worker(DS, WO) :-
    mutex_lock(qlock),
    qsize(I),
    (   I < DS
    ->  retract(qsize(I)),
        IL is min(I + WO, DS),
        assertz(qsize(IL)),
        mutex_unlock(qlock),
        compute(I, IL),
        worker(DS, WO)
    ;   mutex_unlock(qlock)
    ).

% Fig. 8: every split S = A1 + A2 creates A1, A2 and A2A1.
compute(I, I) :- !.
compute(I, IL) :-
    atom_seq(I, AS),
    (   combine_atoms(AS, _), fail ; true ),
    I1 is I + 1,
    compute(I1, IL).

combine_atoms(AS, R) :-
    atom_concat(A1, A2, AS),
    atom_concat(A2, A1, R).
