/* ctl_pins.h: `batonctl pin`, `unpin`, `drain` and `undrain`: the operator's
 * standing instructions to the assignor, kept in ZooKeeper as
 * <base>/pins/<partition> {"worker": W} and <base>/drains/<worker-id>. The
 * leading coordinator watches both and rebalances at once. */
#ifndef CTL_PINS_H
#define CTL_PINS_H

#include "ctl.h"

int ctl_cmd_pin(ctl_ctx_t *ctx, int argc, char **argv);
int ctl_cmd_unpin(ctl_ctx_t *ctx, int argc, char **argv);
int ctl_cmd_drain(ctl_ctx_t *ctx, int argc, char **argv);
int ctl_cmd_undrain(ctl_ctx_t *ctx, int argc, char **argv);

void ctl_pin_usage(FILE *f);
void ctl_unpin_usage(FILE *f);
void ctl_drain_usage(FILE *f);
void ctl_undrain_usage(FILE *f);

#endif
