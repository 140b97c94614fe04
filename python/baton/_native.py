"""The ctypes declarations of libbaton's public C API, and nothing else.

Every C type, prototype and constant the package uses is declared here, so
that a change of the C API (for instance the opaque configuration object
that may replace ``baton_membership_conf_t``) is a change of this module
and of :func:`new_membership` alone. The rest of the package never touches
``ctypes`` structures directly.

The library is found, in this order:

1. ``BATON_LIBRARY``: the path of ``libbaton.so`` (or of a directory that
   holds it);
2. the build tree of the checkout this package lives in
   (``<checkout>/build/lib/libbaton.so``, or ``$BATON_BUILD_DIR/lib``);
3. the system's library path (``libbaton.so.0``, then ``libbaton.so``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path
from typing import List, Optional, Sequence

# include/baton/baton.h: BATON_LIBRARY_VERSION this module was written for.
LIBRARY_VERSION = 1

# include/baton/err.h, in its order: name -> (code, description).
ERRORS = {
    "OK": (0, "success"),
    "INVALID": (-1, "invalid argument"),
    "CORRUPT": (-2, "stored data is malformed"),
    "CONFLICT": (-3, "exists with different values"),
    "NOTFOUND": (-4, "not found"),
    "EXISTS": (-5, "already exists"),
    "CONNECTION": (-100, "connection lost or server unreachable"),
    "BUSY": (-101, "resource busy"),
    "TIMEOUT": (-102, "timed out"),
    "STALE": (-200, "fenced: a higher epoch owns the partition"),
    "EXPIRED": (-201, "session expired"),
    "DEPOSED": (-202, "no longer the leader"),
    "UNFENCED": (-203, "write without a fence for this epoch"),
    "IO": (-204, "backend failure"),
    "INTERNAL": (-205, "internal error"),
    "EVICTED": (-206, "evicted by an operator"),
    "DENIED": (-207, "not authorised by ZooKeeper ACLs"),
}
OK = 0
STALE = ERRORS["STALE"][0]
INTERNAL = ERRORS["INTERNAL"][0]
BUSY = ERRORS["BUSY"][0]

RESOURCE_PARTITION = 0
RESOURCE_KEY = 1

# The errstr buffers handed to the library; 512 bytes hold every path
# (baton.h: claim_path).
ERRSTR_SIZE = 1024
CLAIM_PATH_SIZE = 512


class Resource(ctypes.Structure):
    """baton_resource_t."""

    _fields_ = [
        ("kind", ctypes.c_int),
        ("partition", ctypes.c_int32),
        ("key", ctypes.c_char_p),
    ]


class MembershipConf(ctypes.Structure):
    """baton_membership_conf_t (frozen in the C API)."""

    _fields_ = [
        ("zk_hosts", ctypes.c_char_p),
        ("root", ctypes.c_char_p),
        ("group", ctypes.c_char_p),
        ("id", ctypes.c_char_p),
        ("capacity", ctypes.c_int),
        ("rack", ctypes.c_char_p),
        ("session_timeout_ms", ctypes.c_int),
        ("connect_timeout_ms", ctypes.c_int),
        ("keys", ctypes.POINTER(ctypes.c_char_p)),
        ("nkeys", ctypes.c_size_t),
        ("no_partitions", ctypes.c_int),
        ("zk_auth", ctypes.c_char_p),
    ]


ON_ACQUIRED = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(Resource), ctypes.c_int64)
ON_RELEASED = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(Resource), ctypes.c_int)
ON_ASSIGNED = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(Resource), ctypes.c_size_t)


class MembershipCbs(ctypes.Structure):
    """baton_membership_cbs_t."""

    _fields_ = [
        ("on_acquired", ON_ACQUIRED),
        ("on_released", ON_RELEASED),
        ("opaque", ctypes.c_void_p),
        ("on_assigned", ON_ASSIGNED),
    ]


class LibraryNotFound(OSError):
    """libbaton.so could not be loaded from any of the places searched."""


def _candidates() -> List[str]:
    """The paths tried, in order (see the module's docstring)."""
    out: List[str] = []
    env = os.environ.get("BATON_LIBRARY")
    if env:
        p = Path(env)
        out.append(str(p / "libbaton.so") if p.is_dir() else env)
        return out  # an explicit choice is never second-guessed
    checkout = Path(__file__).resolve().parent.parent.parent
    build = os.environ.get("BATON_BUILD_DIR")
    for d in ([Path(build)] if build else []) + [checkout / "build"]:
        lib = d / "lib" / "libbaton.so"
        if lib.exists():
            out.append(str(lib))
    found = ctypes.util.find_library("baton")
    out.extend(n for n in ("libbaton.so.0", found, "libbaton.so") if n)
    return out


def load() -> ctypes.CDLL:
    """Loads libbaton and declares its prototypes; raises LibraryNotFound."""
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            continue
        _declare(lib)
        lib._baton_path = path  # type: ignore[attr-defined]
        return lib
    raise LibraryNotFound(
        "cannot load libbaton: tried " + "; ".join(tried) + " (build it with deploy/setup.sh, "
        "install it, or set BATON_LIBRARY to the path of libbaton.so)"
    )


def _declare(lib: ctypes.CDLL) -> None:
    P = ctypes.c_void_p
    R = ctypes.POINTER(Resource)
    protos = {
        "baton_version": (ctypes.c_int, []),
        "baton_version_str": (ctypes.c_char_p, []),
        "baton_err_name": (ctypes.c_char_p, [ctypes.c_int]),
        "baton_strerror": (ctypes.c_char_p, [ctypes.c_int]),
        "baton_release_reason_name": (ctypes.c_char_p, [ctypes.c_int]),
        "baton_membership_new": (
            ctypes.c_int,
            [
                ctypes.POINTER(MembershipConf),
                ctypes.POINTER(MembershipCbs),
                ctypes.POINTER(P),
                ctypes.c_char_p,
                ctypes.c_size_t,
            ],
        ),
        "baton_membership_destroy": (None, [P]),
        "baton_membership_topic": (ctypes.c_char_p, [P]),
        "baton_membership_partitions": (ctypes.c_int32, [P]),
        "baton_membership_fd": (ctypes.c_int, [P]),
        "baton_membership_poll": (
            ctypes.c_int,
            [P, ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, ctypes.c_size_t],
        ),
        "baton_membership_wait": (ctypes.c_int, [P, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]),
        "baton_membership_can_write": (ctypes.c_int, [P]),
        "baton_epoch_valid": (ctypes.c_int, [P, R, ctypes.c_int64]),
        "baton_membership_claim_path": (ctypes.c_int, [P, R, ctypes.c_char_p, ctypes.c_size_t]),
        "baton_membership_assigned": (ctypes.c_int, [P, R]),
        "baton_membership_evicted": (ctypes.c_int, [P]),
        "baton_membership_drop": (None, [P, R]),
        "baton_membership_leave": (None, [P]),
    }
    for name, (restype, argtypes) in protos.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def new_membership(
    lib: ctypes.CDLL,
    *,
    zk_hosts: str,
    root: str,
    group: str,
    member_id: str,
    capacity: int,
    rack: Optional[str],
    session_timeout_ms: int,
    connect_timeout_ms: int,
    keys: Optional[Sequence[str]],
    no_partitions: bool,
    zk_auth: Optional[str],
    cbs: MembershipCbs,
    keep: list,
) -> "tuple[int, Optional[int], str]":
    """baton_membership_new with the frozen conf struct.

    Returns (code, handle or None, message). Every object the library
    keeps a pointer to is appended to ``keep``, which the caller holds for
    the membership's lifetime (baton.h: conf strings outlive the object).
    """

    def b(s: Optional[str]) -> Optional[bytes]:
        if s is None:
            return None
        v = s.encode()
        keep.append(v)
        return v

    conf = MembershipConf()
    conf.zk_hosts = b(zk_hosts)
    conf.root = b(root)
    conf.group = b(group)
    conf.id = b(member_id)
    conf.capacity = capacity
    conf.rack = b(rack)
    conf.session_timeout_ms = session_timeout_ms
    conf.connect_timeout_ms = connect_timeout_ms
    if keys is not None:
        arr = (ctypes.c_char_p * max(1, len(keys)))(*[b(k) for k in keys])
        keep.append(arr)
        conf.keys = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
        conf.nkeys = len(keys)
    conf.no_partitions = 1 if no_partitions else 0
    conf.zk_auth = b(zk_auth)
    keep.extend([conf, cbs])
    handle = ctypes.c_void_p()
    err = ctypes.create_string_buffer(ERRSTR_SIZE)
    rc = lib.baton_membership_new(ctypes.byref(conf), ctypes.byref(cbs), ctypes.byref(handle), err, ERRSTR_SIZE)
    return rc, handle.value, err.value.decode(errors="replace")
