"""The workshop room store, SQLite and Redis through the same tests: only the
presenter moves the room, one vote per participant per round (also under
concurrent attempts from threads and from processes), no vote lost when many
participants vote at once from several processes, distinct seeds, the same message
for the same fault, a write read by another store object, expiry, and a process
killed with SIGKILL loses nothing it wrote."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from contextlib import closing
from pathlib import Path

import pytest

from tests.roomstores import RedisServer
from ui.room import rules
from ui.room.store import (
    ALPHABET,
    CODE_LEN,
    NotPresenter,
    RedisStore,
    RoomError,
    SQLiteStore,
    clean_name,
    normalize_code,
)

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["sqlite", "redis"])
def backend(request, tmp_path):
    """(kind, where, make(clock)) for each backend; ``where`` reopens it elsewhere."""
    if request.param == "sqlite":
        path = tmp_path / "rooms.sqlite3"
        return "sqlite", str(path), lambda clock=None: SQLiteStore(path, **_clock(clock))
    server = request.getfixturevalue("redis_server")
    prefix = f"t{os.getpid()}-{request.node.name}:"
    return (
        "redis",
        server.url,
        lambda clock=None: RedisStore(server.url, prefix=prefix, **_clock(clock)),
    )


def _clock(clock):
    return {} if clock is None else {"clock": clock}


@pytest.fixture
def store(backend):
    return backend[2]()


def test_code_and_secret(store):
    room, secret = store.create("residuals", hide_names=True)
    assert len(room.code) == CODE_LEN and set(room.code) <= set(ALPHABET)
    assert not set("01OIL") & set(ALPHABET)
    assert room.step == 1 and room.phase == "predict" and room.hide_names and not room.closed
    assert room.expires - room.created == pytest.approx(4 * 3600)
    assert store.is_presenter(room.code, secret)
    assert normalize_code(room.code.lower()[:3] + "-" + room.code[3:]) == room.code
    other, other_secret = store.create("residuals")
    assert other.code != room.code and other_secret != secret
    assert not store.is_presenter(room.code, other_secret)


@pytest.mark.parametrize("wrong", [None, "", "x", "guess" * 8])
def test_a_participant_cannot_move_reveal_or_close(store, wrong):
    room, secret = store.create("residuals")
    me = store.join(room.code, "Ada")
    for attempt in (
        lambda s: store.go_to(room.code, s, 3),
        lambda s: store.set_phase(room.code, s, "revealed"),
        lambda s: store.close(room.code, s),
    ):
        with pytest.raises(NotPresenter):
            attempt(wrong)
        with pytest.raises(NotPresenter):
            attempt(me.token)  # a participant's own token is no secret
    after = store.room(room.code)
    assert (after.step, after.phase, after.closed) == (1, "predict", False)
    assert store.go_to(room.code, secret, 3).step == 3
    assert store.set_phase(room.code, secret, "revealed").phase == "revealed"
    assert store.go_to(room.code, secret, 4).phase == "predict"  # a new step asks again
    assert store.close(room.code, secret).closed
    with pytest.raises(RoomError):
        store.join(room.code)


def test_members_get_different_seeds_and_clean_names(store):
    room, _ = store.create("residuals")
    names = ["Ada", "  Grace\u202e  Hopper\u200b ", "<b>x</b>", None, "z" * 100, "\x00\x07"]
    joined = [store.join(room.code, n) for n in names]
    assert [m.seed for m in joined] == [1, 2, 3, 4, 5, 6]
    assert [m.name for m in joined] == ["Ada", "Grace Hopper", "<b>x</b>", None, "z" * 40, None]
    assert len({m.token for m in joined}) == 6
    assert store.members(room.code) == joined
    assert store.member(room.code, joined[1].token) == joined[1]
    assert store.member(room.code, "nobody") is None
    assert store.member("ZZZZZZ", joined[1].token) is None


def test_one_vote_per_round_and_only_when_the_room_asks(store):
    room, secret = store.create("residuals", step=2)
    a, b = store.join(room.code), store.join(room.code)
    assert store.vote(room.code, a.token, 2, 1, "plain") is True
    assert store.vote(room.code, a.token, 2, 1, "residual") is False  # no second vote
    assert store.vote(room.code, b.token, 2, 1, "residual") is True
    assert store.votes(room.code, 2, 1) == {a.token: "plain", b.token: "residual"}
    with pytest.raises(RoomError):
        store.vote(room.code, "stranger", 2, 1, "plain")
    with pytest.raises(RoomError):
        store.vote(room.code, a.token, 3, 1, "plain")  # not the room's step
    with pytest.raises(RoomError):
        store.vote(room.code, a.token, 2, 2, "plain")  # the second vote has not started
    with pytest.raises(RoomError):
        store.submit_measure(room.code, a.token, 2, "residual")  # not revealed yet
    store.set_phase(room.code, secret, "revealed")
    with pytest.raises(RoomError):
        store.vote(room.code, b.token, 2, 1, "plain")  # voting is over
    assert store.submit_measure(room.code, a.token, 2, "residual") is True
    assert store.submit_measure(room.code, a.token, 2, "plain") is False
    store.set_phase(room.code, secret, "second")
    assert store.vote(room.code, a.token, 2, 2, "residual") is True
    assert store.vote(room.code, a.token, 2, 2, "plain") is False
    assert store.votes(room.code, 2, 1) == {a.token: "plain", b.token: "residual"}
    assert store.votes(room.code, 2, 2) == {a.token: "residual"}
    assert store.measures(room.code, 2) == {a.token: "residual"}


def test_concurrent_double_votes_from_threads(store):
    room, _ = store.create("residuals")
    members = [store.join(room.code) for _ in range(5)]
    results: list[bool] = []
    lock = threading.Lock()

    def hammer(token: str, k: int) -> None:
        ok = store.vote(room.code, token, 1, 1, f"choice{k % 2}")
        with lock:
            results.append(ok)

    threads = [
        threading.Thread(target=hammer, args=(m.token, k)) for m in members for k in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 5 and results.count(False) == 35
    assert set(store.votes(room.code, 1, 1)) == {m.token for m in members}


def _vote_from_process(kind, where, prefix, code, token, start, out):
    store = SQLiteStore(where) if kind == "sqlite" else RedisStore(where, prefix=prefix)
    start.wait()
    out.put(store.vote(code, token, 1, 1, "plain"))


@pytest.mark.slow
def test_concurrent_double_votes_from_processes(backend, store):
    kind, where, _ = backend
    room, _ = store.create("residuals")
    me = store.join(room.code)
    ctx = mp.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    prefix = getattr(store, "p", "")
    procs = [
        ctx.Process(
            target=_vote_from_process, args=(kind, where, prefix, room.code, me.token, start, out)
        )
        for _ in range(6)
    ]
    for p in procs:
        p.start()
    start.set()
    got = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    assert sorted(got) == [False] * 5 + [True]
    assert store.votes(room.code, 1, 1) == {me.token: "plain"}


def _vote_for_many(kind, where, prefix, code, tokens, start, out):
    store = SQLiteStore(where) if kind == "sqlite" else RedisStore(where, prefix=prefix)
    store.room(code)  # this process holds the room's document: the votes must still land
    start.wait()
    done: list[bool] = []

    def one(token: str) -> None:
        store.set_progress(code, token, 1, 1, 2)
        done.append(store.vote(code, token, 1, 1, "plain"))

    threads = [threading.Thread(target=one, args=(t,)) for t in tokens]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put(done)


@pytest.mark.slow
def test_many_participants_voting_at_once_from_processes_lose_no_vote(backend, store):
    """Replicas write one room at once (a room voting within a second): 3 processes of
    8 participants each report progress and vote at the same moment; every report and
    every vote is stored."""
    kind, where, _ = backend
    room, _ = store.create("residuals")
    members = [store.join(room.code) for _ in range(24)]
    ctx = mp.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    prefix = getattr(store, "p", "")
    tokens = [m.token for m in members]
    procs = [
        ctx.Process(
            target=_vote_for_many,
            args=(kind, where, prefix, room.code, tokens[k::3], start, out),
        )
        for k in range(3)
    ]
    for p in procs:
        p.start()
    start.set()
    got = [ok for _ in procs for ok in out.get(timeout=120)]
    for p in procs:
        p.join(timeout=30)
    assert got == [True] * 24
    assert store.votes(room.code, 1, 1) == dict.fromkeys(tokens, "plain")
    assert store.progress(room.code, 1) == dict.fromkeys(tokens, (1, 2))


def test_a_store_object_reads_what_another_wrote(backend):
    """Each store object holds the room's parts it read; another replica's write is
    read at the next call all the same (a poll, a tally)."""
    here, there = backend[2](), backend[2]()
    room, key = here.create("residuals", step=2)
    ada = here.join(room.code, "Ada")
    assert here.room(room.code).step == 2 and here.votes(room.code, 2, 1) == {}
    assert there.vote(room.code, ada.token, 2, 1, "plain")
    assert here.votes(room.code, 2, 1) == {ada.token: "plain"}
    bo = there.join(room.code, "Bo")
    there.go_to(room.code, key, 3)
    polled, known = here.status(room.code, bo.token)
    assert (polled.step, polled.phase, known) == (3, "predict", True)
    assert here.members(room.code) == [ada, bo]
    assert there.remove(room.code, key, ada.token)
    assert here.member(room.code, ada.token) is None and here.votes(room.code, 2, 1) == {}
    assert here.was_removed(room.code, ada.token)


def _refusal(fault):
    with pytest.raises(RoomError) as caught:
        fault()
    return str(caught.value), type(caught.value)


def test_the_same_fault_is_refused_with_the_same_message(store):
    """One rule refuses each fault (ui.room.rules), so both stores say the same."""
    room, key = store.create("residuals", step=2)
    me = store.join(room.code, "Ada")
    gone = "ZZZZZZ"
    faults = [
        (lambda: store.vote(room.code, me.token, 3, 1, "plain"), rules.NO_VOTES, RoomError),
        (lambda: store.vote(room.code, me.token, 2, 2, "plain"), rules.NO_VOTES, RoomError),
        (lambda: store.vote(room.code, "stranger", 2, 1, "x"), rules.NOT_MEMBER, RoomError),
        (lambda: store.vote(room.code, None, 2, 1, "x"), rules.NOT_MEMBER, RoomError),
        (lambda: store.vote(room.code, me.token, 2, 1, ""), rules.NOT_A_CHOICE, RoomError),
        (lambda: store.submit_measure(room.code, me.token, 2, "x"), rules.NO_MEASURES, RoomError),
        (lambda: store.set_progress(room.code, me.token, 3, 1, 2), rules.NOT_AT_STEP, RoomError),
        (lambda: store.set_progress(room.code, me.token, 2, 3, 2), rules.NO_PROGRESS, RoomError),
        (lambda: store.set_progress(room.code, "stranger", 2, 1, 2), rules.NOT_MEMBER, RoomError),
        (lambda: store.go_to(room.code, me.token, 3), rules.ONLY_PRESENTER, NotPresenter),
        (lambda: store.go_to(room.code, key, 0), rules.NO_STEP, RoomError),
        (lambda: store.set_phase(room.code, key, "over"), rules.NO_PHASE, RoomError),
        (lambda: store.set_joining(room.code, key, False, -1), rules.BAD_SIZE, RoomError),
        (lambda: store.claim(room.code, "wrong"), rules.WRONG_KEY, NotPresenter),
        (lambda: store.join(gone), rules.GONE, RoomError),
        (lambda: store.vote(gone, me.token, 2, 1, "x"), rules.GONE, RoomError),
        (lambda: store.submit_measure(gone, me.token, 2, "x"), rules.GONE, RoomError),
        (lambda: store.set_progress(gone, me.token, 2, 1, 2), rules.GONE, RoomError),
        (lambda: store.go_to(gone, key, 2), rules.GONE, RoomError),
        (lambda: store.claim(gone, key), rules.GONE, RoomError),
        (lambda: store.remove(gone, key, me.token), rules.GONE, RoomError),
    ]
    said = [_refusal(fault) for fault, _, _ in faults]
    store.close(room.code, key)
    closed = [
        (lambda: store.join(room.code), rules.CLOSED, RoomError),
        (lambda: store.vote(room.code, me.token, 2, 1, "x"), rules.CLOSED, RoomError),
        (lambda: store.submit_measure(room.code, me.token, 2, "x"), rules.CLOSED, RoomError),
        (lambda: store.set_progress(room.code, me.token, 2, 1, 2), rules.CLOSED, RoomError),
    ]
    faults += closed
    said += [_refusal(fault) for fault, _, _ in closed]
    assert said == [(message, kind) for _, message, kind in faults]


def test_rooms_expire(backend):
    clock = Clock()
    store = backend[2](clock)
    room, secret = store.create("residuals", ttl=60)
    me = store.join(room.code, "Ada")
    store.vote(room.code, me.token, 1, 1, "plain")
    clock.now += 59
    assert store.room(room.code) is not None
    clock.now += 2
    assert store.room(room.code) is None
    assert store.members(room.code) == [] and store.votes(room.code, 1, 1) == {}
    assert store.member(room.code, me.token) is None
    assert not store.is_presenter(room.code, secret)
    with pytest.raises(RoomError):
        store.join(room.code)
    with pytest.raises(RoomError):
        store.vote(room.code, me.token, 1, 1, "residual")
    with pytest.raises(RoomError):
        store.go_to(room.code, secret, 2)
    if backend[0] == "redis":  # and the keys themselves go a minute after
        assert 0 < store.r.ttl(store._doc_key(room.code)) <= 60 + 60
    else:  # the row goes when the next room is created
        store.create("residuals")
        assert room.code not in [row[0] for row in _rows(backend[1], "SELECT code FROM room_docs")]


def _rows(path, sql):
    with closing(sqlite3.connect(path)) as db:
        return db.execute(sql).fetchall()


WRITER = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, {root!r})
    from ui.room.store import SQLiteStore, RedisStore
    kind, where, prefix, code, secret = sys.argv[1:6]
    store = SQLiteStore(where) if kind == "sqlite" else RedisStore(where, prefix=prefix)
    store.go_to(code, secret, 3)
    for i in range(10):
        m = store.join(code, f"p{{i}}")
        store.vote(code, m.token, 3, 1, "plain" if i % 3 else "residual")
    print("written", flush=True)
    while True:  # a replica mid-lesson, busy with its next write
        store.room(code)
    """
)


def test_a_killed_process_loses_nothing(backend, store):
    kind, where, _ = backend
    room, secret = store.create("residuals")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            WRITER.format(root=str(Path(__file__).resolve().parents[3])),
            kind,
            where,
            getattr(store, "p", ""),
            room.code,
            secret,
        ],  # fmt: skip
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "written"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    # Another process (this one, with a fresh store object) reads everything.
    again = backend[2]()
    assert again.room(room.code).step == 3
    assert [m.name for m in again.members(room.code)] == [f"p{i}" for i in range(10)]
    votes = again.votes(room.code, 3, 1)
    assert len(votes) == 10 and sorted(votes.values()).count("residual") == 4


def test_clean_name_and_code():
    assert clean_name("  a\tb\n c ") == "a b c"
    assert clean_name("\u200b\u202e") is None
    assert clean_name(42) is None
    assert normalize_code("abc") is None and normalize_code("ABCDE0") is None
    assert normalize_code(" ab cd-ef ") == "ABCDEF"
