/*  lfcore.pl - lfcore's lock-free tables and atom table for SWI-Prolog.

    :- use_module(lfcore).   (with lfcore_swipl.so on the foreign search path)

    See lfcore_swipl.cpp for what each predicate does and throws.
*/
:- module(lfcore,
          [ lfht_create/1,      % +Name
            lfht_put/3,         % +Name, +Key, +Value
            lfht_get/3,         % +Name, +Key, -Value
            lfht_delete/2,      % +Name, +Key
            lfht_pairs/2,       % +Name, -Pairs
            lfht_size/2,        % +Name, -Size
            lfcore_intern/2,    % +Text, -Handle
            lfcore_atom_text/2, % +Handle, -Atom
            lfcore_atom_count/1 % -Count
          ]).
:- use_foreign_library(foreign(lfcore_swipl)).
