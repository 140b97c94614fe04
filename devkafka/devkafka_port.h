/* devkafka_port.h: baton-devkafka --port N, a fixed bootstrap address.
 *
 * librdkafka 2.0.2's mock cluster listens on ports the kernel picks, so a
 * config file could not name it. With --port, baton-devkafka also listens
 * on 127.0.0.1:N and relays every connection there, byte for byte, to the
 * first mock broker. A client bootstraps through N; the Metadata it gets
 * back names the brokers' own addresses, which it then connects to
 * directly (all on loopback). */
#ifndef DEVKAFKA_PORT_H
#define DEVKAFKA_PORT_H

#include <stddef.h>

/* Listens on 127.0.0.1:port and relays to target ("HOST:PORT", an IPv4
 * address) from a thread of its own. Returns 0, or -1 with a message in
 * errstr (the port is taken, a bad target). */
int devkafka_port_start(int port, const char *target, char *errstr, size_t errstr_size);

#endif
