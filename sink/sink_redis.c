/* sink_redis.c: the fenced sink on Redis. Redis itself enforces the fence:
 * every fence and every write is ONE Lua script (loaded once with SCRIPT
 * LOAD, run with EVALSHA, reloaded after NOSCRIPT), and a script runs
 * atomically, so two workers on two hosts serialise on Redis's one thread
 * and a batch's outputs and its next_offset land together or not at all.
 * Redis does not roll back a script that fails half way, so each script
 * first reads and checks every key it touches (types, fields) and only then
 * writes.
 *
 * Layout (stable: tools and tests read it; docs/sinks.md). For group G and
 * partition p every key carries the hash tag {G.p}, so a partition's keys
 * hash to one Redis Cluster slot:
 *   baton:{G.p}:fence  hash: epoch, next_offset, rejected, updated_ms
 *   baton:{G.p}:out    stream, one entry per output: offset, epoch, key,
 *                      value (binary-safe; a NULL key or value is an absent
 *                      field); the 2nd and later outputs of one input also
 *                      carry seq (1, 2, ...)
 * and the sink's identity (sink_int.h):
 *   baton:meta         hash: sink_id
 *   baton:{G}:group    hash: group_uuid, bound_ms
 *
 * URI: redis://[USER:PASS@]HOST[:PORT][/DB][?wait_replicas=N&wait_timeout_ms=MS].
 * The password may come from REDISCLI_AUTH instead (redis-cli's variable),
 * which keeps it out of process lists. rediss:// is refused: Debian's
 * hiredis 0.14 has no TLS. wait_replicas makes every fence and write wait
 * (Redis WAIT) until N replicas have it, or fail retriably. */
#include <ctype.h>
#include <errno.h>
#include <hiredis.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

#include "baton_err.h"
#include "baton_log.h"
#include "baton_util.h"
#include "sink_int.h"

#define RD_DEFAULT_PORT 6379
#define RD_CONNECT_TIMEOUT_MS 10000
/* A reply slower than this is a lost connection (the outcome unknown). */
#define RD_COMMAND_TIMEOUT_MS 20000
/* How long a call retries while Redis answers BUSY (another client's script
 * running past busy-reply-threshold) before returning BATON_BUSY. */
#define RD_BUSY_TIMEOUT_MS 5000

/* The parsed URI. */
typedef struct {
    char *host;
    int port;
    char *user; /* NULL: the default user */
    char *pass; /* NULL: no AUTH */
    int db;
    int wait_replicas; /* 0: no WAIT */
    int wait_timeout_ms;
} rd_conf_t;

/* What this handle last saw of a partition: a fence or write that
 * succeeded at epoch left next_offset at next. A later write at the same
 * epoch that finds a lower next_offset in Redis means Redis lost
 * acknowledged writes (a failover to a replica that lacked them, a restart
 * without them on disk): the write is refused as unfenced, so the worker
 * fences again and resumes from what Redis really has. */
typedef struct {
    int64_t epoch; /* -1: nothing seen */
    int64_t next;
} rd_seen_t;

typedef struct {
    redisContext *c;
    rd_conf_t conf;
    int busy_timeout_ms;
    char fence_sha[48];
    char write_sha[48];
    rd_seen_t *seen;
    size_t nseen;
} rd_t;

/* ---- scripts ---------------------------------------------------------------
 * Numbers travel as decimal strings and are compared as strings (length,
 * then bytes), never as Lua numbers (doubles), so epochs and offsets keep
 * all 63 bits. A stored value that is not a canonical non-negative 64-bit
 * decimal is refused as corrupt, never guessed at. */

#define RD_LUA_COMMON                                                                      \
    "local function num(s)\n"                                                              \
    "  if type(s) ~= 'string' or #s == 0 or #s > 19 or not string.find(s, '^%d+$') then\n" \
    "    return nil end\n"                                                                 \
    "  if #s > 1 and string.byte(s, 1) == 48 then return nil end\n"                        \
    "  if #s == 19 and s > '9223372036854775807' then return nil end\n"                    \
    "  return s\n"                                                                         \
    "end\n"                                                                                \
    "local function lt(a, b)\n"                                                            \
    "  if #a ~= #b then return #a < #b end\n"                                              \
    "  return a < b\n"                                                                     \
    "end\n"                                                                                \
    "local function fence_row(key)\n"                                                      \
    "  local t = redis.call('TYPE', key)['ok']\n"                                          \
    "  if t == 'none' then return nil end\n"                                               \
    "  if t ~= 'hash' then return false, {'WRONGTYPE', key, t} end\n"                      \
    "  local v = redis.call('HMGET', key, 'epoch', 'next_offset', 'rejected')\n"           \
    "  local names = {'epoch', 'next_offset', 'rejected'}\n"                               \
    "  for i = 1, 3 do\n"                                                                  \
    "    if not num(v[i]) then return false, {'CORRUPT', key, names[i]} end\n"             \
    "  end\n"                                                                              \
    "  return {epoch = v[1], next = v[2]}\n"                                               \
    "end\n"

/* The inputs' arguments (write_lua, fence_lua): per input its offset, the
 * offset + 1, the number of outputs; per output a mask (1 key present, 2
 * value present), then the key and the value that are present. skip
 * returns the index after n inputs from ai; stream_check refuses a stream
 * that is not one, or already holds next_offset nxt or later (the fence
 * and the stream disagree); applies says whether an input of n from ai is
 * at or past floor; apply appends the inputs at or past floor and moves
 * next_offset, returning it and how many applied. */
#define RD_LUA_INPUTS                                                           \
    "local function skip(ai, n)\n"                                              \
    "  for i = 1, n do\n"                                                       \
    "    local nout = tonumber(ARGV[ai + 2])\n"                                 \
    "    ai = ai + 3\n"                                                         \
    "    for j = 1, nout do\n"                                                  \
    "      local m = tonumber(ARGV[ai])\n"                                      \
    "      ai = ai + 1 + (m % 2) + math.floor(m / 2)\n"                         \
    "    end\n"                                                                 \
    "  end\n"                                                                   \
    "  return ai\n"                                                             \
    "end\n"                                                                     \
    "local function stream_check(ok, nxt)\n"                                    \
    "  local t = redis.call('TYPE', ok)['ok']\n"                                \
    "  if t ~= 'none' and t ~= 'stream' then return {'WRONGTYPE', ok, t} end\n" \
    "  if t == 'stream' then\n"                                                 \
    "    local last = redis.call('XREVRANGE', ok, '+', '-', 'COUNT', 1)[1]\n"   \
    "    if last then\n"                                                        \
    "      local off = nil\n"                                                   \
    "      for k = 1, #last[2], 2 do\n"                                         \
    "        if last[2][k] == 'offset' then off = num(last[2][k + 1]) end\n"    \
    "      end\n"                                                               \
    "      if not off then return {'CORRUPT', ok, 'offset'} end\n"              \
    "      if not lt(off, nxt) then return {'AHEAD', ok, off, nxt} end\n"       \
    "    end\n"                                                                 \
    "  end\n"                                                                   \
    "  return nil\n"                                                            \
    "end\n"                                                                     \
    "local function applies(ai, n, floor)\n"                                    \
    "  for i = 1, n do\n"                                                       \
    "    if not lt(ARGV[ai], floor) then return true end\n"                     \
    "    ai = skip(ai, 1)\n"                                                    \
    "  end\n"                                                                   \
    "  return false\n"                                                          \
    "end\n"                                                                     \
    "local function apply(fk, ok, e, floor, i, n, now)\n"                       \
    "  local applied = 0\n"                                                     \
    "  for _ = 1, n do\n"                                                       \
    "    local off, nxt, nout = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])\n"  \
    "    local yes = not lt(off, floor)\n"                                      \
    "    i = i + 3\n"                                                           \
    "    for j = 1, nout do\n"                                                  \
    "      local m = tonumber(ARGV[i])\n"                                       \
    "      i = i + 1\n"                                                         \
    "      local args = {'offset', off, 'epoch', e}\n"                          \
    "      if m % 2 == 1 then\n"                                                \
    "        args[#args + 1] = 'key'\n"                                         \
    "        args[#args + 1] = ARGV[i]\n"                                       \
    "        i = i + 1\n"                                                       \
    "      end\n"                                                               \
    "      if m >= 2 then\n"                                                    \
    "        args[#args + 1] = 'value'\n"                                       \
    "        args[#args + 1] = ARGV[i]\n"                                       \
    "        i = i + 1\n"                                                       \
    "      end\n"                                                               \
    "      if j > 1 then\n"                                                     \
    "        args[#args + 1] = 'seq'\n"                                         \
    "        args[#args + 1] = tostring(j - 1)\n"                               \
    "      end\n"                                                               \
    "      if yes then redis.call('XADD', ok, '*', unpack(args)) end\n"         \
    "    end\n"                                                                 \
    "    if yes then\n"                                                         \
    "      floor = nxt\n"                                                       \
    "      applied = applied + 1\n"                                             \
    "    end\n"                                                                 \
    "  end\n"                                                                   \
    "  if applied > 0 then\n"                                                   \
    "    redis.call('HSET', fk, 'next_offset', floor, 'updated_ms', now)\n"     \
    "  end\n"                                                                   \
    "  return floor, applied\n"                                                 \
    "end\n"

