/* lfcore_version.h - lfcore's version, for C and C++. CMakeLists.txt reads
 * its project version from here, so this is the one place to change it.
 *
 * The macros give the version of the headers a program was compiled with;
 * lfcore_version() gives the version of the library it runs with. A program
 * that checks both at start-up finds a stale library on its link line (or,
 * with a shared build, its library path) before anything else goes wrong.
 * Versions 0.x make no compatibility promise between minor versions. */
#ifndef LFCORE_VERSION_H
#define LFCORE_VERSION_H

#define LFCORE_VERSION_MAJOR 0
#define LFCORE_VERSION_MINOR 1
#define LFCORE_VERSION_PATCH 0
#define LFCORE_VERSION_STRING "0.1.0"

/* One number that grows with each release, for #if and comparisons. */
#define LFCORE_VERSION                                                                             \
  (LFCORE_VERSION_MAJOR * 10000 + LFCORE_VERSION_MINOR * 100 + LFCORE_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* LFCORE_VERSION and LFCORE_VERSION_STRING as the library was built. */
int lfcore_version(void);
const char *lfcore_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* LFCORE_VERSION_H */
