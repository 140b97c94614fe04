"""The ctypes declarations of libbaton's public C API, and nothing else.

Every C type, prototype and constant the package uses is declared here, so
that a change of the C API is a change of this module and of
:func:`new_membership` alone. The rest of the package never touches
``ctypes`` structures directly. A membership is made from the opaque
configuration (``baton_conf_t``, filled by name), so a setting the C
library gains needs no change here: :class:`baton.Member` passes any
``baton_conf_set`` name through.

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
        "baton_conf_new": (P, []),
        "baton_conf_destroy": (None, [P]),
        "baton_conf_set": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
        "baton_conf_set_keys": (
            ctypes.c_int,
            [P, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t],
        ),
        "baton_conf_set_acquired_cb": (None, [P, ON_ACQUIRED]),
        "baton_conf_set_released_cb": (None, [P, ON_RELEASED]),
        "baton_conf_set_assigned_cb": (None, [P, ON_ASSIGNED]),
        "baton_conf_set_opaque": (None, [P, P]),
        "baton_membership_new_conf": (ctypes.c_int, [P, ctypes.POINTER(P), ctypes.c_char_p, ctypes.c_size_t]),
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
    settings: Sequence["tuple[str, str]"],
    keys: Optional[Sequence[str]],
    cbs: MembershipCbs,
    keep: list,
) -> "tuple[int, Optional[int], str, Optional[str]]":
    """baton_membership_new_conf from ``settings``, (name, value) pairs of
    baton_conf_set names (baton.h) set in order, and the key filter.

    Returns (code, handle or None, message, refused): a setting the library
    refuses is its BATON_INVALID with the library's message, and refused
    is that setting's name ("keys" for the key filter); None when the
    membership itself failed. The
    callbacks in ``cbs`` are appended to ``keep``, which the caller holds
    for the membership's lifetime (the library calls them until it is
    destroyed); the configuration itself is copied by the library and
    destroyed here.
    """
    err = ctypes.create_string_buffer(ERRSTR_SIZE)
    conf = lib.baton_conf_new()
    if not conf:
        return ERRORS["INTERNAL"][0], None, "baton_conf_new: out of memory", None
    try:
        for name, value in settings:
            rc = lib.baton_conf_set(conf, name.encode(), value.encode(), err, ERRSTR_SIZE)
            if rc != OK:
                return rc, None, err.value.decode(errors="replace"), name
        if keys is not None:
            arr = (ctypes.c_char_p * max(1, len(keys)))(*[k.encode() for k in keys])
            rc = lib.baton_conf_set_keys(conf, arr, len(keys), err, ERRSTR_SIZE)
            if rc != OK:
                return rc, None, err.value.decode(errors="replace"), "keys"
        lib.baton_conf_set_acquired_cb(conf, cbs.on_acquired)
        lib.baton_conf_set_released_cb(conf, cbs.on_released)
        lib.baton_conf_set_assigned_cb(conf, cbs.on_assigned)
        lib.baton_conf_set_opaque(conf, cbs.opaque)
        keep.append(cbs)
        handle = ctypes.c_void_p()
        rc = lib.baton_membership_new_conf(conf, ctypes.byref(handle), err, ERRSTR_SIZE)
        return rc, handle.value, err.value.decode(errors="replace"), None
    finally:
        lib.baton_conf_destroy(conf)