/* ARGV[2], now (ms), with 'H' in front when the writer's commit gate said
 * no (asked before the script, which is the transaction): a script holding
 * applies no input. */
#define RD_LUA_NOW                                             \
    "local function now_hold(a)\n"                             \
    "  if a:sub(1, 1) == 'H' then return a:sub(2), true end\n" \
    "  return a, false\n"                                      \
    "end\n"

/* baton_sink_fence_write. KEYS[1] baton:{G}:group, then per partition its
 * fence hash and its stream. ARGV[1] the group id to check or record (''
 * for none), ARGV[2] now (RD_LUA_NOW); then per partition: the epoch, from
 * ('' for no inputs), the number of inputs, the inputs (RD_LUA_INPUTS).
 * Everything is read and checked first; then, unless holding with an input
 * that would apply (the reply is {'W', index}: nothing written), per
 * partition 'S' (stale, counted) and the stored epoch, or 'F', its
 * next_offset as fenced, written ('1' when its inputs started at or before
 * it and were written), the next_offset after them and how many applied.
 * Or an error tuple. */
static const char fence_lua[] = RD_LUA_COMMON RD_LUA_INPUTS RD_LUA_NOW
    "local exp = ARGV[1]\n"
    "local now, hold = now_hold(ARGV[2])\n"
    "local bind = false\n"
    "if exp ~= '' then\n"
    "  local t = redis.call('TYPE', KEYS[1])['ok']\n"
    "  if t == 'none' then bind = true\n"
    "  elseif t ~= 'hash' then return {'WRONGTYPE', KEYS[1], t}\n"
    "  else\n"
    "    local g = redis.call('HMGET', KEYS[1], 'group_uuid', 'bound_ms')\n"
    "    if not g[1] or not num(g[2]) then return {'BADGROUP', KEYS[1]} end\n"
    "    if g[1] ~= exp then return {'CONFLICT', g[1], g[2]} end\n"
    "  end\n"
    "end\n"
    "local plan = {}\n"
    "local held = nil\n"
    "local ai = 3\n"
    "for i = 1, (#KEYS - 1) / 2 do\n"
    "  local p = {fk = KEYS[2 * i], ok = KEYS[2 * i + 1], e = ARGV[ai]}\n"
    "  local from, n = ARGV[ai + 1], tonumber(ARGV[ai + 2])\n"
    "  p.first, p.n = ai + 3, n\n"
    "  ai = skip(ai + 3, n)\n"
    "  local r, err = fence_row(p.fk)\n"
    "  if r == false then return err end\n"
    "  p.row = r\n"
    "  if r and lt(p.e, r.epoch) then\n"
    "    p.stale = true\n"
    "  else\n"
    "    p.next = r and r.next or '0'\n"
    "    if n > 0 and from ~= '' and not lt(p.next, from) then\n"
    "      local bad = stream_check(p.ok, p.next)\n"
    "      if bad then return bad end\n"
    "      p.write = true\n"
    "      if hold and not held and applies(p.first, n, p.next) then held = i - 1 end\n"
    "    end\n"
    "  end\n"
    "  plan[i] = p\n"
    "end\n"
    "if held then return {'W', tostring(held)} end\n"
    "if bind then redis.call('HSET', KEYS[1], 'group_uuid', exp, 'bound_ms', now) end\n"
    "local out = {'OK'}\n"
    "for i = 1, #plan do\n"
    "  local p = plan[i]\n"
    "  if p.stale then\n"
    "    redis.call('HINCRBY', p.fk, 'rejected', 1)\n"
    "    for _, v in ipairs({'S', p.row.epoch, '', '', ''}) do out[#out + 1] = v end\n"
    "  else\n"
    "    if p.row then\n"
    "      redis.call('HSET', p.fk, 'epoch', p.e, 'updated_ms', now)\n"
    "    else\n"
    "      redis.call('HSET', p.fk, 'epoch', p.e, 'next_offset', '0', 'rejected', '0',\n"
    "                 'updated_ms', now)\n"
    "    end\n"
    "    local nxt, applied = p.next, 0\n"
    "    if p.write then nxt, applied = apply(p.fk, p.ok, p.e, p.next, p.first, p.n, now) end\n"
    "    for _, v in ipairs({'F', p.next, p.write and '1' or '0', nxt, tostring(applied)}) do\n"
    "      out[#out + 1] = v\n"
    "    end\n"
    "  end\n"
    "end\n"
    "return out\n";

/* KEYS: per batch its fence hash and its stream. ARGV[1] now (RD_LUA_NOW's
 * format, the script's ARGV[1] here); then per batch: epoch, the
 * next_offset this handle expects ('' if none), the number of inputs, the
 * inputs (RD_LUA_INPUTS). Returns {'OK', code, a, b, ...}: per batch 'A'
 * (applied; a = next_offset, b = inputs applied), 'S' (stale, counted; a =
 * stored epoch), 'U' (unfenced; a = stored epoch or '' for no fence), 'L'
 * (next_offset went back; a = stored, b = expected); or {'W', index} when
 * the script holds and that batch would apply: nothing written, no stale
 * batch counted (SQL rolls its counts back too); or an error tuple. */
static const char write_lua[] = RD_LUA_COMMON RD_LUA_INPUTS RD_LUA_NOW
    "local now, hold = now_hold(ARGV[1])\n"
    "local nb = #KEYS / 2\n"
    "local plan = {}\n"
    "local held = nil\n"
    "local ai = 2\n"
    "for b = 1, nb do\n"
    "  local fk, ok = KEYS[2 * b - 1], KEYS[2 * b]\n"
    "  local e, expect, nin = ARGV[ai], ARGV[ai + 1], tonumber(ARGV[ai + 2])\n"
    "  local p = {e = e, first = ai + 3, nin = nin}\n"
    "  ai = skip(ai + 3, nin)\n"
    "  local r, err = fence_row(fk)\n"
    "  if r == false then return err end\n"
    "  if not r then p.code, p.a, p.b = 'U', '', ''\n"
    "  elseif lt(e, r.epoch) then p.code, p.a, p.b = 'S', r.epoch, ''\n"
    "  elseif lt(r.epoch, e) then p.code, p.a, p.b = 'U', r.epoch, ''\n"
    "  elseif expect ~= '' and lt(r.next, expect) then p.code, p.a, p.b = 'L', r.next, expect\n"
    "  else\n"
    "    local bad = stream_check(ok, r.next)\n"
    "    if bad then return bad end\n"
    "    p.code, p.floor = 'A', r.next\n"
    "    if hold and not held then held = b - 1 end\n"
    "  end\n"
    "  p.fk, p.ok = fk, ok\n"
    "  plan[b] = p\n"
    "end\n"
    "if held then return {'W', tostring(held)} end\n"
    "local out = {'OK'}\n"
    "for b = 1, nb do\n"
    "  local p = plan[b]\n"
    "  if p.code == 'S' then redis.call('HINCRBY', p.fk, 'rejected', 1) end\n"
    "  if p.code == 'A' then\n"
    "    local floor, applied = apply(p.fk, p.ok, p.e, p.floor, p.first, p.nin, now)\n"
    "    p.a, p.b = floor, tostring(applied)\n"
    "  end\n"
    "  out[#out + 1] = p.code\n"
    "  out[#out + 1] = p.a\n"
    "  out[#out + 1] = p.b\n"
    "end\n"
    "return out\n";

/* ---- URI --------------------------------------------------------------------- */

/* Percent-decodes [s, s+n) into a heap string; NULL if an escape is bad or
 * decodes to NUL. */
static char *pct_decode(const char *s, size_t n) {
    char *out = xmalloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[k++] = s[i];
            continue;
        }
        if (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) ||
            !isxdigit((unsigned char)s[i + 2])) {
            free(out);
            return NULL;
        }
        char hex[3] = {s[i + 1], s[i + 2], '\0'};
        int c = (int)strtol(hex, NULL, 16);
        if (c == 0) {
            free(out);
            return NULL;
        }
        out[k++] = (char)c;
        i += 2;
    }
    out[k] = '\0';
    return out;
}

