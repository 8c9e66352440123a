/* examples/atom_reader.c - the atom table used the way a Prolog reader uses
 * it: tokenize Prolog text, intern every atom, and a functor name/arity for
 * every compound term, from several threads at once; then print statistics.
 *
 *   atom_reader [FILE [THREADS]]     (default: a built-in program, 4 threads)
 *
 * Every thread reads the whole text, as if several engines consulted the same
 * file: they must all get the same atom for the same name and the same
 * functor for the same name/arity, which the program checks. Exits 1 if not.
 * Tokens: names (foo, 'quoted atom'), symbol atoms (:-, =.., +), solo atoms
 * (!, ;, [], {}); variables, numbers, strings and comments are skipped. A name
 * followed directly by '(' starts a compound; its arity is one plus the commas
 * at its own depth. */
#include <lfcore_atoms.h>

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *builtin_program =
    "% append/3 and friends\n"
    "append([], L, L).\n"
    "append([H|T], L, [H|R]) :- append(T, L, R).\n"
    "member(X, [X|_]).\n"
    "member(X, [_|T]) :- member(X, T).\n"
    "reverse(L, R) :- reverse(L, [], R).\n"
    "reverse([], A, A).\n"
    "reverse([H|T], A, R) :- reverse(T, [H|A], R).\n"
    "'hello world'(X) :- format(\"~w~n\", [X]), !.\n"
    "expr(X + Y, V) :- expr(X, A), expr(Y, B), V is A + B.\n"
    "expr(N, N) :- number(N).\n"
    "/* a block comment with words that are not atoms */\n"
    "test :- X =.. [foo, 1, 2], X = foo(_, _), \\+ fail ; true.\n";

enum { MAX_THREADS = 64, MAX_TOKENS = 1 << 20 };

struct token {
  lfcore_atom atom;
  lfcore_functor functor; /* 0 unless the atom names a compound */
};

struct reader {
  const char *text;
  size_t size;
  lfcore_atom_table *table;
  struct token *tokens;
  size_t count;
  int failed;
};

static int symbol_char(char c) { return c != '\0' && strchr("+-*/\\^<>=~:.?@#&$", c) != NULL; }

/* The arity of the compound whose '(' is at text[open]. */
static uint32_t arity_at(const char *text, size_t size, size_t open) {
  uint32_t arity = 1;
  int depth = 0;
  for (size_t i = open; i < size; ++i) {
    char c = text[i];
    if (c == '\'' || c == '"') { /* skip quoted text */
      for (++i; i < size && text[i] != c; ++i) {
      }
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      if (--depth == 0) break;
    } else if (c == ',' && depth == 1) {
      ++arity;
    }
  }
  return arity;
}

static void emit(struct reader *r, const char *name, size_t len, size_t next) {
  struct token t = {0, 0};
  if (r->count == MAX_TOKENS) return;
  if (lfcore_atoms_intern(r->table, name, len, 0, &t.atom) != LFCORE_ATOM_OK) {
    r->failed = 1;
    return;
  }
  if (next < r->size && r->text[next] == '(' &&
      lfcore_atoms_functor(r->table, t.atom, arity_at(r->text, r->size, next), &t.functor) !=
          LFCORE_ATOM_OK)
    r->failed = 1;
  r->tokens[r->count++] = t;
}

