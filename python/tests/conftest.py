"""Fixtures for the binding's tests: a real ZooKeeper, groups and coordinators.

ZooKeeper is the one $ZK names, or else a standalone server started here the
way tests/lib/harness.sh's h_zk_start starts it (Debian's zookeeper jar, a
zoo.cfg on a free loopback port, tick 200 ms) and stopped by its pid.
baton's programs come from $BATON_BIN (default: the checkout's build/bin).
"""

from __future__ import annotations

import itertools
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator, List

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the package under test, not an installed one

CHECKOUT = HERE.parent.parent
BATON_BIN = Path(os.environ.get("BATON_BIN", CHECKOUT / "build" / "bin"))
_names = itertools.count()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def zk_ok(port: int) -> bool:
    """The server answers the four-letter word ruok (4lw whitelisted)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"ruok")
            return s.recv(4) == b"imok"
    except OSError:
        return False


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when pytest dies (a ctest timeout's
    SIGKILL included), so no JVM or coordinator outlives the run."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def no_preload() -> dict:
    """The environment without the sanitizer build's LD_PRELOAD (libasan),
    which is for this Python process only: never for ZooKeeper's JVM."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


def stop_pid(p: subprocess.Popen, timeout: float = 10) -> None:
    """SIGTERM, then SIGKILL after timeout, by pid."""
    if p.poll() is None:
        os.kill(p.pid, signal.SIGCONT)
        os.kill(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()


@pytest.fixture(scope="session")
def zk(tmp_path_factory) -> Iterator[str]:
    """host:port of a ZooKeeper to test against."""
    if os.environ.get("ZK"):
        yield os.environ["ZK"]
        return
    d = tmp_path_factory.mktemp("zk")
    (d / "data").mkdir()
    tick = 200
    cp = ":".join(
        ["/etc/zookeeper/conf", "/usr/share/java/zookeeper.jar"]
        + [j for j in ("/usr/share/java/slf4j-log4j12.jar", "/usr/share/java/log4j-1.2.jar") if os.path.exists(j)]
    )
    (d / "log4j.properties").write_text(
        "log4j.rootLogger=INFO, CONSOLE\nlog4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\n"
        "log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] - %m%n\n"
    )
    for _ in range(3):
        port = free_port()
        (d / "zoo.cfg").write_text(
            f"tickTime={tick}\ninitLimit=10\nsyncLimit=5\ndataDir={d / 'data'}\nclientPortAddress=127.0.0.1\n"
            f"clientPort={port}\nmaxClientCnxns=0\nminSessionTimeout={2 * tick}\nmaxSessionTimeout=20000\n"
            "4lw.commands.whitelist=*\nadmin.enableServer=false\nautopurge.purgeInterval=0\n"
        )
        log = open(d / "zk.log", "ab")
        p = subprocess.Popen(
            ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             f"-Dzookeeper.log.dir={d}", "-Dzookeeper.root.logger=INFO,CONSOLE",
             f"-Dlog4j.configuration=file:{d / 'log4j.properties'}", "-Dzookeeper.jmx.log4j.disable=true",
             "-cp", cp, "org.apache.zookeeper.server.ZooKeeperServerMain", str(d / "zoo.cfg")],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=no_preload(), preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 30
        while p.poll() is None and time.monotonic() < deadline and not zk_ok(port):
            time.sleep(0.1)
        if zk_ok(port):
            try:
                yield f"127.0.0.1:{port}"
            finally:
                stop_pid(p)
            return
        stop_pid(p)  # it died (the port was taken meanwhile?) or never served: try another
    pytest.fail(f"ZooKeeper did not start; see {d / 'zk.log'}")


def batonctl(zk: str, group: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([str(BATON_BIN / "batonctl"), "--zk", zk, "--group", group, "--timeout", "5000", *args],
                       capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        raise AssertionError(f"batonctl {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return r


class Group:
    """A fresh group, initialised; coordinator() starts its coordinator."""

    def __init__(self, zk: str, name: str, tmp: Path) -> None:
        self.zk, self.name, self.tmp = zk, name, tmp
        self.procs: List[subprocess.Popen] = []

    def ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return batonctl(self.zk, self.name, *args, check=check)

    def coordinator(self) -> subprocess.Popen:
        log = open(self.tmp / f"coord-{self.name}.log", "ab")
        p = subprocess.Popen(
            [str(BATON_BIN / "baton-coordinator"), "--zk", self.zk, "--group", self.name, "--id", f"c-{self.name}",
             "--session-timeout-ms", "4000"], stdout=log, stderr=log, stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent)
        self.procs.append(p)
        return p

    def stop(self) -> None:
        for p in self.procs:
            stop_pid(p)


@pytest.fixture
def make_group(zk, tmp_path) -> Iterator[Callable[..., Group]]:
    """make_group(keys=("a",), partitions=0, coordinator=True) -> Group."""
    made: List[Group] = []

    def make(keys=("a",), partitions: int = 0, coordinator: bool = True) -> Group:
        g = Group(zk, f"py{os.getpid()}-{next(_names)}", tmp_path)
        args: List[str] = []
        if partitions:
            args += ["--topic", "t", "--partitions", str(partitions)]
        if keys:
            args += ["--keys", ",".join(keys)]
        g.ctl("init", *args)
        if coordinator:
            g.coordinator()
        made.append(g)
        return g

    yield make
    for g in made:
        g.stop()

