"""The binding's tests against a real ZooKeeper (conftest.py) and baton's
coordinator: what baton.h promises, seen from Python."""

from __future__ import annotations

import re
import select
import subprocess
import threading
import time
from typing import Callable, List

import pytest

import baton
from baton import Acquired, Assigned, Released, ReleaseReason, Resource
from conftest import BATON_BIN, free_port

SESSION_MS = 2000


def collect(m: baton.Member, until: Callable[[List[baton.Event]], bool], timeout: float = 20.0,
            into: "List[baton.Event] | None" = None) -> List[baton.Event]:
    """Polls m until the events seen so far satisfy until()."""
    seen = into if into is not None else []
    deadline = time.monotonic() + timeout
    while not until(seen):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out; events so far: {seen}")
        seen.extend(m.poll(0.1))
    return seen


def acquired(seen, key: str) -> List[Acquired]:
    return [e for e in seen if isinstance(e, Acquired) and e.resource == Resource.of_key(key)]


# --- without a server -----------------------------------------------------


def test_library_version_is_the_c_librarys():
    v = baton.library_version()
    assert re.match(r"^\d+\.\d+\.\d+", v), v
    assert baton.library_path().endswith(".so") or ".so." in baton.library_path()
    out = subprocess.run([str(BATON_BIN / "batonctl"), "--version"], capture_output=True, text=True)
    assert v in out.stdout + out.stderr


@pytest.mark.parametrize("kwargs,what", [
    (dict(zk="", group="g", id="m"), "zk"),
    (dict(zk="127.0.0.1:1", group="", id="m"), "group"),
    (dict(zk="127.0.0.1:1", group="g", id=None), "id"),
    (dict(zk="127.0.0.1:1", group="g", id="m", keys="a"), "keys"),
    (dict(zk="127.0.0.1:1", group="g", id="m", keys=["a", 7]), "keys"),
    (dict(zk="127.0.0.1:1", group="g", id="m", rack=3), "rack"),
    (dict(zk="127.0.0.1:1", group="g", id="m", session_timeout_ms=-5), "session_timeout_ms"),
    (dict(zk="127.0.0.1:1", group="g", id="m", capacity=2**40), "capacity"),
    (dict(zk="127.0.0.1:1", group="g", id="m", standby_notice=5), "standby_notice"),
    (dict(zk="127.0.0.1:1", group="g", id="m", standby_claim=None), "standby_claim"),
    (dict(zk="127.0.0.1:1", group="g", id="m", settings={"log.level": 1}), "settings"),
])
def test_bad_arguments_are_invalid_error(kwargs, what):
    with pytest.raises(baton.InvalidError, match=what) as e:
        baton.Member(**kwargs)
    assert e.value.code == -1 and e.value.name == "INVALID"
    assert isinstance(e.value, ValueError)


def test_errors_carry_err_h_codes_and_bands():
    for name, (code, desc) in baton._native.ERRORS.items():
        if code == 0:
            continue
        e = baton.error_for(code, "msg")
        assert (e.code, e.name, e.message) == (code, name, "msg")
        assert isinstance(e, baton.BatonError)
        band = baton.InputError if code > -100 else baton.RetriableError if code > -200 else baton.FatalError
        assert isinstance(e, band), name
    assert isinstance(baton.error_for(-100), ConnectionError)
    assert isinstance(baton.error_for(-102), TimeoutError)
    unknown = baton.error_for(-150, "new code")
    assert type(unknown) is baton.RetriableError and unknown.code == -150
    # The C library's own names agree with the table.
    lib = baton.member._library()
    for name, (code, desc) in baton._native.ERRORS.items():
        assert lib.baton_err_name(code).decode() == name
        assert lib.baton_strerror(code).decode() == desc


def test_unreachable_zookeeper_is_a_retriable_error():
    t0 = time.monotonic()
    with pytest.raises(baton.RetriableError) as e:
        baton.Member(f"127.0.0.1:{free_port()}", "g", "m", connect_timeout_ms=1000)
    assert time.monotonic() - t0 < 10
    assert e.value.code in (-100, -102), e.value
    assert e.value.message


# --- against ZooKeeper ----------------------------------------------------


def test_bad_names_are_refused_by_the_library(zk):
    # Names the library validates (1-128 of [A-Za-z0-9._-]): its message, no crash.
    for kwargs, what in ((dict(group="bad group"), "bad group"), (dict(keys=["no/slash"]), "no/slash"),
                         (dict(id="x" * 300), "x" * 20)):
        args = dict(group="g", id="m", session_timeout_ms=SESSION_MS, partitions=False) | kwargs
        with pytest.raises(baton.InputError) as e:
            baton.Member(zk, **args)
        assert what in e.value.message, e.value.message


