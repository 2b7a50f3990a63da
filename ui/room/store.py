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

A room has a short join code, a presenter secret (only its SHA-256 is stored;
checked with :func:`hmac.compare_digest`), the lesson step and phase the presenter
set, its participants (an optional display name and a seed each: 1, 2, 3, ... in
the order they joined, so no two share one), one vote per participant per round
(round 1 while the phase is ``predict``, round 2 during ``second``), one measured
answer per participant per step, and an expiry (4 hours by default). Nothing here
imports streamlit.
"""

from __future__ import annotations

import hashlib
import hmac
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
# Which vote round a phase takes (the phases between take none).
ROUND_OF = {"predict": 1, "second": 2}
ROOT = Path(__file__).resolve().parents[2]
_LOG = logging.getLogger(__name__)


class RoomError(Exception):
    """A refused room action; the message is ours and can be shown as is."""


class NotPresenter(RoomError):
    """The secret given is not the room's presenter secret."""


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


@dataclass(frozen=True)
class Member:
    token: str
    name: str | None
    seed: int


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
        self, lesson: str, step: int = 1, hide_names: bool = False, ttl: float = TTL
    ) -> tuple[Room, str]:
        """A new room at ``step`` of ``lesson``; returns it and the presenter secret."""

    @abstractmethod
    def probe(self) -> None:
        """Write to the store once (raises what the store raises if it cannot)."""

    @abstractmethod
    def _update(self, code: str, fields: dict[str, Any]) -> Room:
        """Write ``fields`` of a live room (the secret was checked)."""

    @abstractmethod
    def _secret_hash(self, code: str) -> str | None: ...

    def is_presenter(self, code: str, secret: object) -> bool:
        stored = self._secret_hash(code)
        if stored is None or not isinstance(secret, str) or not secret:
            return False
        return hmac.compare_digest(_hash(secret), stored)

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

    def close(self, code: str, secret: object) -> Room:
        self._require(code, secret)
        return self._update(code, {"closed": 1})

    # -- everyone
    @abstractmethod
    def room(self, code: str) -> Room | None:
        """The live room (``None`` if it never was, or has expired)."""

    @abstractmethod
    def join(self, code: str, name: object = None) -> Member:
        """A new participant with the room's next seed; :class:`RoomError` if closed."""

    @abstractmethod
    def member(self, code: str, token: object) -> Member | None: ...

    @abstractmethod
    def members(self, code: str) -> list[Member]: ...

    @abstractmethod
    def vote(self, code: str, token: object, step: int, round_: int, choice: object) -> bool:
        """Record a participant's vote; False if they voted in this round already.
        :class:`RoomError` if the room is not taking this round's votes."""

    @abstractmethod
    def votes(self, code: str, step: int, round_: int) -> dict[str, str]:
        """Votes of one round, by participant token."""

    @abstractmethod
    def submit_measure(self, code: str, token: object, step: int, answer: object) -> bool:
        """Record a participant's measured answer for ``step``; False if given already."""

    @abstractmethod
    def measures(self, code: str, step: int) -> dict[str, str]: ...

    def _check_vote(self, room: Room | None, step: int, round_: int) -> None:
        if room is None:
            raise RoomError("This room has expired or does not exist.")
        if room.closed:
            raise RoomError("The presenter has closed this room.")
        if room.step != step or ROUND_OF.get(room.phase) != round_:
            raise RoomError("The room is not taking votes for this question now.")


# --------------------------------------------------------------------- SQLite
SCHEMA = """
CREATE TABLE IF NOT EXISTS rooms (
    code TEXT PRIMARY KEY, secret_hash TEXT NOT NULL, lesson TEXT NOT NULL,
    step INTEGER NOT NULL, phase TEXT NOT NULL, hide_names INTEGER NOT NULL,
    created REAL NOT NULL, expires REAL NOT NULL, closed INTEGER NOT NULL DEFAULT 0,
    seq INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS members (
    code TEXT NOT NULL, token TEXT NOT NULL, name TEXT, seed INTEGER NOT NULL,
    PRIMARY KEY (code, token), UNIQUE (code, seed));
CREATE TABLE IF NOT EXISTS votes (
    code TEXT NOT NULL, step INTEGER NOT NULL, round INTEGER NOT NULL,
    token TEXT NOT NULL, choice TEXT NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (code, step, round, token));
CREATE TABLE IF NOT EXISTS measures (
    code TEXT NOT NULL, step INTEGER NOT NULL, token TEXT NOT NULL,
    answer TEXT NOT NULL, PRIMARY KEY (code, step, token));
CREATE TABLE IF NOT EXISTS probe (id INTEGER PRIMARY KEY, at REAL NOT NULL);
"""


