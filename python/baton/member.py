"""Member: a process in a baton group (the member library, baton/baton.h).

The group's coordinator assigns the member resources -- partitions of the
group's Kafka topic and/or named keys -- and the member claims each one.
It owns a resource from ``acquired`` (with an *epoch*, the fencing token)
until ``released``. Ownership is a lease: a paused process can wake up
still believing it owns, so writes must be fenced by the resource, which
refuses an epoch lower than the highest it has seen (docs/python.md).

Everything happens on the thread that created the member: callbacks run
from inside :meth:`Member.poll` (and :meth:`Member.leave`), never on another
thread; ZooKeeper's own threads keep the session alive meanwhile.
"""

from __future__ import annotations

import ctypes
import enum
import threading
from dataclasses import dataclass
from typing import Callable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from .errors import BatonError, InvalidError, RetriableError, StaleError, error_for

_lib: Optional[ctypes.CDLL] = None


def _library() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        _lib = _native.load()
    return _lib


def library_version() -> str:
    """The version of the libbaton loaded ("0.1.0", "0.1.0-3-gabcdef123456")."""
    return _library().baton_version_str().decode()


def library_path() -> str:
    """Where the loaded libbaton came from."""
    return str(_library()._baton_path)  # type: ignore[attr-defined]


class ResourceKind(enum.IntEnum):
    PARTITION = _native.RESOURCE_PARTITION
    KEY = _native.RESOURCE_KEY


