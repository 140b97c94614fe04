/* ctl_history.h: `batonctl history` (ctl_history.c), declared apart from
 * the shared headers so commands added side by side do not edit the same
 * lines. Same contract as the commands in ctl.h. */
#ifndef CTL_HISTORY_H
#define CTL_HISTORY_H

#include "ctl.h"

int ctl_cmd_history(ctl_ctx_t *ctx, int argc, char **argv);
void ctl_history_usage(FILE *f);

#endif
