"""Where the workshop rooms' store lives, and what the factory the app uses
(``open_store``) does when it opens one: ``RESVIZ_DATA_DIR`` moves the SQLite file; a
store that cannot be written is logged once, at that moment, with its path and cause
(a Redis password masked), and raised as an outage that the page shows as its
message; a real redis-server that asks for a password serves the app's store given
the password in ``REDIS_URL`` and refuses it, logged, without."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from tests.roomstores import REDIS, _free_port
from ui.room import store as room_store
from ui.room import view as room_view
from ui.room.store import (
    ROOT,
    RedisStore,
    SQLiteStore,
    StoreUnavailable,
    default_db,
    masked,
    open_store,
)

PASSWORD = "9f2c4e7a1b3d5f60"


@contextmanager
def redis_server_with(folder: Path, args: list[str]) -> Iterator[int]:
    """A real redis-server started with ``args``, then a free loopback port and
    ``folder`` for its files (given last, so they win); yields the port."""
    if REDIS is None:
        msg = "redis-server not installed (apt-get install redis-server)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    port = _free_port()
    cmd = [REDIS, *args, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder)]
    with (folder / "redis.log").open("w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            assert proc.poll() is None, (folder / "redis.log").read_text()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64)[:1] in (b"+", b"-"):  # PONG, or NOAUTH: it answers
                        break
            except OSError:
                assert time.monotonic() < deadline, "redis-server did not answer in 20 s"
                time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No store settings from the environment running the tests."""
    for name in ("REDIS_URL", "RESVIZ_ROOM_DB", "RESVIZ_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "ui.room.store" and r.levelno == logging.ERROR
    ]


