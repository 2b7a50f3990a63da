"""A workshop room's rules (``ui.room.rules``) on a document alone, with no store and a
clock that is a number: joins and their three rate limits at the window's edges,
vote rounds per phase, one measured answer, a progress report's checks, the
presenter key's claim and its wrong-key limit, the presenting browsers' cap, lock
and size, removal, closing and expiry; each refusal with its message; and the
document's parts, written and read back, and copied for a rule to change."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from ui.room import rules
from ui.room.rules import (
    CLOSED,
    FULL,
    GONE,
    JOINS_PER_MINUTE,
    JOINS_PER_MINUTE_ADDRESS,
    JOINS_PER_MINUTE_BROWSER,
    KEY_FAILS_PER_MINUTE,
    LOCKED,
    NO_MEASURES,
    NO_PROGRESS,
    NO_VOTES,
    NOT_A_CHOICE,
    NOT_AT_STEP,
    NOT_MEMBER,
    ONLY_PRESENTER,
    PRESENTING_BROWSERS,
    ROOM,
    TOO_MANY_JOINS,
    TOO_MANY_JOINS_ADDRESS,
    TOO_MANY_JOINS_BROWSER,
    TOO_MANY_KEYS,
    WINDOW_S,
    WRONG_KEY,
    Doc,
    Member,
    NotPresenter,
    RoomError,
    TooMany,
)

T0 = 1_000_000.0
KEY = "the-presenter-key"
BROWSER, OTHER = "a" * 64, "b" * 64


def room(step: int = 1, ttl: float = 3600.0, browser: object = None) -> Doc:
    return rules.new_room("ABCDEF", T0, "residuals", step, False, ttl, KEY, browser)


@contextmanager
def refused(message: str, kind: type[RoomError] = RoomError) -> Iterator[None]:
    """A refusal of exactly ``kind`` (not a subclass) with exactly ``message``."""
    with pytest.raises(RoomError) as caught:
        yield
    assert type(caught.value) is kind and str(caught.value) == message, repr(caught.value)


def hits(doc: Doc) -> dict[str, int]:
    return {kind: len(times) for kind, times in doc.hits.items()}


# ------------------------------------------------------------------ the document
def test_a_new_room_and_its_parts_round_trip():
    doc = room(step=3, browser=BROWSER)
    assert rules.room_of(doc) == rules.Room(
        "ABCDEF", "residuals", 3, "predict", False, T0, T0 + 3600, False, False, 0
    )
    assert doc.key_hash == rules.hash_secret(KEY) and KEY not in rules.dump(doc)[ROOM]
    assert doc.browser_hashes == [rules.hash_secret(BROWSER)]
    ada = rules.join(doc, T0, "Ada", BROWSER, "10.0.0.1")
    rules.vote(doc, T0, ada.token, 3, 1, "plain")
    texts = rules.dump(doc)
    assert set(texts) == {ROOM, "step:3"}
    assert "10.0.0.1" not in texts[ROOM]  # the address is kept hashed only
    again = rules.load(texts)
    assert again == doc and rules.dump(again) == texts


def test_only_the_changed_parts_are_written_and_a_copy_is_a_copy():
    doc = room(step=2)
    ada = rules.join(doc, T0, "Ada")
    before = rules.load(rules.dump(doc))
    copied = rules.copy(before)
    assert rules.vote(copied, T0, ada.token, 2, 1, "plain")
    written = rules.dump(copied, since=before)
    assert {k: json.loads(v) for k, v in written.items()} == {"step:2": {"1": {ada.token: "plain"}}}
    assert before.answers == {} and rules.dump(before, since=doc) == {}  # untouched
    copied = rules.copy(before)
    rules.join(copied, T0 + 1, "Bo")
    rules.go_to(copied, T0 + 1, KEY, 2)
    assert set(rules.dump(copied, since=before)) == {ROOM}
    assert len(before.members) == 1 and sum(hits(before).values()) == 1


# ------------------------------------------------------------------------- joins
def test_joins_get_the_next_seed_and_a_clean_name():
    doc = room()
    joined = [rules.join(doc, T0 + i, n) for i, n in enumerate(["Ada", " Bo\u202e ", None])]
    assert [(m.seed, m.name, m.joined) for m in joined] == [
        (1, "Ada", T0),
        (2, "Bo", T0 + 1),
        (3, None, T0 + 2),
    ]
    assert len({m.token for m in joined}) == 3
    assert rules.members(doc) == joined and rules.member(doc, joined[1].token) == joined[1]
    assert rules.member(doc, "nobody") is None and rules.member(doc, 42) is None
    assert rules.join(doc, T0, token="mine").token == "mine"


def test_a_browser_joins_as_one_participant():
    doc = room()
    ada = rules.join(doc, T0, "Ada", BROWSER)
    assert rules.join(doc, T0 + 1, "someone else", BROWSER) == ada
    assert rules.member_of_browser(doc, BROWSER) == ada
    assert rules.member_of_browser(doc, OTHER) is None
    assert rules.member_of_browser(doc, "x" * 129) is None  # not a browser id
    assert rules.join(doc, T0 + 2, None, OTHER).seed == 2


def test_a_browsers_joins_are_limited_in_a_sliding_minute():
    doc = room()
    for i in range(JOINS_PER_MINUTE_BROWSER):
        rules.join(doc, T0 + i, None, BROWSER)
    counted = hits(doc)
    with refused(TOO_MANY_JOINS_BROWSER, TooMany):
        rules.join(doc, T0 + WINDOW_S - 0.001, None, BROWSER)
    assert hits(doc) == counted  # a refused press counts nowhere
    assert rules.join(doc, T0 + WINDOW_S - 0.001, None, OTHER).seed == 2  # another browser
    # The first press leaves the window at exactly a minute: one more press.
    assert rules.join(doc, T0 + WINDOW_S, None, BROWSER).seed == 1
    with refused(TOO_MANY_JOINS_BROWSER, TooMany):
        rules.join(doc, T0 + WINDOW_S, None, BROWSER)


def test_an_address_is_limited_and_does_not_reach_the_rooms_limit():
    doc = room()
    for i in range(JOINS_PER_MINUTE_ADDRESS):
        rules.join(doc, T0, None, f"{i:064x}", "203.0.113.7")
    with refused(TOO_MANY_JOINS_ADDRESS, TooMany):
        rules.join(doc, T0 + 1, None, "e" * 64, " 203.0.113.7 ")  # the same, trimmed
    assert rules.join(doc, T0 + 1, "Ada", "e" * 64, "198.51.100.20").name == "Ada"
    assert rules.join(doc, T0 + WINDOW_S, None, "f" * 64, "203.0.113.7").seed > 0
    assert JOINS_PER_MINUTE >= 5 * JOINS_PER_MINUTE_ADDRESS


def test_a_presenters_move_drops_the_events_past_the_window():
    doc = room()
    rules.join(doc, T0, None, BROWSER, "10.0.0.1")
    rules.join(doc, T0 + 30, None, OTHER)
    rules.go_to(doc, T0 + WINDOW_S, KEY, 2)
    assert hits(doc) == {"join": 1, "join:" + OTHER: 1}


def test_the_rooms_limit_comes_first_and_slides():
    doc = room()
    for i in range(JOINS_PER_MINUTE):
        rules.join(doc, T0 + i * 0.1, None, None, f"10.0.{i % 250}.{i // 250}")
    # Every limit is full for this browser and address: the room's is said.
    for i in range(JOINS_PER_MINUTE_BROWSER):
        doc.hits.setdefault("join:" + BROWSER, []).append(T0)
    with refused(TOO_MANY_JOINS, TooMany):
        rules.join(doc, T0 + 30, None, BROWSER, "10.0.0.0")
    assert len(doc.members) == JOINS_PER_MINUTE
    # At T0 + 60.05 the first press (T0) has left the window; the second has not.
    assert rules.join(doc, T0 + WINDOW_S + 0.05).seed == JOINS_PER_MINUTE + 1
    with refused(TOO_MANY_JOINS, TooMany):
        rules.join(doc, T0 + WINDOW_S + 0.05)


def test_a_locked_or_full_room_takes_no_new_participant_but_its_own_come_back():
    doc = room()
    ada = rules.join(doc, T0, "Ada", BROWSER)
    rules.set_joining(doc, T0, KEY, True, 0)
    with refused(LOCKED):
        rules.join(doc, T0, "Mallory", OTHER)
    with refused(LOCKED):
        rules.join(doc, T0, "no cookie")
    assert rules.join(doc, T0, "Ada", BROWSER) == ada
    rules.set_joining(doc, T0, KEY, False, 2)
    assert rules.join(doc, T0, "Bo", OTHER).seed == 2
    with refused(FULL):
        rules.join(doc, T0, "Cy", "c" * 64)
    assert rules.remove(doc, T0, KEY, ada.token)
    assert rules.join(doc, T0, "Cy", "c" * 64).seed == 3  # a place freed; no seed reused
    rules.set_joining(doc, T0, KEY, False, 1)  # below the members in: no one leaves
    assert len(doc.members) == 2


@pytest.mark.parametrize("size", [-1, 1001, 2.5, "3", None])
def test_a_rooms_size_is_a_whole_number_in_range(size):
    doc = room()
    with refused(rules.BAD_SIZE):
        rules.set_joining(doc, T0, KEY, False, size)
    with refused(rules.BAD_SIZE):  # said before anything else, even for no room
        rules.set_joining(None, T0, "guess", False, size)
    assert doc.max_members == 0


# ------------------------------------------------------------------------- votes
def test_one_vote_per_round_in_the_phase_that_takes_it():
    doc = room(step=2)
    a, b = rules.join(doc, T0, "a"), rules.join(doc, T0, "b")
    assert rules.vote(doc, T0, a.token, 2, 1, "plain") is True
    assert rules.vote(doc, T0, a.token, 2, 1, "residual") is False  # the first one stays
    assert rules.vote(doc, T0, b.token, 2, 1, "residual") is True
    with refused(NO_VOTES):
        rules.vote(doc, T0, a.token, 3, 1, "plain")  # not the room's step
    with refused(NO_VOTES):
        rules.vote(doc, T0, a.token, 2.0, 1, "plain")  # nor a step at all
    with refused(NO_VOTES):
        rules.vote(doc, T0, a.token, 2, 2, "plain")  # the second round has not started
    with refused(NOT_MEMBER):
        rules.vote(doc, T0, "stranger", 2, 1, "plain")
    rules.set_phase(doc, T0, KEY, "revealed")
    for round_ in (1, 2):
        with refused(NO_VOTES):  # the reveal takes no vote
            rules.vote(doc, T0, b.token, 2, round_, "plain")
    rules.set_phase(doc, T0, KEY, "second")
    with refused(NO_VOTES):
        rules.vote(doc, T0, b.token, 2, 1, "plain")  # round 1 is over
    assert rules.vote(doc, T0, a.token, 2, 2, "residual") is True
    assert rules.vote(doc, T0, a.token, 2, 2, "plain") is False
    assert rules.votes(doc, 2, 1) == {a.token: "plain", b.token: "residual"}
    assert rules.votes(doc, 2, 2) == {a.token: "residual"}
    assert rules.votes(doc, 5, 1) == {}
    rules.go_to(doc, T0, KEY, 3)  # a new step asks again, from round 1
    assert doc.phase == "predict" and rules.vote(doc, T0, a.token, 3, 1, "plain")


@pytest.mark.parametrize("choice", [None, "", "x" * 121, 3])
def test_a_choice_is_a_short_string_said_first(choice):
    doc = room()
    me = rules.join(doc, T0)
    with refused(NOT_A_CHOICE):
        rules.vote(doc, T0, me.token, 1, 1, choice)
    with refused(NOT_A_CHOICE):
        rules.measure(None, T0, me.token, 1, choice)
    assert rules.check_choice("x" * 120) == "x" * 120


def test_one_measured_answer_per_participant_after_the_predict_phase():
    doc = room(step=4)
    me = rules.join(doc, T0)
    with refused(NO_MEASURES):
        rules.measure(doc, T0, me.token, 4, "residual")  # not revealed yet
    rules.set_phase(doc, T0, KEY, "revealed")
    with refused(NO_MEASURES):
        rules.measure(doc, T0, me.token, 3, "residual")
    with refused(NO_MEASURES):
        rules.measure(doc, T0, me.token, "4", "residual")
    with refused(NOT_MEMBER):
        rules.measure(doc, T0, "stranger", 4, "residual")
    assert rules.measure(doc, T0, me.token, 4, "residual") is True
    assert rules.measure(doc, T0, me.token, 4, "plain") is False
    rules.set_phase(doc, T0, KEY, "second")
    assert rules.measure(doc, T0, me.token, 4, "plain") is False
    assert rules.measures(doc, 4) == {me.token: "residual"} and rules.measures(doc, 3) == {}


@pytest.mark.parametrize(
    "numbers",
    [(8, 900, 800), (8, -1, 800), (8, 1, 0), (8, True, 800), (True, 1, 2), (8, 1, 10**9 + 1),
     (8, 1.0, 2), ("8", 1, 2)],
)  # fmt: skip
def test_a_progress_report_is_whole_numbers_in_range(numbers):
    doc = room(step=8)
    me = rules.join(doc, T0)
    with refused(NO_PROGRESS):
        rules.check_progress(doc, T0, me.token, *numbers)
    with refused(NO_PROGRESS):  # said first, even for no room
        rules.check_progress(None, T0, me.token, *numbers)


def test_a_progress_report_is_a_participants_at_the_rooms_step():
    doc = room(step=8)
    me = rules.join(doc, T0)
    assert rules.check_progress(doc, T0, me.token, 8, 400, 800) == (me.token, 8, 400, 800)
    assert rules.check_progress(doc, T0, me.token, 8, 0, 10**9)[1:] == (8, 0, 10**9)
    with refused(NOT_AT_STEP):
        rules.check_progress(doc, T0, me.token, 7, 1, 2)
    with refused(NOT_MEMBER):
        rules.check_progress(doc, T0, "stranger", 8, 1, 2)
    rules.close(doc, T0, KEY)
    with refused(CLOSED):
        rules.check_progress(doc, T0, me.token, 8, 1, 2)


# --------------------------------------------------------------------- presenter
@pytest.mark.parametrize("wrong", [None, "", "x", "guess" * 8, 42])
def test_only_the_presenter_moves_the_room(wrong):
    doc = room()
    me = rules.join(doc, T0, "Ada")
    for secret in (wrong, me.token):  # a participant's token is no secret
        for attempt in (
            lambda s: rules.go_to(doc, T0, s, 3),
            lambda s: rules.set_phase(doc, T0, s, "revealed"),
            lambda s: rules.set_joining(doc, T0, s, True, 0),
            lambda s: rules.close(doc, T0, s),
            lambda s: rules.remove(doc, T0, s, me.token),
        ):
            with refused(ONLY_PRESENTER, NotPresenter):
                attempt(secret)
        assert not rules.is_presenter(doc, secret)
    assert (doc.step, doc.phase, doc.closed, doc.locked) == (1, "predict", False, False)
    assert rules.go_to(doc, T0, KEY, 3).step == 3
    with refused(rules.NO_STEP):
        rules.go_to(doc, T0, KEY, 0)
    with refused(rules.NO_STEP):
        rules.go_to(doc, T0, KEY, "4")
    with refused(rules.NO_PHASE):
        rules.set_phase(doc, T0, KEY, "over")
    assert rules.set_phase(doc, T0, KEY, "revealed").phase == "revealed"
    assert rules.close(doc, T0, KEY).closed
    with refused(CLOSED):
        rules.join(doc, T0)


def test_wrong_keys_are_counted_limited_and_never_lock_out_the_right_one():
    doc = room()
    for i in range(KEY_FAILS_PER_MINUTE):
        with refused(WRONG_KEY, NotPresenter):
            rules.claim(doc, T0 + i, "wrong", BROWSER)
    assert hits(doc) == {"key": KEY_FAILS_PER_MINUTE}  # each one counted
    for key in ("wrong", None, ""):
        with refused(TOO_MANY_KEYS, TooMany):
            rules.claim(doc, T0 + 30, key, BROWSER)
    assert hits(doc) == {"key": KEY_FAILS_PER_MINUTE}  # past the limit: not counted
    assert rules.claim(doc, T0 + 30, KEY, BROWSER).code == "ABCDEF"  # never locked out
    assert doc.browser_hashes == [rules.hash_secret(BROWSER)]
    # The first wrong key (at T0) leaves the window at T0 + 60: one more is only wrong.
    with refused(WRONG_KEY, NotPresenter):
        rules.claim(doc, T0 + WINDOW_S, "wrong")
    with refused(TOO_MANY_KEYS, TooMany):
        rules.claim(doc, T0 + WINDOW_S, "wrong")


def test_the_latest_presenting_browsers_present_without_the_key():
    doc = room(browser=BROWSER)
    assert rules.is_presenter(doc, BROWSER) and rules.is_presenter(doc, KEY)
    assert not rules.is_presenter(doc, OTHER)
    devices = [c * 64 for c in "cdef"]
    for d in devices:
        rules.claim(doc, T0, KEY, d)
    assert len(devices) == PRESENTING_BROWSERS
    assert doc.browser_hashes == [rules.hash_secret(d) for d in reversed(devices)]
    assert not rules.is_presenter(doc, BROWSER)  # the oldest was replaced
    rules.claim(doc, T0, KEY, devices[0])  # a claim again: newest first, no duplicate
    assert doc.browser_hashes[0] == rules.hash_secret(devices[0])
    assert len(doc.browser_hashes) == PRESENTING_BROWSERS
    assert rules.claim(doc, T0, KEY).code == "ABCDEF"  # no browser: nothing changes
    assert len(doc.browser_hashes) == PRESENTING_BROWSERS
    assert rules.go_to(doc, T0, devices[1], 2).step == 2  # a presenting browser presents


def test_the_presenter_removes_a_participant_and_their_answers():
    doc = room(step=2)
    ada, bo = rules.join(doc, T0, "Ada", BROWSER), rules.join(doc, T0, "Bo")
    rules.vote(doc, T0, ada.token, 2, 1, "plain")
    rules.vote(doc, T0, bo.token, 2, 1, "residual")
    rules.set_phase(doc, T0, KEY, "revealed")
    rules.measure(doc, T0, ada.token, 2, "residual")
    rules.go_to(doc, T0, KEY, 3)
    rules.vote(doc, T0, ada.token, 3, 1, "plain")
    assert rules.remove(doc, T0, KEY, ada.token) is True
    assert rules.remove(doc, T0, KEY, ada.token) is False
    assert rules.remove(doc, T0, KEY, None) is False
    assert rules.members(doc) == [bo] and doc.removed == [ada.token]
    assert rules.votes(doc, 2, 1) == {bo.token: "residual"}
    assert rules.measures(doc, 2) == {} and rules.votes(doc, 3, 1) == {}
    assert rules.member_of_browser(doc, BROWSER) is None
    with refused(NOT_MEMBER):
        rules.vote(doc, T0, ada.token, 3, 1, "plain")
    back = rules.join(doc, T0, "Ada", BROWSER)  # joins again: a new participant
    assert back.token != ada.token and back.seed == 3


# ------------------------------------------------------------------------ expiry
def test_a_room_ends_at_its_expiry():
    doc = room(ttl=60)
    me = rules.join(doc, T0, "Ada")
    end = T0 + 60
    assert rules.live(doc, end - 0.001) and not rules.live(doc, end) and not rules.live(None, T0)
    rules.vote(doc, end - 0.001, me.token, 1, 1, "plain")
    for attempt in (
        lambda: rules.join(doc, end),
        lambda: rules.vote(doc, end, me.token, 1, 1, "residual"),
        lambda: rules.measure(doc, end, me.token, 1, "residual"),
        lambda: rules.check_progress(doc, end, me.token, 1, 1, 2),
        lambda: rules.go_to(doc, end, KEY, 2),
        lambda: rules.claim(doc, end, KEY),
        lambda: rules.claim(doc, end, "wrong"),
        lambda: rules.remove(doc, end, KEY, me.token),
        lambda: rules.join(None, T0),
        lambda: rules.close(None, T0, KEY),
    ):
        with refused(GONE):
            attempt()
    assert hits(doc).get("key") is None  # a wrong key for a gone room counts nothing


def test_a_closed_room_refuses_participants_but_not_its_presenter():
    doc = room()
    me = rules.join(doc, T0)
    rules.close(doc, T0, KEY)
    for attempt in (
        lambda: rules.join(doc, T0, None, BROWSER),
        lambda: rules.vote(doc, T0, me.token, 1, 1, "plain"),
        lambda: rules.measure(doc, T0, me.token, 1, "plain"),
    ):
        with refused(CLOSED):
            attempt()
    assert rules.claim(doc, T0, KEY, BROWSER).closed  # the key still opens it
    assert isinstance(rules.member(doc, me.token), Member)