class ReleaseReason(enum.IntEnum):
    """Why a resource stops being ours (baton_release_reason_t)."""

    #: the assignment moved it: flush, then it is released
    REVOKED = 0
    #: our claim vanished (session expired, evicted, deleted): stop at once
    LOST = 1
    #: graceful leave: flush, then it is released
    LEAVE = 2

    def __str__(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class Resource:
    """A partition of the group's topic or a named key. Hashable."""

    kind: ResourceKind
    partition: int = -1
    key: Optional[str] = None

    @classmethod
    def of_partition(cls, partition: int) -> "Resource":
        return cls(ResourceKind.PARTITION, int(partition), None)

    @classmethod
    def of_key(cls, key: str) -> "Resource":
        return cls(ResourceKind.KEY, -1, str(key))

    def __str__(self) -> str:
        return f"partition {self.partition}" if self.kind == ResourceKind.PARTITION else f"key {self.key}"

    def _c(self) -> _native.Resource:
        return _native.Resource(int(self.kind), self.partition, self.key.encode() if self.key is not None else None)

    @classmethod
    def _from_c(cls, r: _native.Resource) -> "Resource":
        if r.kind == _native.RESOURCE_KEY:
            return cls.of_key((r.key or b"").decode())
        return cls.of_partition(r.partition)


@dataclass(frozen=True)
class Assigned:
    """The assignment gives us these resources, which it did not before.
    Nothing is owned yet: start work that needs no ownership (fetching)."""

    resources: Tuple[Resource, ...]


@dataclass(frozen=True)
class Acquired:
    """We own ``resource`` with ``epoch`` until it is released."""

    resource: Resource
    epoch: int


@dataclass(frozen=True)
class Released:
    """We no longer own ``resource`` (see :class:`ReleaseReason`)."""

    resource: Resource
    reason: ReleaseReason


Event = Union[Assigned, Acquired, Released]
#: on_acquired(resource, epoch): return None/True to keep the resource,
#: False (or raise StaleError) to give the claim up because the resource
#: has seen a higher epoch; raise a RetriableError (BusyError...) to be
#: asked again a little later; any other exception is asked again later
#: too, and re-raised from poll().
AcquiredCallback = Callable[[Resource, int], Optional[bool]]
ReleasedCallback = Callable[[Resource, ReleaseReason], None]
AssignedCallback = Callable[[Tuple[Resource, ...]], None]


# The baton_conf_set names (and aliases) the named arguments set: not
# accepted in settings, where they would silently win over the argument.
_ARGUMENT_SETTINGS = {
    "zookeeper.connect": "zk", "zookeeper.hosts": "zk", "zookeeper.root": "root", "group": "group",
    "worker.id": "id", "id": "id", "capacity": "capacity", "rack": "rack",
    "session.timeout.ms": "session_timeout_ms", "zookeeper.session.timeout.ms": "session_timeout_ms",
    "connect.timeout.ms": "connect_timeout_ms", "zookeeper.connect.timeout.ms": "connect_timeout_ms",
    "keys": "keys", "no.partitions": "partitions", "zookeeper.auth": "zk_auth",
    "standby.claim": "standby_claim", "standby.notice": "standby_notice",
}


class Member:
    """A member of a baton group; a context manager.

    ::

        with baton.Member("127.0.0.1:2181", "orders", "w1") as m:
            for ev in m.events():
                if isinstance(ev, baton.Acquired):
                    ...  # fence the resource with ev.epoch, then work
                elif isinstance(ev, baton.Released):
                    ...  # flush (REVOKED, LEAVE) or stop at once (LOST)

    The block's normal end leaves the group gracefully (every owned
    resource is released with LEAVE first); an exception closes the session
    without that (the claims vanish with it, successors take over after
    the coordinator notices).

    Callbacks, if given, run inside :meth:`poll` before it returns the
    events; ``on_acquired`` decides whether an acquired resource is kept.

    Hot standbys: ``standby_claim="ahead"`` claims what the coordinator
    names this member standby for all along, queued behind its owner's
    claim; ``standby_notice="ip:port"`` (port 0: any free one) binds a
    socket for the owners' release notices and advertises it, so a
    graceful leave reaches this member at once rather than through
    ZooKeeper (docs/design.md, "Claims made ahead of time" and "Release
    notices"). ``settings`` sets any other ``baton_conf_set`` name of the C
    library (baton.h), e.g. ``{"state.dir": "/var/lib/app"}``, after the
    arguments above; the library checks names and values.

    Raises :class:`~baton.ExistsError` when a live member has this id,
    :class:`~baton.DeniedError` for bad credentials,
    :class:`~baton.InvalidError` for bad arguments and
    :class:`~baton.BatonConnectionError` when ZooKeeper is unreachable.
    """

    def __init__(
        self,
        zk: str,
        group: str,
        id: str,
        *,
        root: str = "/baton",
        capacity: int = 1,
        rack: Optional[str] = None,
        session_timeout_ms: int = 10000,
        connect_timeout_ms: int = 10000,
        keys: Optional[Sequence[str]] = None,
        partitions: bool = True,
        zk_auth: Optional[str] = None,
        standby_claim: str = "takeover",
        standby_notice: Optional[str] = None,
        settings: Optional[Mapping[str, str]] = None,
        on_assigned: Optional[AssignedCallback] = None,
        on_acquired: Optional[AcquiredCallback] = None,
        on_released: Optional[ReleasedCallback] = None,
    ) -> None:
        for name, value in (("zk", zk), ("group", group), ("id", id), ("root", root)):
            if not isinstance(value, str) or not value:
                raise InvalidError(f"Member: {name} must be a non-empty string, not {value!r}")
        if isinstance(keys, (str, bytes)):
            raise InvalidError("Member: keys is a list of key names, not one string")
        if keys is not None:
            keys = list(keys)
            bad = [k for k in keys if not isinstance(k, str) or not k]
            if bad:
                raise InvalidError(f"Member: keys must be non-empty strings, not {bad[0]!r}")
        for name, value in (("rack", rack), ("zk_auth", zk_auth), ("standby_notice", standby_notice)):
            if value is not None and not isinstance(value, str):
                raise InvalidError(f"Member: {name} must be a string or None, not {value!r}")
        if not isinstance(standby_claim, str):
            raise InvalidError(f"Member: standby_claim must be a string, not {standby_claim!r}")
        if settings is not None and (
            not isinstance(settings, Mapping)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in settings.items())
        ):
            raise InvalidError(f"Member: settings maps baton_conf_set names to strings, not {settings!r}")
        for name in settings or {}:
            if name in _ARGUMENT_SETTINGS:
                raise InvalidError(f"Member: settings: '{name}' is the argument {_ARGUMENT_SETTINGS[name]}")
        # The ranges are the library's (baton_conf_set checks them); 0 is
        # the default, as it always was.
        for name, value in (("capacity", capacity), ("session_timeout_ms", session_timeout_ms),
                            ("connect_timeout_ms", connect_timeout_ms)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidError(f"Member: {name} must be an int (0: the default), not {value!r}")
        self._lib = _library()
        self._thread = threading.get_ident()
        self._handle: Optional[int] = None
        self._keep: list = []
        self._events: List[Event] = []
        self._error: Optional[BaseException] = None
        self._on_assigned = on_assigned
        self._on_acquired = on_acquired
        self._on_released = on_released
        self.next_poll_in: Optional[float] = None
        cbs = _native.MembershipCbs()
        cbs.on_acquired = _native.ON_ACQUIRED(self._c_acquired)
        cbs.on_released = _native.ON_RELEASED(self._c_released)
        cbs.on_assigned = _native.ON_ASSIGNED(self._c_assigned)
        cbs.opaque = None
        # The library's own names (baton.h, baton_conf_set), checked there;
        # 0 leaves a number at its default, as it always has here.
        conf = [("zookeeper.connect", zk), ("zookeeper.root", root), ("group", group), ("worker.id", id)]
        conf += [(n, str(v)) for n, v in (("capacity", capacity), ("session.timeout.ms", session_timeout_ms),
                                         ("connect.timeout.ms", connect_timeout_ms)) if v]
        conf += [(n, v) for n, v in (("rack", rack), ("zookeeper.auth", zk_auth),
                                     ("standby.notice", standby_notice)) if v is not None]
        conf += [("no.partitions", "false" if partitions else "true"), ("standby.claim", standby_claim)]
        conf += list((settings or {}).items())
        rc, handle, msg, refused = _native.new_membership(
            self._lib, settings=conf, keys=keys, cbs=cbs, keep=self._keep)
        if rc != _native.OK:
            # A setting a named argument set is named as that argument too
            # (the library's message names the setting): the one
            # baton_conf_set refused, or, for what the membership itself
            # refused (an address standby.notice cannot bind, say), the
            # setting its message begins with, if it is one.
            if refused is None:
                head = (msg or "").split(":", 1)[0]
                refused = head if head in _ARGUMENT_SETTINGS else None
            arg = _ARGUMENT_SETTINGS.get(refused) if refused else None
            raise error_for(rc, f"Member: {arg}: {msg}" if arg and arg != refused else msg)
        self._handle = handle
        self.group = group
        self.id = id

    # -- the context manager and closing ---------------------------------

    def __enter__(self) -> "Member":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.leave()
        else:
            self.close()

    def __del__(self) -> None:
        # Only on the owning thread: the library is not thread-safe.
        if getattr(self, "_handle", None) and threading.get_ident() == self._thread:
            self.close()

    def leave(self) -> None:
        """Leaves gracefully: releases every owned resource with LEAVE
        (callbacks run), waits briefly for the assignment without us, then
        deletes our claims and closes the session. Idempotent."""
        h = self._take()
        if h is None:
            return
        try:
            self._lib.baton_membership_leave(h)
        finally:
            self._lib.baton_membership_destroy(h)
        self._raise_pending()

    def close(self) -> None:
        """Closes the session without releasing anything gracefully (the
        claims go with the session). Idempotent."""
        h = self._take()
        if h is not None:
            self._lib.baton_membership_destroy(h)

    @property
    def closed(self) -> bool:
        return self._handle is None

    def _take(self) -> Optional[int]:
        self._check_thread()
        h, self._handle = self._handle, None
        return h

    def _h(self) -> int:
        self._check_thread()
        if self._handle is None:
            raise InvalidError(f"member {getattr(self, 'id', '?')} is closed")
        return self._handle

    def _check_thread(self) -> None:
        if threading.get_ident() != self._thread:
            raise InvalidError("a Member belongs to the thread that created it (baton.h: Threading)")

    # -- events ------------------------------------------------------------

    def fileno(self) -> int:
        """A descriptor readable when ZooKeeper has news (for select or
        asyncio's add_reader); then call :meth:`poll`. It changes when the
        member rejoins after its session expired, and is -1 in between:
        ask again after every poll."""
        return int(self._lib.baton_membership_fd(self._h()))

    def poll(self, timeout: Optional[float] = 0.0) -> List[Event]:
        """Processes ZooKeeper's news, runs the callbacks and returns the
        events that happened, oldest first.

        ``timeout``: seconds to wait for news first (0: do not wait; None:
        as long as the library itself wants). ``next_poll_in`` then holds
        how soon (seconds) the library wants to be polled again.

        Raises :class:`~baton.EvictedError` when an operator removed us
        (every resource was released as LOST before), another
        :class:`~baton.FatalError` when the member could not rejoin after
        its session expired; such an error's ``events`` holds the events of
        the call. What a callback raised is raised too (the call's events
        then come with the next poll)."""
        h = self._h()
        err = ctypes.create_string_buffer(_native.ERRSTR_SIZE)
        if timeout is None or timeout > 0:
            ms = -1 if timeout is None else max(1, int(timeout * 1000))
            rc = self._lib.baton_membership_wait(h, ms, err, _native.ERRSTR_SIZE)
            self.next_poll_in = None
        else:
            nxt = ctypes.c_int(-1)
            rc = self._lib.baton_membership_poll(h, ctypes.byref(nxt), err, _native.ERRSTR_SIZE)
            self.next_poll_in = nxt.value / 1000.0 if nxt.value >= 0 else None
        events, self._events = self._events, []
        if self._error is not None:
            self._events = events  # not lost: the next poll returns them
            self._raise_pending()
        if rc != _native.OK:
            e = error_for(rc, err.value.decode(errors="replace"))
            e.events = events  # what happened before it (e.g. Released LOST before EVICTED)
            raise e
        return events

    def events(self, timeout: Optional[float] = 1.0) -> Iterator[Event]:
        """Yields events as they come, waiting up to ``timeout`` seconds at
        a time; ends when the member is closed (for example by a
        :meth:`leave` from inside the loop)."""
        while self._handle is not None:
            for ev in self.poll(timeout):
                yield ev
                if self._handle is None:
                    return

    __iter__ = events

    def _raise_pending(self) -> None:
        e, self._error = self._error, None
        if e is not None:
            raise e

    # The C callbacks: never let an exception escape into C (ctypes would
    # print and drop it); keep the first and raise it from poll().
    def _c_acquired(self, _opaque, r, epoch) -> int:
        res = Resource._from_c(r.contents)
        ev = Acquired(res, int(epoch))
        if self._on_acquired is None:
            self._events.append(ev)
            return _native.OK
        try:
            keep = self._on_acquired(res, int(epoch))
        except StaleError:
            return _native.STALE
        except RetriableError as e:  # "ask me again later", as in C
            return e.code
        except BaseException as e:  # noqa: BLE001 - re-raised from poll()
            self._error = self._error or e
            return e.code if isinstance(e, BatonError) and e.code < 0 else _native.INTERNAL
        if keep is False:
            return _native.STALE
        self._events.append(ev)
        return _native.OK

    def _c_released(self, _opaque, r, reason) -> None:
        ev = Released(Resource._from_c(r.contents), ReleaseReason(reason))
        self._events.append(ev)
        if self._on_released is not None:
            try:
                self._on_released(ev.resource, ev.reason)
            except BaseException as e:  # noqa: BLE001
                self._error = self._error or e

    def _c_assigned(self, _opaque, rs, n) -> None:
        ev = Assigned(tuple(Resource._from_c(rs[i]) for i in range(n)))
        self._events.append(ev)
        if self._on_assigned is not None:
            try:
                self._on_assigned(ev.resources)
            except BaseException as e:  # noqa: BLE001
                self._error = self._error or e

    # -- queries and actions -------------------------------------------------

    @property
    def topic(self) -> str:
        """The group's topic ("" for a keys-only group)."""
        return (self._lib.baton_membership_topic(self._h()) or b"").decode()

    @property
    def partitions(self) -> int:
        """The topic's partition count from the group config."""
        return int(self._lib.baton_membership_partitions(self._h()))

    @property
    def evicted(self) -> bool:
        return bool(self._lib.baton_membership_evicted(self._h()))

    def can_write(self) -> bool:
        """True while writes are worth attempting: the session is connected
        and the server answered recently (measured now)."""
        return bool(self._lib.baton_membership_can_write(self._h()))

    def epoch_valid(self, resource: Resource, epoch: int) -> bool:
        """True if we own ``resource`` with exactly ``epoch`` and can write
        (saves work the fence would refuse; the fence decides)."""
        r = resource._c()
        return bool(self._lib.baton_epoch_valid(self._h(), ctypes.byref(r), int(epoch)))

    def assigned(self, resource: Resource) -> bool:
        """True if the assignment last read gives ``resource`` to us."""
        r = resource._c()
        return bool(self._lib.baton_membership_assigned(self._h(), ctypes.byref(r)))

    def claim_path(self, resource: Resource) -> Optional[str]:
        """The ZooKeeper path of our claim on ``resource``, or None if we
        hold none right now (a check op on it makes your own multi-op
        conditional on still owning the resource)."""
        r = resource._c()
        buf = ctypes.create_string_buffer(_native.CLAIM_PATH_SIZE)
        rc = self._lib.baton_membership_claim_path(self._h(), ctypes.byref(r), buf, _native.CLAIM_PATH_SIZE)
        if rc == _native.ERRORS["NOTFOUND"][0]:
            return None
        if rc != _native.OK:
            raise error_for(rc, f"claim_path({resource}): unknown resource")
        return buf.value.decode()

    def drop(self, resource: Resource) -> None:
        """Gives ``resource`` up at once (the resource said STALE): the claim
        is deleted, no Released event follows. It is claimed again only if
        it is still assigned to us."""
        r = resource._c()
        self._lib.baton_membership_drop(self._h(), ctypes.byref(r))

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else "open"
        return f"<baton.Member {getattr(self, 'group', '?')}/{getattr(self, 'id', '?')} {state}>"