# ------------------------------------------------------------------------- SQLite
def test_the_room_file_goes_in_resviz_data_dir(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert default_db() == ROOT / "artifacts" / "rooms.sqlite3"  # `make run` as before
    data = tmp_path / "data" / "new"  # created as needed
    env.setenv("RESVIZ_DATA_DIR", str(data))
    store = open_store()
    assert isinstance(store, SQLiteStore) and Path(store.path) == data / "rooms.sqlite3"
    room, secret = store.create("residuals")
    assert (data / "rooms.sqlite3").is_file() and store.is_presenter(room.code, secret)
    env.setenv("RESVIZ_ROOM_DB", str(tmp_path / "own.sqlite3"))  # a file of its own wins
    assert default_db() == tmp_path / "own.sqlite3"


@pytest.mark.parametrize("case", ["folder under a file", "folder for a file"])
def test_an_unwritable_room_file_is_logged_once_with_path_and_cause_when_opened(
    env: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture, case: str
) -> None:
    # The tests run as root, whom no mode bits stop: a folder that cannot be made
    # (its parent is a regular file), or a room "file" that is a folder.
    if case == "folder under a file":
        (tmp_path / "plain").write_text("")
        env.setenv("RESVIZ_DATA_DIR", str(tmp_path / "plain" / "data"))
        path, cause = tmp_path / "plain" / "data" / "rooms.sqlite3", "NotADirectoryError: "
    else:
        path, cause = tmp_path / "a-folder", "OperationalError: unable to open database file"
        path.mkdir()
        env.setenv("RESVIZ_ROOM_DB", str(path))
    caplog.set_level(logging.ERROR, logger="ui.room.store")
    with pytest.raises(StoreUnavailable) as raised:
        open_store()
    assert isinstance(raised.value, OSError)  # an outage to the page's guard
    (line,) = errors(caplog)
    assert line.startswith(f"workshop rooms: cannot write {path}: {cause}"), line
    with pytest.raises(StoreUnavailable):
        open_store()  # tried again (the next page asks again), not logged again
    assert errors(caplog) == [line]


@pytest.mark.slow
def test_the_page_shows_its_message_and_the_log_says_why(
    env: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The Workshop page's "Open as a room" with a store that cannot be written: the
    friendly message, no traceback; the cause is in the server's log."""
    from streamlit.testing.v1 import AppTest

    (tmp_path / "plain").write_text("")
    env.setenv("RESVIZ_DATA_DIR", str(tmp_path / "plain" / "data"))
    env.setattr(room_view, "_store", None)
    caplog.set_level(logging.ERROR, logger="ui.room.store")
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=120)
    at.switch_page("app_pages/workshop.py").run()
    at.button(key="room:open").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [w.value for w in at.warning] == [room_view.UNREACHABLE]
    assert errors(caplog) == [
        f"workshop rooms: cannot write {tmp_path / 'plain' / 'data' / 'rooms.sqlite3'}: "
        f"NotADirectoryError: [Errno 20] Not a directory: '{tmp_path / 'plain' / 'data'}'"
    ]


# -------------------------------------------------------------------------- Redis
@pytest.fixture(scope="module")
def locked_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A real redis-server that asks every client for ``PASSWORD``."""
    folder = tmp_path_factory.mktemp("redis-auth")
    args = ["--save", "", "--appendonly", "no", "--requirepass", PASSWORD]
    with redis_server_with(folder, args) as port:
        yield port


@pytest.mark.slow
def test_redis_with_its_password_in_redis_url_serves_the_app(
    env: pytest.MonkeyPatch, locked_redis: int, caplog: pytest.LogCaptureFixture
) -> None:
    env.setenv("REDIS_URL", f"redis://:{PASSWORD}@127.0.0.1:{locked_redis}/0")
    caplog.set_level(logging.DEBUG)
    store = open_store()
    assert isinstance(store, RedisStore)
    room, secret = store.create("residuals")
    member = store.join(room.code, "Ada")
    assert store.is_presenter(room.code, secret) and store.members(room.code) == [member]
    assert 0 < store.r.ttl("resviz:probe") <= 60  # the start-up write, on a scratch key
    assert not errors(caplog) and PASSWORD not in caplog.text
    # Anyone else who reaches the port cannot rewrite the room's presenter secret.
    stranger = redis.Redis(port=locked_redis)
    with pytest.raises(redis.AuthenticationError):
        stranger.hset(f"resviz:room-doc:{room.code}", "doc", "{}")
    assert store.is_presenter(room.code, secret)


@pytest.mark.parametrize("given", [None, "wrong-password"])
def test_redis_without_its_password_is_refused_and_logged_masked(
    env: pytest.MonkeyPatch, locked_redis: int, caplog: pytest.LogCaptureFixture, given: str | None
) -> None:
    auth = "" if given is None else f":{given}@"
    env.setenv("REDIS_URL", f"redis://{auth}127.0.0.1:{locked_redis}/0")
    caplog.set_level(logging.ERROR, logger="ui.room.store")
    with pytest.raises(StoreUnavailable):
        open_store()
    shown = f"redis://{'' if given is None else ':***@'}127.0.0.1:{locked_redis}/0"
    (line,) = errors(caplog)
    assert line.startswith(f"workshop rooms: cannot write {shown}: AuthenticationError: "), line
    assert given is None or given not in caplog.text


def test_a_redis_that_does_not_answer_is_logged_too(
    env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    port = _free_port()  # nothing listens there
    env.setenv("REDIS_URL", f"redis://:{PASSWORD}@127.0.0.1:{port}/0")
    caplog.set_level(logging.ERROR, logger="ui.room.store")
    with pytest.raises(StoreUnavailable):
        open_store()
    (line,) = errors(caplog)
    assert line.startswith(f"workshop rooms: cannot write redis://:***@127.0.0.1:{port}/0: ")
    assert "ConnectionError" in line and PASSWORD not in caplog.text


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:s3cret@redis:6379/0", "redis://:***@redis:6379/0"),
        ("rediss://app:s3cret@10.0.0.5:6380/1", "rediss://app:***@10.0.0.5:6380/1"),
        ("redis://:p%40ss@redis/0", "redis://:***@redis/0"),
        ("unix:///run/redis.sock?db=0&password=s3cret", "unix:///run/redis.sock?db=0&password=***"),
        ("redis://redis:6379/0", "redis://redis:6379/0"),
        ("redis://app@redis:6379/0", "redis://app@redis:6379/0"),
    ],
)
def test_masked_hides_the_password(url: str, shown: str) -> None:
    assert masked(url) == shown


def test_a_password_is_masked_in_the_cause_too(
    env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A cause that quoted the URL (here: a scheme redis-py does not know) does not
    show the password either, as written or decoded."""
    env.setenv("REDIS_URL", "http://:p%40ss@redis:6379/0")
    caplog.set_level(logging.ERROR, logger="ui.room.store")
    with pytest.raises(StoreUnavailable):
        open_store()
    (line,) = errors(caplog)
    assert line.startswith("workshop rooms: cannot write http://:***@redis:6379/0: ValueError")
    assert "p%40ss" not in caplog.text and "p@ss" not in caplog.text


def test_the_factory_is_the_one_the_app_uses() -> None:
    assert room_view.open_store is room_store.open_store
    assert issubclass(StoreUnavailable, room_view.STORE_ERRORS)


@pytest.mark.slow
@pytest.mark.parametrize("writable", [True, False])
def test_the_workshop_server_checks_the_store_before_its_replicas_start(
    tmp_path: Path, writable: bool
) -> None:
    """deploy/workshop/serve.py opens the store before starting any replica: an
    unwritable one is said on the server's own stderr (what `docker logs` shows), with
    its path and cause; a writable one is created there and says nothing."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    data = tmp_path / "data" if writable else blocker / "data"
    code = (
        "import runpy; m = runpy.run_path('deploy/workshop/serve.py', run_name='serve'); "
        "print(m['check_room_store']())"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "RESVIZ_ROOM_DB")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "RESVIZ_DATA_DIR": str(data)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip() == str(writable), done.stderr
    if writable:
        assert (data / "rooms.sqlite3").is_file()
        assert "workshop rooms" not in done.stderr
    else:
        line = f"workshop rooms: cannot write {data / 'rooms.sqlite3'}: "
        assert line in done.stderr, done.stderr
        assert "Error" in done.stderr.split(line, 1)[1].splitlines()[0]


@pytest.mark.parametrize(
    "url",
    [
        "redis://redis:6379/0",
        "redis://10.0.0.5:6379/0",
        "rediss://app@redis.example.org:6380/1",
        "redis://:@redis:6379/0",
        "redis://192.168.1.20/0?db=0",
    ],
)
def test_a_remote_redis_without_a_password_is_refused_before_it_is_reached(
    env: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    url: str,
) -> None:
    """Whoever reaches a Redis with no password could rewrite a presenter key: the
    store refuses the URL, says why, and never connects (the README's example)."""
    made: list[str] = []
    monkeypatch.setattr(room_store, "RedisStore", lambda u: made.append(u))
    env.setenv("REDIS_URL", url)
    caplog.set_level(logging.ERROR, logger="ui.room.store")
    with pytest.raises(StoreUnavailable):
        open_store()
    assert made == []
    (line,) = errors(caplog)
    assert "on another machine" in line and "with no password" in line, line


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6379/0",
        "redis://localhost/0",
        "redis://[::1]:6379/0",
        "redis://127.5.0.1:6379/0",
        "unix:///run/redis.sock?db=0",
        "redis://:s3cret@redis:6379/0",
        "rediss://app:s3cret@10.0.0.5:6380/1",
        "redis://redis:6379/0?password=s3cret",
    ],
)
def test_a_local_redis_or_one_with_a_password_passes_the_check(url: str) -> None:
    room_store.check_redis_url(url)  # raises nothing