def test_uninitialised_group_is_refused_with_its_name(zk):
    with pytest.raises(baton.BatonError) as e:
        baton.Member(zk, "no-such-group", "m", session_timeout_ms=SESSION_MS)
    assert "no-such-group" in e.value.message
    assert e.value.code < 0


def test_events_iterator_acquire_and_leave(make_group):
    g = make_group(keys=("a", "b"))
    with baton.Member(g.zk, g.name, "m1", session_timeout_ms=SESSION_MS, partitions=False) as m:
        assert m.topic == "" and m.partitions == 0
        seen = collect(m, lambda s: acquired(s, "a") and acquired(s, "b"))
        assigned = [e for e in seen if isinstance(e, Assigned)]
        assert assigned and set(assigned[0].resources) == {Resource.of_key("a"), Resource.of_key("b")}
        ev = acquired(seen, "a")[0]
        assert ev.epoch > 0
        r = ev.resource
        assert m.assigned(r) and m.can_write()
        assert m.epoch_valid(r, ev.epoch)
        assert not m.epoch_valid(r, ev.epoch + 1)
        path = m.claim_path(r)
        assert path and path.startswith(f"/baton/{g.name}/keys/a/claims/claim-"), path
        with pytest.raises(baton.InvalidError, match="zzz"):
            m.claim_path(Resource.of_key("zzz"))  # not a key of the group
    assert m.closed
    # The graceful leave released both with LEAVE, inside leave().
    with pytest.raises(baton.InvalidError, match="closed"):
        m.poll()


def test_callbacks_run_inside_poll_and_decide(make_group):
    g = make_group(keys=("a",))
    calls = []
    refuse = {"first": True}

    def on_acquired(r, epoch):
        calls.append(("acquired", r, epoch, threading.get_ident()))
        if refuse.pop("first", False):
            return False  # as if the resource had seen a higher epoch: give the claim up
        return None

    def on_released(r, reason):
        calls.append(("released", r, reason, threading.get_ident()))

    m = baton.Member(g.zk, g.name, "m1", session_timeout_ms=SESSION_MS, partitions=False,
                     on_acquired=on_acquired, on_released=on_released)
    with m:
        seen = collect(m, lambda s: acquired(s, "a"))
        acq = [c for c in calls if c[0] == "acquired"]
        assert len(acq) >= 2, calls  # refused once, claimed again (still assigned), kept
        assert acq[-1][2] > acq[0][2], "the new claim has a higher epoch"
        assert acquired(seen, "a")[0].epoch == acq[-1][2]
        assert all(c[3] == threading.get_ident() for c in calls)
    assert ("released", Resource.of_key("a"), ReleaseReason.LEAVE, threading.get_ident()) in calls


def test_callback_exception_is_raised_from_poll_and_asked_again(make_group):
    g = make_group(keys=("a",))
    tries = []

    def on_acquired(r, epoch):
        tries.append(epoch)
        if len(tries) == 1:
            raise RuntimeError("boom")

    with baton.Member(g.zk, g.name, "m1", session_timeout_ms=SESSION_MS, partitions=False,
                      on_acquired=on_acquired) as m:
        seen: List[baton.Event] = []
        with pytest.raises(RuntimeError, match="boom"):
            collect(m, lambda s: False, timeout=20, into=seen)
        collect(m, lambda s: acquired(s, "a"), into=seen)
        assert len(tries) >= 2


def test_busy_from_on_acquired_is_asked_again_quietly(make_group):
    g = make_group(keys=("a",))
    tries = []

    def on_acquired(r, epoch):
        tries.append(epoch)
        if len(tries) < 3:
            raise baton.BusyError("sink busy")

    with baton.Member(g.zk, g.name, "m1", session_timeout_ms=SESSION_MS, partitions=False,
                      on_acquired=on_acquired) as m:
        collect(m, lambda s: acquired(s, "a"))
    assert len(tries) >= 3 and len(set(tries)) == 1, tries  # the same claim, asked again


def test_handoff_on_leave_gives_a_higher_epoch(make_group):
    g = make_group(keys=("a",))
    m1 = baton.Member(g.zk, g.name, "m1", session_timeout_ms=SESSION_MS, partitions=False)
    e1 = acquired(collect(m1, lambda s: acquired(s, "a")), "a")[0].epoch
    with baton.Member(g.zk, g.name, "m2", session_timeout_ms=SESSION_MS, partitions=False) as m2:
        got: List[baton.Event] = []
        # m1 leaves: Released(LEAVE) from inside leave(); m2 takes over.
        released = []
        m1._on_released = lambda r, why: released.append((r, why))
        m1.leave()
        assert released == [(Resource.of_key("a"), ReleaseReason.LEAVE)]
        collect(m2, lambda s: acquired(s, "a"), into=got)
        assert acquired(got, "a")[0].epoch > e1