/* A decimal in [lo, hi] from [s, s+n); -1 if not one. */
static long parse_num(const char *s, size_t n, long lo, long hi) {
    if (n == 0 || n > 10)
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v < lo || v > hi ? -1 : v;
}

/* The secret of the userinfo of the authority that starts at auth (it
 * ends at the first '/', '?' or '#'; its userinfo at its last '@', since a
 * password may hold one): what follows the userinfo's first ':', or, with
 * none ("something@", refused as ambiguous, may be a password), all of
 * it. Returns 0 if the authority has no userinfo. */
static int userinfo_secret(const char *auth, const char **hs, const char **he) {
    const char *end = auth + strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *p = auth; p < end; p++)
        if (*p == '@')
            at = p;
    if (!at)
        return 0;
    const char *colon = memchr(auth, ':', (size_t)(at - auth));
    *hs = colon ? colon + 1 : auth;
    *he = at;
    return 1;
}

/* The userinfo's password (redis://USER:PASS@...) as "***". The authority
 * is looked for in two places, and what either finds is hidden: after
 * the first "://", and after the scheme's ':' and any slashes, so a
 * mistyped "redis:/USER:PASS@HOST", "redis:USER:PASS@HOST" or
 * "redis:redis://USER:PASS@HOST", refused with the redacted form in its
 * message, keeps its password out of it too. */
static char *redact_userinfo(const char *uri) {
    const char *hs[2], *he[2];
    int n = 0;
    const char *sep = strstr(uri, "://");
    if (sep && userinfo_secret(sep + 3, &hs[n], &he[n]))
        n++;
    const char *colon = strchr(uri, ':');
    if (colon) {
        const char *auth = colon + 1;
        while (*auth == '/')
            auth++;
        if (userinfo_secret(auth, &hs[n], &he[n]))
            n++;
    }
    if (n == 2 && hs[1] < hs[0]) { /* in order */
        const char *t = hs[0], *u = he[0];
        hs[0] = hs[1], he[0] = he[1], hs[1] = t, he[1] = u;
    }
    if (n == 2 && hs[1] <= he[0]) { /* overlapping or touching: one */
        he[0] = he[1] > he[0] ? he[1] : he[0];
        n = 1;
    }
    if (n == 0)
        return xstrdup(uri);
    if (n == 1)
        return xasprintf("%.*s***%s", (int)(hs[0] - uri), uri, he[0]);
    return xasprintf("%.*s***%.*s***%s", (int)(hs[0] - uri), uri, (int)(hs[1] - he[0]), he[0],
                     he[1]);
}

char *baton_sink__redis_redact(const char *uri) {
    if (!uri)
        return xstrdup("");
    char *r = redact_userinfo(uri);
    /* A "password=" query option (other clients' spelling; refused as
     * unknown here) is hidden too. */
    const char *q = strchr(r, '?');
    while (q && (q = strstr(q, "password=")) != NULL) {
        if (q[-1] != '?' && q[-1] != '&') {
            q++;
            continue;
        }
        size_t head = (size_t)(q - r) + strlen("password=");
        const char *tail = r + head + strcspn(r + head, "&#");
        char *next = xasprintf("%.*s***%s", (int)head, r, tail);
        free(r);
        r = next;
        q = r + head + 3;
    }
    return r;
}

static void conf_free(rd_conf_t *c) {
    free(c->host);
    free(c->user);
    if (c->pass)
        memset(c->pass, 0, strlen(c->pass));
    free(c->pass);
    memset(c, 0, sizeof(*c));
}

#define RD_USAGE "redis://[USER:PASS@]HOST[:PORT][/DB]"

/* Parses uri (shown: its redacted form, for messages) into *c. */
static int rd_parse(const char *uri, const char *shown, rd_conf_t *c, char *errstr,
                    size_t errstr_size) {
    memset(c, 0, sizeof(*c));
    c->port = RD_DEFAULT_PORT;
    c->wait_timeout_ms = 1000;
    if (strncasecmp(uri, "rediss:", 7) == 0)
        return baton_seterr(errstr, errstr_size, BATON_INVALID,
                            "sink '%s': rediss:// (Redis over TLS) is not supported: Debian's "
                            "hiredis 0.14 has no TLS. Put a local TLS terminator such as stunnel "
                            "in front of Redis and use redis://127.0.0.1:PORT (docs/sinks.md, "
                            "\"Redis over TLS\")",
                            shown);
    if (strncasecmp(uri, "redis://", 8) != 0)
        return baton_seterr(errstr, errstr_size, BATON_INVALID, "sink '%s': expected " RD_USAGE,
                            shown);
    const char *p = uri + 8;
    const char *end = p + strcspn(p, "/?#");
    const char *at = NULL;
    for (const char *q = p; q < end; q++)
        if (*q == '@')
            at = q;
    int err = BATON_INVALID;
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (!colon) {
            baton_seterr(errstr, errstr_size, err,
                         "sink '%s': credentials need a ':' (redis://:PASS@HOST for the default "
                         "user, redis://USER:PASS@HOST for an ACL user)",
                         shown);
            goto fail;
        }
        if (colon > p && !(c->user = pct_decode(p, (size_t)(colon - p)))) {
            baton_seterr(errstr, errstr_size, err, "sink '%s': bad %%-escape in the user name",
                         shown);
            goto fail;
        }
        if (!(c->pass = pct_decode(colon + 1, (size_t)(at - colon - 1)))) {
            baton_seterr(errstr, errstr_size, err, "sink '%s': bad %%-escape in the password",
                         shown);
            goto fail;
        }
        if (!c->pass[0]) { /* redis://:@HOST: no password, as redis-py reads it */
            free(c->pass);
            c->pass = NULL;
        }
        p = at + 1;
    }
    /* HOST, [IPV6] or nothing before :PORT. */
    const char *hend;
    if (*p == '[') {
        hend = memchr(p, ']', (size_t)(end - p));
        if (!hend) {
            baton_seterr(errstr, errstr_size, err, "sink '%s': '[' without ']' in the host", shown);
            goto fail;
        }
        c->host = xasprintf("%.*s", (int)(hend - p - 1), p + 1);
        hend++;
    } else {
        hend = p;
        while (hend < end && *hend != ':')
            hend++;
        c->host = xasprintf("%.*s", (int)(hend - p), p);
    }
    if (!c->host[0]) {
        baton_seterr(errstr, errstr_size, err, "sink '%s': no host (expected " RD_USAGE ")", shown);
        goto fail;
    }
    if (hend < end) {
        long port = *hend == ':' ? parse_num(hend + 1, (size_t)(end - hend - 1), 1, 65535) : -1;
        if (port < 0) {
            baton_seterr(errstr, errstr_size, err, "sink '%s': port '%.*s' is not in 1-65535",
                         shown, (int)(end - hend - (*hend == ':')), hend + (*hend == ':'));
            goto fail;
        }
        c->port = (int)port;
    }
    p = end;
    if (*p == '/') {
        const char *dend = p + 1 + strcspn(p + 1, "?#");
        if (dend > p + 1) {
            long db = parse_num(p + 1, (size_t)(dend - p - 1), 0, INT_MAX);
            if (db < 0) {
                baton_seterr(errstr, errstr_size, err,
                             "sink '%s': database '%.*s' is not a number (expected " RD_USAGE ")",
                             shown, (int)(dend - p - 1), p + 1);
                goto fail;
            }
            c->db = (int)db;
        }
        p = dend;
    }
    if (*p == '#') {
        baton_seterr(errstr, errstr_size, err, "sink '%s': a '#' fragment means nothing here",
                     shown);
        goto fail;
    }
    if (*p == '?') {
        p++;
        while (*p) {
            size_t n = strcspn(p, "&");
            const char *eq = memchr(p, '=', n);
            size_t kn = eq ? (size_t)(eq - p) : n;
            const char *v = eq ? eq + 1 : p + n;
            size_t vn = (size_t)(p + n - v);
            long val = -1;
            if (kn == 13 && !strncmp(p, "wait_replicas", kn)) {
                val = parse_num(v, vn, 0, 1000);
                c->wait_replicas = (int)val;
            } else if (kn == 15 && !strncmp(p, "wait_timeout_ms", kn)) {
                val = parse_num(v, vn, 1, 3600000);
                c->wait_timeout_ms = (int)val;
            } else {
                baton_seterr(errstr, errstr_size, err,
                             "sink '%s': unknown option '%.*s' (known: wait_replicas, "
                             "wait_timeout_ms)",
                             shown, (int)kn, p);
                goto fail;
            }
            if (val < 0) {
                baton_seterr(errstr, errstr_size, err, "sink '%s': option '%.*s': bad value '%.*s'",
                             shown, (int)kn, p, (int)vn, v);
                goto fail;
            }
            p += n;
            if (*p == '&')
                p++;
        }
    }
    if (!c->pass) {
        const char *env = getenv("REDISCLI_AUTH");
        if (env && *env)
            c->pass = xstrdup(env);
    }
    return BATON_OK;