class SQLiteStore(RoomStore):
    """Rooms in one SQLite file, shared by every process that opens it."""

    def __init__(self, path: str | Path, clock: Callable[[], float] = time.time) -> None:
        super().__init__(clock)
        self.path = str(path)
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)

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
        """Run ``fn`` in one write transaction (all or nothing)."""
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
            "SELECT code, lesson, step, phase, hide_names, created, expires, closed "
            "FROM rooms WHERE code = ?",
            (code,),
        ).fetchone()
        if row is None or row[6] <= self.clock():
            return None
        return Room(row[0], row[1], row[2], row[3], bool(row[4]), row[5], row[6], bool(row[7]))

    def create(
        self, lesson: str, step: int = 1, hide_names: bool = False, ttl: float = TTL
    ) -> tuple[Room, str]:
        secret = secrets.token_urlsafe(24)
        now = self.clock()

        def txn(db: sqlite3.Connection) -> Room:
            # Expired rooms go first (and their votes): no personal data is kept longer.
            gone = [r[0] for r in db.execute("SELECT code FROM rooms WHERE expires <= ?", (now,))]
            for table in ("members", "votes", "measures", "rooms"):
                db.executemany(f"DELETE FROM {table} WHERE code = ?", [(c,) for c in gone])
            while True:
                code = new_code()
                if db.execute("SELECT 1 FROM rooms WHERE code = ?", (code,)).fetchone() is None:
                    break
            db.execute(
                "INSERT INTO rooms (code, secret_hash, lesson, step, phase, hide_names, created, "
                "expires) VALUES (?, ?, ?, ?, 'predict', ?, ?, ?)",
                (code, _hash(secret), lesson, step, int(hide_names), now, now + ttl),
            )
            room = self._room(db, code)
            assert room is not None
            return room

        return self._write(txn), secret

    def _secret_hash(self, code: str) -> str | None:
        rows = self._read(
            "SELECT secret_hash FROM rooms WHERE code = ? AND expires > ?", (code, self.clock())
        )
        return rows[0][0] if rows else None

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

    def room(self, code: str) -> Room | None:
        db = self._connect()
        try:
            return self._room(db, code)
        finally:
            db.close()

    def join(self, code: str, name: object = None) -> Member:
        clean = clean_name(name)

        def txn(db: sqlite3.Connection) -> Member:
            room = self._room(db, code)
            if room is None:
                raise RoomError("This room has expired or does not exist.")
            if room.closed:
                raise RoomError("The presenter has closed this room.")
            db.execute("UPDATE rooms SET seq = seq + 1 WHERE code = ?", (code,))
            (seed,) = db.execute("SELECT seq FROM rooms WHERE code = ?", (code,)).fetchone()
            token = secrets.token_urlsafe(16)
            db.execute(
                "INSERT INTO members (code, token, name, seed) VALUES (?, ?, ?, ?)",
                (code, token, clean, seed),
            )
            return Member(token, clean, seed)

        return self._write(txn)

    def member(self, code: str, token: object) -> Member | None:
        if not isinstance(token, str) or self.room(code) is None:
            return None
        rows = self._read(
            "SELECT token, name, seed FROM members WHERE code = ? AND token = ?", (code, token)
        )
        return Member(*rows[0]) if rows else None

    def members(self, code: str) -> list[Member]:
        if self.room(code) is None:
            return []
        rows = self._read(
            "SELECT token, name, seed FROM members WHERE code = ? ORDER BY seed", (code,)
        )
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


