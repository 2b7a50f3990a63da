"""A workshop room's rules, over the room's one document.

A room is one :class:`Doc` of plain data: its fields (lesson, step, phase, whether
names are hidden, joins locked, its size, closed, created, expires), the SHA-256 of
the presenter key and of up to ``PRESENTING_BROWSERS`` presenting browsers'
credentials (newest first), its participants by token (display name, seed, when they
joined, browser id), the tokens the presenter removed, the seed counter, the last
minute of rate-limited events (``hits``: ``join``, ``join@<hashed address>``,
``join:<browser id>``, ``key``), and each step's answers (``answers["<step>"]``: one
vote per participant per round, ``"1"`` and ``"2"``, and one measured answer each,
``"measured"``). :func:`dump` writes it as JSON text in parts, ``room`` (all but the
answers) and ``step:<step>`` (one step's answers), so that a store reads and writes
one step's answers without the others (and, given the document it started from,
writes only the parts that changed); :func:`load` reads them back.

Each rule takes the stored document (``None`` if there is none) and the time ``now``,
checks the action against the room and changes the document in place. A refused
action raises :class:`RoomError` (:class:`NotPresenter`, :class:`TooMany`), whose
message can be shown as is, and its caller keeps nothing of the document; the one
change kept with a refusal is :func:`claim`'s count of a wrong key. The rules read no
clock, file, network or store: ``ui.room.store`` reads a room's document, runs a rule
on it and writes it back in one transaction, so every backend refuses the same fault
with the same message. Nothing here imports streamlit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import secrets
import unicodedata
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

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
MAX_MEMBERS = 1000  # the largest size a presenter may set


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
GONE = "This room has expired or does not exist."
CLOSED = "The presenter has closed this room."
ONLY_PRESENTER = "Only the presenter can do that."
NOT_MEMBER = "You are not in this room: join it again."
NOT_A_CHOICE = "That answer is not one of the choices."
NO_VOTES = "The room is not taking votes for this question now."
NO_MEASURES = "The room is not collecting measurements for this step now."
NOT_AT_STEP = "The room is not at this step now."
NO_PROGRESS = "No such progress."
NO_STEP = "No such step."
NO_PHASE = "No such phase."
BAD_SIZE = f"A room's size is a whole number from 0 (no cap) to {MAX_MEMBERS}."


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


class Entry(NamedTuple):
    """A participant as the document keeps them (a JSON list)."""

    name: str | None
    seed: int
    joined: float
    browser: str | None


@dataclass
class Doc:
    """One room: everything its rules read and write (see the module's docstring)."""

    code: str
    lesson: str
    step: int
    phase: str
    hide_names: bool
    created: float
    expires: float
    key_hash: str
    browser_hashes: list[str] = field(default_factory=list)
    closed: bool = False
    locked: bool = False
    max_members: int = 0
    seq: int = 0
    members: dict[str, Entry] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)
    hits: dict[str, list[float]] = field(default_factory=dict)
    # step -> "1", "2" (the vote rounds) or "measured" -> token -> answer
    answers: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)


ROOM = "room"  # the part of the document that is all but the answers
_FIELDS = tuple(f.name for f in fields(Doc) if f.name != "answers")


def part(step: int) -> str:
    """The name of the part that holds ``step``'s answers."""
    return f"step:{step}"


def _text(data: object) -> str:
    return json.dumps(data, separators=(",", ":"))


def _room_fields(doc: Doc) -> tuple[object, ...]:
    return tuple(getattr(doc, name) for name in _FIELDS)


def dump(doc: Doc, since: Doc | None = None) -> dict[str, str]:
    """The document as JSON text by part: ``room`` and ``step:<s>`` for each step
    with answers (fields in a fixed order: the same document, the same text); with
    ``since``, only the parts that differ from ``since``'s."""
    texts: dict[str, str] = {}
    if since is None or _room_fields(doc) != _room_fields(since):
        texts[ROOM] = _text(dict(zip(_FIELDS, _room_fields(doc), strict=True)))
    for step, answers in doc.answers.items():
        if since is None or since.answers.get(step) != answers:
            texts[part(int(step))] = _text(answers)
    return texts


def copy(doc: Doc) -> Doc:
    """A copy of ``doc`` that a rule may change without changing ``doc`` (each of its
    lists and dicts copied; what they hold is immutable)."""
    return dataclasses.replace(
        doc,
        browser_hashes=list(doc.browser_hashes),
        members=dict(doc.members),
        removed=list(doc.removed),
        hits={kind: list(times) for kind, times in doc.hits.items()},
        answers={s: {k: dict(a) for k, a in given.items()} for s, given in doc.answers.items()},
    )