def test_hot_standby_takes_over_on_the_release_notice(make_group, capfd, tmp_path):
    """standby_claim, standby_notice and settings reach the library: m2,
    named standby for "a", claims it ahead and subscribes to m1's release
    notices; m1's leave notifies it, and m2 takes the notice and "a"."""
    g = make_group(keys=("a",))
    hot = dict(session_timeout_ms=SESSION_MS, partitions=False, standby_claim="ahead",
               standby_notice="127.0.0.1:0")
    m1 = baton.Member(g.zk, g.name, "m1", settings={"state.dir": str(tmp_path)}, **hot)
    assert (tmp_path / f"{g.name}.m1.lock").exists(), "settings did not reach the library"
    e1 = acquired(collect(m1, lambda s: acquired(s, "a")), "a")[0].epoch
    err = ""
    with baton.Member(g.zk, g.name, "m2", **hot) as m2:
        # m2 is named standby for "a" and claims it ahead (the second claim
        # of "a"); it subscribes when it watches m1's node. m1 hears the
        # subscription in its polls.
        deadline = time.monotonic() + 20
        while err.count("event=claimed key=a ") < 2:
            assert time.monotonic() < deadline, f"m2 never claimed ahead:\n{err}"
            m1.poll(0.05)
            m2.poll(0.05)
            err += capfd.readouterr().err
        settle = time.monotonic() + 1.5
        while time.monotonic() < settle:
            m1.poll(0.05)
            m2.poll(0.05)
        m1.leave()
        got = collect(m2, lambda s: acquired(s, "a"))
        assert acquired(got, "a")[0].epoch > e1
        err += capfd.readouterr().err
    assert re.search(r"event=joined member=\S+/m2 .*standby_claim=ahead", err), err
    assert re.search(r"event=notice_sent subscribers=1 ", err), err
    # m2 took m1's release (the claim right ahead of its own) from the
    # datagram; here the new assignment came in the same poll.
    assert re.search(r"event=notice_received owner=m1 .*taken=1 ", err), err


@pytest.mark.parametrize("kwargs,what", [
    (dict(standby_claim="sideways"), "standby.claim"),
    (dict(standby_notice="nowhere"), "standby.notice"),
    (dict(settings={"no.such.setting": "1"}), "no.such.setting"),
    (dict(settings={"member.wait.ms": "-3"}), "member.wait.ms"),
    (dict(settings={"worker.id": "other"}), "'worker.id' is the argument id"),
    (dict(settings={"zookeeper.session.timeout.ms": "5000"}), "is the argument session_timeout_ms"),
    (dict(session_timeout_ms=50), "session_timeout_ms: session.timeout.ms: '50' is not an integer in 100..3600000"),
    (dict(connect_timeout_ms=3600001), "connect_timeout_ms: connect.timeout.ms: '3600001' is not an integer"),
])
def test_bad_settings_are_refused_by_the_library(zk, kwargs, what):
    with pytest.raises(baton.InvalidError, match=re.escape(what)):
        baton.Member(zk, "g", "m", **kwargs)


def test_fileno_for_select(make_group):
    g = make_group(keys=("a",))
    with baton.Member(g.zk, g.name, "m1", session_timeout_ms=SESSION_MS, partitions=False) as m:
        seen: List[baton.Event] = []
        deadline = time.monotonic() + 20
        while not acquired(seen, "a") and time.monotonic() < deadline:
            fd = m.fileno()
            timeout = m.next_poll_in if m.next_poll_in is not None else 0.5
            if fd >= 0:
                select.select([fd], [], [], min(timeout, 0.5))
            seen.extend(m.poll(0))
        assert acquired(seen, "a") and m.fileno() >= 0


def test_drop_gives_the_claim_up_and_reclaims_higher(make_group):
    g = make_group(keys=("a",))
    with baton.Member(g.zk, g.name, "m1", session_timeout_ms=SESSION_MS, partitions=False) as m:
        seen = collect(m, lambda s: acquired(s, "a"))
        first = acquired(seen, "a")[0]
        m.drop(first.resource)
        assert not m.epoch_valid(first.resource, first.epoch)
        seen = collect(m, lambda s: acquired(s, "a"))
        assert acquired(seen, "a")[0].epoch > first.epoch
        assert not any(isinstance(e, Released) for e in seen), "drop calls no on_released"


