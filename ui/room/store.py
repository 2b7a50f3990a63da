"""A workshop room's shared state, in a store every replica reads.

One interface, :class:`RoomStore`, two backends:

* :class:`SQLiteStore`: one file (the default, ``rooms.sqlite3`` in the data folder
  ``RESVIZ_DATA_DIR``, else in ``artifacts/``; or the file ``RESVIZ_ROOM_DB``), in WAL
  mode, every write one ``BEGIN IMMEDIATE`` transaction, so the N replica processes of
  ``make workshop`` on one machine share it and a process killed mid-lesson leaves
  every committed vote behind.
* :class:`RedisStore`: ``REDIS_URL``, for replicas on several machines. Each write
  is one command or one Lua script, which Redis runs atomically. A password in the
  URL (``redis://:PASSWORD@host:6379/0``) is never logged (:func:`masked`).

:func:`open_store` opens the one this process uses and writes to it once
(:meth:`RoomStore.probe`): a store that cannot be written is logged at once, as one
ERROR line ``workshop rooms: cannot write <where>: <cause>``, not found out by the
first participant.

A room has a short join code, a presenter key (only its SHA-256 is stored; checked
with :func:`hmac.compare_digest`; :meth:`RoomStore.claim` takes it back from any
browser, at most ``KEY_FAILS_PER_MINUTE`` wrong keys a minute per room, each one
logged), optionally the SHA-256 of the presenting browser's credential (a reload of
that browser presents again without the key), the lesson step and phase the
presenter set, its participants (an optional display name, when they joined, a seed
each: 1, 2, 3, ... in the order they joined, so no two share one, and an opaque
browser id that returns the same participant to a browser that joins again), one
vote per participant per round (round 1 while the phase is ``predict``, round 2
during ``second``), one measured answer per participant per step (and, while a long
measurement runs, how far it is), the tokens the presenter removed, and an expiry (4
hours by default). Joins are limited to ``JOINS_PER_MINUTE_ADDRESS`` a minute per
client address (as the workshop server's nginx sees it), ``JOINS_PER_MINUTE_BROWSER``
per browser, and ``JOINS_PER_MINUTE`` per room, a guard for the store that one address
alone cannot reach. Every write returns only once it is
committed (SQLite: after ``COMMIT``; Redis: after the command's reply). Nothing here
imports streamlit.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import os
import re
import secrets
import sqlite3
import threading
import time
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

# No 0/O, 1/I/L: a code read off a projector is typed without guessing.
ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LEN = 6
TTL = 4 * 3600.0
NAME_MAX = 40
CHOICE_MAX = 120
PHASES = ("predict", "revealed", "second")
# A lesson's steps (ui.lessons.MAX_STEPS): the Redis removal clears this many steps.
MAX_STEPS = 60
# Sliding one-minute windows, per room: every Join press, every Join press from one
# browser, every wrong presenter key (past the limit even the right key waits).
WINDOW_S = 60.0
JOINS_PER_MINUTE = 300  # per room: five addresses at their limit
JOINS_PER_MINUTE_ADDRESS = 60  # a class behind one address (a venue's NAT) joins in a minute
JOINS_PER_MINUTE_BROWSER = 5
KEY_FAILS_PER_MINUTE = 10
# The browsers that present a room without the key on a reload (the latest claims).
PRESENTING_BROWSERS = 4
# Which vote round a phase takes (the phases between take none).
ROUND_OF = {"predict": 1, "second": 2}
ROOT = Path(__file__).resolve().parents[2]
_LOG = logging.getLogger(__name__)


class RoomError(Exception):
    """A refused room action; the message is ours and can be shown as is."""


class NotPresenter(RoomError):
    """The secret given is not the room's presenter secret."""


class TooMany(RoomError):
    """A rate limit refused the action (joins, or wrong presenter keys)."""


TOO_MANY_JOINS = "Too many people are joining this room at once: try again in a few seconds."
TOO_MANY_JOINS_BROWSER = (
    "This browser has joined this room too often in the last minute: wait a minute and try again."
)
TOO_MANY_JOINS_ADDRESS = (
    "Too many joins from your network in the last minute: wait a minute and try again."
)
TOO_MANY_KEYS = (
    "Too many wrong presenter keys for this room in the last minute: check the key and "
    "try again in a minute."
)
WRONG_KEY = "This presenter key does not open that room."
LOCKED = "The presenter has closed this room to new participants."
FULL = "This room is full: the presenter set its size."
MAX_MEMBERS = 1000  # the largest size a presenter may set


class StoreUnavailable(OSError):
    """The store could not be opened or written (:func:`open_store` logged why). An
    ``OSError``, so the page's guard shows its message for it as for any outage."""


@dataclass(frozen=True)
class Room:
    code: str
    lesson: str
    step: int
    phase: str
    hide_names: bool
    created: float
    expires: float
    closed: bool
    locked: bool = False  # no new participant (one who joined before comes back)
    max_members: int = 0  # the room's size the presenter set; 0: no cap


@dataclass(frozen=True)
class Member:
    token: str
    name: str | None
    seed: int
    joined: float = 0.0


def _browser(raw: object) -> str | None:
    """A browser id as the store keeps it (an opaque string from the view), or None."""
    if not isinstance(raw, str) or not raw or len(raw) > 128:
        return None
    return raw


def _address(raw: object) -> str | None:
    """A client address as a short hash (the limit's key; the store keeps no address)."""
    if not isinstance(raw, str) or not raw.strip() or len(raw) > 64:
        return None
    return _hash("address:" + raw.strip())[:32]


def clean_name(raw: object) -> str | None:
    """A display name: printable characters only (controls, bidi overrides and
    zero-width characters dropped), whitespace collapsed, at most ``NAME_MAX``
    characters; ``None`` when nothing is left."""
    if not isinstance(raw, str):
        return None
    kept = "".join(
        " " if ch.isspace() else ch
        for ch in raw[: 4 * NAME_MAX]
        if ch.isspace() or unicodedata.category(ch)[0] not in "CZ"
    )
    name = " ".join(kept.split())[:NAME_MAX].strip()
    return name or None


