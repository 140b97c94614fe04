#!/usr/bin/env python3
"""fenced_worker.py: a fenced Kafka stream worker in Python on baton.

    fenced_worker.py --zk HOSTS --group G --id ID --brokers B --sink sqlite:PATH
                     [--session-timeout-ms N] [--root /baton] [--batch-size N]
                     [--linger-ms MS] [--batonctl PATH]

It joins group G as member ID with the baton member library
(python/baton), consumes the partitions the coordinator assigns it with
confluent-kafka, and copies every record to baton's SQLite sink, stamped
with its ownership's epoch, exactly as baton-worker does -- so Python and C
workers can share one group and one sink:

- on acquiring partition p with epoch e it fences the sink (baton_fence:
  refused if a higher epoch is stored; otherwise the epoch is stored and
  next_offset read), then assigns p in Kafka at next_offset (manual
  assign, no Kafka consumer group);
- each batch is one transaction: the fence row is read, a lower stored
  epoch is impossible (UNFENCED), a higher one refuses the batch (STALE,
  counted in baton_fence.rejected); otherwise the records at or above
  next_offset go to baton_output with epoch e and next_offset moves past
  them, all committed together;
- a refused write or a release drops the partition at once (a revoke or
  a leave writes the batch in hand first; a lost claim writes nothing);
- before its first fence it checks the group's sink binding (docs/design.md,
  "Sink binding") with batonctl, binds an unbound group to this sink, and
  refuses (exit 1) a sink that is not the group's or that serves another
  group of the same name; every fence records or re-checks the group id in
  baton_groups in the same transaction;
- BATON_FAILPOINTS="worker.before_sink_write=N:stop" stops the process
  (SIGSTOP) just before its (N+1)th batch write, like baton-worker.

Exit codes: 0 after SIGTERM/SIGINT (a graceful leave), 1 on a refusal or a
fatal error, 2 on bad arguments. Logs are baton's key=value lines on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
try:
    import baton
except ImportError:  # run from a checkout: python/ beside examples/
    sys.path.insert(0, str(HERE.parent.parent / "python"))
    import baton

PROG = "fenced_worker.py"
LOG_ID = ""
LEVELS = {"debug": 0, "info": 1, "warn": 2, "error": 3}
LOG_LEVEL = LEVELS.get(os.environ.get("BATON_LOG_LEVEL", "info"), 1)


LOG_JSON = os.environ.get("BATON_LOG_FORMAT") == "json"
_FIELD = re.compile(r'(\w+)=("[^"]*"|\S*)')


def log(level: str, msg: str) -> None:
    """One line on stderr in baton's log format: key=value text, or with
    BATON_LOG_FORMAT=json one JSON object of the same fields."""
    if LEVELS[level] < LOG_LEVEL:
        return
    t = time.time()
    ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % int(t % 1 * 1000)
    if LOG_JSON:
        o = {"ts": ts, "level": level, "proc": PROG, **({"id": LOG_ID} if LOG_ID else {})}
        for k, v in _FIELD.findall(msg):  # integers stay numbers, as baton's own lines
            o[k] = v[1:-1] if v.startswith('"') else int(v) if re.fullmatch(r"-?(0|[1-9]\d{0,17})", v) else v
        sys.stderr.write(json.dumps(o) + "\n")
    else:
        ident = f" id={LOG_ID}" if LOG_ID else ""
        sys.stderr.write(f"ts={ts} level={level} proc={PROG}{ident} {msg}\n")
    sys.stderr.flush()


def quote(s: object) -> str:
    return '"' + str(s).replace('"', "'").replace("\n", " ") + '"'


# --- failpoints ---------------------------------------------------------------


class Failpoints:
    """BATON_FAILPOINTS="name=[SKIP:]ACTION[;...]": ACTION (stop, abort,
    exit, sleep-MS) fires once, on hit SKIP+1 of the point, as in
    common/baton_failpoint.c."""

    def __init__(self, spec: str) -> None:
        self.points: Dict[str, List] = {}  # name -> [skip, action, ms, hits, fired]
        for entry in filter(None, spec.split(";")):
            name, eq, act = entry.partition("=")
            if not eq or not name:
                raise ValueError(f"failpoint '{entry}': expected name=[SKIP:]ACTION")
            skip = 0
            if ":" in act:
                num, _, act = act.partition(":")
                if not num.isdigit() or int(num) > 1000000000:
                    raise ValueError(f"failpoint '{entry}': bad skip count '{num}'")
                skip = int(num)
            ms = 0
            if act.startswith("sleep-") and act[6:].isdigit():
                ms, act = int(act[6:]), "sleep"
            elif act not in ("stop", "abort", "exit"):
                raise ValueError(f"failpoint '{entry}': unknown action '{act}' (stop, abort, exit, sleep-MS)")
            self.points[name] = [skip, act, ms, 0, False]

    def hit(self, name: str) -> None:
        fp = self.points.get(name)
        if not fp:
            return
        fp[3] += 1
        if fp[4] or fp[3] != fp[0] + 1:
            return
        fp[4] = True
        act = fp[1]
        log("warn", f"event=failpoint name={name} action={act}")
        if act == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
            log("warn", f"event=failpoint_resumed name={name}")
        elif act == "abort":
            os.abort()
        elif act == "exit":
            os._exit(99)
        else:
            time.sleep(fp[2] / 1000.0)


# --- the SQLite sink (sink/sink_sqlite.c's schema and rules) -----------------

SCHEMA = """
CREATE TABLE IF NOT EXISTS baton_fence(grp TEXT, partition INTEGER, epoch INTEGER,
  next_offset INTEGER, rejected INTEGER, PRIMARY KEY(grp, partition));
