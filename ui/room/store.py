"""A workshop room's shared state, in a store every replica reads.

A room's rules are :mod:`ui.room.rules`, over one document per room (its fields,
presenter hashes, participants, removed tokens, rate-limit windows, expiry and every
step's answers: :class:`~ui.room.rules.Doc`). A store keeps each room's document
and applies a rule to it atomically, so a refusal is one code path and says the same
on every backend. :class:`RoomStore` implements every operation once, over what a
backend provides:

* :meth:`RoomStore._transact`: one atomic read-modify-write of a room's document:
  read it, run a rule on a copy, write back the parts that changed. The document is
  kept as JSON text in parts (:func:`ui.room.rules.dump`): ``room``, all but the
  answers, and ``step:<s>``, one step's votes and measured answers. A vote reads the
  room part and its step's part and writes that step's part only: a room of 100
  holds some 130 kB of answers late in a lesson, and a burst of 100 votes that each
  rewrote all of it took several times as long as the per-row layout this replaced.
  Two indexes follow the document in the same write: browser id -> the rooms it
  joined (for :meth:`RoomStore.browser_room`) and a presenting credential's hash ->
  the rooms it presents (:meth:`RoomStore.presented_by`), each entry a code and when.
* :meth:`RoomStore._insert`: a new room's document, under a code no live room has.
* A long measurement's progress, kept apart from the document: every measuring
  participant reports it every second, and each report rewriting the room part
  would cost more than the report. :meth:`RoomStore._put_progress` checks the report
  against the document and writes it in one transaction; a removed participant's
  progress goes in the write that removes them.
* :meth:`RoomStore._parts`: a room's parts as stored. Every write gives the parts
  it writes a new random version; a read, and the read that starts a write, fetches
  and parses a part's text only when its stored version is not the one this process
  holds (a participant's poll of an unchanged room, every second, parses nothing; a
  vote copies the room part it holds instead of parsing it).

Two backends:

* :class:`SQLiteStore`: one file (the default, ``rooms.sqlite3`` in the data folder
  ``RESVIZ_DATA_DIR``, else in ``artifacts/``; or the file ``RESVIZ_ROOM_DB``), in WAL
  mode, every write one ``BEGIN IMMEDIATE`` transaction, so the N replica processes of
  ``make workshop`` on one machine share it and a process killed mid-lesson leaves
  every committed vote behind. Tables: ``room_docs`` (code, part, version, expires,
  the part's text), ``room_progress`` (code, step, token, done, total),
  ``room_index`` (kind ``browser`` or ``presenter``, key, code, at) and ``probe``.
  Rooms past their expiry are deleted, with their progress and index rows, when the
  next room is created. The earlier layout's tables (``rooms``, ``members``,
  ``votes``, ...: a row per participant, vote, ...) are dropped when a store opens
  the file: their rooms end then, and their participants' names are not kept.
* :class:`RedisStore`: ``REDIS_URL``, for replicas on several machines. Keys (after
  the prefix ``resviz:``): ``room-doc:<code>`` (hash: each part's text, and its
  version as ``<part>@v``) and ``room-progress:<code>:<step>`` (hash: token ->
  ``done/total``), which expire (``EXPIRE``) a minute after their room;
  ``browser-rooms:<browser id>`` and ``presenter-rooms:<credential hash>`` (sorted
  sets: code by when, the latest 21), a minute after the longest-lived room they
  name; and ``probe``. A write WATCHes the room's key, reads and changes the
  document, and writes it in one MULTI/EXEC, which Redis refuses if another write
  came between: then it is tried again after a random wait (up to 1 ms, doubling
  to 50 ms), for ``CONTENDED_S`` at most. No Lua. The earlier layout's keys
  (``room:<code>``, ``members:<code>``, ...) are never read, and expire on their
  own. A password in the URL (``redis://:PASSWORD@host:6379/0``) is never logged
  (:func:`masked`).

:func:`open_store` opens the one this process uses and writes to it once
(:meth:`RoomStore.probe`): a store that cannot be written is logged at once, as one
ERROR line ``workshop rooms: cannot write <where>: <cause>``, not found out by the
first participant.

A room has a short join code and a presenter key (only its SHA-256 is kept;
:meth:`RoomStore.claim` takes the room back with it from any browser, at most
``KEY_FAILS_PER_MINUTE`` wrong keys a minute per room, each one logged); its
participants join with a rate limit per client address, per browser and per room
(:func:`ui.room.rules.join`). Every write returns only once it is committed (SQLite:
after ``COMMIT``; Redis: after ``EXEC``'s reply). Nothing here imports streamlit.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import itertools
import logging
import math
import os
import random
import re
import secrets
import sqlite3
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

from . import rules
from .rules import (  # noqa: F401  (the names every caller imports from here)
    ALPHABET,
    CHOICE_MAX,
    CODE_LEN,
    FULL,
    JOINS_PER_MINUTE,
    JOINS_PER_MINUTE_ADDRESS,
    JOINS_PER_MINUTE_BROWSER,
    KEY_FAILS_PER_MINUTE,
    LOCKED,
    MAX_MEMBERS,
    MAX_STEPS,
    NAME_MAX,
    PHASES,
    PRESENTING_BROWSERS,
    ROOM,
    ROUND_OF,
    TOO_MANY_JOINS,
    TOO_MANY_JOINS_ADDRESS,
    TOO_MANY_JOINS_BROWSER,
    TOO_MANY_KEYS,
    TTL,
    WINDOW_S,
    WRONG_KEY,
    Doc,
    Member,
    NotPresenter,
    Room,
    RoomError,
    TooMany,
    clean_name,
    new_code,
    normalize_code,
)

ROOT = Path(__file__).resolve().parents[2]
# The rooms an index gives for one browser or credential, newest first.
INDEXED = 21
# Parts of room documents this process holds parsed (the rooms its pages show).
HELD = 256
# How long a Redis write is tried again while other writes to the room come between.
CONTENDED_S = 30.0
_LOG = logging.getLogger(__name__)
T = TypeVar("T")
Rule = Callable[[Doc | None], T]
Keep = tuple[type[Exception], ...]


class StoreUnavailable(OSError):
    """The store could not be opened or written (:func:`open_store` logged why). An
    ``OSError``, so the page's guard shows its message for it as for any outage."""