def load_room(text: str) -> Doc:
    """The ``room`` part's document (no answers)."""
    raw: dict[str, Any] = json.loads(text)
    raw["members"] = {token: Entry(*entry) for token, entry in raw["members"].items()}
    return Doc(**raw)


def load_answers(text: str) -> dict[str, dict[str, str]]:
    """A ``step:<s>`` part's answers."""
    answers: dict[str, dict[str, str]] = json.loads(text)
    return answers


def load(texts: dict[str, str]) -> Doc:
    """A document from :func:`dump`'s parts (``room`` and any steps' parts)."""
    doc = load_room(texts[ROOM])
    for name, text in texts.items():
        if name != ROOM:
            doc.answers[name.removeprefix("step:")] = load_answers(text)
    return doc


# ------------------------------------------------------------------ values
def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()


def browser_of(raw: object) -> str | None:
    """A browser id as the room keeps it (an opaque string from the view), or None."""
    if not isinstance(raw, str) or not raw or len(raw) > 128:
        return None
    return raw


def address_of(raw: object) -> str | None:
    """A client address as a short hash (the limit's key; the room keeps no address)."""
    if not isinstance(raw, str) or not raw.strip() or len(raw) > 64:
        return None
    return hash_secret("address:" + raw.strip())[:32]


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


def check_choice(choice: object) -> str:
    """A vote's choice or a measured answer: a short non-empty string."""
    if not isinstance(choice, str) or not choice or len(choice) > CHOICE_MAX:
        raise RoomError(NOT_A_CHOICE)
    return choice


# ------------------------------------------------------------------- reads
def live(doc: Doc | None, now: float) -> bool:
    """Whether the room exists and has not expired (closed or not)."""
    return doc is not None and doc.expires > now


def room_of(doc: Doc) -> Room:
    return Room(
        doc.code, doc.lesson, doc.step, doc.phase, doc.hide_names, doc.created,
        doc.expires, doc.closed, doc.locked, doc.max_members,
    )  # fmt: skip


def member(doc: Doc, token: object) -> Member | None:
    """The participant ``token``, if they are one."""
    if not isinstance(token, str) or token not in doc.members:
        return None
    entry = doc.members[token]
    return Member(token, entry.name, entry.seed, entry.joined)


def members(doc: Doc) -> list[Member]:
    """The participants, in the order they joined (by seed)."""
    found = [Member(t, e.name, e.seed, e.joined) for t, e in doc.members.items()]
    return sorted(found, key=lambda m: m.seed)


def member_of_browser(doc: Doc, browser: object) -> Member | None:
    """The participant the browser id ``browser`` joined as, if any."""
    who = browser_of(browser)
    if who is None:
        return None
    for token, entry in doc.members.items():
        if entry.browser == who:
            return Member(token, entry.name, entry.seed, entry.joined)
    return None


def votes(doc: Doc, step: int, round_: int) -> dict[str, str]:
    """One round's votes at ``step``, by participant token (a copy)."""
    return dict(doc.answers.get(str(step), {}).get(str(round_), {}))


def measures(doc: Doc, step: int) -> dict[str, str]:
    """The measured answers at ``step``, by participant token (a copy)."""
    return dict(doc.answers.get(str(step), {}).get("measured", {}))


def is_presenter(doc: Doc, secret: object) -> bool:
    """Whether ``secret`` is the room's presenter key or a presenting browser's
    credential (constant-time comparisons; a member token is neither)."""
    if not isinstance(secret, str) or not secret:
        return False
    given = hash_secret(secret)
    found = [hmac.compare_digest(given, h) for h in (doc.key_hash, *doc.browser_hashes)]
    return any(found)


# ------------------------------------------------------------------ checks
def _live(doc: Doc | None, now: float) -> Doc:
    if doc is None or doc.expires <= now:
        raise RoomError(GONE)
    return doc


def _open(doc: Doc | None, now: float) -> Doc:
    doc = _live(doc, now)
    if doc.closed:
        raise RoomError(CLOSED)
    return doc


def _presenter(doc: Doc | None, now: float, secret: object) -> Doc:
    doc = _live(doc, now)
    if not is_presenter(doc, secret):
        raise NotPresenter(ONLY_PRESENTER)
    _window(doc, now)  # the room part is written anyway: stale events go with it
    return doc


def _at(doc: Doc, step: object) -> bool:
    """Whether the room is at ``step`` (a whole number: the step a store reads)."""
    return isinstance(step, int) and doc.step == step