fail:
    conf_free(c);
    return err;
}

static int rd_check(const char *uri, char *errstr, size_t errstr_size) {
    char *shown = baton_sink__redis_redact(uri);
    rd_conf_t c;
    int err = rd_parse(uri, shown, &c, errstr, errstr_size);
    if (!err)
        conf_free(&c);
    free(shown);
    return err;
}

/* ---- connection ---------------------------------------------------------------- */

static struct timeval ms_tv(int ms) {
    return (struct timeval){.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
}

/* An error reply's class: the first word of Redis's message. */
static int reply_is(const redisReply *r, const char *code) {
    size_t n = strlen(code);
    return r && r->type == REDIS_REPLY_ERROR && r->str && strncmp(r->str, code, n) == 0 &&
           (r->str[n] == ' ' || r->str[n] == '\0');
}

/* Maps an error reply to baton's bands: a script running elsewhere (BUSY)
 * is retriable BUSY; a server loading its data after a restart, a replica
 * (READONLY: a failover demoted this node), a primary with its link down
 * (MASTERDOWN) or one refusing writes (MISCONF, NOREPLICAS) are retriable
 * CONNECTION; a key of another type is CORRUPT; the rest (OOM, NOPERM,
 * ...) is a backend failure. */
static int rd_map(const redisReply *r) {
    if (reply_is(r, "BUSY"))
        return BATON_BUSY;
    if (reply_is(r, "LOADING") || reply_is(r, "READONLY") || reply_is(r, "MASTERDOWN") ||
        reply_is(r, "MISCONF") || reply_is(r, "NOREPLICAS") || reply_is(r, "TRYAGAIN"))
        return BATON_CONNECTION;
    if (reply_is(r, "WRONGTYPE"))
        return BATON_CORRUPT;
    return BATON_IO;
}

static void rd_drop(rd_t *rd) {
    if (rd->c)
        redisFree(rd->c);
    rd->c = NULL;
}

/* Runs a command on the open connection. Returns the reply, or NULL with
 * the context's error in errstr (the connection dropped: its outcome is
 * unknown, retriable). */
static redisReply *rd_cmd(rd_t *rd, int argc, const char **argv, const size_t *lens, char *errstr,
                          size_t errstr_size, const char *shown, const char *what) {
    redisReply *r = redisCommandArgv(rd->c, argc, argv, lens);
    if (!r) {
        baton_seterr(errstr, errstr_size, BATON_CONNECTION,
                     "sink '%s': %s: %s (retriable; the outcome is unknown)", shown, what,
                     rd->c->errstr[0] ? rd->c->errstr : "connection lost");
        rd_drop(rd);
    }
    return r;
}

/* A command of NUL-free words. */
static redisReply *rd_cmdv(rd_t *rd, char *errstr, size_t errstr_size, const char *shown,
                           const char *what, int argc, ...) {
    const char *argv[8];
    size_t lens[8];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc && i < 8; i++) {
        argv[i] = va_arg(ap, const char *);
        lens[i] = strlen(argv[i]);
    }
    va_end(ap);
    return rd_cmd(rd, argc, argv, lens, errstr, errstr_size, shown, what);
}