@dataclass(frozen=True)
class _Changes:
    """What follows a change of a room's document outside it: the indexes' new
    entries and the progress of the participants removed."""

    joined: list[tuple[str, float]]  # (browser id, when) of each new participant's browser
    presenter: str | None  # a credential hash now presenting first
    left: list[str]  # the tokens of the participants removed


def _changes(before: Doc | None, doc: Doc) -> _Changes:
    tokens = set() if before is None else set(before.members)
    presenting = [] if before is None else before.browser_hashes
    joined = [
        (e.browser, e.joined)
        for t, e in doc.members.items()
        if e.browser is not None and t not in tokens
    ]
    first = (
        doc.browser_hashes[0] if doc.browser_hashes != presenting and doc.browser_hashes else None
    )
    return _Changes(joined, first, [t for t in tokens if t not in doc.members])


@dataclass
class _Outcome(Generic[T]):
    """A rule run on a room's document (:func:`_run`): what to write and return."""

    out: list[T]  # the rule's result (none if it raised one of ``keep``)
    kept: Exception | None  # one of ``keep`` it raised, to raise once written
    doc: Doc | None  # the document it changed
    written: dict[str, str]  # part -> its new text, for each part that changed
    changes: _Changes | None  # when the room part changed


def _run(fn: Rule[T], stored: Doc | None, keep: Keep, names: Sequence[str] | None) -> _Outcome[T]:
    """Run ``fn`` on a copy of the ``stored`` document of the parts ``names``."""
    doc = None if stored is None else rules.copy(stored)
    out: list[T] = []
    kept = None
    try:
        out.append(fn(doc))
    except keep as exc:
        kept = exc
    if doc is None:
        return _Outcome(out, kept, None, {}, None)
    written = rules.dump(doc, since=stored)
    if names is not None and not written.keys() <= set(names):  # unread answers: not ours
        raise AssertionError(f"a rule wrote {sorted(written)} having read {sorted(names)}")
    changes = _changes(stored, doc) if ROOM in written else None
    return _Outcome(out, kept, doc, written, changes)


def _parts_of(step: object) -> list[str]:
    """The parts a rule at ``step`` reads: the room's, and that step's answers."""
    return [ROOM, rules.part(int(step))] if isinstance(step, int) else [ROOM]


def _placeholders(values: Sequence[object]) -> str:
    return ", ".join("?" * len(values))