static void *read_all(void *arg) {
  struct reader *r = arg;
  const char *s = r->text;
  size_t i = 0, n = r->size;
  while (i < n) {
    char c = s[i];
    size_t start = i;
    if (isspace((unsigned char)c) || c == ',' || c == '(' || c == ')' || c == '|') {
      ++i;
    } else if (c == '%') {
      while (i < n && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      const char *end = strstr(s + i + 2, "*/");
      i = end ? (size_t)(end - s) + 2 : n;
    } else if (islower((unsigned char)c)) {
      while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_')) ++i;
      emit(r, s + start, i - start, i);
    } else if (c == '\'') {
      for (++i; i < n && s[i] != '\''; ++i) {
      }
      emit(r, s + start + 1, i - start - 1, i + 1);
      ++i;
    } else if (isupper((unsigned char)c) || c == '_' || isdigit((unsigned char)c)) {
      while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_')) ++i; /* variable, number */
    } else if (c == '"') {
      for (++i; i < n && s[i] != '"'; ++i) {
      }
      ++i;
    } else if (c == '[' && i + 1 < n && s[i + 1] == ']') {
      emit(r, "[]", 2, i += 2);
    } else if (c == '{' && i + 1 < n && s[i + 1] == '}') {
      emit(r, "{}", 2, i += 2);
    } else if (c == '!' || c == ';') {
      emit(r, s + start, 1, ++i);
    } else if (symbol_char(c)) {
      while (i < n && symbol_char(s[i])) ++i;
      if (!(i - start == 1 && c == '.' && (i == n || isspace((unsigned char)s[i]))))
        emit(r, s + start, i - start, i); /* a lone '.' before space ends a clause */
    } else {
      ++i; /* [ ] { } and anything else */
    }
  }
  return NULL;
}

static int compare_words(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return (x > y) - (x < y);
}

static char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)len + 1);
  if (buf != NULL && fread(buf, 1, (size_t)len, f) == (size_t)len) {
    buf[len] = '\0';
    *size = (size_t)len;
  } else {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  return buf;
}

int main(int argc, char **argv) {
  size_t size = strlen(builtin_program);
  char *owned = NULL;
  if (argc > 1 && (owned = read_file(argv[1], &size)) == NULL) {
    fprintf(stderr, "atom_reader: cannot read %s\n", argv[1]);
    return 2;
  }
  const char *text = owned != NULL ? owned : builtin_program;
  int threads = argc > 2 ? atoi(argv[2]) : 4;
  if (threads < 1 || threads > MAX_THREADS) threads = 4;

  lfcore_atom_table *table = lfcore_atoms_create(0);
  struct reader readers[MAX_THREADS];
  pthread_t ids[MAX_THREADS];
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int t = 0; t < threads; ++t) {
    readers[t] = (struct reader){text, size, table, malloc(MAX_TOKENS * sizeof(struct token)), 0, 0};
    if (readers[t].tokens == NULL || pthread_create(&ids[t], NULL, read_all, &readers[t]) != 0) {
      fprintf(stderr, "atom_reader: out of resources\n");
      return 2;
    }
  }
  for (int t = 0; t < threads; ++t) pthread_join(ids[t], NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);

  /* Every thread saw the same tokens and must hold the same handles. */
  int ok = 1;
  size_t functors = 0;
  for (int t = 0; t < threads; ++t) {
    ok = ok && !readers[t].failed && readers[t].count == readers[0].count;
    for (size_t k = 0; ok && k < readers[t].count; ++k)
      ok = readers[t].tokens[k].atom == readers[0].tokens[k].atom &&
           readers[t].tokens[k].functor == readers[0].tokens[k].functor;
  }
  lfcore_functor *sorted = malloc((readers[0].count + 1) * sizeof *sorted);
  size_t compounds = 0;
  for (size_t k = 0; sorted != NULL && k < readers[0].count; ++k)
    if (readers[0].tokens[k].functor != 0) sorted[compounds++] = readers[0].tokens[k].functor;
  if (sorted != NULL) qsort(sorted, compounds, sizeof *sorted, compare_words);
  for (size_t k = 0; k < compounds; ++k) functors += (size_t)(k == 0 || sorted[k] != sorted[k - 1]);
  free(sorted);
  double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  printf("%d threads read %zu bytes: %zu atom tokens each, %zu distinct atoms, %zu functors, "
         "%.2f ms\n",
         threads, size, readers[0].count, lfcore_atoms_size(table), functors, ms);
  for (size_t k = 0; k < readers[0].count && k < 8; ++k) {
    lfcore_functor f = readers[0].tokens[k].functor;
    size_t len = 0;
    const char *name = lfcore_atoms_name(readers[0].tokens[k].atom, &len);
    if (f != 0)
      printf("  %.*s/%u\n", (int)len, name, lfcore_functor_arity(f));
    else
      printf("  %.*s\n", (int)len, name);
  }
  printf(ok ? "all threads agree on every atom and functor\n" : "MISMATCH between threads\n");
  for (int t = 0; t < threads; ++t) free(readers[t].tokens);
  lfcore_atoms_destroy(table);
  free(owned);
  return ok ? 0 : 1;
}