/* Loads both scripts (SCRIPT LOAD: idempotent, the SHA is the script's). */
static int rd_load_scripts(rd_t *rd, char *errstr, size_t errstr_size, const char *shown) {
    const char *src[2] = {fence_lua, write_lua};
    char *dst[2] = {rd->fence_sha, rd->write_sha};
    for (int i = 0; i < 2; i++) {
        redisReply *r = rd_cmdv(rd, errstr, errstr_size, shown, "loading the scripts", 3, "SCRIPT",
                                "LOAD", src[i]);
        if (!r)
            return BATON_CONNECTION;
        if (r->type != REDIS_REPLY_STRING || r->len >= sizeof(rd->fence_sha)) {
            int err = r->type == REDIS_REPLY_ERROR ? rd_map(r) : BATON_INTERNAL;
            baton_seterr(errstr, errstr_size, err, "sink '%s': SCRIPT LOAD: %s", shown,
                         r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
            freeReplyObject(r);
            return err;
        }
        snprintf(dst[i], sizeof(rd->fence_sha), "%s", r->str);
        freeReplyObject(r);
    }
    return BATON_OK;
}

/* Connects, authenticates, selects the database and loads the scripts.
 * Errors: CONNECTION (not reached, retriable), IO (refused: a wrong
 * password, a database out of range), INVALID (a password is wanted and
 * none was given). */
static int rd_connect(rd_t *rd, const char *shown, char *errstr, size_t errstr_size) {
    rd_drop(rd);
    rd->c = redisConnectWithTimeout(rd->conf.host, rd->conf.port, ms_tv(RD_CONNECT_TIMEOUT_MS));
    if (!rd->c || rd->c->err) {
        int err =
            baton_seterr(errstr, errstr_size, BATON_CONNECTION,
                         "sink '%s': cannot reach Redis at %s:%d: %s (retriable)", shown,
                         rd->conf.host, rd->conf.port, rd->c ? rd->c->errstr : "out of memory");
        rd_drop(rd);
        return err;
    }
    redisSetTimeout(rd->c, ms_tv(RD_COMMAND_TIMEOUT_MS));
    redisEnableKeepAlive(rd->c);
    redisReply *r = NULL;
    if (rd->conf.pass) {
        r = rd->conf.user
                ? rd_cmdv(rd, errstr, errstr_size, shown, "AUTH", 3, "AUTH", rd->conf.user,
                          rd->conf.pass)
                : rd_cmdv(rd, errstr, errstr_size, shown, "AUTH", 2, "AUTH", rd->conf.pass);
        if (!r)
            return BATON_CONNECTION;
        if (r->type == REDIS_REPLY_ERROR) {
            int wrong = reply_is(r, "WRONGPASS") || reply_is(r, "ERR");
            int err = baton_seterr(errstr, errstr_size, wrong ? BATON_IO : rd_map(r),
                                   "sink '%s': Redis refused the credentials: %s", shown, r->str);
            freeReplyObject(r);
            rd_drop(rd);
            return err;
        }
        freeReplyObject(r);
    }
    char db[16];
    snprintf(db, sizeof(db), "%d", rd->conf.db);
    r = rd_cmdv(rd, errstr, errstr_size, shown, "SELECT", 2, "SELECT", db);
    if (!r)
        return BATON_CONNECTION;
    if (r->type == REDIS_REPLY_ERROR) {
        int err =
            reply_is(r, "NOAUTH")
                ? baton_seterr(errstr, errstr_size, BATON_INVALID,
                               "sink '%s': Redis wants a password and none was given: put "
                               "it in the URI (redis://:PASS@HOST) or in REDISCLI_AUTH (%s)",
                               shown, r->str)
                : baton_seterr(errstr, errstr_size, reply_is(r, "LOADING") ? rd_map(r) : BATON_IO,
                               "sink '%s': SELECT %s: %s", shown, db, r->str);
        freeReplyObject(r);
        rd_drop(rd);
        return err;
    }
    freeReplyObject(r);
    int err = rd_load_scripts(rd, errstr, errstr_size, shown);
    if (err)
        rd_drop(rd);
    return err;
}

/* The connection, re-made if it broke (mid-run every failure to connect
 * but a missing password is worth retrying: a restarting server refuses
 * too). */
static int rd_ensure(baton_sink_t *sink) {
    rd_t *rd = sink->be;
    if (rd->c && !rd->c->err)
        return BATON_OK;
    int err = rd_connect(rd, sink->uri, sink->errstr, sizeof(sink->errstr));
    if (err) {
        if (err != BATON_INVALID)
            err = BATON_CONNECTION;
        BLOG_WARN("event=sink_reconnect_failed uri=%s error=\"%s\"", baton_log_v(sink->uri),
                  baton_log_q(sink->errstr));
        return err;
    }
    BLOG_INFO("event=sink_reconnected uri=%s group=%s", baton_log_v(sink->uri),
              baton_log_v(sink->group));
    return BATON_OK;
}

static void sleep_ms(int ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Records a failed call in errstr, logs it and returns err. */
static int rd_fail(baton_sink_t *sink, int err, const char *what, const char *msg) {
    baton_sink__seterr(sink, err, "sink '%s' group '%s': %s: %s%s", sink->uri, sink->group, what,
                       msg, baton_err_is_retriable(err) ? " (retriable)" : "");
    if (baton_err_is_retriable(err))
        BLOG_WARN("event=sink_%s uri=%s group=%s op=\"%s\" error=\"%s\"",
                  err == BATON_BUSY ? "busy" : "disconnected", baton_log_v(sink->uri),
                  baton_log_v(sink->group), baton_log_q(what), baton_log_q(msg));
    else
        BLOG_ERROR("event=sink_failed uri=%s group=%s op=\"%s\" error=\"%s\"",
                   baton_log_v(sink->uri), baton_log_v(sink->group), baton_log_q(what),
                   baton_log_q(sink->errstr));
    return err;
}

/* A script's argument vector: argv[0..3) are EVALSHA's (rd_eval), then the
 * keys and the arguments; numbers are printed into nums. */
typedef struct {
    const char **argv;
    size_t *lens;
    char (*nums)[24];
    size_t a, k;
    size_t now_at; /* where arg_now put now (0: nowhere) */
    char *now;     /* its buffer, one of nums */
    int gated;     /* whether the commit gate is asked before the script */
} rd_args_t;

/* The arguments n inputs take (RD_LUA_INPUTS), and how many are numbers. */
static size_t inputs_argc(const baton_sink_input_t *in, size_t n, size_t *nnum) {
    size_t c = 3 * n;
    *nnum += 3 * n;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < in[i].noutputs; j++) {
            c += 1 + (in[i].outputs[j].key != NULL) + (in[i].outputs[j].value != NULL);
            *nnum += 1;
        }
    return c;
}

static void args_init(rd_args_t *g, size_t argc, size_t nnum) {
    g->argv = xcalloc(argc, sizeof(*g->argv));
    g->lens = xcalloc(argc, sizeof(*g->lens));
    g->nums = xcalloc(nnum ? nnum : 1, sizeof(*g->nums));
    g->a = 3;
    g->k = 0;
    g->now_at = 0;
    g->now = NULL;
    g->gated = 0;
}

static void args_free(rd_args_t *g) {
    free(g->argv);
    free(g->lens);
    free(g->nums);
}

static void arg_str(rd_args_t *g, const char *s, size_t len) {
    g->argv[g->a] = len ? s : "";
    g->lens[g->a++] = len;
}

static void arg_num(rd_args_t *g, int64_t v) {
    snprintf(g->nums[g->k], sizeof(g->nums[0]), "%" PRId64, v);
    arg_str(g, g->nums[g->k], strlen(g->nums[g->k]));
    g->k++;
}

/* now (ms) as RD_LUA_NOW reads it, set by rd_eval before each attempt:
 * with gated, the commit gate is asked then, just before the script (the
 * transaction), so a reconnect or a BUSY wait never runs on an old yes. */
static void arg_now(rd_args_t *g, int gated) {
    g->now_at = g->a;
    g->now = g->nums[g->k++];
    g->gated = gated;
    g->argv[g->a++] = g->now;
}

static void arg_now_set(baton_sink_t *sink, rd_args_t *g) {
    int hold = g->gated && !baton_sink__gate_open(sink);
    snprintf(g->now, sizeof(g->nums[0]), "%s%" PRId64, hold ? "H" : "", baton_wall_ms());
    g->lens[g->now_at] = strlen(g->now);
}

static void arg_inputs(rd_args_t *g, const baton_sink_input_t *in, size_t n) {
    for (size_t i = 0; i < n; i++) {
        arg_num(g, in[i].offset);
        arg_num(g, in[i].offset + 1); /* offset_ok: never INT64_MAX */
        arg_num(g, (int64_t)in[i].noutputs);
        for (size_t j = 0; j < in[i].noutputs; j++) {
            const baton_sink_output_t *o = &in[i].outputs[j];
            arg_num(g, (o->key != NULL) | (o->value != NULL) << 1);
            if (o->key)
                arg_str(g, o->key, o->key_len);
            if (o->value)
                arg_str(g, o->value, o->value_len);
        }
    }
}

/* EVALSHA of sha with nkeys keys then the arguments (argv[0..argc) are the
 * KEYS and ARGV, after the three words this fills in). Reloads the scripts
 * after NOSCRIPT (a restarted or flushed server), retries BUSY until the
 * busy timeout. Returns the reply (an array) or NULL with the error. */
static redisReply *rd_eval(baton_sink_t *sink, int which, rd_args_t *g, int nkeys, const char *what,
                           int *err) {
    int argc = (int)g->a;
    const char **argv = g->argv;
    size_t *lens = g->lens;
    rd_t *rd = sink->be;
    char nk[16];
    snprintf(nk, sizeof(nk), "%d", nkeys);
    int64_t deadline = baton_now_ms() + rd->busy_timeout_ms;
    for (int reloads = 0;;) {
        if ((*err = rd_ensure(sink)) != BATON_OK)
            return NULL;
        argv[0] = "EVALSHA";
        argv[1] = which ? rd->write_sha : rd->fence_sha;
        argv[2] = nk;
        for (int i = 0; i < 3; i++)
            lens[i] = strlen(argv[i]);
        if (g->now_at)
            arg_now_set(sink, g);
        char msg[256];
        redisReply *r = rd_cmd(rd, argc, argv, lens, msg, sizeof(msg), sink->uri, what);
        if (!r) {
            *err = rd_fail(sink, BATON_CONNECTION, what, msg);
            return NULL;
        }
        if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1)
            return r;
        if (reply_is(r, "NOSCRIPT") && reloads++ < 2) {
            freeReplyObject(r);
            BLOG_INFO("event=sink_script_reload uri=%s", baton_log_v(sink->uri));
            if ((*err = rd_load_scripts(rd, sink->errstr, sizeof(sink->errstr), sink->uri)))
                return NULL;
            continue;
        }
        if (reply_is(r, "BUSY") && baton_now_ms() < deadline) {
            freeReplyObject(r);
            sleep_ms(10);
            continue;
        }
        char m[320];
        snprintf(m, sizeof(m), "%s",
                 r->type == REDIS_REPLY_ERROR && r->str ? r->str : "unexpected reply");
        *err = r->type == REDIS_REPLY_ERROR ? rd_map(r) : BATON_INTERNAL;
        freeReplyObject(r);
        *err = rd_fail(sink, *err, what, m);
        return NULL;
    }
}

/* A reply element as a string (bulk or status), or "". */
static const char *el(const redisReply *r, size_t i) {
    if (i >= r->elements || !r->element[i])
        return "";
    const redisReply *e = r->element[i];
    return (e->type == REDIS_REPLY_STRING || e->type == REDIS_REPLY_STATUS) && e->str ? e->str : "";
}

static int64_t el_i64(const redisReply *r, size_t i) { return strtoll(el(r, i), NULL, 10); }

/* A holding script's {'W', index} of n partitions: the index (0 if out of
 * range), whose partition the refusal names. */
static size_t held_at(const redisReply *r, size_t n) {
    int64_t i = el_i64(r, 1);
    return i >= 0 && (size_t)i < n ? (size_t)i : 0;
}

/* A script's refusal before it wrote anything: a key of the wrong type, a
 * field baton did not write, a stream ahead of its fence, another group.
 * Nothing was written. */
