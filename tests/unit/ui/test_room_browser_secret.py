"""Which cookie names a browser to the room (``ui.room.view.browser_secret``): behind the
workshop server, its nginx's replica cookie (``HttpOnly``, ``Secure``, 32 random hex
digits: ``$request_id``), so a copy of Streamlit's XSRF cookie, which the page's own
script reads, names another browser; without it (``make run``), the XSRF token."""

from __future__ import annotations

from ui.room.view import PLAIN_HTTP, browser_secret, plain_http_warning


def xsrf(token: bytes, mask: bytes = b"\x01\x02\x03\x04") -> str:
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(token))
    return f"2|{mask.hex()}|{masked.hex()}|1795715132"


TOKEN = bytes(range(16))
NGINX_ID = "e4377c2dca693141ca631706b0b18c9f"


def test_the_replica_cookie_comes_first_behind_the_workshop_server() -> None:
    mine = browser_secret({"_streamlit_xsrf": xsrf(TOKEN), "resviz_replica": NGINX_ID})
    assert mine == b"replica:" + NGINX_ID.encode()
    # The XSRF cookie copied into another browser, which has its own replica cookie.
    copied = browser_secret(
        {"_streamlit_xsrf": xsrf(TOKEN, b"\x09\x09\x09\x09"), "resviz_replica": "0" * 32}
    )
    assert copied != mine
    # Copied alone (no replica cookie sent): the XSRF token, not the presenter's id.
    assert browser_secret({"_streamlit_xsrf": xsrf(TOKEN)}) == b"xsrf:" + TOKEN
    assert browser_secret({"_streamlit_xsrf": xsrf(TOKEN)}) != mine


def test_without_nginx_the_xsrf_token_names_the_browser_whatever_its_mask() -> None:
    one = browser_secret({"_streamlit_xsrf": xsrf(TOKEN, b"\x01\x02\x03\x04")})
    two = browser_secret({"_streamlit_xsrf": xsrf(TOKEN, b"\xaa\xbb\xcc\xdd")})
    assert one == two == b"xsrf:" + TOKEN


def test_a_replica_cookie_nginx_did_not_make_is_not_trusted() -> None:
    """A short or hand-set value (a test's "c12", a guess) is not an nginx id."""
    for value in ("c12", "E4377C2DCA693141CA631706B0B18C9F", NGINX_ID[:-1], NGINX_ID + "0"):
        got = browser_secret({"_streamlit_xsrf": xsrf(TOKEN), "resviz_replica": value})
        assert got == b"xsrf:" + TOKEN, value
    assert browser_secret({"resviz_replica": "c12"}) is None
    assert browser_secret({}) is None


def test_plain_http_to_another_machine_is_said_on_the_workshop_page() -> None:
    """make run opened from the network speaks plain HTTP: the page says what that
    exposes; HTTPS (make workshop) or this computer says nothing."""
    for url in ("http://192.168.1.20:8501/workshop", "http://laptop.local:8501/workshop",
                "http://[2001:db8::1]:8501/workshop"):  # fmt: skip
        assert plain_http_warning(url) == PLAIN_HTTP, url
    for url in ("https://192.168.1.20:8500/workshop", "http://localhost:8501/workshop",
                "http://127.0.0.1:8501/workshop", "http://[::1]:8501/workshop",
                "https://workshop.example.org/workshop"):  # fmt: skip
        assert plain_http_warning(url) is None, url
