// The library's own version (include/lfcore_version.h), fixed when it is built.
#include "lfcore_version.h"

extern "C" int lfcore_version(void) {
  return LFCORE_VERSION;
}

extern "C" const char* lfcore_version_string(void) {
  return LFCORE_VERSION_STRING;
}
