#!/usr/bin/env python3
"""kafka_tls_proxy.py: a TLS (and optionally SASL/PLAIN) front for the
embedded Kafka, which has neither. Listens on 127.0.0.1:PORT with CERT/KEY;
each connection is forwarded to UPSTREAM (host:port) unchanged. With
--sasl-user/--sasl-password-env it first plays the broker's part of SASL
as Kafka does: SaslHandshake (API key 17) answers which mechanisms it
enables (PLAIN only), SaslAuthenticate (36) checks "\\0user\\0password" and,
on a mismatch, answers SASL_AUTHENTICATION_FAILED (58) and closes. Any
other request before a successful authentication closes the connection
(ILLEGAL_SASL_STATE, as a broker does). Prints one line per connection
outcome; never prints a credential.

  kafka_tls_proxy.py PORT CERT KEY UPSTREAM [--sasl-user U --sasl-password-env VAR]
"""
import argparse
import asyncio
import os
import ssl
import struct
import sys


def log(msg):
    print(msg, flush=True)


async def read_frame(reader):
    head = await reader.readexactly(4)
    (size,) = struct.unpack(">i", head)
    if size < 8 or size > 1 << 20:
        raise ValueError(f"request size {size}")
    return await reader.readexactly(size)


def kstr(s):
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def reply(writer, corr, body):
    writer.write(struct.pack(">ii", 4 + len(body), corr) + body)


async def sasl(reader, writer, user, password):
    """The broker's side of SASL/PLAIN; True once authenticated."""
    while True:
        req = await read_frame(reader)
        api_key, version, corr = struct.unpack(">hhi", req[:8])
        (cid_len,) = struct.unpack(">h", req[8:10])
        body = req[10 + max(cid_len, 0):]
        if api_key == 17:  # SaslHandshake
            (n,) = struct.unpack(">h", body[:2])
            mech = body[2:2 + n].decode(errors="replace")
            err = 0 if mech == "PLAIN" else 33  # UNSUPPORTED_SASL_MECHANISM
            reply(writer, corr, struct.pack(">hi", err, 1) + kstr("PLAIN"))
            await writer.drain()
            if err:
                log(f"event=sasl_refused mechanism={mech}")
                return False
        elif api_key == 36:  # SaslAuthenticate v0
            (n,) = struct.unpack(">i", body[:4])
            parts = body[4:4 + n].split(b"\0")
            ok = len(parts) == 3 and parts[1].decode(errors="replace") == user and \
                parts[2].decode(errors="replace") == password
            if ok:
                reply(writer, corr, struct.pack(">h", 0) + kstr(None) + struct.pack(">i", 0))
                await writer.drain()
                log("event=sasl_ok")
                return True
            reply(writer, corr, struct.pack(">h", 58) +
                  kstr("Authentication failed: Invalid username or password") +
                  struct.pack(">i", 0))
            await writer.drain()
            log("event=sasl_failed")
            return False
        else:
            log(f"event=sasl_required api_key={api_key}")
            return False


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def serve(args, password):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    up_host, up_port = args.upstream.rsplit(":", 1)

    async def handle(reader, writer):
        try:
            if args.sasl_user and not await sasl(reader, writer, args.sasl_user, password):
                writer.close()
                return
            ureader, uwriter = await asyncio.open_connection(up_host, int(up_port))
            log("event=forwarding")
            await asyncio.gather(pipe(reader, uwriter), pipe(ureader, writer))
        except (ConnectionError, asyncio.IncompleteReadError, ValueError, ssl.SSLError) as e:
            log(f"event=connection_error error={type(e).__name__}")
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", args.port, ssl=ctx)
    log(f"event=listening port={args.port} sasl={'PLAIN' if args.sasl_user else 'none'}")
    async with server:
        await server.serve_forever()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("cert")
    p.add_argument("key")
    p.add_argument("upstream")
    p.add_argument("--sasl-user")
    p.add_argument("--sasl-password-env")
    args = p.parse_args()
    password = os.environ.get(args.sasl_password_env, "") if args.sasl_password_env else ""
    if args.sasl_user and not password:
        sys.exit("kafka_tls_proxy: --sasl-user needs --sasl-password-env naming a set variable")
    try:
        asyncio.run(serve(args, password))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