def test_duplicate_id_is_exists_error(make_group):
    g = make_group(keys=("a",), coordinator=False)
    with baton.Member(g.zk, g.name, "same", session_timeout_ms=1000, partitions=False):
        with pytest.raises(baton.ExistsError) as e:
            baton.Member(g.zk, g.name, "same", session_timeout_ms=1000, partitions=False)
        assert e.value.code == -5 and "same" in e.value.message


def test_evicted_member_raises_evicted_error_after_lost(make_group):
    g = make_group(keys=("a",))
    m = baton.Member(g.zk, g.name, "m1", session_timeout_ms=SESSION_MS, partitions=False)
    seen = collect(m, lambda s: acquired(s, "a"))
    g.ctl("evict", "m1")
    with pytest.raises(baton.EvictedError) as e:
        collect(m, lambda s: False, into=seen)
    assert e.value.code == -206 and "evicted" in e.value.message
    assert Released(Resource.of_key("a"), ReleaseReason.LOST) in e.value.events
    assert m.evicted
    m.close()


def test_exception_in_with_block_closes_without_leave(make_group):
    g = make_group(keys=("a",))
    released = []
    with pytest.raises(KeyError):
        with baton.Member(g.zk, g.name, "m1", session_timeout_ms=SESSION_MS, partitions=False,
                          on_released=lambda r, why: released.append(why)) as m:
            collect(m, lambda s: acquired(s, "a"))
            raise KeyError("app failure")
    assert m.closed and released == []  # no graceful release: the claims went with the session


def test_member_belongs_to_its_thread(make_group):
    g = make_group(keys=("a",), coordinator=False)
    with baton.Member(g.zk, g.name, "m1", session_timeout_ms=SESSION_MS, partitions=False) as m:
        errors = []

        def other():
            try:
                m.poll()
            except baton.InvalidError as e:
                errors.append(e)

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert errors and "thread" in errors[0].message


def test_partitions_group_reports_topic_and_count(make_group):
    g = make_group(keys=(), partitions=3)
    with baton.Member(g.zk, g.name, "w1", session_timeout_ms=SESSION_MS, keys=[]) as m:
        assert (m.topic, m.partitions) == ("t", 3)
        seen = collect(m, lambda s: len([e for e in s if isinstance(e, Acquired)]) == 3)
        assert {e.resource.partition for e in seen if isinstance(e, Acquired)} == {0, 1, 2}
        assert all(e.resource.kind == baton.ResourceKind.PARTITION for e in seen if isinstance(e, Acquired))


def test_fileno_with_asyncio(make_group):
    import asyncio

    g = make_group(keys=("a",))

    async def main() -> List[baton.Event]:
        loop = asyncio.get_running_loop()
        seen: List[baton.Event] = []
        done = loop.create_future()
        with baton.Member(g.zk, g.name, "m1", session_timeout_ms=SESSION_MS, partitions=False) as m:
            fd = [m.fileno()]

            def readable() -> None:
                seen.extend(m.poll(0))
                if m.fileno() != fd[0]:  # a new session: a new descriptor
                    loop.remove_reader(fd[0])
                    fd[0] = m.fileno()
                    if fd[0] >= 0:
                        loop.add_reader(fd[0], readable)
                if acquired(seen, "a") and not done.done():
                    done.set_result(True)

            loop.add_reader(fd[0], readable)
            try:
                while not done.done():  # the library also wants polls without news (timers)
                    await asyncio.wait([done], timeout=m.next_poll_in or 0.2)
                    readable()
            finally:
                loop.remove_reader(fd[0])
        return seen

    seen = asyncio.run(asyncio.wait_for(main(), 20))
    assert acquired(seen, "a")[0].epoch > 0


def test_pip_install_offline(tmp_path):
    """pip install ./python with no index: the in-tree backend needs nothing."""
    import os
    import sys
    from pathlib import Path

    pytest.importorskip("pip")
    src = Path(__file__).resolve().parent.parent
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-cache-dir",
                        "--target", str(target), str(src)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    env = dict(os.environ, PYTHONPATH=str(target), BATON_LIBRARY=baton.library_path())
    r = subprocess.run([sys.executable, "-c", "import baton; print(baton.__file__); print(baton.library_version())"],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    where, version = r.stdout.split()
    assert where.startswith(str(target)) and version == baton.library_version()
    assert not (src / "build").exists() and not list(src.glob("*.egg-info")), "the build wrote into the source"