def _serve() -> dict:
    import runpy

    return runpy.run_path(str(ROOT / "deploy" / "workshop" / "serve.py"), run_name="serve")


@pytest.mark.parametrize(
    ("given", "folders", "roots"),
    [
        ("", "0", ""),  # the default: the shipped models only
        ("  ", "0", ""),
        ("/srv/models", "1", "/srv/models"),
        (f"/srv/a{os.pathsep}{os.pathsep}/srv/b", "1", f"/srv/a{os.pathsep}/srv/b"),
    ],
)
def test_the_workshop_server_starts_with_model_folders_off_unless_named(
    given: str, folders: str, roots: str
) -> None:
    """Every replica of deploy/workshop/serve.py (make workshop, the image, the
    manifests) gets RESVIZ_MODEL_FOLDERS=0 unless --model-folders names the folders,
    which become RESVIZ_MODEL_ROOTS; an operator's RESVIZ_MODEL_FOLDERS=1 alone does
    not open the server's disk."""
    env = _serve()["replica_env"]({"RESVIZ_MODEL_FOLDERS": "1", "PATH": "/bin"}, given)
    assert (env["RESVIZ_MODEL_FOLDERS"], env["RESVIZ_MODEL_ROOTS"]) == (folders, roots)
    assert env["RESVIZ_CLIENT_HEADER"] == "X-Real-IP"  # nginx's, for the join limit
    assert env["PATH"] == "/bin" and len(env["STREAMLIT_SERVER_COOKIE_SECRET"]) == 64


def test_the_workshop_servers_flag_defaults_to_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The container and the manifests set RESVIZ_MODEL_ROOTS, not a flag."""
    serve = _serve()
    seen: dict = {}

    monkeypatch.setenv("RESVIZ_MODEL_ROOTS", "/srv/models")
    import argparse

    original = argparse.ArgumentParser.parse_args

    def record(self, args=None, namespace=None):  # noqa: ANN001, ANN202
        ns = original(self, args, namespace)
        seen["model_folders"] = ns.model_folders
        raise SystemExit(0)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", record)
    with pytest.raises(SystemExit):
        serve["main"]([])
    assert seen["model_folders"] == "/srv/models"
    with pytest.raises(SystemExit):
        serve["main"](["--model-folders", "/elsewhere"])
    assert seen["model_folders"] == "/elsewhere"
