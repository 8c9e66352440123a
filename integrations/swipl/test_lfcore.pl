/*  test_lfcore.pl - the lfcore foreign library from several Prolog threads.

    swipl -p foreign=DIR_OF_lfcore_swipl.so -g run_tests -t halt test_lfcore.pl
*/
:- use_module(library(plunit)).
:- use_module(library(lists)).
:- use_module(lfcore).

:- begin_tests(lfcore).

test(put_get_replace) :-
    lfht_create(basic),
    lfht_put(basic, foo, point(1, "two", [x])),
    lfht_get(basic, foo, V1), V1 == point(1, "two", [x]),
    lfht_put(basic, "foo", replaced),          % a string key is the same key
    lfht_get(basic, foo, replaced),
    lfht_size(basic, 1).

test(values_are_copies) :-
    lfht_create(copies),
    lfht_put(copies, k, f(X, X)),
    lfht_get(copies, k, f(A, B)),
    A == B, var(A), A \== X.

test(delete) :-
    lfht_create(del),
    lfht_put(del, a, 1), lfht_put(del, b, 2),
    lfht_delete(del, a),
    \+ lfht_delete(del, a),
    \+ lfht_get(del, a, _),
    lfht_pairs(del, [b-2]).

test(create_twice_keeps_contents) :-
    lfht_create(twice), lfht_put(twice, k, v),
    lfht_create(twice), lfht_get(twice, k, v).

test(unknown_table, error(existence_error(lfht_table, nope))) :-
    lfht_get(nope, k, _).

test(key_must_be_text, error(type_error(_, f(x)))) :-
    lfht_create(typed), lfht_put(typed, f(x), 1).

test(intern) :-
    lfcore_intern(hello, H), lfcore_intern("hello", H2), H == H2,
    lfcore_atom_text(H, T), T == hello,
    lfcore_intern(world, W), W \== H,
    lfcore_atom_count(N), N >= 2.

test(bogus_handle, error(existence_error(lfcore_atom, 8))) :-
    lfcore_atom_text(8, _).

% Four threads: each puts, reads back and deletes half of its own keys, and
% all of them overwrite a shared set of keys; afterwards every surviving key
% holds its writer's value and the shared ones hold one of the writers'.
test(threads) :-
    lfht_create(shared),
    Threads = 4, Keys = 2000,
    findall(Id, (between(1, Threads, W),
                 thread_create(worker(W, Keys), Id, [])), Ids),
    forall(member(Id, Ids), thread_join(Id, true)),
    lfht_pairs(shared, Pairs),
    length(Pairs, Size),
    Size =:= Threads * Keys / 2 + 100,
    lfht_size(shared, Size),
    forall(member(K-V, Pairs), valid(K, V)).

worker(W, Keys) :-
    forall(between(1, Keys, I),
           ( key(W, I, K), lfht_put(shared, K, v(W, I)),
             lfht_get(shared, K, v(W, I)) )),
    forall(between(1, 100, I),
           ( format(atom(C), "common-~w", [I]), lfht_put(shared, C, c(W, I)),
             lfht_get(shared, C, c(_, I)) )),
    forall(( between(1, Keys, I), I mod 2 =:= 0 ),
           ( key(W, I, K), lfht_delete(shared, K) )).

key(W, I, K) :- format(atom(K), "~w-~w", [W, I]).

valid(K, v(W, I)) :- key(W, I, K), I mod 2 =:= 1.
valid(K, c(_, I)) :- format(atom(K), "common-~w", [I]).

% Threads interning the same texts get the same handles.
test(intern_threads) :-
    findall(Id, (between(1, 4, _),
                 thread_create(intern_all(Hs), Id, [])), Ids),
    findall(Hs, (member(Id, Ids), thread_join(Id, exited(Hs))), [First|Rest]),
    forall(member(Hs, Rest), Hs == First).

intern_all(Hs) :-
    findall(H, (between(1, 1000, I), format(atom(A), "atom_~w", [I]),
                lfcore_intern(A, H)), Hs),
    thread_exit(Hs).

:- end_tests(lfcore).