static int rd_script_refusal(baton_sink_t *sink, redisReply *r) {
    const char *kind = el(r, 0);
    int err;
    if (!strcmp(kind, "WRONGTYPE")) {
        BLOG_ERROR("event=sink_corrupt uri=%s group=%s key=%s reason=wrong_type",
                   baton_log_v(sink->uri), baton_log_v(sink->group), baton_log_v(el(r, 1)));
        err = baton_sink__seterr(sink, BATON_CORRUPT,
                                 "sink '%s' group '%s': key '%s' is a %s, not what baton keeps "
                                 "there (another application's key?); nothing written",
                                 sink->uri, sink->group, el(r, 1), el(r, 2));
    } else if (!strcmp(kind, "CORRUPT")) {
        BLOG_ERROR("event=sink_corrupt uri=%s group=%s key=%s field=%s", baton_log_v(sink->uri),
                   baton_log_v(sink->group), baton_log_v(el(r, 1)), baton_log_v(el(r, 2)));
        err = baton_sink__seterr(sink, BATON_CORRUPT,
                                 "sink '%s' group '%s': key '%s' field '%s' is missing or not a "
                                 "non-negative integer; nothing written",
                                 sink->uri, sink->group, el(r, 1), el(r, 2));
    } else if (!strcmp(kind, "AHEAD")) {
        BLOG_ERROR("event=sink_corrupt uri=%s group=%s key=%s reason=duplicate_output",
                   baton_log_v(sink->uri), baton_log_v(sink->group), baton_log_v(el(r, 1)));
        err = baton_sink__seterr(sink, BATON_CORRUPT,
                                 "sink '%s' group '%s': stream '%s' already holds offset %s, at "
                                 "or above next_offset %s (the stream and the fence disagree); "
                                 "nothing written",
                                 sink->uri, sink->group, el(r, 1), el(r, 2), el(r, 3));
    } else if (!strcmp(kind, "CONFLICT")) {
        const char *found = el(r, 1);
        if (baton_uuid_valid(found) != 0)
            goto badgroup;
        err = baton_sink__group_conflict(sink, found, el_i64(r, 2));
    } else if (!strcmp(kind, "BADGROUP")) {
        goto badgroup;
    } else {
        err = baton_sink__seterr(sink, BATON_INTERNAL, "sink '%s': unexpected script reply '%s'",
                                 sink->uri, kind);
    }
    return err;
badgroup:
    return baton_sink__seterr(sink, BATON_CORRUPT,
                              "sink '%s' group '%s': baton:{%s}:group is not a group id and a "
                              "time",
                              sink->uri, sink->group, sink->group);
}

/* Waits for conf.wait_replicas replicas to have everything this connection
 * wrote (Redis WAIT). Fewer in time: CONNECTION, retriable (the write is on
 * the primary; the retry skips it and waits again). */
static int rd_wait(baton_sink_t *sink, const char *what) {
    rd_t *rd = sink->be;
    if (rd->conf.wait_replicas <= 0)
        return BATON_OK;
    char n[16], t[16], msg[256];
    snprintf(n, sizeof(n), "%d", rd->conf.wait_replicas);
    snprintf(t, sizeof(t), "%d", rd->conf.wait_timeout_ms);
    redisReply *r = rd_cmdv(rd, msg, sizeof(msg), sink->uri, "WAIT", 3, "WAIT", n, t);
    if (!r)
        return rd_fail(sink, BATON_CONNECTION, what, msg);
    long long acked = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r->type == REDIS_REPLY_ERROR)
        snprintf(msg, sizeof(msg), "WAIT: %s", r->str);
    freeReplyObject(r);
    if (acked < 0)
        return rd_fail(sink, BATON_IO, what, msg);
    if (acked < rd->conf.wait_replicas) {
        BLOG_WARN("event=sink_replicas_behind uri=%s group=%s op=\"%s\" acked=%lld wanted=%d",
                  baton_log_v(sink->uri), baton_log_v(sink->group), baton_log_q(what), acked,
                  rd->conf.wait_replicas);
        snprintf(msg, sizeof(msg),
                 "only %lld of %d replicas acknowledged within %d ms (wait_replicas): applied on "
                 "the primary, not yet safe from a failover",
                 acked, rd->conf.wait_replicas, rd->conf.wait_timeout_ms);
        return rd_fail(sink, BATON_CONNECTION, what, msg);
    }
    return BATON_OK;
}

/* ---- what this handle saw ---------------------------------------------------- */

/* Partitions tracked per handle: Kafka topics have far fewer; a higher
 * partition number gets a scratch slot (its next_offset check is off)
 * rather than a huge array. */
#define RD_SEEN_MAX 1000000

static rd_seen_t *seen_at(rd_t *rd, int32_t p) {
    static rd_seen_t scratch;
    if (p >= RD_SEEN_MAX) {
        scratch = (rd_seen_t){-1, 0};
        return &scratch;
    }
    if ((size_t)p >= rd->nseen) {
        size_t n = (size_t)p + 16;
        rd->seen = xrealloc(rd->seen, n * sizeof(*rd->seen));
        for (size_t i = rd->nseen; i < n; i++)
            rd->seen[i] = (rd_seen_t){-1, 0};
        rd->nseen = n;
    }
    return &rd->seen[p];
}

/* ---- the protocol -------------------------------------------------------------- */

static char *key_of(const baton_sink_t *sink, int32_t p, const char *what) {
    return xasprintf("baton:{%s.%d}:%s", sink->group, (int)p, what);
}

/* The fence script (fence_lua) for fences[0..n): one script, so the fences
 * and the held inputs written with them land together or not at all. With
 * inputs in the call the commit gate is asked before it; a refusal makes
 * the script hold, and it writes nothing at all if an input would apply. */
static int rd_fence_many(baton_sink_t *sink, baton_sink_fence_t *fences, size_t n) {
    rd_t *rd = sink->be;
    size_t nnum = 1 + 3 * n, argc = 3 + 1 + 2 * n + 2 + 3 * n;
    int with_inputs = 0;
    for (size_t i = 0; i < n; i++) {
        argc += inputs_argc(fences[i].inputs, fences[i].ninputs, &nnum);
        with_inputs |= fences[i].ninputs > 0;
    }
    if (argc > INT_MAX)
        return baton_sink__seterr(sink, BATON_INVALID, "fence_write: too many inputs");
    rd_args_t g;
    args_init(&g, argc, nnum);
    char **keys = xcalloc(2 * n + 1, sizeof(*keys));
    keys[2 * n] = xasprintf("baton:{%s}:group", sink->group);
    arg_str(&g, keys[2 * n], strlen(keys[2 * n]));
    for (size_t i = 0; i < n; i++) {
        keys[2 * i] = key_of(sink, fences[i].partition, "fence");
        keys[2 * i + 1] = key_of(sink, fences[i].partition, "out");
        arg_str(&g, keys[2 * i], strlen(keys[2 * i]));
        arg_str(&g, keys[2 * i + 1], strlen(keys[2 * i + 1]));
    }
    const char *exp = sink->expect_group ? sink->expect_group : "";
    arg_str(&g, exp, strlen(exp));
    arg_now(&g, with_inputs);
    for (size_t i = 0; i < n; i++) {
        baton_sink_fence_t *f = &fences[i];
        arg_num(&g, f->epoch);
        if (f->ninputs)
            arg_num(&g, f->from);
        else
            arg_str(&g, "", 0);
        arg_num(&g, (int64_t)f->ninputs);
        arg_inputs(&g, f->inputs, f->ninputs);
    }
    int err;
    redisReply *r = rd_eval(sink, 0, &g, (int)(2 * n + 1), "fence", &err);
    if (r && !strcmp(el(r, 0), "W")) {
        for (size_t k = 0; k < n; k++)
            fences[k].result = BATON_CONNECTION; /* nothing was fenced */
        err = baton_sink__withheld(sink, fences[held_at(r, n)].partition);
    } else if (r && strcmp(el(r, 0), "OK") != 0) {
        err = rd_script_refusal(sink, r);
    } else if (r && r->elements != 1 + 5 * n) {
        err = baton_sink__seterr(sink, BATON_INTERNAL, "sink '%s': fence: %zu replies for %zu",
                                 sink->uri, r->elements, n);
    } else if (r) {
        for (size_t i = 0; i < n; i++) {
            const char *code = el(r, 1 + 5 * i);
            int64_t v = el_i64(r, 2 + 5 * i);
            baton_sink_fence_t *f = &fences[i];
            if (!strcmp(code, "S")) {
                f->result = BATON_STALE;
                seen_at(rd, f->partition)->epoch = -1;
                baton_sink__stale(sink, "fence", f->partition, f->epoch, v);
                continue;
            }
            f->result = BATON_OK;
            f->fenced_next = v;
            f->written = !strcmp(el(r, 3 + 5 * i), "1");
            if (f->written) {
                f->next_offset = el_i64(r, 4 + 5 * i);
                f->applied = (size_t)el_i64(r, 5 + 5 * i);
            }
            *seen_at(rd, f->partition) =
                (rd_seen_t){f->epoch, f->written ? f->next_offset : f->fenced_next};
            BLOG_DEBUG("event=sink_fenced uri=%s group=%s partition=%d epoch=%lld "
                       "next_offset=%lld",
                       baton_log_v(sink->uri), baton_log_v(sink->group), (int)f->partition,
                       (long long)f->epoch, (long long)v);
        }
        err = rd_wait(sink, "fence");
    }
    if (r)
        freeReplyObject(r);
    for (size_t i = 0; i <= 2 * n; i++)
        free(keys[i]);
    free(keys);
    args_free(&g);
    return err;
}

