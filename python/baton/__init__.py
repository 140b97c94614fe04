"""baton: the member library of baton for Python (over libbaton.so).

A process joins a baton group as a :class:`Member`; the group's coordinator
assigns it partitions of the group's Kafka topic and/or named keys, and the
member owns each with an epoch, the fencing token its writes carry::

    import baton

    with baton.Member("127.0.0.1:2181", "orders", "w1") as m:
        for ev in m.events():
            print(ev)

See docs/python.md for the API, the fenced worker example and the rules a
fenced sink must follow.
"""

from .errors import (
    BackendError,
    BatonConnectionError,
    BatonError,
    BatonTimeoutError,
    BusyError,
    ConflictError,
    CorruptError,
    DeniedError,
    DeposedError,
    EvictedError,
    ExistsError,
    ExpiredError,
    FatalError,
    InputError,
    InternalError,
    InvalidError,
    NotFoundError,
    RetriableError,
    StaleError,
    UnfencedError,
    error_for,
)
from ._native import LibraryNotFound
from .member import (
    Acquired,
    Assigned,
    Event,
    Member,
    Released,
    ReleaseReason,
    Resource,
    ResourceKind,
    library_path,
    library_version,
)

__version__ = "0.1.0"

__all__ = [
    "Acquired",
    "Assigned",
    "BackendError",
    "BatonConnectionError",
    "BatonError",
    "BatonTimeoutError",
    "BusyError",
    "ConflictError",
    "CorruptError",
    "DeniedError",
    "DeposedError",
    "Event",
    "EvictedError",
    "ExistsError",
    "ExpiredError",
    "FatalError",
    "InputError",
    "InternalError",
    "InvalidError",
    "LibraryNotFound",
    "Member",
    "NotFoundError",
    "ReleaseReason",
    "Released",
    "Resource",
    "ResourceKind",
    "RetriableError",
    "StaleError",
    "UnfencedError",
    "error_for",
    "library_path",
    "library_version",
]
