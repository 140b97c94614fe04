/* membership.h: the member library's API is the public header
 * include/baton/baton.h (the Kafka worker, baton-run and applications use
 * the same one); this name stays for the tree's own includes. */
#ifndef BATON_MEMBERSHIP_H
#define BATON_MEMBERSHIP_H
#include <baton/baton.h>
#endif