static int rd_write_many(baton_sink_t *sink, baton_sink_batch_t *batches, size_t n) {
    rd_t *rd = sink->be;
    size_t nnum = 1 + 3 * n, argc = 3 + 2 * n + 1 + 3 * n;
    for (size_t b = 0; b < n; b++)
        argc += inputs_argc(batches[b].inputs, batches[b].ninputs, &nnum);
    if (argc > INT_MAX)
        return baton_sink__seterr(sink, BATON_INVALID, "write: batch too large");
    rd_args_t g;
    args_init(&g, argc, nnum);
    char **keys = xcalloc(2 * n, sizeof(*keys));
    for (size_t b = 0; b < n; b++) {
        keys[2 * b] = key_of(sink, batches[b].partition, "fence");
        keys[2 * b + 1] = key_of(sink, batches[b].partition, "out");
        arg_str(&g, keys[2 * b], strlen(keys[2 * b]));
        arg_str(&g, keys[2 * b + 1], strlen(keys[2 * b + 1]));
    }
    /* A closed gate makes the script hold: if a batch would apply, it
     * writes nothing at all ({'W', index}), and the call returns the
     * refusal; a call of stale and unfenced batches only is refused and
     * counted as always. */
    arg_now(&g, 1);
    for (size_t b = 0; b < n; b++) {
        baton_sink_batch_t *bt = &batches[b];
        arg_num(&g, bt->epoch);
        const rd_seen_t *s = seen_at(rd, bt->partition);
        if (s->epoch == bt->epoch)
            arg_num(&g, s->next);
        else
            arg_str(&g, "", 0);
        arg_num(&g, (int64_t)bt->ninputs);
        arg_inputs(&g, bt->inputs, bt->ninputs);
    }
    int err = BATON_OK;
    redisReply *r = rd_eval(sink, 1, &g, (int)(2 * n), "write", &err);
    if (r && !strcmp(el(r, 0), "W")) {
        for (size_t b = 0; b < n; b++) {
            batches[b].result = BATON_CONNECTION;
            batches[b].applied = 0;
        }
        err = baton_sink__withheld(sink, batches[held_at(r, n)].partition);
    } else if (r && strcmp(el(r, 0), "OK") != 0) {
        err = rd_script_refusal(sink, r);
    } else if (r && r->elements != 1 + 3 * n) {
        err = baton_sink__seterr(sink, BATON_INTERNAL, "sink '%s': write: %zu replies for %zu",
                                 sink->uri, r->elements, n);
    } else if (r) {
        for (size_t b = 0; b < n; b++) {
            baton_sink_batch_t *bt = &batches[b];
            const char *code = el(r, 1 + 3 * b);
            const char *va = el(r, 2 + 3 * b);
            rd_seen_t *s = seen_at(rd, bt->partition);
            if (!strcmp(code, "A")) {
                bt->result = BATON_OK;
                bt->next_offset = el_i64(r, 2 + 3 * b);
                bt->applied = (size_t)el_i64(r, 3 + 3 * b);
                *s = (rd_seen_t){bt->epoch, bt->next_offset};
            } else if (!strcmp(code, "S")) {
                s->epoch = -1;
                bt->result = baton_sink__stale(sink, "write", bt->partition, bt->epoch,
                                               strtoll(va, NULL, 10));
            } else if (!strcmp(code, "L")) {
                s->epoch = -1;
                BLOG_ERROR("event=sink_regressed uri=%s group=%s partition=%d epoch=%lld "
                           "next_offset=%s expected=%s",
                           baton_log_v(sink->uri), baton_log_v(sink->group), (int)bt->partition,
                           (long long)bt->epoch, baton_log_v(va), baton_log_v(el(r, 3 + 3 * b)));
                bt->result = baton_sink__seterr(
                    sink, BATON_UNFENCED,
                    "sink '%s' group '%s' partition %d: next_offset went back from %s to %s at "
                    "epoch %lld: Redis lost acknowledged writes (a failover to a replica that "
                    "lacked them, or a restart without them on disk); fence again to resume "
                    "from %s",
                    sink->uri, sink->group, (int)bt->partition, el(r, 3 + 3 * b), va,
                    (long long)bt->epoch, va);
            } else if (!strcmp(code, "U")) {
                s->epoch = -1;
                bt->result = baton_sink__unfenced(sink, bt->partition, bt->epoch, va[0] != '\0',
                                                  va[0] ? strtoll(va, NULL, 10) : 0);
            } else {
                s->epoch = -1;
                bt->result = baton_sink__seterr(
                    sink, BATON_INTERNAL, "sink '%s': write: unknown reply '%s' for partition %d",
                    sink->uri, code, (int)bt->partition);
            }
        }
        err = rd_wait(sink, "write");
    }
    if (r)
        freeReplyObject(r);
    for (size_t i = 0; i < 2 * n; i++)
        free(keys[i]);
    free(keys);
    args_free(&g);
    return err;
}

/* A canonical non-negative decimal into *out; -1 if not one. */
static int str_i64(const redisReply *e, int64_t *out) {
    if (!e || e->type != REDIS_REPLY_STRING || !e->len || e->len > 19)
        return -1;
    for (size_t i = 0; i < e->len; i++)
        if (!isdigit((unsigned char)e->str[i]))
            return -1;
    errno = 0;
    long long v = strtoll(e->str, NULL, 10);
    if (errno)
        return -1;
    *out = v;
    return 0;
}

static int row_cmp(const void *a, const void *b) {
    const baton_fence_row_t *x = a, *y = b;
    return (x->partition > y->partition) - (x->partition < y->partition);
}

/* The reply h to HMGET key epoch next_offset rejected into row (its
 * partition already set): *found 0 when the key does not exist (deleted
 * since a SCAN listed it). Frees h. */
static int rd_fence_reply(baton_sink_t *sink, const char *key, redisReply *h,
                          baton_fence_row_t *row, int *found) {
    int err = BATON_OK;
    *found = 0;
    if (h->type == REDIS_REPLY_ERROR) {
        err = baton_sink__seterr(sink, rd_map(h), "sink '%s' group '%s': key '%s': %s", sink->uri,
                                 sink->group, key, h->str);
    } else if (h->type == REDIS_REPLY_ARRAY && h->elements == 3 &&
               h->element[0]->type == REDIS_REPLY_NIL && h->element[1]->type == REDIS_REPLY_NIL &&
               h->element[2]->type == REDIS_REPLY_NIL) {
        /* no such hash */
    } else if (h->type != REDIS_REPLY_ARRAY || h->elements != 3 ||
               str_i64(h->element[0], &row->epoch) || str_i64(h->element[1], &row->next_offset) ||
               str_i64(h->element[2], &row->rejected)) {
        err = baton_sink__seterr(sink, BATON_CORRUPT,
                                 "sink '%s' group '%s': key '%s' lacks epoch, next_offset or "
                                 "rejected as non-negative integers",
                                 sink->uri, sink->group, key);
    } else {
        *found = 1;
    }
    freeReplyObject(h);
    return err;
}

/* The fence hashes keys[0..n) of partitions parts[0..n), in one round trip
 * (the HMGETs pipelined): appends those that exist to out[*k..] (room for
 * n more). Every reply is read even after a bad one, so the connection
 * stays in step; a lost connection drops it (retriable). */
static int rd_fence_rows(baton_sink_t *sink, char *const *keys, const int32_t *parts, size_t n,
                         baton_fence_row_t *out, size_t *k) {
    rd_t *rd = sink->be;
    for (size_t i = 0; i < n; i++) {
        const char *argv[5] = {"HMGET", keys[i], "epoch", "next_offset", "rejected"};
        if (redisAppendCommandArgv(rd->c, 5, argv, NULL) != REDIS_OK)
            goto lost;
    }
    int err = BATON_OK;
    for (size_t i = 0; i < n; i++) {
        redisReply *h = NULL;
        if (redisGetReply(rd->c, (void **)&h) != REDIS_OK || !h)
            goto lost;
        if (err) { /* read on, to keep the connection in step */
            freeReplyObject(h);
            continue;
        }
        baton_fence_row_t row = {.partition = parts[i]};
        int found = 0;
        err = rd_fence_reply(sink, keys[i], h, &row, &found);
        if (!err && found)
            out[(*k)++] = row;
    }
    return err;
lost:;
    char msg[256];
    snprintf(msg, sizeof(msg), "%s", rd->c->errstr[0] ? rd->c->errstr : "connection lost");
    rd_drop(rd);
    return rd_fail(sink, BATON_CONNECTION, "list fences", msg);
}

