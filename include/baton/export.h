/* baton/export.h: BATON_EXPORT marks the functions libbaton exports.
 * libbaton is built with -fvisibility=hidden, so a function is visible to
 * applications only if a public header (include/baton/) declares it
 * with BATON_EXPORT; everything else in the library stays internal. */
#ifndef BATON_EXPORT_H
#define BATON_EXPORT_H

#ifndef BATON_EXPORT
#if defined(__GNUC__) || defined(__clang__)
#define BATON_EXPORT __attribute__((visibility("default")))
#else
#define BATON_EXPORT
#endif
#endif

#endif
