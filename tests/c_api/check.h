/* CHECK(cond) for the C API tests: on failure, print where and exit(1). */
#ifndef LFCORE_TEST_CHECK_H
#define LFCORE_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#endif