def _in_room(doc: Doc, token: object) -> str:
    if not isinstance(token, str) or token not in doc.members:
        raise RoomError(NOT_MEMBER)
    return token


def _window(doc: Doc, now: float) -> None:
    """Drop the events that have left the last ``WINDOW_S`` seconds (at a join, a
    claim and a presenter's action, so that the document every vote copies does not
    carry a lesson's joins)."""
    for kind, times in list(doc.hits.items()):
        if min(times) > now - WINDOW_S:
            continue
        kept = [t for t in times if t > now - WINDOW_S]
        if kept:
            doc.hits[kind] = kept
        else:
            del doc.hits[kind]


def _full(doc: Doc, kind: str, limit: int) -> bool:
    return len(doc.hits.get(kind, ())) >= limit


# --------------------------------------------------------------- presenter
def new_room(
    code: str,
    now: float,
    lesson: str,
    step: int = 1,
    hide_names: bool = False,
    ttl: float = TTL,
    key: str = "",
    browser: object = None,
) -> Doc:
    """A new room ``code`` at ``step`` of ``lesson``, open for ``ttl`` seconds, with
    the presenter key ``key`` and the presenting browser's credential ``browser``
    (only their hashes are kept)."""
    cred = browser_of(browser)
    return Doc(
        code=code,
        lesson=lesson,
        step=step,
        phase="predict",
        hide_names=bool(hide_names),
        created=now,
        expires=now + ttl,
        key_hash=hash_secret(key),
        browser_hashes=[] if cred is None else [hash_secret(cred)],
    )


def claim(doc: Doc | None, now: float, key: object, browser: object = None) -> Room:
    """Take the room back with its presenter key; ``browser``'s credential then
    presents it too (the newest first, ``PRESENTING_BROWSERS`` at most). A wrong key:
    :class:`TooMany` once ``KEY_FAILS_PER_MINUTE`` came in the last minute, else it
    is counted in ``doc`` and :class:`NotPresenter` raised (the caller keeps that
    count). The right key is never refused: others' wrong keys cannot lock the
    presenter out, and a key of 192 random bits is not guessed by trying."""
    doc = _live(doc, now)
    given = hash_secret(key) if isinstance(key, str) and key else ""
    if not hmac.compare_digest(given, doc.key_hash):
        _window(doc, now)
        if _full(doc, "key", KEY_FAILS_PER_MINUTE):
            raise TooMany(TOO_MANY_KEYS)
        doc.hits.setdefault("key", []).append(now)
        raise NotPresenter(WRONG_KEY)
    cred = browser_of(browser)
    if cred is not None:
        mine = hash_secret(cred)
        kept = [mine, *(h for h in doc.browser_hashes if h != mine)]
        doc.browser_hashes = kept[:PRESENTING_BROWSERS]
    return room_of(doc)


def go_to(doc: Doc | None, now: float, secret: object, step: object) -> Room:
    """Move the room to ``step`` (from 1); its question starts at the predict phase."""
    doc = _presenter(doc, now, secret)
    if not isinstance(step, int) or step < 1:
        raise RoomError(NO_STEP)
    doc.step, doc.phase = step, "predict"
    return room_of(doc)


def set_phase(doc: Doc | None, now: float, secret: object, phase: object) -> Room:
    doc = _presenter(doc, now, secret)
    if phase not in PHASES:
        raise RoomError(NO_PHASE)
    doc.phase = str(phase)
    return room_of(doc)


def set_joining(
    doc: Doc | None, now: float, secret: object, locked: object, max_members: object
) -> Room:
    """Lock joins (``locked``: no new participant; one who joined before comes back)
    and set the room's size (``max_members``, 0 for no cap; the members already in
    stay)."""
    if not isinstance(max_members, int) or not 0 <= max_members <= MAX_MEMBERS:
        raise RoomError(BAD_SIZE)
    doc = _presenter(doc, now, secret)
    doc.locked, doc.max_members = bool(locked), int(max_members)
    return room_of(doc)


def close(doc: Doc | None, now: float, secret: object) -> Room:
    doc = _presenter(doc, now, secret)
    doc.closed = True
    return room_of(doc)


def remove(doc: Doc | None, now: float, secret: object, token: object) -> bool:
    """The presenter removes a participant: their membership, votes and measured
    answers go (their progress is the store's: it goes with them); their token is
    remembered as removed. False if ``token`` was not a member."""
    doc = _presenter(doc, now, secret)
    if not isinstance(token, str) or doc.members.pop(token, None) is None:
        return False
    for answers in doc.answers.values():
        for given in answers.values():
            given.pop(token, None)
    if token not in doc.removed:
        doc.removed.append(token)
    return True