class RoomStore(ABC):
    """The room operations, each one rule of :mod:`ui.room.rules` applied atomically
    to the room's document by the backend."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        # (code, part) -> (version, the part parsed: a Doc without answers, or answers)
        self._held: dict[tuple[str, str], tuple[str, Any]] = {}
        self._holding = threading.Lock()

    # -- what a backend provides
    @abstractmethod
    def probe(self) -> None:
        """Write to the store once (raises what the store raises if it cannot)."""

    @abstractmethod
    def _parts(self, code: str, names: Sequence[str] | None, client: Any = None) -> Doc | None:
        """Room ``code``'s document as stored (live or expired; None if there is none),
        of the parts ``names`` (None: every part): those this process holds at their
        stored versions, the others read and then held (:meth:`_doc_of`), so no caller
        may change it. ``client``: the transaction to read in, if any."""

    @abstractmethod
    def _transact(
        self, code: str, fn: Rule[T], keep: Keep = (), names: Sequence[str] | None = (ROOM,)
    ) -> T:
        """One atomic read-modify-write: ``fn`` gets a copy of room ``code``'s stored
        document of the parts ``names`` (None: every part; the document None if there
        is no room), changes it in place, and the parts that changed are written back
        with what follows them (:func:`_changes`), under new versions. An exception
        from ``fn`` writes nothing, but one of ``keep``: it is raised once the
        document is written. Returns what ``fn`` returned."""

    @abstractmethod
    def _insert(self, doc: Doc) -> bool:
        """Store a new room's document; False if a live room has its code."""

    @abstractmethod
    def _put_progress(self, code: str, check: Rule[tuple[str, int, int, int]]) -> None:
        """Write the progress ``check`` returns (token, step, done, total) for room
        ``code``'s document (its room part), which cannot change between the check and
        the write."""

    @abstractmethod
    def _progress(self, code: str, step: int) -> dict[str, tuple[int, int]]:
        """The progress written at ``step`` of room ``code``, by token."""

    @abstractmethod
    def _codes(self, kind: str, key: str) -> list[str]:
        """The rooms an index gives (``kind`` ``browser``: that browser id joined
        them; ``presenter``: that credential hash presented them), newest first,
        ``INDEXED`` at most."""

    # -- the parts this process holds
    def _keep(self, code: str, name: str, version: str, parsed: Any) -> None:
        with self._holding:
            self._held.pop((code, name), None)
            self._held[code, name] = (version, parsed)
            while len(self._held) > HELD:
                del self._held[next(iter(self._held))]

    def _settle(self, code: str, version: str, o: _Outcome[T]) -> T:
        """After a backend's atomic write: hold what it wrote, raise what the rule
        refused after a change it kept (a counted wrong key), else the rule's result."""
        if o.doc is not None:
            self._hold(code, version, o.doc, list(o.written))
        if o.kept is not None:
            raise o.kept
        return o.out[0]

    def _hold(self, code: str, version: str, doc: Doc, names: Sequence[str]) -> None:
        """Keep the parts ``names`` of ``doc``, stored as ``version``, for this
        process's next reads (nothing changes ``doc`` afterwards)."""
        for name in names:
            if name == ROOM:
                parsed: Any = dataclasses.replace(doc, answers={})
            else:
                parsed = doc.answers.get(name.removeprefix("step:"), {})
            self._keep(code, name, version, parsed)

    def _holding_now(self, code: str, names: Sequence[str] | None) -> dict[str, tuple[str, Any]]:
        """The parts ``names`` (None: all) of room ``code`` this process holds, by name:
        (version, part)."""
        with self._holding:
            if names is None:
                return {n: held for (c, n), held in self._held.items() if c == code}
            return {n: held for n in names if (held := self._held.get((code, n))) is not None}

    def _doc_of(
        self,
        code: str,
        held: dict[str, tuple[str, Any]],
        versions: dict[str, str],
        texts: dict[str, str],
    ) -> Doc | None:
        """The document of the stored parts at ``versions``: the ``held`` part where
        its version is the stored one, else parsed from ``texts`` (and held). None
        without a room part."""
        if ROOM not in versions:
            return None
        parsed: dict[str, Any] = {}
        for name, version in versions.items():
            if name in held and held[name][0] == version:
                parsed[name] = held[name][1]
            else:
                text = texts[name]
                parsed[name] = rules.load_room(text) if name == ROOM else rules.load_answers(text)
                self._keep(code, name, version, parsed[name])
        room: Doc = parsed.pop(ROOM)
        if not parsed:
            return room
        answers = {name.removeprefix("step:"): a for name, a in parsed.items()}
        return dataclasses.replace(room, answers=answers)

    def _live(self, code: object, step: int | None = None) -> Doc | None:
        if not isinstance(code, str):
            return None
        doc = self._parts(code, _parts_of(step))
        return doc if doc is not None and rules.live(doc, self.clock()) else None

    # -- presenter
    def create(
        self,
        lesson: str,
        step: int = 1,
        hide_names: bool = False,
        ttl: float = TTL,
        browser: object = None,
    ) -> tuple[Room, str]:
        """A new room at ``step`` of ``lesson``; returns it and the presenter key (shown
        once: only its hash is kept). ``browser``: the presenting browser's credential
        (its hash is kept, so that browser presents again after a reload)."""
        key = secrets.token_urlsafe(24)
        now = self.clock()
        while True:
            doc = rules.new_room(new_code(), now, lesson, step, hide_names, ttl, key, browser)
            if self._insert(doc):
                return rules.room_of(doc), key

    def is_presenter(self, code: str, secret: object) -> bool:
        """Whether ``secret`` is the room's presenter key or a presenting browser's
        credential (constant-time comparisons; a member token is neither)."""
        doc = self._live(code)
        return doc is not None and rules.is_presenter(doc, secret)

    def claim(self, code: str, key: object, browser: object = None) -> Room:
        """Take the room back with its presenter key (typed on any browser);
        ``browser``, the claiming browser's credential, then presents on a reload too.
        :class:`NotPresenter` for a wrong key (logged, never the key itself), and
        :class:`TooMany` for a wrong key once ``KEY_FAILS_PER_MINUTE`` came in the last
        minute (not logged: a room's wrong keys make at most that many lines a
        minute). The right key is never refused (:func:`ui.room.rules.claim`). The
        room is unchanged on a refusal, but for the wrong key's count."""
        now = self.clock()
        try:
            return self._transact(
                code, lambda d: rules.claim(d, now, key, browser), keep=(NotPresenter,)
            )
        except NotPresenter:
            _LOG.warning("workshop room %s: a wrong presenter key was refused", code)
            raise

    def presented_by(self, browser: object) -> Room | None:
        """The live, open room this browser credential presents (the latest claimed)."""
        cred = rules.browser_of(browser)
        if cred is None:
            return None
        mine = rules.hash_secret(cred)
        for code in self._codes("presenter", mine):
            doc = self._live(code)
            if doc is not None and not doc.closed and mine in doc.browser_hashes:
                return rules.room_of(doc)
        return None

    def go_to(self, code: str, secret: object, step: int) -> Room:
        """Move the room to ``step`` (from 1); its question starts at the predict phase."""
        now = self.clock()
        return self._transact(code, lambda d: rules.go_to(d, now, secret, step))

    def set_phase(self, code: str, secret: object, phase: str) -> Room:
        now = self.clock()
        return self._transact(code, lambda d: rules.set_phase(d, now, secret, phase))

    def set_joining(self, code: str, secret: object, locked: bool, max_members: int) -> Room:
        """The presenter locks joins (``locked``: no new participant; one who joined
        before comes back) and sets the room's size (``max_members``, 0 for no cap;
        the members already in stay)."""
        now = self.clock()
        return self._transact(
            code, lambda d: rules.set_joining(d, now, secret, locked, max_members)
        )

    def close(self, code: str, secret: object) -> Room:
        now = self.clock()
        return self._transact(code, lambda d: rules.close(d, now, secret))

    def remove(self, code: str, secret: object, token: object) -> bool:
        """The presenter removes a participant: their membership, votes, measured
        answers and progress go; their token is remembered as removed (their page says
        so). False if ``token`` was not a member."""
        now = self.clock()
        return self._transact(code, lambda d: rules.remove(d, now, secret, token), names=None)

    # -- everyone
    def room(self, code: str) -> Room | None:
        """The live room (``None`` if it never was, or has expired)."""
        doc = self._live(code)
        return None if doc is None else rules.room_of(doc)

    def join(
        self, code: str, name: object = None, browser: object = None, address: object = None
    ) -> Member:
        """A participant of the room (:func:`ui.room.rules.join`): with ``browser`` (an
        opaque per-browser id), the one this browser joined as before, if any; else a
        new one with the room's next seed. :class:`RoomError` if the room is closed,
        locked or full; :class:`TooMany` past ``JOINS_PER_MINUTE_ADDRESS`` Join presses
        a minute from the client ``address`` (kept hashed), ``JOINS_PER_MINUTE_BROWSER``
        from this browser, or ``JOINS_PER_MINUTE`` in the room."""
        now = self.clock()
        return self._transact(code, lambda d: rules.join(d, now, name, browser, address))

    def member_of_browser(self, code: str, browser: object) -> Member | None:
        """The participant this browser joined the live room ``code`` as, if any."""
        doc = self._live(code)
        return None if doc is None else rules.member_of_browser(doc, browser)

    def browser_room(self, browser: object) -> tuple[str, Member] | None:
        """The live, open room this browser last joined, and its participant there."""
        who = rules.browser_of(browser)
        if who is None:
            return None
        for code in self._codes("browser", who):
            doc = self._live(code)
            member = None if doc is None or doc.closed else rules.member_of_browser(doc, who)
            if member is not None:
                return code, member
        return None

    def member(self, code: str, token: object) -> Member | None:
        doc = self._live(code)
        return None if doc is None else rules.member(doc, token)

    def was_removed(self, code: str, token: object) -> bool:
        """Whether the presenter removed the participant ``token`` from the live room."""
        doc = self._live(code)
        return doc is not None and isinstance(token, str) and token in doc.removed

    def status(self, code: str, token: object) -> tuple[Room | None, bool]:
        """The live room and whether ``token`` is one of its participants (a
        participant's poll, every second: one read, of the room part)."""
        doc = self._live(code)
        if doc is None:
            return None, False
        return rules.room_of(doc), rules.member(doc, token) is not None

    def members(self, code: str) -> list[Member]:
        doc = self._live(code)
        return [] if doc is None else rules.members(doc)

    def vote(self, code: str, token: object, step: int, round_: int, choice: object) -> bool:
        """Record a participant's vote; False if they voted in this round already.
        :class:`RoomError` if the room is not taking this round's votes. Returns only
        once the vote is committed to the store."""
        now = self.clock()
        return self._transact(
            code, lambda d: rules.vote(d, now, token, step, round_, choice), names=_parts_of(step)
        )

    def votes(self, code: str, step: int, round_: int) -> dict[str, str]:
        """Votes of one round, by participant token."""
        doc = self._live(code, step) if isinstance(step, int) else None
        return {} if doc is None else rules.votes(doc, step, round_)

    def submit_measure(self, code: str, token: object, step: int, answer: object) -> bool:
        """Record a participant's measured answer for ``step``; False if given already."""
        now = self.clock()
        return self._transact(
            code, lambda d: rules.measure(d, now, token, step, answer), names=_parts_of(step)
        )

    def measures(self, code: str, step: int) -> dict[str, str]:
        doc = self._live(code, step) if isinstance(step, int) else None
        return {} if doc is None else rules.measures(doc, step)

    def set_progress(self, code: str, token: object, step: int, done: int, total: int) -> None:
        """How far a participant's measurement of ``step`` is (``done`` of ``total``)."""
        now = self.clock()
        self._put_progress(code, lambda d: rules.check_progress(d, now, token, step, done, total))

    def progress(self, code: str, step: int) -> dict[str, tuple[int, int]]:
        """Every participant's measurement progress at ``step``, by token."""
        doc = self._live(code)
        if doc is None:
            return {}
        return {t: p for t, p in self._progress(code, step).items() if t in doc.members}