/* The fence hashes of parts[0..n), in one round trip. */
static int rd_fences_of(baton_sink_t *sink, const int32_t *parts, size_t n,
                        baton_fence_row_t **rows, size_t *nrows) {
    int err = rd_ensure(sink);
    if (err)
        return err;
    baton_fence_row_t *out = xcalloc(n + 1, sizeof(*out));
    char **keys = xcalloc(n + 1, sizeof(*keys));
    for (size_t i = 0; i < n; i++)
        keys[i] = key_of(sink, parts[i], "fence");
    size_t k = 0;
    err = rd_fence_rows(sink, keys, parts, n, out, &k);
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    if (err || k == 0) {
        free(out);
        out = NULL;
    }
    if (err)
        return err;
    *rows = out;
    *nrows = k;
    return BATON_OK;
}

/* Every fence hash of the group (SCAN, then each page's HMGETs pipelined): not one snapshot
 * like the SQL backends' SELECT, but each row is read whole. */
static int rd_fences(baton_sink_t *sink, baton_fence_row_t **rows, size_t *nrows) {
    rd_t *rd = sink->be;
    int err = rd_ensure(sink);
    if (err)
        return err;
    char *pattern = xasprintf("baton:{%s.*}:fence", sink->group);
    char *prefix = xasprintf("baton:{%s.", sink->group);
    size_t plen = strlen(prefix);
    baton_fence_row_t *out = NULL;
    size_t count = 0, cap = 0;
    char cursor[32] = "0", msg[256];
    do {
        redisReply *r = rd_cmdv(rd, msg, sizeof(msg), sink->uri, "SCAN", 6, "SCAN", cursor, "MATCH",
                                pattern, "COUNT", "1000");
        if (!r) {
            err = rd_fail(sink, BATON_CONNECTION, "list fences", msg);
            goto done;
        }
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            err = rd_fail(sink, r->type == REDIS_REPLY_ERROR ? rd_map(r) : BATON_INTERNAL,
                          "list fences", r->type == REDIS_REPLY_ERROR ? r->str : "bad SCAN reply");
            freeReplyObject(r);
            goto done;
        }
        snprintf(cursor, sizeof(cursor), "%s", el(r, 0));
        const redisReply *keys = r->element[1];
        /* This page's fence keys, then their rows in one round trip. */
        char **page = xcalloc(keys->elements + 1, sizeof(*page));
        int32_t *parts = xcalloc(keys->elements + 1, sizeof(*parts));
        size_t np = 0;
        for (size_t i = 0; i < keys->elements; i++) {
            char *key = keys->element[i]->str;
            /* baton:{G.<digits>}:fence only: another group whose name has
             * G. in front matches the pattern too. */
            const char *p = key + plen;
            char *endp = NULL;
            long part = strtol(p, &endp, 10);
            if (!isdigit((unsigned char)*p) || strcmp(endp, "}:fence") != 0 || part > INT32_MAX)
                continue;
            page[np] = key;
            parts[np++] = (int32_t)part;
        }
        if (count + np > cap) {
            cap = count + np > 2 * cap ? count + np : 2 * cap;
            out = xrealloc(out, cap * sizeof(*out));
        }
        if (np > 0)
            err = rd_fence_rows(sink, page, parts, np, out, &count);
        free(page);
        free(parts);
        freeReplyObject(r);
    } while (!err && strcmp(cursor, "0") != 0);
done:
    free(pattern);
    free(prefix);
    if (err) {
        free(out);
        return err;
    }
    if (count)
        qsort(out, count, sizeof(*out), row_cmp);
    *rows = out;
    *nrows = count;
    return BATON_OK;
}

static int rd_group_get(baton_sink_t *sink, baton_sink_meta_t *out) {
    rd_t *rd = sink->be;
    int err = rd_ensure(sink);
    if (err)
        return err;
    char *key = xasprintf("baton:{%s}:group", sink->group), msg[256];
    redisReply *r = rd_cmdv(rd, msg, sizeof(msg), sink->uri, "HMGET", 4, "HMGET", key, "group_uuid",
                            "bound_ms");
    if (!r) {
        free(key);
        return rd_fail(sink, BATON_CONNECTION, "read the group", msg);
    }
    if (r->type == REDIS_REPLY_ERROR) {
        err =
            baton_sink__seterr(sink, rd_map(r), "sink '%s': key '%s': %s", sink->uri, key, r->str);
    } else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
        err = baton_sink__seterr(sink, BATON_INTERNAL, "sink '%s': HMGET: unexpected reply",
                                 sink->uri);
    } else if (r->element[0]->type != REDIS_REPLY_NIL || r->element[1]->type != REDIS_REPLY_NIL) {
        int64_t bound = 0;
        const redisReply *u = r->element[0];
        if (u->type != REDIS_REPLY_STRING || baton_uuid_valid(u->str) != 0 ||
            str_i64(r->element[1], &bound))
            err = baton_sink__seterr(sink, BATON_CORRUPT,
                                     "sink '%s' group '%s': %s is not a group id and a time",
                                     sink->uri, sink->group, key);
        else {
            snprintf(out->group_uuid, sizeof(out->group_uuid), "%s", u->str);
            out->bound_ms = bound;
        }
    }
    freeReplyObject(r);
    free(key);
    return err;
}

static int rd_set_busy_timeout(baton_sink_t *sink, int timeout_ms) {
    rd_t *rd = sink->be;
    rd->busy_timeout_ms = timeout_ms;
    return BATON_OK;
}

static void rd_close(baton_sink_t *sink) {
    rd_t *rd = sink->be;
    if (!rd)
        return;
    rd_drop(rd);
    conf_free(&rd->conf);
    free(rd->seen);
    free(rd);
    sink->be = NULL;
}

/* The sink id: HSETNX makes it once, whoever opens first; everyone reads
 * the one that won. */
static int rd_identity(baton_sink_t *sink, char *errstr, size_t errstr_size) {
    rd_t *rd = sink->be;
    char fresh[BATON_SINK_ID_SIZE];
    if (baton_uuid_new(fresh) != 0)
        return baton_seterr(errstr, errstr_size, BATON_INTERNAL,
                            "sink '%s': no randomness for the sink id", sink->uri);
    redisReply *r = rd_cmdv(rd, errstr, errstr_size, sink->uri, "HSETNX", 4, "HSETNX", "baton:meta",
                            "sink_id", fresh);
    if (!r)
        return BATON_CONNECTION;
    int err = BATON_OK;
    if (r->type == REDIS_REPLY_ERROR)
        err = baton_seterr(
            errstr, errstr_size, rd_map(r), "sink '%s': key 'baton:meta': %s%s", sink->uri, r->str,
            reply_is(r, "WRONGTYPE") ? " (baton keeps a hash there: another application's key?)"
                                     : "");
    freeReplyObject(r);
    if (err)
        return err;
    r = rd_cmdv(rd, errstr, errstr_size, sink->uri, "HGET", 3, "HGET", "baton:meta", "sink_id");
    if (!r)
        return BATON_CONNECTION;
    if (r->type != REDIS_REPLY_STRING || baton_uuid_valid(r->str) != 0)
        err = baton_seterr(errstr, errstr_size, BATON_CORRUPT,
                           "sink '%s': baton:meta's sink_id is not a UUID", sink->uri);
    else
        snprintf(sink->sink_id, sizeof(sink->sink_id), "%s", r->str);
    freeReplyObject(r);
    return err;
}

static int rd_open(baton_sink_t *sink, const char *target, char *errstr, size_t errstr_size) {
    (void)target; /* the whole URI is needed: rediss: or redis: */
    const char *scheme_end = strchr(sink->uri, ':');
    char *full = xasprintf("%.*s:%s", (int)(scheme_end - sink->uri), sink->uri, target);
    rd_t *rd = xcalloc(1, sizeof(*rd));
    rd->busy_timeout_ms = RD_BUSY_TIMEOUT_MS;
    int err = rd_parse(full, sink->uri, &rd->conf, errstr, errstr_size);
    memset(full, 0, strlen(full));
    free(full);
    if (err) {
        free(rd);
        return err;
    }
    sink->be = rd;
    err = rd_connect(rd, sink->uri, errstr, errstr_size);
    if (!err)
        err = rd_identity(sink, errstr, errstr_size);
    if (err)
        rd_close(sink); /* not logged here: the caller reports errstr, once */
    return err;
}

const baton_sink_ops_t baton_sink_redis_ops = {
    .scheme = "redis",
    .alias = "rediss", /* recognised only to be refused with the reason */
    .usage = RD_USAGE " (or the password in REDISCLI_AUTH)",
    .open = rd_open,
    .close = rd_close,
    .fences = rd_fences,
    .fences_of = rd_fences_of,
    .set_busy_timeout = rd_set_busy_timeout,
    .redact = baton_sink__redis_redact,
    .fence_many = rd_fence_many,
    .write_many = rd_write_many,
    .group_get = rd_group_get,
    .check = rd_check,
};