# ----------------------------------------------------------------- everyone
def join(
    doc: Doc | None,
    now: float,
    name: object = None,
    browser: object = None,
    address: object = None,
    token: str | None = None,
) -> Member:
    """A participant of the room: with ``browser`` (an opaque per-browser id), the
    one this browser joined as before (their seed and votes), if any; else a new one
    (``token``, a fresh random one if not given) with the room's next seed.
    :class:`RoomError` if the room is closed, or locked or full to a new one;
    :class:`TooMany` past ``JOINS_PER_MINUTE`` Join presses in the room, or
    ``JOINS_PER_MINUTE_ADDRESS`` from the client ``address`` (kept hashed), or
    ``JOINS_PER_MINUTE_BROWSER`` from this browser, in the last minute (refused
    presses do not count)."""
    doc = _open(doc, now)
    who, where = browser_of(browser), address_of(address)
    _window(doc, now)
    if _full(doc, "join", JOINS_PER_MINUTE):
        raise TooMany(TOO_MANY_JOINS)
    if where is not None and _full(doc, "join@" + where, JOINS_PER_MINUTE_ADDRESS):
        raise TooMany(TOO_MANY_JOINS_ADDRESS)
    if who is not None and _full(doc, "join:" + who, JOINS_PER_MINUTE_BROWSER):
        raise TooMany(TOO_MANY_JOINS_BROWSER)
    kinds = ["join"] + ([] if where is None else ["join@" + where])
    for kind in kinds + ([] if who is None else ["join:" + who]):
        doc.hits.setdefault(kind, []).append(now)
    back = member_of_browser(doc, who)
    if back is not None:
        return back
    if doc.locked:
        raise RoomError(LOCKED)
    if doc.max_members and len(doc.members) >= doc.max_members:
        raise RoomError(FULL)
    doc.seq += 1
    token = token or secrets.token_urlsafe(16)
    clean = clean_name(name)
    doc.members[token] = Entry(clean, doc.seq, now, who)
    return Member(token, clean, doc.seq, now)


def vote(
    doc: Doc | None, now: float, token: object, step: object, round_: object, choice: object
) -> bool:
    """Record a participant's vote; False if they voted in this round already.
    :class:`RoomError` unless the room is at ``step`` in the phase that takes round
    ``round_`` (1 at ``predict``, 2 at ``second``)."""
    choice = check_choice(choice)
    doc = _open(doc, now)
    if not _at(doc, step) or ROUND_OF.get(doc.phase) != round_:
        raise RoomError(NO_VOTES)
    token = _in_room(doc, token)
    answers = doc.answers.setdefault(str(doc.step), {}).setdefault(str(ROUND_OF[doc.phase]), {})
    if token in answers:
        return False
    answers[token] = choice
    return True


def measure(doc: Doc | None, now: float, token: object, step: object, answer: object) -> bool:
    """Record a participant's measured answer for ``step``, the room's step past its
    predict phase; False if given already."""
    answer = check_choice(answer)
    doc = _open(doc, now)
    if not _at(doc, step) or doc.phase == "predict":
        raise RoomError(NO_MEASURES)
    token = _in_room(doc, token)
    answers = doc.answers.setdefault(str(doc.step), {}).setdefault("measured", {})
    if token in answers:
        return False
    answers[token] = answer
    return True


def progress_numbers(step: object, done: object, total: object) -> tuple[int, int, int]:
    """``step``, ``done`` and ``total`` of a measurement's progress: whole numbers
    (not bools), 0 <= done <= total, 0 < total <= 10**9."""
    if not (isinstance(step, int) and isinstance(done, int) and isinstance(total, int)):
        raise RoomError(NO_PROGRESS)
    if any(isinstance(v, bool) for v in (step, done, total)):
        raise RoomError(NO_PROGRESS)
    if not 0 <= done <= total or not 0 < total <= 10**9:
        raise RoomError(NO_PROGRESS)
    return step, done, total


def check_progress(
    doc: Doc | None, now: float, token: object, step: object, done: object, total: object
) -> tuple[str, int, int, int]:
    """Whether a participant may report ``done`` of ``total`` for ``step`` (the
    room's step): their token and the numbers, else :class:`RoomError`. The progress
    itself is not in the document (the store keeps it apart: it changes every
    second)."""
    step, done, total = progress_numbers(step, done, total)
    doc = _open(doc, now)
    if doc.step != step:
        raise RoomError(NOT_AT_STEP)
    return _in_room(doc, token), step, done, total
