"""Typed exceptions carrying baton's error codes (include/baton/err.h).

Every error of the library is a :class:`BatonError` with ``code`` (the
negative C code), ``name`` ("STALE", "CONNECTION"...) and the library's
one-line message. The classes follow err.h's bands, so a caller can catch a
whole band without listing codes::

    try:
        ...
    except baton.RetriableError:   # CONNECTION, BUSY, TIMEOUT: try again
        ...
    except baton.FatalError:       # STALE, EXPIRED, EVICTED, DENIED...
        ...
"""

from __future__ import annotations

import builtins
from typing import Dict, Type

from . import _native


class BatonError(Exception):
    """An error of libbaton: ``code`` (err.h), ``name`` and ``message``."""

    code: int = _native.INTERNAL
    name: str = "INTERNAL"
    #: From Member.poll(): the events of the call that failed.
    events: list = []

    def __init__(self, message: str = "", code: "int | None" = None) -> None:
        if code is not None:
            self.code = code
            self.name = _NAMES.get(code, f"ERROR{code}")
        self.message = message or _native.ERRORS.get(self.name, (0, "unknown error"))[1]
        super().__init__(self.message)

    def __str__(self) -> str:
        return f"{self.message} ({self.name})"


class InputError(BatonError):
    """err.h's input band (-1..-99): the request was wrong; retrying is useless."""


class RetriableError(BatonError):
    """err.h's retriable band (-100..-199): try again later."""


class FatalError(BatonError):
    """err.h's fatal band (-200..-299): the operation can never succeed as it is."""


class InvalidError(InputError, ValueError):
    code, name = _native.ERRORS["INVALID"][0], "INVALID"


class CorruptError(InputError):
    code, name = _native.ERRORS["CORRUPT"][0], "CORRUPT"


class ConflictError(InputError):
    code, name = _native.ERRORS["CONFLICT"][0], "CONFLICT"


class NotFoundError(InputError, LookupError):
    code, name = _native.ERRORS["NOTFOUND"][0], "NOTFOUND"


class ExistsError(InputError):
    """A live member with this id is already in the group."""

    code, name = _native.ERRORS["EXISTS"][0], "EXISTS"


class BatonConnectionError(RetriableError, builtins.ConnectionError):
    code, name = _native.ERRORS["CONNECTION"][0], "CONNECTION"


class BusyError(RetriableError):
    code, name = _native.ERRORS["BUSY"][0], "BUSY"


class BatonTimeoutError(RetriableError, builtins.TimeoutError):
    code, name = _native.ERRORS["TIMEOUT"][0], "TIMEOUT"


class StaleError(FatalError):
    """Fenced: a higher epoch owns the resource. Raise it from an
    ``on_acquired`` callback to give the claim up."""

    code, name = _native.ERRORS["STALE"][0], "STALE"


class ExpiredError(FatalError):
    code, name = _native.ERRORS["EXPIRED"][0], "EXPIRED"


class DeposedError(FatalError):
    code, name = _native.ERRORS["DEPOSED"][0], "DEPOSED"


class UnfencedError(FatalError):
    code, name = _native.ERRORS["UNFENCED"][0], "UNFENCED"


class BackendError(FatalError):
    code, name = _native.ERRORS["IO"][0], "IO"


class InternalError(FatalError):
    code, name = _native.ERRORS["INTERNAL"][0], "INTERNAL"


class EvictedError(FatalError):
    """An operator removed this member (``batonctl evict``): every resource
    was released as LOST; the process should exit."""

    code, name = _native.ERRORS["EVICTED"][0], "EVICTED"


class DeniedError(FatalError):
    """ZooKeeper's ACLs refused the member's credentials."""

    code, name = _native.ERRORS["DENIED"][0], "DENIED"


_NAMES: Dict[int, str] = {code: name for name, (code, _) in _native.ERRORS.items()}
_BY_CODE: Dict[int, Type[BatonError]] = {
    cls.code: cls
    for cls in (
        InvalidError,
        CorruptError,
        ConflictError,
        NotFoundError,
        ExistsError,
        BatonConnectionError,
        BusyError,
        BatonTimeoutError,
        StaleError,
        ExpiredError,
        DeposedError,
        UnfencedError,
        BackendError,
        InternalError,
        EvictedError,
        DeniedError,
    )
}


def error_for(code: int, message: str = "") -> BatonError:
    """The exception for a C return code: its class if err.h names it,
    else the class of its band."""
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls(message)
    band: Type[BatonError] = (
        InputError if -100 < code <= -1 else RetriableError if -200 < code <= -100 else FatalError
    )
    return band(message, code=code)