# --------------------------------------------------------------------- SQLite
SCHEMA = """
CREATE TABLE IF NOT EXISTS room_docs (
    code TEXT NOT NULL, part TEXT NOT NULL, version TEXT NOT NULL, expires REAL NOT NULL,
    doc TEXT NOT NULL, PRIMARY KEY (code, part));
CREATE TABLE IF NOT EXISTS room_progress (
    code TEXT NOT NULL, step INTEGER NOT NULL, token TEXT NOT NULL,
    done INTEGER NOT NULL, total INTEGER NOT NULL, PRIMARY KEY (code, step, token));
CREATE TABLE IF NOT EXISTS room_index (
    kind TEXT NOT NULL, key TEXT NOT NULL, code TEXT NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (kind, key, code));
CREATE TABLE IF NOT EXISTS probe (id INTEGER PRIMARY KEY, at REAL NOT NULL);
"""
# The earlier layout's tables: dropped when a store opens a file that has them.
OLD_TABLES = ("rooms", "members", "votes", "measures", "progress", "removed", "hits")


class SQLiteStore(RoomStore):
    """Rooms in one SQLite file, shared by every process that opens it."""

    def __init__(self, path: str | Path, clock: Callable[[], float] = time.time) -> None:
        super().__init__(clock)
        self.path = str(path)
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
        self._write(self._drop_old)
        # Held open, never used: the connection each operation opens is then never the
        # file's last, whose close would copy the WAL into the file (every page written
        # since) at every write. SQLite's automatic checkpoint (every 1000 pages) does
        # that instead. Closed with the store object, by whichever thread drops it.
        self._keeper = sqlite3.connect(self.path, check_same_thread=False)
        weakref.finalize(self, self._keeper.close)

    @staticmethod
    def _drop_old(db: sqlite3.Connection) -> None:
        have = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        for table in OLD_TABLES:
            if table in have:
                db.execute(f"DROP TABLE {table}")  # our own names

    def probe(self) -> None:
        """One write transaction (a row of its own): fails where the file, or the
        folder its WAL files go in, cannot be written (SQLite opens a file it may
        only read without an error)."""
        self._write(
            lambda db: db.execute("INSERT OR REPLACE INTO probe VALUES (1, ?)", (self.clock(),))
        )

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.execute("PRAGMA busy_timeout=30000")
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in one write transaction (all or nothing); returns once it is
        committed (WAL with synchronous=NORMAL: a killed process keeps it)."""
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                out = fn(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return out
        finally:
            db.close()

    def _parts(self, code: str, names: Sequence[str] | None, client: Any = None) -> Doc | None:
        """(One statement, so one snapshot, which reads the text only of the parts
        this process does not hold at their stored versions.)"""
        if client is None:
            db = self._connect()
            try:
                return self._parts(code, names, db)
            finally:
                db.close()
        held = self._holding_now(code, names)
        known = [f"{name}@{version}" for name, (version, _) in held.items()] or [""]
        sql = (
            "SELECT part, version, CASE WHEN part || '@' || version IN "
            f"({_placeholders(known)}) THEN NULL ELSE doc END FROM room_docs WHERE code = ?"
        )
        args = [*known, code]
        if names is not None:
            sql += f" AND part IN ({_placeholders(names)})"
            args += names
        rows = client.execute(sql, args).fetchall()
        versions = {name: version for name, version, _ in rows}
        texts = {name: text for name, _, text in rows if text is not None}
        return self._doc_of(code, held, versions, texts)

    def _transact(
        self, code: str, fn: Rule[T], keep: Keep = (), names: Sequence[str] | None = (ROOM,)
    ) -> T:
        version = secrets.token_hex(8)

        def txn(db: sqlite3.Connection) -> _Outcome[T]:
            o = _run(fn, self._parts(code, names, db), keep, names)
            if o.doc is not None and o.written:
                db.executemany(
                    "INSERT OR REPLACE INTO room_docs (code, part, version, expires, doc) "
                    "VALUES (?, ?, ?, ?, ?)",
                    [(code, name, version, o.doc.expires, t) for name, t in o.written.items()],
                )
                if o.changes is not None:
                    self._follow(db, code, o.changes)
            return o

        return self._settle(code, version, self._write(txn))

    def _follow(self, db: sqlite3.Connection, code: str, changes: _Changes) -> None:
        db.executemany(
            "INSERT OR REPLACE INTO room_index VALUES ('browser', ?, ?, ?)",
            [(browser, code, at) for browser, at in changes.joined],
        )
        if changes.presenter is not None:
            db.execute(
                "INSERT OR REPLACE INTO room_index VALUES ('presenter', ?, ?, ?)",
                (changes.presenter, code, self.clock()),
            )
        db.executemany(
            "DELETE FROM room_progress WHERE code = ? AND token = ?",
            [(code, token) for token in changes.left],
        )

    def _insert(self, doc: Doc) -> bool:
        version = secrets.token_hex(8)

        def txn(db: sqlite3.Connection) -> bool:
            # Expired rooms go first (and their votes): no personal data is kept longer.
            db.execute("DELETE FROM room_docs WHERE expires <= ?", (self.clock(),))
            for table in ("room_progress", "room_index"):
                db.execute(f"DELETE FROM {table} WHERE code NOT IN (SELECT code FROM room_docs)")
            if db.execute("SELECT 1 FROM room_docs WHERE code = ?", (doc.code,)).fetchone():
                return False
            db.executemany(
                "INSERT INTO room_docs (code, part, version, expires, doc) VALUES (?, ?, ?, ?, ?)",
                [(doc.code, n, version, doc.expires, t) for n, t in rules.dump(doc).items()],
            )
            self._follow(db, doc.code, _changes(None, doc))
            return True

        if not self._write(txn):
            return False
        self._hold(doc.code, version, doc, [ROOM])
        return True

    def _put_progress(self, code: str, check: Rule[tuple[str, int, int, int]]) -> None:
        def txn(db: sqlite3.Connection) -> None:
            token, step, done, total = check(self._parts(code, [ROOM], db))
            db.execute(
                "INSERT OR REPLACE INTO room_progress (code, step, token, done, total) "
                "VALUES (?, ?, ?, ?, ?)",
                (code, step, token, done, total),
            )

        self._write(txn)

    def _progress(self, code: str, step: int) -> dict[str, tuple[int, int]]:
        db = self._connect()
        try:
            rows = db.execute(
                "SELECT token, done, total FROM room_progress WHERE code = ? AND step = ?",
                (code, step),
            ).fetchall()
        finally:
            db.close()
        return {t: (d, n) for t, d, n in rows}

    def _codes(self, kind: str, key: str) -> list[str]:
        db = self._connect()
        try:
            rows = db.execute(
                "SELECT code FROM room_index WHERE kind = ? AND key = ? "
                "ORDER BY at DESC, rowid DESC LIMIT ?",
                (kind, key, INDEXED),
            ).fetchall()
        finally:
            db.close()
        return [r[0] for r in rows]


# ---------------------------------------------------------------------- Redis
class RedisStore(RoomStore):
    """Rooms in Redis (``REDIS_URL``), shared by replicas on any number of machines."""

    def __init__(
        self, url: str, clock: Callable[[], float] = time.time, prefix: str = "resviz:"
    ) -> None:
        super().__init__(clock)
        import redis  # only where REDIS_URL asks for it

        # Any: redis-py's hints say bytes or str; decode_responses makes every reply str.
        self.r: Any = redis.Redis.from_url(url, decode_responses=True)
        self.p = prefix

    def _k(self, *parts: object) -> str:
        return self.p + ":".join(str(p) for p in parts)

    def _doc_key(self, code: str) -> str:
        return self._k("room-doc", code)

    def _progress_keys(self, code: str) -> list[str]:
        return [self._k("room-progress", code, s) for s in range(1, MAX_STEPS + 1)]

    def probe(self) -> None:
        """PING, then a SET of a scratch key that expires in a minute: fails on a
        wrong or missing password, a read-only replica, a full memory."""
        self.r.ping()
        self.r.set(self._k("probe"), repr(self.clock()), ex=60)

    def _left(self, doc: Doc) -> int:
        """Seconds until the room's keys expire (a minute after the room)."""
        return max(1, math.ceil(doc.expires - self.clock()) + 60)

    def _parts(self, code: str, names: Sequence[str] | None, client: Any = None) -> Doc | None:
        """(One HMGET for the room part's version and the steps' parts, which are
        small, with theirs; a second for the room part's text, if this process does
        not hold it at that version.)"""
        client = client if client is not None else self.r
        key = self._doc_key(code)
        if names is None:
            names = [f for f in client.hkeys(key) if not f.endswith("@v")]
        steps = [n for n in names if n != ROOM]
        got = client.hmget(key, [f"{ROOM}@v", *(f for n in steps for f in (n, f"{n}@v"))])
        held = self._holding_now(code, [ROOM])
        versions: dict[str, str] = {}
        texts: dict[str, str] = {}
        for i, name in enumerate(steps):
            if got[1 + 2 * i] is not None:
                texts[name], versions[name] = got[1 + 2 * i], got[2 + 2 * i]
        version = got[0]
        if version is not None and (ROOM not in held or held[ROOM][0] != version):
            text, version = client.hmget(key, ROOM, f"{ROOM}@v")
            if text is not None:
                texts[ROOM] = text
        if version is not None:
            versions[ROOM] = version
        return self._doc_of(code, held, versions, texts)

    def _retry(self, fn: Callable[[Any], T]) -> T:
        """``fn(pipe)`` with a pipeline, until its MULTI/EXEC is not refused for a
        write that came between: again after a random wait, of up to 1 ms at first,
        doubling to 50 ms, so that writes to one room at once spread out (for
        ``CONTENDED_S`` at most, then the refusal is raised, a ``RedisError``)."""
        from redis.exceptions import WatchError

        started = time.monotonic()
        for attempt in itertools.count():
            try:
                with self.r.pipeline() as pipe:
                    return fn(pipe)
            except WatchError:
                if time.monotonic() - started > CONTENDED_S:
                    raise
                time.sleep(random.uniform(0, min(0.05, 0.001 * 2 ** min(attempt, 6))))
        raise AssertionError("unreachable")

    def _transact(
        self, code: str, fn: Rule[T], keep: Keep = (), names: Sequence[str] | None = (ROOM,)
    ) -> T:
        key = self._doc_key(code)
        version = secrets.token_hex(8)

        def attempt(pipe: Any) -> _Outcome[T]:
            pipe.watch(key)
            o = _run(fn, self._parts(code, names, pipe), keep, names)
            if o.doc is not None and o.written:
                indexed = self._indexed(pipe, o.doc, o.changes)
                pipe.multi()
                versions = {f"{n}@v": version for n in o.written}
                pipe.hset(key, mapping={**o.written, **versions})
                pipe.expire(key, self._left(o.doc))
                if o.changes is not None:
                    self._follow(pipe, o.doc, o.changes, indexed)
                pipe.execute()
            return o

        return self._settle(code, version, self._retry(attempt))

    def _indexed(
        self, pipe: Any, doc: Doc, changes: _Changes | None
    ) -> list[tuple[str, float, int]]:
        """The index entries a change adds (key, when, and the key's expiry: it
        outlives the longest-lived room it names), read before the MULTI."""
        if changes is None:
            return []
        found = [(self._k("browser-rooms", b), at) for b, at in changes.joined]
        if changes.presenter is not None:
            found.append((self._k("presenter-rooms", changes.presenter), self.clock()))
        return [(key, at, max(self._left(doc), pipe.ttl(key))) for key, at in found]

    def _follow(
        self, pipe: Any, doc: Doc, changes: _Changes, indexed: list[tuple[str, float, int]]
    ) -> None:
        for key, at, left in indexed:
            pipe.zadd(key, {doc.code: at})
            pipe.zremrangebyrank(key, 0, -INDEXED - 1)
            pipe.expire(key, left)
        if changes.left:
            for key in self._progress_keys(doc.code):
                pipe.hdel(key, *changes.left)

    def _insert(self, doc: Doc) -> bool:
        from redis.exceptions import WatchError

        key = self._doc_key(doc.code)
        version = secrets.token_hex(8)
        try:
            with self.r.pipeline() as pipe:
                pipe.watch(key)
                text = pipe.hget(key, ROOM)
                if text is not None and rules.live(rules.load_room(text), self.clock()):
                    return False
                changes = _changes(None, doc)
                indexed = self._indexed(pipe, doc, changes)
                pipe.multi()
                pipe.delete(key, *self._progress_keys(doc.code))  # an expired room's
                texts = rules.dump(doc)
                pipe.hset(key, mapping={**texts, **{f"{n}@v": version for n in texts}})
                pipe.expire(key, self._left(doc))
                self._follow(pipe, doc, changes, indexed)
                pipe.execute()
        except WatchError:  # another room took the code meanwhile
            return False
        self._hold(doc.code, version, doc, [ROOM])
        return True

    def _put_progress(self, code: str, check: Rule[tuple[str, int, int, int]]) -> None:
        def attempt(pipe: Any) -> None:
            pipe.watch(self._doc_key(code))
            doc = self._parts(code, [ROOM], pipe)
            token, step, done, total = check(doc)
            assert doc is not None  # the check passed
            key = self._k("room-progress", code, step)
            pipe.multi()
            pipe.hset(key, token, f"{done}/{total}")
            pipe.expire(key, self._left(doc))
            pipe.execute()

        self._retry(attempt)

    def _progress(self, code: str, step: int) -> dict[str, tuple[int, int]]:
        out: dict[str, tuple[int, int]] = {}
        for token, raw in self.r.hgetall(self._k("room-progress", code, step)).items():
            done, _, total = raw.partition("/")
            out[token] = (int(done), int(total))
        return out

    def _codes(self, kind: str, key: str) -> list[str]:
        return list(self.r.zrevrange(self._k(f"{kind}-rooms", key), 0, INDEXED - 1))


