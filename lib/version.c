/* version.c: baton_version() and baton_version_str() (baton/baton.h). The
 * number comes from CMake's project version (lib/CMakeLists.txt), the
 * string from lib/version.cmake at build time. */
#include <baton/baton.h>

#include "baton_version_gen.h"

int baton_version(void) { return BATON_VERSION_NUM_; }

const char *baton_version_str(void) { return BATON_VERSION_STR_; }