# ---------------------------------------------------------------------- Redis
# Keys: {p}room:<code> (hash: the room's fields), {p}members:<code> (hash token ->
# JSON name and seed), {p}votes:<code>:<step>:<round> and {p}measures:<code>:<step>
# (hash token -> choice). Every key expires with its room (EXPIRE, a minute after).

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

# A join: the next seed (HINCRBY) and the member, if the room is live and open.
_JOIN_LUA = """
local room = redis.call('HMGET', KEYS[1], 'expires', 'closed')
if not room[1] or tonumber(room[1]) <= tonumber(ARGV[1]) then return 'gone' end
if room[2] == '1' then return 'closed' end
local seed = redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('HSET', KEYS[2], ARGV[2], cjson.encode({name = ARGV[3], seed = seed}))
redis.call('EXPIRE', KEYS[2], math.ceil(tonumber(room[1]) - tonumber(ARGV[1])) + 60)
return seed
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
        self._join = self.r.register_script(_JOIN_LUA)
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

    def create(
        self, lesson: str, step: int = 1, hide_names: bool = False, ttl: float = TTL
    ) -> tuple[Room, str]:
        secret = secrets.token_urlsafe(24)
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
            pipe.execute()
        room = self.room(code)
        assert room is not None
        return room, secret

    def _secret_hash(self, code: str) -> str | None:
        if self.room(code) is None:
            return None
        return self.r.hget(self._k("room", code), "secret_hash")

    def _update(self, code: str, fields: dict[str, Any]) -> Room:
        args: list[Any] = [repr(self.clock())]
        for k, v in fields.items():
            args += [k, v]
        if not self._upd(keys=[self._k("room", code)], args=args):
            raise RoomError("This room has expired or does not exist.")
        room = self.room(code)
        if room is None:
            raise RoomError("This room has expired or does not exist.")
        return room

    def room(self, code: str) -> Room | None:
        if not isinstance(code, str):
            return None
        h = self.r.hgetall(self._k("room", code))
        if not h or float(h["expires"]) <= self.clock():
            return None
        return Room(
            code,
            h["lesson"],
            int(h["step"]),
            h["phase"],
            h["hide_names"] == "1",
            float(h["created"]),
            float(h["expires"]),
            h["closed"] == "1",
        )

    def join(self, code: str, name: object = None) -> Member:
        clean = clean_name(name)
        token = secrets.token_urlsafe(16)
        out = self._join(
            keys=[self._k("room", code), self._k("members", code)],
            args=[repr(self.clock()), token, clean or ""],
        )
        self._refused(out)
        return Member(token, clean, int(out))

    @staticmethod
    def _member(token: str, raw: str) -> Member:
        d = json.loads(raw)
        return Member(token, d.get("name") or None, int(d["seed"]))

    def member(self, code: str, token: object) -> Member | None:
        if not isinstance(token, str) or self.room(code) is None:
            return None
        raw = self.r.hget(self._k("members", code), token)
        return None if raw is None else self._member(token, raw)

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


def _store_errors() -> tuple[type[BaseException], ...]:
    # ImportError: REDIS_URL set where the redis package is not installed.
    errors: list[type[BaseException]] = [sqlite3.Error, OSError, ValueError, ImportError]
    try:
        from redis.exceptions import RedisError
    except ImportError:
        pass
    else:
        errors.append(RedisError)
    return tuple(errors)


_reported: set[str] = set()
_reporting = threading.Lock()


def open_store() -> RoomStore:
    """Redis where ``REDIS_URL`` is set, else the SQLite file (:func:`default_db`),
    written to once (:meth:`RoomStore.probe`). One that cannot be opened or written is
    logged (once per cause) as ``workshop rooms: cannot write <where>: <cause>``, the
    Redis password masked, and raised as :class:`StoreUnavailable`."""
    url = os.environ.get("REDIS_URL")
    where = masked(url) if url else str(default_db())
    try:
        store: RoomStore = RedisStore(url) if url else SQLiteStore(default_db())
        store.probe()
    except _store_errors() as exc:
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