CREATE TABLE IF NOT EXISTS baton_output(grp TEXT, partition INTEGER, offset INTEGER,
  epoch INTEGER, key BLOB, value BLOB, PRIMARY KEY(grp, partition, offset));
CREATE TABLE IF NOT EXISTS baton_output_more(grp TEXT, partition INTEGER, offset INTEGER,
  seq INTEGER, epoch INTEGER, key BLOB, value BLOB, PRIMARY KEY(grp, partition, offset, seq));
CREATE TABLE IF NOT EXISTS baton_meta(name TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS baton_groups(grp TEXT PRIMARY KEY, group_uuid TEXT, bound_ms INTEGER);
"""
# The tables' columns (name, type, primary key position), as the C sink checks them.
COLUMNS = {
    "baton_fence": [("grp", "TEXT", 1), ("partition", "INTEGER", 2), ("epoch", "INTEGER", 0),
                    ("next_offset", "INTEGER", 0), ("rejected", "INTEGER", 0)],
    "baton_output": [("grp", "TEXT", 1), ("partition", "INTEGER", 2), ("offset", "INTEGER", 3),
                     ("epoch", "INTEGER", 0), ("key", "BLOB", 0), ("value", "BLOB", 0)],
    "baton_output_more": [("grp", "TEXT", 1), ("partition", "INTEGER", 2), ("offset", "INTEGER", 3),
                          ("seq", "INTEGER", 4), ("epoch", "INTEGER", 0), ("key", "BLOB", 0),
                          ("value", "BLOB", 0)],
    "baton_meta": [("name", "TEXT", 1), ("value", "TEXT", 0)],
    "baton_groups": [("grp", "TEXT", 1), ("group_uuid", "TEXT", 0), ("bound_ms", "INTEGER", 0)],
}
OP_BUSY_MS = 250  # a fence or write waits this long for the lock, then retries later
PAUSE_BATCHES = 40  # back-pressure: a partition with this many batches buffered stops fetching


def sqlite_path(uri: str) -> str:
    """The file of a sqlite:PATH URI, with the C sink's rules."""
    scheme, colon, path = uri.partition(":")
    if not colon or scheme.lower() != "sqlite":
        raise baton.InvalidError(f"sink '{uri}': this worker writes sqlite:PATH only "
                                 "(baton-worker also writes postgresql://...)")
    if path.startswith("//"):
        if not path.startswith("///"):
            raise baton.InvalidError(f"sink '{uri}': ambiguous path; write sqlite:{path[2:]} for a "
                                     f"relative path or sqlite:///{path[2:]} for an absolute one")
        path = path[2:]
    if not path:
        raise baton.InvalidError(f"sink '{uri}': empty path (use sqlite:PATH)")
    if path == ":memory:":
        raise baton.InvalidError(f"sink '{uri}': an in-memory database cannot fence other processes; use a file path")
    if path.startswith("file:"):
        path = "./" + path
    d = os.path.dirname(path) or "."
    if not os.path.isdir(d):
        raise baton.NotFoundError(f"sink '{uri}': directory '{d}' does not exist; create it first")
    return path


class Sink:
    """baton's SQLite sink: one BEGIN IMMEDIATE transaction per fence and per batch."""

    def __init__(self, uri: str, group: str) -> None:
        self.uri, self.group = uri, group
        self.path = sqlite_path(uri)
        try:
            self.db = sqlite3.connect(self.path, timeout=5.0, isolation_level=None)
            mode = self.db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                log("warn", f"event=sink_no_wal uri={uri} journal_mode={mode}")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.execute("BEGIN IMMEDIATE")
            try:
                for stmt in filter(str.strip, SCHEMA.split(";")):
                    self.db.execute(stmt)
                self._check_tables()
                self.db.execute("INSERT OR IGNORE INTO baton_meta(name, value) VALUES ('sink_id', ?)",
                                (str(uuid.uuid4()),))
                self.sink_id = self.db.execute("SELECT value FROM baton_meta WHERE name = 'sink_id'").fetchone()[0]
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as e:
            raise baton.BackendError(f"sink '{uri}': '{self.path}' is not a usable SQLite database: {e}") from None
        self.db.execute(f"PRAGMA busy_timeout={OP_BUSY_MS}")
        self.group_uuid: Optional[str] = None  # recorded or checked in every fence
        log("info", f"event=sink_opened uri={uri} group={group} sink_id={self.sink_id}")

    def _check_tables(self) -> None:
        for table, cols in COLUMNS.items():
            got = [(r[1], r[2].upper(), r[5]) for r in self.db.execute(f"PRAGMA table_info({table})")]
            if got != cols:
                raise baton.CorruptError(f"sink '{self.uri}': table {table} has columns {got}, "
                                         f"not baton's {cols}")

    def close(self) -> None:
        self.db.close()

    def _txn(self):
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            raise baton.BusyError(f"sink '{self.uri}': {e} (retriable)") from None

    def _fence_row(self, p: int) -> Optional[Tuple[int, int, int]]:
        row = self.db.execute("SELECT epoch, next_offset, rejected FROM baton_fence WHERE grp = ? AND partition = ?",
                              (self.group, p)).fetchone()
        if row is not None and not all(isinstance(v, int) and v >= 0 for v in row):
            raise baton.CorruptError(f"sink '{self.uri}' group '{self.group}' partition {p}: "
                                     f"baton_fence row {row} is not non-negative integers")
        return row

    def _group_check(self) -> None:
        if not self.group_uuid:
            return
        row = self.db.execute("SELECT group_uuid, bound_ms FROM baton_groups WHERE grp = ?", (self.group,)).fetchone()
        if row is None:
            self.db.execute("INSERT INTO baton_groups(grp, group_uuid, bound_ms) VALUES (?, ?, ?)",
                            (self.group, self.group_uuid, int(time.time() * 1000)))
            log("info", f"event=sink_group_recorded uri={self.uri} group={self.group} group_uuid={self.group_uuid}")
        elif str(row[0]).lower() != self.group_uuid.lower():
            raise baton.ConflictError(
                f"sink {self.uri} (id {self.sink_id}) serves another group named '{self.group}': it records "
                f"group id {row[0]}, but this group's id is {self.group_uuid}: refusing to write")

    def _run(self, body):
        """body() inside BEGIN IMMEDIATE ... COMMIT; rolled back on any error."""
        self._txn()
        try:
            out = body()
            self.db.execute("COMMIT")
            return out
        except BaseException as e:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            if isinstance(e, sqlite3.OperationalError) and "locked" in str(e):
                raise baton.BusyError(f"sink '{self.uri}': {e} (retriable)") from None
            if isinstance(e, sqlite3.Error):
                raise baton.BackendError(f"sink '{self.uri}': {e}") from None
            raise

    def fence(self, p: int, epoch: int) -> Tuple[int, int]:
        """fence(p, epoch): (BATON OK or STALE, next_offset). A stale fence is
        counted in rejected in the same transaction."""

        def body() -> Tuple[int, int]:
            self._group_check()
            row = self._fence_row(p)
            if row is None:
                self.db.execute("INSERT INTO baton_fence(grp, partition, epoch, next_offset, rejected) "
                                "VALUES (?, ?, ?, 0, 0)", (self.group, p, epoch))
                return 0, 0
            if row[0] > epoch:
                self._count_stale("fence", p, epoch, row[0])
                return baton.StaleError.code, row[1]
            if row[0] != epoch:
                self.db.execute("UPDATE baton_fence SET epoch = ? WHERE grp = ? AND partition = ?",
                                (epoch, self.group, p))
            return 0, row[1]

        return self._run(body)

    def _count_stale(self, op: str, p: int, epoch: int, stored: int) -> None:
        self.db.execute("UPDATE baton_fence SET rejected = rejected + 1 WHERE grp = ? AND partition = ?",
                        (self.group, p))
        log("warn", f"event=sink_stale op={op} uri={self.uri} group={self.group} partition={p} "
                    f"epoch={epoch} stored_epoch={stored}")

    def write(self, p: int, epoch: int, records: List["Record"]) -> Tuple[int, int, int]:
        """write(p, epoch, batch): (OK, STALE or UNFENCED, next_offset, applied)."""

        def body() -> Tuple[int, int, int]:
            row = self._fence_row(p)
            if row is None or row[0] < epoch:
                log("warn", f"event=sink_unfenced uri={self.uri} group={self.group} partition={p} epoch={epoch} "
                            f"stored_epoch={row[0] if row else 'none'}")
                return baton.UnfencedError.code, row[1] if row else 0, 0
            if row[0] > epoch:
                self._count_stale("write", p, epoch, row[0])
                return baton.StaleError.code, row[1], 0
            floor, n = row[1], 0
            for r in records:
                if r.offset < floor:
                    continue
                try:
                    self.db.execute("INSERT INTO baton_output(grp, partition, offset, epoch, key, value) "
                                    "VALUES (?, ?, ?, ?, ?, ?)", (self.group, p, r.offset, epoch, r.key, r.value))
                except sqlite3.IntegrityError:
                    raise baton.CorruptError(f"sink '{self.uri}' group '{self.group}' partition {p}: offset "
                                             f"{r.offset} is already in baton_output but next_offset is {row[1]}") from None
                floor, n = r.offset + 1, n + 1
            if n:
                self.db.execute("UPDATE baton_fence SET next_offset = ? WHERE grp = ? AND partition = ?",
                                (floor, self.group, p))
            return 0, floor, n

        return self._run(body)


# --- the group's sink binding, through batonctl -----------------------------


def find_batonctl(given: Optional[str]) -> str:
    for c in (given, os.environ.get("BATONCTL"), shutil.which("batonctl"),
              str(HERE.parent.parent / "build" / "bin" / "batonctl")):
        if c and os.access(c, os.X_OK):
            return c
    raise baton.NotFoundError("batonctl not found (on PATH, in the checkout's build/bin, or --batonctl PATH); "
                              "it checks the group's sink binding")


class Refused(Exception):
    """The sink is not the group's (exit 1, nothing written)."""


def bound_elsewhere(args, b: dict, what: str) -> Refused:
    return Refused(f"group '{args.group}' is bound to sink {b['sink_id']} ({b.get('sink_uri') or 'uri unknown'}, "
                   f"bound by {b.get('bound_by') or '?'}); this worker's sink {args.sink} {what}: refusing to "
                   "write (batonctl sink show; a deliberate move: batonctl sink rebind)")


def open_bound_sink(args, stop) -> Optional[Sink]:
    """The sink, once the group is bound to it (an unbound group is bound to
    it first), with the group's id to record in every fence. Nothing is
    created for a group that is not initialised or is bound to another
    sink. Raises Refused or NotFoundError; retries ZooKeeper errors; None
    if stop() became true meanwhile."""
    ctl = [args.batonctl, "--zk", args.zk, "--root", args.root, "--group", args.group, "--timeout", "5000"]
    if args.zk_auth:
        ctl += ["--zk-auth", args.zk_auth]
    sink: Optional[Sink] = None
    while not stop():
        # Without --sink first: nothing is created before the group says yes.
        show = ["sink", "show", "--json"] + (["--sink", args.sink] if sink else [])
        r = subprocess.run(ctl + show, capture_output=True, text=True)
        if r.returncode != 0 and "not initialised" in r.stderr:
            raise baton.NotFoundError(r.stderr.strip().removeprefix("batonctl: "))
        if r.returncode != 0:
            log("warn", f"event=sink_bind_check_failed detail={quote(r.stderr.strip())} action=retry")
            time.sleep(1)
            continue
        j = json.loads(r.stdout)
        guuid, b, s = j.get("group_uuid"), j.get("binding"), j.get("sink") or {}
        if sink is None:
            if b is not None and not os.path.exists(sqlite_path(args.sink)):
                raise bound_elsewhere(args, b, "does not exist yet (a new sink, nothing created)")
            sink = Sink(args.sink, args.group)
            continue
        if s.get("group_uuid") and guuid and s["group_uuid"].lower() != guuid.lower():
            raise Refused(f"sink {args.sink} (id {s.get('sink_id')}) serves another group named '{args.group}': "
                          f"it records group id {s['group_uuid']}, but group '{args.group}' has id {guuid}: "
                          "refusing to write (batonctl sink show; use another sink or another group name)")
        if b is None:
            # Unbound: bind it to our sink, as the C worker's first fence
            # would. We have not joined yet, so we are not a live writer.
            rb = subprocess.run(ctl + ["sink", "rebind", "--sink", args.sink], capture_output=True, text=True)
            if rb.returncode != 0:
                log("warn", f"event=sink_bind_wait detail={quote(rb.stderr.strip())} action=retry")
                time.sleep(1)
            continue
        if not (s.get("bound") and guuid):
            raise bound_elsewhere(args, b, f"is {sink.sink_id}")
        sink.group_uuid = guuid
        log("info", f"event=sink_binding_checked group={args.group} group_uuid={guuid} sink_id={sink.sink_id}")
        return sink
    if sink:
        sink.close()
    return None


# --- the worker ---------------------------------------------------------------


@dataclass
class Record:
    offset: int
    key: Optional[bytes]
    value: Optional[bytes]


@dataclass
class Part:
    epoch: int
    next_offset: int
    expect: int
    recs: List[Record] = field(default_factory=list)
    first_ms: float = 0.0
    paused: bool = False  # Kafka fetching paused: PAUSE_BATCHES batches wait for the sink


class Worker:
    def __init__(self, args) -> None:
        from confluent_kafka import Consumer  # imported here: --help works without it

        self.args = args
        self.stopping = False
        self.failpoints = Failpoints(os.environ.get("BATON_FAILPOINTS", ""))
        self.parts: Dict[int, Part] = {}
        self.written = 0
        self.member: Optional[baton.Member] = None
        sink = open_bound_sink(args, lambda: self.stopping)
        if sink is None:
            return
        self.sink = sink
        self.member = baton.Member(
            args.zk, args.group, args.id, root=args.root, session_timeout_ms=args.session_timeout_ms,
            keys=[],  # a stream worker takes partitions, no named keys
            zk_auth=args.zk_auth, on_acquired=self.on_acquired, on_released=self.on_released)
        self.topic = self.member.topic
        if not self.topic:
            raise baton.InvalidError(f"group '{args.group}' has no topic (a keys-only group)")
        self.consumer = Consumer({
            "bootstrap.servers": args.brokers,
            "group.id": f"baton-{args.group}",  # librdkafka wants one; never joined
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "fetch.wait.max.ms": 100,
        })
        log("info", f"event=worker_started group={args.group} topic={self.topic} sink={args.sink} "
                    f"library={baton.library_version()}")

    # Membership callbacks, run inside member.poll().
    def on_acquired(self, r: baton.Resource, epoch: int) -> bool:
        if r.kind != baton.ResourceKind.PARTITION:
            return True
        from confluent_kafka import TopicPartition

        p = r.partition
        self.forget(p)  # an earlier ownership of p (dropped) is over
        result, nxt = self.sink.fence(p, epoch)  # BusyError: asked again later
        if result == baton.StaleError.code:
            log("warn", f"event=fence_failed partition={p} epoch={epoch} error=STALE")
            return False  # the library gives the claim up
        self.parts[p] = Part(epoch, nxt, nxt)
        self.consumer.incremental_assign([TopicPartition(self.topic, p, nxt)])
        log("info", f"event=fenced partition={p} epoch={epoch} next_offset={nxt}")
        return True

    def on_released(self, r: baton.Resource, reason: baton.ReleaseReason) -> None:
        part = self.parts.get(r.partition) if r.kind == baton.ResourceKind.PARTITION else None
        if part is None:
            return
        if reason != baton.ReleaseReason.LOST:
            # Hand over cleanly: what we read is written before the claim goes.
            for _ in range(5):
                if r.partition not in self.parts or not part.recs or self.flush(r.partition) in (0, "stale"):
                    break
                time.sleep(0.1)
        log("info", f"event=revoked partition={r.partition} epoch={part.epoch} reason={reason} "
                    f"next_offset={part.next_offset}")
        self.forget(r.partition)

    def forget(self, p: int) -> None:
        from confluent_kafka import TopicPartition

        part = self.parts.get(p)
        if part is None:
            return
        if part.paused:  # not carried into a later ownership of p
            self.pause(p, False)
        del self.parts[p]
        self.consumer.incremental_unassign([TopicPartition(self.topic, p)])

    def flush(self, p: int):
        """Writes p's batch: 0, "stale" (p dropped), or "retry"."""
        part = self.parts[p]
        if not self.member.can_write():
            return "retry"  # suspended: the session may be gone
        recs = part.recs[: self.args.batch_size]
        self.failpoints.hit("worker.before_sink_write")
        try:
            result, nxt, applied = self.sink.write(p, part.epoch, recs)
        except baton.BusyError as e:
            log("warn", f"event=write_failed partition={p} error=BUSY detail={quote(e.message)} action=retry")
            return "retry"
        if result != 0:
            log("warn", f"event=write_rejected partition={p} epoch={part.epoch} records={len(recs)} "
                        f"reason={baton.error_for(result).name}")
            self.forget(p)
            self.member.drop(baton.Resource.of_partition(p))
            return "stale"
        del part.recs[: len(recs)]
        if part.paused:
            self.pause(p, False)
        part.next_offset = nxt
        part.first_ms = time.monotonic() * 1000 if part.recs else 0.0
        self.written += applied
        log("debug", f"event=batch partition={p} epoch={part.epoch} records={len(recs)} applied={applied} "
                     f"next_offset={nxt}")
        return 0

    def consume(self) -> None:
        msgs = self.consumer.consume(num_messages=self.args.batch_size, timeout=0.02) if self.parts else []
        if not self.parts:
            time.sleep(0.02)
        now = time.monotonic() * 1000
        for m in msgs:
            if m.error():
                log("warn", f"event=kafka_error error={quote(m.error())}")
                continue
            part = self.parts.get(m.partition())
            if part is None or m.offset() < part.expect:
                continue  # not ours (any more), or fetched again
            if not part.recs:
                part.first_ms = now
            part.recs.append(Record(m.offset(), m.key(), m.value()))
            part.expect = m.offset() + 1
            if not part.paused and len(part.recs) >= self.args.batch_size * PAUSE_BATCHES:
                self.pause(m.partition(), True)

    def pause(self, p: int, on: bool) -> None:
        from confluent_kafka import TopicPartition

        tp = [TopicPartition(self.topic, p)]
        self.consumer.pause(tp) if on else self.consumer.resume(tp)
        self.parts[p].paused = on

    def run(self) -> int:
        if self.member is None:
            return 0
        try:
            while not self.stopping:
                try:
                    self.member.poll(0)
                except baton.ConflictError as e:
                    log("error", f"event=sink_bind_refused error={quote(e.message)} action=leave_and_exit")
                    self.member.leave()
                    return 1
                self.consume()
                now = time.monotonic() * 1000
                for p in sorted(self.parts):
                    part = self.parts.get(p)
                    if part and part.recs and (len(part.recs) >= self.args.batch_size
                                               or now - part.first_ms >= self.args.linger_ms):
                        self.flush(p)
            self.member.leave()  # releases with LEAVE: on_released writes what is in hand
            log("info", f"event=left records_written={self.written}")
            return 0
        except baton.BatonError as e:  # evicted, no rejoin, or a sink error retrying cannot fix
            log("error", f"event=member_failed error={e.name} detail={quote(e.message)} action=exit")
            self.member.close()
            return 1
        finally:
            self.consumer.close()
            self.sink.close()


def parse_args(argv: List[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog=PROG, description="A fenced Kafka stream worker on baton's member library.")
    ap.add_argument("--zk", required=True, help="ZooKeeper hosts (host:port[,...][/chroot])")
    ap.add_argument("--group", required=True, help="the baton group")
    ap.add_argument("--id", required=True, help="this member's id, unique in the group")
    ap.add_argument("--brokers", required=True, help="Kafka bootstrap servers")
    ap.add_argument("--sink", required=True, help="sqlite:PATH, baton's SQLite sink")
    ap.add_argument("--session-timeout-ms", type=int, default=10000, help="ZooKeeper session timeout (10000)")
    ap.add_argument("--root", default="/baton", help="znode root of all groups (/baton)")
    ap.add_argument("--zk-auth", default=None, help="ZooKeeper identity digest:USER:PASS")
    ap.add_argument("--batch-size", type=int, default=500, help="records per batch write (500)")
    ap.add_argument("--linger-ms", type=int, default=20, help="how long a batch waits to fill (20)")
    ap.add_argument("--batonctl", default=None, help="batonctl for the sink binding check "
                                                     "(default: $BATONCTL, PATH, the checkout's build/bin)")
    a = ap.parse_args(argv)
    if not 1 <= a.session_timeout_ms <= 2**31 - 1:
        ap.error("--session-timeout-ms must be 1..2147483647")
    if not 1 <= a.batch_size <= 1000000:
        ap.error("--batch-size must be 1..1000000")
    if not 0 <= a.linger_ms <= 600000:
        ap.error("--linger-ms must be 0..600000")
    try:
        Failpoints(os.environ.get("BATON_FAILPOINTS", ""))
    except ValueError as e:
        ap.error(f"BATON_FAILPOINTS: {e}")
    try:
        a.batonctl = find_batonctl(a.batonctl)
        sqlite_path(a.sink)
    except baton.BatonError as e:
        ap.error(e.message)
    return a


def main(argv: List[str]) -> int:
    global LOG_ID
    args = parse_args(argv)
    LOG_ID = args.id
    worker: Optional[Worker] = None

    def on_signal(sig, _frame) -> None:
        if worker is not None:
            worker.stopping = True
        else:
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        worker = Worker(args)
        return worker.run()
    except Refused as e:
        log("error", f"event=sink_bind_refused error={quote(e)} action=exit")
        return 1
    except baton.BatonError as e:
        log("error", f"event=startup_failed error={e.name} detail={quote(e.message)}")
        return 1
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