def normalize_code(raw: object) -> str | None:
    """A join code as typed (any case, spaces or dashes) or ``None`` if it cannot be one."""
    if not isinstance(raw, str):
        return None
    code = "".join(ch for ch in raw[:40].upper() if ch not in " -")
    if len(code) != CODE_LEN or any(ch not in ALPHABET for ch in code):
        return None
    return code


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LEN))


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()


def _check_member(db: sqlite3.Connection, code: str, token: object) -> None:
    """Refuse a token that has not joined the room ``code``."""
    known = db.execute(
        "SELECT 1 FROM members WHERE code = ? AND token = ?", (code, token)
    ).fetchone()
    if known is None:
        raise RoomError("You are not in this room: join it again.")


def _check_choice(choice: object) -> str:
    if not isinstance(choice, str) or not choice or len(choice) > CHOICE_MAX:
        raise RoomError("That answer is not one of the choices.")
    return choice


class RoomStore(ABC):
    """The room operations every backend provides, atomically."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock

    # -- presenter
    @abstractmethod
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

    @abstractmethod
    def probe(self) -> None:
        """Write to the store once (raises what the store raises if it cannot)."""

    @abstractmethod
    def _update(self, code: str, fields: dict[str, Any]) -> Room:
        """Write ``fields`` of a live room (the secret was checked)."""

    @abstractmethod
    def _presenter_hashes(self, code: str) -> tuple[str | None, tuple[str, ...]]:
        """The live room's key hash and its presenting browsers' credential hashes
        (``None, ()`` if it is gone)."""

    @abstractmethod
    def _hit(self, code: str, kind: str, limit: int, count: bool = True) -> bool:
        """A sliding ``WINDOW_S`` window of events ``kind`` in room ``code``: False if
        ``limit`` are in it already; else True, and (``count``) this one is added."""

    def is_presenter(self, code: str, secret: object) -> bool:
        """Whether ``secret`` is the room's presenter key or its presenting browser's
        credential (constant-time comparisons; a member token is neither)."""
        key_hash, browsers = self._presenter_hashes(code)
        if key_hash is None or not isinstance(secret, str) or not secret:
            return False
        given = _hash(secret)
        found = [hmac.compare_digest(given, h) for h in (key_hash, *browsers)]
        return any(found)

    def claim(self, code: str, key: object, browser: object = None) -> Room:
        """Take the room back with its presenter key (typed on any browser);
        ``browser``, the claiming browser's credential, then presents on a reload too.
        :class:`NotPresenter` for a wrong key (logged, never the key itself), and
        :class:`TooMany` for a wrong key once ``KEY_FAILS_PER_MINUTE`` came in the last
        minute (logged once a minute at most). The right key is never refused: others'
        wrong keys cannot lock the presenter out, and a key of 192 random bits is not
        guessed by trying. The room is unchanged on a refusal."""
        room = self.room(code)
        if room is None:
            raise RoomError("This room has expired or does not exist.")
        key_hash, browsers = self._presenter_hashes(code)
        given = _hash(key) if isinstance(key, str) and key else ""
        if key_hash is None or not hmac.compare_digest(given, key_hash):
            if not self._hit(code, "key", KEY_FAILS_PER_MINUTE):
                raise TooMany(TOO_MANY_KEYS)
            _LOG.warning("workshop room %s: a wrong presenter key was refused", code)
            raise NotPresenter(WRONG_KEY)
        cred = _browser(browser)
        if cred is not None:  # the newest first; a few devices at once
            mine = _hash(cred)
            kept = [mine, *(h for h in browsers if h != mine)][:PRESENTING_BROWSERS]
            return self._update(code, {"browser_hash": " ".join(kept)})
        return room

    @abstractmethod
    def presented_by(self, browser: object) -> Room | None:
        """The live, open room this browser credential presents (the latest one)."""

    def _require(self, code: str, secret: object) -> None:
        if self.room(code) is None:
            raise RoomError("This room has expired or does not exist.")
        if not self.is_presenter(code, secret):
            raise NotPresenter("Only the presenter can do that.")

    def go_to(self, code: str, secret: object, step: int) -> Room:
        """Move the room to ``step`` (from 1); its question starts at the predict phase."""
        self._require(code, secret)
        if not isinstance(step, int) or step < 1:
            raise RoomError("No such step.")
        return self._update(code, {"step": step, "phase": "predict"})

    def set_phase(self, code: str, secret: object, phase: str) -> Room:
        self._require(code, secret)
        if phase not in PHASES:
            raise RoomError("No such phase.")
        return self._update(code, {"phase": phase})

    def set_joining(self, code: str, secret: object, locked: bool, max_members: int) -> Room:
        """The presenter locks joins (``locked``: no new participant; one who joined
        before comes back) and sets the room's size (``max_members``, 0 for no cap;
        the members already in stay)."""
        if not isinstance(max_members, int) or not 0 <= max_members <= MAX_MEMBERS:
            raise RoomError(f"A room's size is a whole number from 0 (no cap) to {MAX_MEMBERS}.")
        self._require(code, secret)
        return self._update(code, {"locked": int(bool(locked)), "max_members": max_members})

    def close(self, code: str, secret: object) -> Room:
        self._require(code, secret)
        return self._update(code, {"closed": 1})

    def remove(self, code: str, secret: object, token: object) -> bool:
        """The presenter removes a participant: their membership, votes, measured
        answers and progress go; their token is remembered as removed (their page says
        so). False if ``token`` was not a member."""
        self._require(code, secret)
        if not isinstance(token, str) or not token:
            return False
        return self._remove(code, token)

    @abstractmethod
    def _remove(self, code: str, token: str) -> bool: ...

    # -- everyone
    @abstractmethod
    def room(self, code: str) -> Room | None:
        """The live room (``None`` if it never was, or has expired)."""

    @abstractmethod
    def join(
        self, code: str, name: object = None, browser: object = None, address: object = None
    ) -> Member:
        """A participant of the room: with ``browser`` (an opaque per-browser id), the
        one this browser joined as before (their seed and votes), if any; else a new
        one with the room's next seed. :class:`RoomError` if the room is closed, locked
        or full; :class:`TooMany` past ``JOINS_PER_MINUTE_ADDRESS`` Join presses a
        minute from the client ``address`` (kept hashed), ``JOINS_PER_MINUTE_BROWSER``
        from this browser, or ``JOINS_PER_MINUTE`` in the room."""

    @abstractmethod
    def member_of_browser(self, code: str, browser: object) -> Member | None:
        """The participant this browser joined the live room ``code`` as, if any."""

    @abstractmethod
    def browser_room(self, browser: object) -> tuple[str, Member] | None:
        """The live, open room this browser last joined, and its participant there."""

    @abstractmethod
    def member(self, code: str, token: object) -> Member | None: ...

    def status(self, code: str, token: object) -> tuple[Room | None, bool]:
        """The live room and whether ``token`` is one of its participants (a
        participant's poll, every second)."""
        room = self.room(code)
        return room, room is not None and self.member(code, token) is not None

    @abstractmethod
    def was_removed(self, code: str, token: object) -> bool:
        """Whether the presenter removed the participant ``token`` from the live room."""

    @abstractmethod
    def members(self, code: str) -> list[Member]: ...

    @abstractmethod
    def vote(self, code: str, token: object, step: int, round_: int, choice: object) -> bool:
        """Record a participant's vote; False if they voted in this round already.
        :class:`RoomError` if the room is not taking this round's votes. Returns only
        once the vote is committed to the store."""

    @abstractmethod
    def votes(self, code: str, step: int, round_: int) -> dict[str, str]:
        """Votes of one round, by participant token."""

    @abstractmethod
    def submit_measure(self, code: str, token: object, step: int, answer: object) -> bool:
        """Record a participant's measured answer for ``step``; False if given already."""

    @abstractmethod
    def measures(self, code: str, step: int) -> dict[str, str]: ...

    @abstractmethod
    def set_progress(self, code: str, token: object, step: int, done: int, total: int) -> None:
        """How far a participant's measurement of ``step`` is (``done`` of ``total``)."""

    @abstractmethod
    def progress(self, code: str, step: int) -> dict[str, tuple[int, int]]:
        """Every participant's measurement progress at ``step``, by token."""

    def _check_vote(self, room: Room | None, step: int, round_: int) -> None:
        if room is None:
            raise RoomError("This room has expired or does not exist.")
        if room.closed:
            raise RoomError("The presenter has closed this room.")
        if room.step != step or ROUND_OF.get(room.phase) != round_:
            raise RoomError("The room is not taking votes for this question now.")


def _check_progress(step: object, done: object, total: object) -> tuple[int, int, int]:
    ok = all(isinstance(v, int) and not isinstance(v, bool) for v in (step, done, total))
    if not ok or not 0 <= done <= total or not 0 < total <= 10**9:  # type: ignore[operator]
        raise RoomError("No such progress.")
    return step, done, total  # type: ignore[return-value]


# --------------------------------------------------------------------- SQLite
SCHEMA = """
CREATE TABLE IF NOT EXISTS rooms (
    code TEXT PRIMARY KEY, secret_hash TEXT NOT NULL, lesson TEXT NOT NULL,
    step INTEGER NOT NULL, phase TEXT NOT NULL, hide_names INTEGER NOT NULL,
    created REAL NOT NULL, expires REAL NOT NULL, closed INTEGER NOT NULL DEFAULT 0,
    seq INTEGER NOT NULL DEFAULT 0, browser_hash TEXT);
CREATE TABLE IF NOT EXISTS members (
    code TEXT NOT NULL, token TEXT NOT NULL, name TEXT, seed INTEGER NOT NULL,
    joined REAL NOT NULL DEFAULT 0, browser TEXT,
    PRIMARY KEY (code, token), UNIQUE (code, seed));
CREATE TABLE IF NOT EXISTS votes (
    code TEXT NOT NULL, step INTEGER NOT NULL, round INTEGER NOT NULL,
    token TEXT NOT NULL, choice TEXT NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (code, step, round, token));
CREATE TABLE IF NOT EXISTS measures (
    code TEXT NOT NULL, step INTEGER NOT NULL, token TEXT NOT NULL,
    answer TEXT NOT NULL, PRIMARY KEY (code, step, token));
CREATE TABLE IF NOT EXISTS progress (
    code TEXT NOT NULL, step INTEGER NOT NULL, token TEXT NOT NULL,
    done INTEGER NOT NULL, total INTEGER NOT NULL, PRIMARY KEY (code, step, token));
CREATE TABLE IF NOT EXISTS removed (
    code TEXT NOT NULL, token TEXT NOT NULL, PRIMARY KEY (code, token));
CREATE TABLE IF NOT EXISTS hits (
    code TEXT NOT NULL, kind TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS hits_by_kind ON hits (code, kind, at);
CREATE TABLE IF NOT EXISTS probe (id INTEGER PRIMARY KEY, at REAL NOT NULL);
"""
# Columns added since the first release of the file: a file written by an older
# version gets them when a store opens it (its rooms, if any, keep working).
ADDED = {
    "rooms": (
        ("browser_hash", "TEXT"),
        ("locked", "INTEGER NOT NULL DEFAULT 0"),
        ("max_members", "INTEGER NOT NULL DEFAULT 0"),
    ),
    "members": (("joined", "REAL NOT NULL DEFAULT 0"), ("browser", "TEXT")),
}
INDEXES = """
CREATE UNIQUE INDEX IF NOT EXISTS members_browser ON members (code, browser)
    WHERE browser IS NOT NULL;
CREATE INDEX IF NOT EXISTS members_by_browser ON members (browser) WHERE browser IS NOT NULL;
"""
_ROOM_TABLES = ("members", "votes", "measures", "progress", "removed", "hits", "rooms")


class SQLiteStore(RoomStore):
    """Rooms in one SQLite file, shared by every process that opens it."""

    def __init__(self, path: str | Path, clock: Callable[[], float] = time.time) -> None:
        super().__init__(clock)
        self.path = str(path)
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
        self._write(self._migrate)

    @staticmethod
    def _migrate(db: sqlite3.Connection) -> None:
        for table, columns in ADDED.items():
            have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
            for name, decl in columns:
                if name not in have:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {decl}")
        for statement in INDEXES.split(";"):
            if statement.strip():
                db.execute(statement)

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

    def _write(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
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

    def _read(self, sql: str, args: tuple = ()) -> list[tuple]:
        db = self._connect()
        try:
            return db.execute(sql, args).fetchall()
        finally:
            db.close()

    def _room(self, db: sqlite3.Connection, code: str) -> Room | None:
        row = db.execute(
            "SELECT code, lesson, step, phase, hide_names, created, expires, closed, locked, "
            "max_members FROM rooms WHERE code = ?",
            (code,),
        ).fetchone()
        if row is None or row[6] <= self.clock():
            return None
        return Room(
            row[0], row[1], row[2], row[3], bool(row[4]), row[5], row[6], bool(row[7]),
            bool(row[8]), int(row[9]),
        )  # fmt: skip

    def create(
        self,
        lesson: str,
        step: int = 1,
        hide_names: bool = False,
        ttl: float = TTL,
        browser: object = None,
    ) -> tuple[Room, str]:
        secret = secrets.token_urlsafe(24)
        cred = _browser(browser)
        now = self.clock()

        def txn(db: sqlite3.Connection) -> Room:
            # Expired rooms go first (and their votes): no personal data is kept longer.
            gone = [r[0] for r in db.execute("SELECT code FROM rooms WHERE expires <= ?", (now,))]
            for table in _ROOM_TABLES:
                db.executemany(f"DELETE FROM {table} WHERE code = ?", [(c,) for c in gone])
            db.execute("DELETE FROM hits WHERE at <= ?", (now - WINDOW_S,))
            while True:
                code = new_code()
                if db.execute("SELECT 1 FROM rooms WHERE code = ?", (code,)).fetchone() is None:
                    break
            db.execute(
                "INSERT INTO rooms (code, secret_hash, lesson, step, phase, hide_names, created, "
                "expires, browser_hash) VALUES (?, ?, ?, ?, 'predict', ?, ?, ?, ?)",
                (
                    code,
                    _hash(secret),
                    lesson,
                    step,
                    int(hide_names),
                    now,
                    now + ttl,
                    None if cred is None else _hash(cred),
                ),
            )
            room = self._room(db, code)
            assert room is not None
            return room

        return self._write(txn), secret

    def _presenter_hashes(self, code: str) -> tuple[str | None, tuple[str, ...]]:
        rows = self._read(
            "SELECT secret_hash, browser_hash FROM rooms WHERE code = ? AND expires > ?",
            (code, self.clock()),
        )
        return (rows[0][0], tuple((rows[0][1] or "").split())) if rows else (None, ())

    def _count(self, db: sqlite3.Connection, code: str, kind: str, limit: int, add: bool) -> bool:
        now = self.clock()
        db.execute("DELETE FROM hits WHERE code = ? AND at <= ?", (code, now - WINDOW_S))
        (n,) = db.execute(
            "SELECT COUNT(*) FROM hits WHERE code = ? AND kind = ?", (code, kind)
        ).fetchone()
        if n >= limit:
            return False
        if add:
            db.execute("INSERT INTO hits (code, kind, at) VALUES (?, ?, ?)", (code, kind, now))
        return True

    def _hit(self, code: str, kind: str, limit: int, count: bool = True) -> bool:
        return self._write(lambda db: self._count(db, code, kind, limit, count))

    def presented_by(self, browser: object) -> Room | None:
        cred = _browser(browser)
        if cred is None:
            return None
        rows = self._read(
            "SELECT code FROM rooms WHERE ' ' || browser_hash || ' ' LIKE ? AND expires > ? "
            "AND closed = 0 ORDER BY created DESC LIMIT 1",
            (f"% {_hash(cred)} %", self.clock()),
        )
        return self.room(rows[0][0]) if rows else None

    def _update(self, code: str, fields: dict[str, Any]) -> Room:
        def txn(db: sqlite3.Connection) -> Room:
            if self._room(db, code) is None:
                raise RoomError("This room has expired or does not exist.")
            sets = ", ".join(f"{k} = ?" for k in fields)  # our own field names
            db.execute(f"UPDATE rooms SET {sets} WHERE code = ?", (*fields.values(), code))
            room = self._room(db, code)
            assert room is not None
            return room

        return self._write(txn)

    def _remove(self, code: str, token: str) -> bool:
        def txn(db: sqlite3.Connection) -> bool:
            cur = db.execute("DELETE FROM members WHERE code = ? AND token = ?", (code, token))
            if cur.rowcount != 1:
                return False
            for table in ("votes", "measures", "progress"):
                db.execute(f"DELETE FROM {table} WHERE code = ? AND token = ?", (code, token))
            db.execute("INSERT OR IGNORE INTO removed (code, token) VALUES (?, ?)", (code, token))
            return True

        return self._write(txn)

    def room(self, code: str) -> Room | None:
        db = self._connect()
        try:
            return self._room(db, code)
        finally:
            db.close()

    _MEMBER = "SELECT token, name, seed, joined FROM members"

    def join(
        self, code: str, name: object = None, browser: object = None, address: object = None
    ) -> Member:
        clean = clean_name(name)
        who = _browser(browser)
        where = _address(address)

        def txn(db: sqlite3.Connection) -> Member:
            room = self._room(db, code)
            if room is None:
                raise RoomError("This room has expired or does not exist.")
            if room.closed:
                raise RoomError("The presenter has closed this room.")
            if not self._count(db, code, "join", JOINS_PER_MINUTE, add=False):
                raise TooMany(TOO_MANY_JOINS)
            if where is not None and not self._count(
                db, code, "join@" + where, JOINS_PER_MINUTE_ADDRESS, add=True
            ):
                raise TooMany(TOO_MANY_JOINS_ADDRESS)
            if who is not None and not self._count(
                db, code, "join:" + who, JOINS_PER_MINUTE_BROWSER, add=True
            ):
                raise TooMany(TOO_MANY_JOINS_BROWSER)
            self._count(db, code, "join", JOINS_PER_MINUTE, add=True)
            if who is not None:
                row = db.execute(
                    self._MEMBER + " WHERE code = ? AND browser = ?", (code, who)
                ).fetchone()
                if row is not None:
                    return Member(*row)
            if room.locked:
                raise RoomError(LOCKED)
            if room.max_members:
                (n,) = db.execute("SELECT count(*) FROM members WHERE code = ?", (code,)).fetchone()
                if n >= room.max_members:
                    raise RoomError(FULL)
            db.execute("UPDATE rooms SET seq = seq + 1 WHERE code = ?", (code,))
            (seed,) = db.execute("SELECT seq FROM rooms WHERE code = ?", (code,)).fetchone()
            token = secrets.token_urlsafe(16)
            now = self.clock()
            db.execute(
                "INSERT INTO members (code, token, name, seed, joined, browser) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (code, token, clean, seed, now, who),
            )
            return Member(token, clean, seed, now)

        return self._write(txn)

    def member_of_browser(self, code: str, browser: object) -> Member | None:
        who = _browser(browser)
        if who is None or self.room(code) is None:
            return None
        rows = self._read(self._MEMBER + " WHERE code = ? AND browser = ?", (code, who))
        return Member(*rows[0]) if rows else None

    def browser_room(self, browser: object) -> tuple[str, Member] | None:
        who = _browser(browser)
        if who is None:
            return None
        rows = self._read(
            "SELECT m.code, m.token, m.name, m.seed, m.joined FROM members m "
            "JOIN rooms r ON r.code = m.code WHERE m.browser = ? AND r.expires > ? "
            "AND r.closed = 0 ORDER BY m.joined DESC LIMIT 1",
            (who, self.clock()),
        )
        return (rows[0][0], Member(*rows[0][1:])) if rows else None

    def member(self, code: str, token: object) -> Member | None:
        if not isinstance(token, str) or self.room(code) is None:
            return None
        rows = self._read(self._MEMBER + " WHERE code = ? AND token = ?", (code, token))
        return Member(*rows[0]) if rows else None

    def was_removed(self, code: str, token: object) -> bool:
        if not isinstance(token, str) or self.room(code) is None:
            return False
        return bool(self._read("SELECT 1 FROM removed WHERE code = ? AND token = ?", (code, token)))

    def status(self, code: str, token: object) -> tuple[Room | None, bool]:
        db = self._connect()  # one connection for both reads
        try:
            room = self._room(db, code)
            if room is None or not isinstance(token, str):
                return room, False
            known = db.execute(
                "SELECT 1 FROM members WHERE code = ? AND token = ?", (code, token)
            ).fetchone()
            return room, known is not None
        finally:
            db.close()

    def members(self, code: str) -> list[Member]:
        if self.room(code) is None:
            return []
        rows = self._read(self._MEMBER + " WHERE code = ? ORDER BY seed", (code,))
        return [Member(*r) for r in rows]

    def vote(self, code: str, token: object, step: int, round_: int, choice: object) -> bool:
        choice = _check_choice(choice)

        def txn(db: sqlite3.Connection) -> bool:
            self._check_vote(self._room(db, code), step, round_)
            _check_member(db, code, token)
            cur = db.execute(
                "INSERT OR IGNORE INTO votes (code, step, round, token, choice, at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (code, step, round_, token, choice, self.clock()),
            )
            return cur.rowcount == 1

        return self._write(txn)

    def votes(self, code: str, step: int, round_: int) -> dict[str, str]:
        if self.room(code) is None:
            return {}
        rows = self._read(
            "SELECT token, choice FROM votes WHERE code = ? AND step = ? AND round = ?",
            (code, step, round_),
        )
        return dict(rows)

    def submit_measure(self, code: str, token: object, step: int, answer: object) -> bool:
        answer = _check_choice(answer)

        def txn(db: sqlite3.Connection) -> bool:
            room = self._room(db, code)
            if room is None or room.closed:
                raise RoomError("This room has expired or is closed.")
            if room.step != step or room.phase == "predict":
                raise RoomError("The room is not collecting measurements for this step now.")
            _check_member(db, code, token)
            cur = db.execute(
                "INSERT OR IGNORE INTO measures (code, step, token, answer) VALUES (?, ?, ?, ?)",
                (code, step, token, answer),
            )
            return cur.rowcount == 1

        return self._write(txn)

    def measures(self, code: str, step: int) -> dict[str, str]:
        if self.room(code) is None:
            return {}
        rows = self._read(
            "SELECT token, answer FROM measures WHERE code = ? AND step = ?", (code, step)
        )
        return dict(rows)

    def set_progress(self, code: str, token: object, step: int, done: int, total: int) -> None:
        step, done, total = _check_progress(step, done, total)

        def txn(db: sqlite3.Connection) -> None:
            room = self._room(db, code)
            if room is None or room.closed or room.step != step:
                raise RoomError("The room is not at this step now.")
            _check_member(db, code, token)
            db.execute(
                "INSERT OR REPLACE INTO progress (code, step, token, done, total) "
                "VALUES (?, ?, ?, ?, ?)",
                (code, step, token, done, total),
            )

        self._write(txn)

    def progress(self, code: str, step: int) -> dict[str, tuple[int, int]]:
        if self.room(code) is None:
            return {}
        rows = self._read(
            "SELECT token, done, total FROM progress WHERE code = ? AND step = ?", (code, step)
        )
        return {t: (d, n) for t, d, n in rows}


# ---------------------------------------------------------------------- Redis
# Keys: {p}room:<code> (hash: the room's fields), {p}members:<code> (hash token ->
# JSON name, seed and joined), {p}browsers:<code> (hash browser id -> token),
# {p}votes:<code>:<step>:<round> and {p}measures:<code>:<step> (hash token -> choice),
# {p}progress:<code>:<step> (hash token -> "done/total"), {p}removed:<code> (set of
# tokens), {p}hits:<code>:<kind> (sorted set: the rate limits' last minute),
# {p}member-of:<browser id> (sorted set: the rooms it joined, by when) and
# {p}presented-by:<credential hash> (the room's code).
# Every key expires with its room (EXPIRE, a minute after).

# A vote: the room takes this round at this step, the token is a member, and the
# token has not voted (HSETNX). Returns 1 recorded, 0 already voted, or an error text.
_VOTE_LUA = """
local room = redis.call('HMGET', KEYS[1], 'step', 'phase', 'expires', 'closed')
if not room[1] or tonumber(room[3]) <= tonumber(ARGV[1]) then return 'gone' end
if room[4] == '1' then return 'closed' end
if room[1] ~= ARGV[2] or room[2] ~= ARGV[3] then return 'not now' end
if redis.call('HEXISTS', KEYS[2], ARGV[4]) == 0 then return 'stranger' end
local added = redis.call('HSETNX', KEYS[3], ARGV[4], ARGV[5])
redis.call('EXPIRE', KEYS[3], math.ceil(tonumber(room[3]) - tonumber(ARGV[1])) + 60)
return added
"""

# A measured answer: the room is past the predict phase at this step.
_MEASURE_LUA = """
local room = redis.call('HMGET', KEYS[1], 'step', 'phase', 'expires', 'closed')
if not room[1] or tonumber(room[3]) <= tonumber(ARGV[1]) then return 'gone' end
if room[4] == '1' then return 'closed' end
if room[1] ~= ARGV[2] or room[2] == 'predict' then return 'not now' end
if redis.call('HEXISTS', KEYS[2], ARGV[3]) == 0 then return 'stranger' end
local added = redis.call('HSETNX', KEYS[3], ARGV[3], ARGV[4])
redis.call('EXPIRE', KEYS[3], math.ceil(tonumber(room[3]) - tonumber(ARGV[1])) + 60)
return added
"""

# A measurement's progress: the room is at this step; the token is a member.
_PROGRESS_LUA = """
local room = redis.call('HMGET', KEYS[1], 'step', 'expires', 'closed')
if not room[1] or tonumber(room[2]) <= tonumber(ARGV[1]) then return 'gone' end
if room[3] == '1' then return 'closed' end
if room[1] ~= ARGV[2] then return 'not now' end
if redis.call('HEXISTS', KEYS[2], ARGV[3]) == 0 then return 'stranger' end
redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
redis.call('EXPIRE', KEYS[3], math.ceil(tonumber(room[2]) - tonumber(ARGV[1])) + 60)
return 1
"""

# A join: the rate limits (sorted sets of the last minute's joins: the room's, and
# this browser's), then this browser's participant if it has one, else the next seed
# (HINCRBY) and a new participant. Returns {token, member JSON} or an error text.
_JOIN_LUA = """
local now = tonumber(ARGV[1])
local room = redis.call('HMGET', KEYS[1], 'expires', 'closed')
if not room[1] or tonumber(room[1]) <= now then return 'gone' end
if room[2] == '1' then return 'closed' end
local left = math.ceil(tonumber(room[1]) - now) + 60
local window = tonumber(ARGV[5])
local browser = ARGV[4]
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - window)
if redis.call('ZCARD', KEYS[4]) >= tonumber(ARGV[6]) then return 'too many' end
if ARGV[9] ~= '' then
  redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', now - window)
  if redis.call('ZCARD', KEYS[7]) >= tonumber(ARGV[10]) then return 'too many from there' end
  redis.call('ZADD', KEYS[7], now, ARGV[2])
  redis.call('EXPIRE', KEYS[7], math.ceil(window) + 1)
end
if browser ~= '' then
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now - window)
  if redis.call('ZCARD', KEYS[5]) >= tonumber(ARGV[7]) then return 'too many here' end
  redis.call('ZADD', KEYS[5], now, ARGV[2])
  redis.call('EXPIRE', KEYS[5], math.ceil(window) + 1)
end
redis.call('ZADD', KEYS[4], now, ARGV[2])
redis.call('EXPIRE', KEYS[4], math.ceil(window) + 1)
if browser ~= '' then
  local old = redis.call('HGET', KEYS[3], browser)
  if old then
    local raw = redis.call('HGET', KEYS[2], old)
    if raw then return {old, raw} end
  end
end
local gate = redis.call('HMGET', KEYS[1], 'locked', 'max_members')
if gate[1] == '1' then return 'locked' end
local cap = tonumber(gate[2] or '0') or 0
if cap > 0 and redis.call('HLEN', KEYS[2]) >= cap then return 'full' end
local seed = redis.call('HINCRBY', KEYS[1], 'seq', 1)
local raw = cjson.encode({name = ARGV[3], seed = seed, joined = ARGV[1]})
redis.call('HSET', KEYS[2], ARGV[2], raw)
redis.call('EXPIRE', KEYS[2], left)
if browser ~= '' then
  redis.call('HSET', KEYS[3], browser, ARGV[2])
  redis.call('EXPIRE', KEYS[3], left)
  redis.call('ZADD', KEYS[6], now, ARGV[8])
  if redis.call('TTL', KEYS[6]) < left then redis.call('EXPIRE', KEYS[6], left) end
end
return {ARGV[2], raw}
"""

# A removal (the presenter was checked): the member, their browser's entry, their
# answers at every step; the token joins the removed set. 1, 0 (not a member), 'gone'.
_REMOVE_LUA = """
local expires = redis.call('HGET', KEYS[1], 'expires')
if not expires or tonumber(expires) <= tonumber(ARGV[1]) then return 'gone' end
if redis.call('HDEL', KEYS[2], ARGV[2]) == 0 then return 0 end
local all = redis.call('HGETALL', KEYS[3])
for i = 1, #all, 2 do
  if all[i + 1] == ARGV[2] then redis.call('HDEL', KEYS[3], all[i]) end
end
redis.call('SADD', KEYS[4], ARGV[2])
redis.call('EXPIRE', KEYS[4], math.ceil(tonumber(expires) - tonumber(ARGV[1])) + 60)
for i = 5, #KEYS do redis.call('HDEL', KEYS[i], ARGV[2]) end
return 1
"""

# A rate limit's window: 0 if ARGV[3] events are in the last ARGV[2] s, else 1 (and
# with ARGV[4] == '1' this one is counted).
_HIT_LUA = """
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
if ARGV[4] == '1' then
  redis.call('ZADD', KEYS[1], now, ARGV[5])
  redis.call('EXPIRE', KEYS[1], math.ceil(window) + 1)
end
return 1
"""

# A presenter's write to a live room (never re-creates an expired one).
_UPDATE_LUA = """
local expires = redis.call('HGET', KEYS[1], 'expires')
if not expires or tonumber(expires) <= tonumber(ARGV[1]) then return 0 end
for i = 2, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
"""

_REFUSED = {
    "gone": "This room has expired or does not exist.",
    "locked": LOCKED,
    "full": FULL,
    "closed": "The presenter has closed this room.",
    "not now": "The room is not taking this now.",
    "stranger": "You are not in this room: join it again.",
}


class RedisStore(RoomStore):
    """Rooms in Redis (``REDIS_URL``), shared by replicas on any number of machines."""

    def __init__(
        self, url: str, clock: Callable[[], float] = time.time, prefix: str = "resviz:"
    ) -> None:
        super().__init__(clock)
        import redis  # only where REDIS_URL asks for it

        self.r = redis.Redis.from_url(url, decode_responses=True)
        self.p = prefix
        self._vote = self.r.register_script(_VOTE_LUA)
        self._measure = self.r.register_script(_MEASURE_LUA)
        self._progress = self.r.register_script(_PROGRESS_LUA)
        self._join = self.r.register_script(_JOIN_LUA)
        self._rm = self.r.register_script(_REMOVE_LUA)
        self._hits = self.r.register_script(_HIT_LUA)
        self._upd = self.r.register_script(_UPDATE_LUA)

    def _k(self, *parts: object) -> str:
        return self.p + ":".join(str(p) for p in parts)

    def probe(self) -> None:
        """PING, then a SET of a scratch key that expires in a minute: fails on a
        wrong or missing password, a read-only replica, a full memory."""
        self.r.ping()
        self.r.set(self._k("probe"), repr(self.clock()), ex=60)

    @staticmethod
    def _refused(out: Any) -> None:
        if isinstance(out, str) and out in _REFUSED:
            raise RoomError(_REFUSED[out])

    def _left(self, code: str) -> int:
        """Seconds until the room's keys expire (a minute after the room)."""
        expires = self.r.hget(self._k("room", code), "expires")
        return max(1, int(float(expires or 0) - self.clock()) + 60)

    def create(
        self,
        lesson: str,
        step: int = 1,
        hide_names: bool = False,
        ttl: float = TTL,
        browser: object = None,
    ) -> tuple[Room, str]:
        secret = secrets.token_urlsafe(24)
        cred = _browser(browser)
        now = self.clock()
        fields = {
            "secret_hash": _hash(secret),
            "lesson": lesson,
            "step": step,
            "phase": "predict",
            "hide_names": int(hide_names),
            "created": repr(now),
            "expires": repr(now + ttl),
            "closed": 0,
            "seq": 0,
            "browser_hash": "" if cred is None else _hash(cred),
            "locked": 0,
            "max_members": 0,
        }
        while True:
            code = new_code()
            key = self._k("room", code)
            # HSETNX claims the code atomically; the rest follows in one MULTI.
            if self.r.hsetnx(key, "secret_hash", fields["secret_hash"]):
                break
        with self.r.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping=fields)
            pipe.expire(key, int(ttl) + 60)
            if cred is not None:
                pipe.set(self._k("presented-by", _hash(cred)), code, ex=int(ttl) + 60)
            pipe.execute()
        room = self.room(code)
        assert room is not None
        return room, secret

    def _presenter_hashes(self, code: str) -> tuple[str | None, tuple[str, ...]]:
        if self.room(code) is None:
            return None, ()
        key_hash, browsers = self.r.hmget(self._k("room", code), "secret_hash", "browser_hash")
        return key_hash, tuple((browsers or "").split())

    def _hit(self, code: str, kind: str, limit: int, count: bool = True) -> bool:
        out = self._hits(
            keys=[self._k("hits", code, kind)],
            args=[repr(self.clock()), WINDOW_S, limit, "1" if count else "0", secrets.token_hex(8)],
        )
        return out == 1

    def presented_by(self, browser: object) -> Room | None:
        cred = _browser(browser)
        if cred is None:
            return None
        code = self.r.get(self._k("presented-by", _hash(cred)))
        if code is None:
            return None
        room = self.room(code)
        if room is None or room.closed:
            return None
        _, browsers = self._presenter_hashes(code)
        return room if _hash(cred) in browsers else None

    def _update(self, code: str, fields: dict[str, Any]) -> Room:
        args: list[Any] = [repr(self.clock())]
        for k, v in fields.items():
            args += [k, v]
        if not self._upd(keys=[self._k("room", code)], args=args):
            raise RoomError("This room has expired or does not exist.")
        if fields.get("browser_hash"):  # the newest browser: its lookup key
            newest = fields["browser_hash"].split()[0]
            self.r.set(self._k("presented-by", newest), code, ex=self._left(code))
        room = self.room(code)
        if room is None:
            raise RoomError("This room has expired or does not exist.")
        return room

    def _remove(self, code: str, token: str) -> bool:
        answers = [self._k("votes", code, s, r) for s in range(1, MAX_STEPS + 1) for r in (1, 2)]
        answers += [
            self._k(kind, code, s)
            for kind in ("measures", "progress")
            for s in range(1, MAX_STEPS + 1)
        ]
        out = self._rm(
            keys=[
                self._k("room", code),
                self._k("members", code),
                self._k("browsers", code),
                self._k("removed", code),
                *answers,
            ],
            args=[repr(self.clock()), token],
        )
        self._refused(out)
        return out == 1

    def room(self, code: str) -> Room | None:
        if not isinstance(code, str):
            return None
        h = self.r.hgetall(self._k("room", code))
        if not h or "expires" not in h or float(h["expires"]) <= self.clock():
            return None
        return self._room_of(code, h)

    @staticmethod
    def _room_of(code: str, h: dict[str, str]) -> Room:
        return Room(
            code,
            h["lesson"],
            int(h["step"]),
            h["phase"],
            h["hide_names"] == "1",
            float(h["created"]),
            float(h["expires"]),
            h["closed"] == "1",
            h.get("locked") == "1",
            int(h.get("max_members") or 0),
        )

    def join(
        self, code: str, name: object = None, browser: object = None, address: object = None
    ) -> Member:
        clean = clean_name(name)
        who = _browser(browser) or ""
        where = _address(address) or ""
        token = secrets.token_urlsafe(16)
        out = self._join(
            keys=[
                self._k("room", code),
                self._k("members", code),
                self._k("browsers", code),
                self._k("hits", code, "join"),
                self._k("hits", code, "join", who),
                self._k("member-of", who),
                self._k("hits", code, "join@", where),
            ],
            args=[
                repr(self.clock()),
                token,
                clean or "",
                who,
                WINDOW_S,
                JOINS_PER_MINUTE,
                JOINS_PER_MINUTE_BROWSER,
                code,
                where,
                JOINS_PER_MINUTE_ADDRESS,
            ],
        )
        if out == "too many":
            raise TooMany(TOO_MANY_JOINS)
        if out == "too many from there":
            raise TooMany(TOO_MANY_JOINS_ADDRESS)
        if out == "too many here":
            raise TooMany(TOO_MANY_JOINS_BROWSER)
        self._refused(out)
        return self._member(out[0], out[1])

    @staticmethod
    def _member(token: str, raw: str) -> Member:
        d = json.loads(raw)
        return Member(token, d.get("name") or None, int(d["seed"]), float(d.get("joined") or 0))

    def member_of_browser(self, code: str, browser: object) -> Member | None:
        who = _browser(browser)
        if who is None or self.room(code) is None:
            return None
        token = self.r.hget(self._k("browsers", code), who)
        return None if token is None else self.member(code, token)

    def browser_room(self, browser: object) -> tuple[str, Member] | None:
        who = _browser(browser)
        if who is None:
            return None
        for code in self.r.zrevrange(self._k("member-of", who), 0, 20):
            room = self.room(code)
            member = None if room is None or room.closed else self.member_of_browser(code, who)
            if member is not None:
                return code, member
        return None

    def member(self, code: str, token: object) -> Member | None:
        if not isinstance(token, str) or self.room(code) is None:
            return None
        raw = self.r.hget(self._k("members", code), token)
        return None if raw is None else self._member(token, raw)

    def was_removed(self, code: str, token: object) -> bool:
        if not isinstance(token, str) or self.room(code) is None:
            return False
        return bool(self.r.sismember(self._k("removed", code), token))

    def status(self, code: str, token: object) -> tuple[Room | None, bool]:
        if not isinstance(token, str):
            return self.room(code), False
        with self.r.pipeline(transaction=False) as pipe:
            pipe.hgetall(self._k("room", code))
            pipe.hexists(self._k("members", code), token)
            h, known = pipe.execute()
        if not h or "expires" not in h or float(h["expires"]) <= self.clock():
            return None, False
        return self._room_of(code, h), bool(known)

    def members(self, code: str) -> list[Member]:
        if self.room(code) is None:
            return []
        all_ = self.r.hgetall(self._k("members", code))
        return sorted((self._member(t, raw) for t, raw in all_.items()), key=lambda m: m.seed)

    def vote(self, code: str, token: object, step: int, round_: int, choice: object) -> bool:
        choice = _check_choice(choice)
        phase = {v: k for k, v in ROUND_OF.items()}.get(round_)
        if phase is None or not isinstance(token, str):
            raise RoomError("The room is not taking votes for this question now.")
        out = self._vote(
            keys=[
                self._k("room", code),
                self._k("members", code),
                self._k("votes", code, step, round_),
            ],
            args=[repr(self.clock()), step, phase, token, choice],
        )
        if out == "not now":
            raise RoomError("The room is not taking votes for this question now.")
        self._refused(out)
        return out == 1

    def votes(self, code: str, step: int, round_: int) -> dict[str, str]:
        if self.room(code) is None:
            return {}
        return self.r.hgetall(self._k("votes", code, step, round_))

    def submit_measure(self, code: str, token: object, step: int, answer: object) -> bool:
        answer = _check_choice(answer)
        if not isinstance(token, str):
            raise RoomError("You are not in this room: join it again.")
        out = self._measure(
            keys=[
                self._k("room", code),
                self._k("members", code),
                self._k("measures", code, step),
            ],
            args=[repr(self.clock()), step, token, answer],
        )
        if out == "not now":
            raise RoomError("The room is not collecting measurements for this step now.")
        self._refused(out)
        return out == 1

    def measures(self, code: str, step: int) -> dict[str, str]:
        if self.room(code) is None:
            return {}
        return self.r.hgetall(self._k("measures", code, step))

    def set_progress(self, code: str, token: object, step: int, done: int, total: int) -> None:
        step, done, total = _check_progress(step, done, total)
        if not isinstance(token, str):
            raise RoomError("You are not in this room: join it again.")
        out = self._progress(
            keys=[
                self._k("room", code),
                self._k("members", code),
                self._k("progress", code, step),
            ],
            args=[repr(self.clock()), step, token, f"{done}/{total}"],
        )
        if out == "not now":
            raise RoomError("The room is not at this step now.")
        self._refused(out)

    def progress(self, code: str, step: int) -> dict[str, tuple[int, int]]:
        if self.room(code) is None:
            return {}
        out: dict[str, tuple[int, int]] = {}
        for token, raw in self.r.hgetall(self._k("progress", code, step)).items():
            done, _, total = raw.partition("/")
            out[token] = (int(done), int(total))
        return out


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
    try:
        if url:
            check_redis_url(url)
        store: RoomStore = RedisStore(url) if url else SQLiteStore(default_db())
        store.probe()
    # ValueError: a malformed REDIS_URL; ImportError: REDIS_URL set where the redis
    # package is not installed.
    except (*store_errors(), ValueError, ImportError) as exc:
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
