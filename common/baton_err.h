/* baton_err.h: the error codes live in the public header baton/err.h (the
 * member library returns them); the tree includes them by this name. */
#ifndef BATON_COMMON_ERR_H
#define BATON_COMMON_ERR_H
#include "../include/baton/err.h"
#endif