def data_dir() -> Path:
    """Where the server writes its data: ``RESVIZ_DATA_DIR``, else ``artifacts/`` in
    the checkout (the container sets ``/data``: its code folder is read-only)."""
    return Path(os.environ.get("RESVIZ_DATA_DIR") or ROOT / "artifacts")


def default_db() -> Path:
    """The SQLite rooms file: ``RESVIZ_ROOM_DB``, else ``rooms.sqlite3`` in :func:`data_dir`."""
    return Path(os.environ.get("RESVIZ_ROOM_DB") or data_dir() / "rooms.sqlite3")


def masked(url: str) -> str:
    """``url`` with its password (``:PASSWORD@`` or ``?password=``) shown as ``***``."""
    url = re.sub(r"(?i)([?&]password=)[^&#]*", r"\1***", url)
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        user = parts.username or ""
        host = parts.netloc.rpartition("@")[2]
    except ValueError:  # not a URL urllib can read: keep nothing after a scheme
        return url.partition("://")[0] + "://***"
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def _secrets_of(url: str) -> list[str]:
    """The password(s) in a Redis URL, as written and decoded, to mask in a message."""
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    found = [password] if password else []
    found += re.findall(r"(?i)[?&]password=([^&#]+)", url)
    return [s for f in found for s in {f, unquote(f)} if s]


