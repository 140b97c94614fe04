/* baton_err.c: names and descriptions for baton_err_t, generated from the
 * one X-macro table so they cannot drift from the enum. */
#include "baton_err.h"

const char *baton_err_name(int err) {
    switch (err) {
#define BATON_ERR_NAME_(name, val, msg) \
    case val: return #name;
        BATON_ERR_MAP(BATON_ERR_NAME_)
#undef BATON_ERR_NAME_
    }
    return "UNKNOWN";
}

const char *baton_strerror(int err) {
    switch (err) {
#define BATON_ERR_MSG_(name, val, msg) \
    case val: return msg;
        BATON_ERR_MAP(BATON_ERR_MSG_)
#undef BATON_ERR_MSG_
    }
    return "unknown error";
}
