"""The fenced worker's SQLite sink (examples/python/fenced_worker.py): the
rules of sink/sink_sqlite.c, and files the C sink reads as its own."""

from __future__ import annotations

import json
import sqlite3
import sys

import pytest

import baton
from conftest import CHECKOUT

sys.path.insert(0, str(CHECKOUT / "examples" / "python"))
import fenced_worker as fw  # noqa: E402

STALE, UNFENCED = baton.StaleError.code, baton.UnfencedError.code
GROUP_ID = "6f1c0c1e-3b0a-4a39-9d0c-5a1e7f6f2b11"


def recs(*offsets: int):
    return [fw.Record(o, b"k%d" % o, b"v-%d" % o) for o in offsets]


@pytest.fixture
def sink(tmp_path):
    s = fw.Sink(f"sqlite:{tmp_path / 'sink.db'}", "g")
    s.group_uuid = GROUP_ID
    yield s
    s.close()


def rows(s, table="baton_output"):
    return s.db.execute(f"SELECT partition, offset, epoch, value FROM {table} ORDER BY partition, offset").fetchall()


def fence_row(s, p):
    return s.db.execute("SELECT epoch, next_offset, rejected FROM baton_fence WHERE grp='g' AND partition=?",
                        (p,)).fetchone()


def test_fence_then_write_moves_next_offset_in_one_transaction(sink):
    assert sink.fence(0, 10) == (0, 0)
    assert sink.write(0, 10, recs(0, 1, 2)) == (0, 3, 3)
    assert fence_row(sink, 0) == (10, 3, 0)
    assert rows(sink) == [(0, 0, 10, b"v-0"), (0, 1, 10, b"v-1"), (0, 2, 10, b"v-2")]
    # Records below next_offset are skipped (read again after a handoff).
    assert sink.write(0, 10, recs(1, 2, 3)) == (0, 4, 1)
    assert [r[1] for r in rows(sink)] == [0, 1, 2, 3]


def test_a_higher_epoch_refuses_the_lower_and_counts_it(sink):
    sink.fence(0, 10)
    sink.write(0, 10, recs(0))
    assert sink.fence(0, 20) == (0, 1)  # the new owner resumes at next_offset
    assert sink.write(0, 10, recs(1, 2))[0] == STALE  # the zombie's batch, whole
    assert sink.fence(0, 15)[0] == STALE
    assert fence_row(sink, 0) == (20, 1, 2)
    assert [r[1] for r in rows(sink)] == [0]


def test_a_write_without_its_fence_is_unfenced(sink):
    assert sink.write(3, 7, recs(0))[0] == UNFENCED  # no row at all
    sink.fence(3, 7)
    assert sink.write(3, 8, recs(0))[0] == UNFENCED  # a higher epoch that never fenced
    assert rows(sink) == [] and fence_row(sink, 3) == (7, 0, 0)


def test_the_group_id_is_recorded_and_checked_in_the_fence(sink, tmp_path):
    sink.fence(0, 1)
    assert sink.db.execute("SELECT grp, group_uuid FROM baton_groups").fetchall() == [("g", GROUP_ID)]
    other = fw.Sink(sink.uri, "g")
    other.group_uuid = "00000000-0000-4000-8000-000000000000"
    with pytest.raises(baton.ConflictError, match="serves another group named 'g'"):
        other.fence(1, 5)
    other.close()
    assert fence_row(sink, 1) is None  # rolled back


def test_bad_rows_and_tables_are_corrupt_not_guessed(tmp_path):
    path = tmp_path / "bad.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE baton_fence(grp TEXT, partition INTEGER, epoch TEXT)")
    db.commit()
    db.close()
    with pytest.raises(baton.CorruptError, match="baton_fence"):
        fw.Sink(f"sqlite:{path}", "g")
    s = fw.Sink(f"sqlite:{tmp_path / 'ok.db'}", "g")
    s.db.execute("INSERT INTO baton_fence VALUES ('g', 0, NULL, 0, 0)")
    with pytest.raises(baton.CorruptError, match="partition 0"):
        s.write(0, 1, recs(0))
    s.close()
    (tmp_path / "text.db").write_text("not a database")
    with pytest.raises(baton.BackendError, match="not a usable SQLite database"):
        fw.Sink(f"sqlite:{tmp_path / 'text.db'}", "g")


@pytest.mark.parametrize("uri,err", [
    ("postgresql://h/db", "sqlite:PATH only"),
    ("sqlite:", "empty path"),
    ("sqlite://rel.db", "ambiguous path"),
    ("sqlite::memory:", "in-memory"),
    ("sqlite:/no/such/dir/x.db", "does not exist"),
])
def test_bad_sink_uris(uri, err):
    with pytest.raises(baton.InputError, match=err):
        fw.sqlite_path(uri)


def test_failpoints_parse_like_the_c_ones():
    fp = fw.Failpoints("worker.before_sink_write=2:sleep-1;other=exit")
    assert fp.points["worker.before_sink_write"][:3] == [2, "sleep", 1]
    for hit in range(3):
        fp.hit("worker.before_sink_write")  # the 3rd hit sleeps 1 ms, once
    assert fp.points["worker.before_sink_write"][3:] == [3, True]
    for bad in ("x", "=stop", "p=freeze", "p=x:stop", "p=1:sleep-x"):
        with pytest.raises(ValueError):
            fw.Failpoints(bad)


def test_batonctl_reads_the_python_sink_as_its_own(make_group, tmp_path):
    """Same schema: the C sink opens the file (checking every table's
    shape) and reports the fences the Python sink wrote."""
    g = make_group(keys=(), partitions=2, coordinator=False)
    s = fw.Sink(f"sqlite:{tmp_path / 'shared.db'}", g.name)
    s.fence(0, 42)
    s.write(0, 42, recs(0, 1))
    s.fence(1, 43)
    s.fence(1, 44)
    s.write(1, 43, recs(0))  # refused, counted
    s.close()
    out = json.loads(g.ctl("fences", "--sink", f"sqlite:{tmp_path / 'shared.db'}", "--json").stdout)
    got = {f["partition"]: (f["epoch"], f["next_offset"], f["rejected"]) for f in out["partitions"]}
    assert got == {0: (42, 2, 0), 1: (44, 0, 1)}, out