def store_errors() -> tuple[type[BaseException], ...]:
    """What a store raises when it cannot answer (a locked or missing file, a network
    error, Redis down)."""
    errors: list[type[BaseException]] = [sqlite3.Error, OSError]
    try:
        from redis.exceptions import RedisError
    except ImportError:
        pass
    else:
        errors.append(RedisError)
    return tuple(errors)


_reported: set[str] = set()
_reporting = threading.Lock()


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a URL's host name) is this computer: localhost or a loopback
    address."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # another host name
        return False


def check_redis_url(url: str) -> None:
    """Raise ``ValueError`` for a Redis on another machine reached without a password:
    whoever reaches that Redis could rewrite a room's presenter key and present it.
    A Redis on this machine (loopback, a unix socket) may go without one."""
    parts = urlsplit(url)
    if parts.scheme == "unix" or parts.password or re.search(r"(?i)[?&]password=[^&#]", url):
        return
    host = (parts.hostname or "").lower()
    if not is_loopback(host):
        raise ValueError(
            f"REDIS_URL names a Redis on another machine ({host or 'no host'}) with no "
            "password: anyone who reaches it could present every room. Start that Redis "
            "with a password (requirepass) and put it in the URL "
            "(redis://:PASSWORD@host:6379/0), or use a Redis on this machine"
        )


def open_store() -> RoomStore:
    """Redis where ``REDIS_URL`` is set, else the SQLite file (:func:`default_db`),
    written to once (:meth:`RoomStore.probe`). One that cannot be opened or written is
    logged (once per cause) as ``workshop rooms: cannot write <where>: <cause>``, the
    Redis password masked, and raised as :class:`StoreUnavailable`."""
    url = os.environ.get("REDIS_URL")
    where = masked(url) if url else str(default_db())
    # ValueError: a malformed REDIS_URL; ImportError: REDIS_URL set where the redis
    # package is not installed.
    failures: tuple[type[BaseException], ...] = (*store_errors(), ValueError, ImportError)
    try:
        if url:
            check_redis_url(url)
        store: RoomStore = RedisStore(url) if url else SQLiteStore(default_db())
        store.probe()
    except failures as exc:
        cause = f"{type(exc).__name__}: {exc}"
        for secret in _secrets_of(url or ""):
            cause = cause.replace(secret, "***")
        line = f"workshop rooms: cannot write {where}: {cause}"
        with _reporting:
            first = line not in _reported
            _reported.add(line)
        if first:
            _LOG.error(line)
        raise StoreUnavailable(f"workshop rooms: cannot write {where}") from exc
    return store
