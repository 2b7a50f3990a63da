"""A minimal Streamlit websocket client: one session, one script run, its elements.

It speaks the protocol the browser speaks (protobuf ``BackMsg`` up,
``ForwardMsg`` down on ``/_stcore/stream``), so many sessions can be held from
one test process without a browser each. Used by the concurrency test.
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
from dataclasses import dataclass, field

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg


@dataclass
class Run:
    elements: list = field(default_factory=list)
    seconds: float = 0.0
    reruns: int = 0
    downloads: list[bytes] = field(default_factory=list)

    def of(self, kind: str) -> list:
        return [e for e in self.elements if e.WhichOneof("type") == kind]

    @property
    def exceptions(self) -> list[str]:
        return [e.exception.message for e in self.of("exception")]

    @property
    def errors(self) -> list[str]:
        # Alert format 1 is ERROR in Alert.proto.
        return [e.alert.body for e in self.of("alert") if e.alert.format == 1]

    def markdown(self) -> str:
        return "\n".join(e.markdown.body for e in self.of("markdown"))

    def download(self, base_url: str, index: int = 0) -> bytes:
        url = self.of("download_button")[index].download_button.url
        with urllib.request.urlopen(base_url + url, timeout=30) as r:
            return r.read()


async def open_page(
    base_url: str,
    page: str,
    query: str = "",
    timeout: float = 120.0,
    hold: float = 0.0,
    downloads: int = 0,
) -> Run:
    """Open ``page`` with ``query`` in a new session; return the elements of its
    first complete run, and the first ``downloads`` download buttons' files
    (fetched while the session is open: they belong to it). The socket stays
    open ``hold`` seconds afterwards."""
    ws_url = base_url.replace("http", "ws", 1) + "/_stcore/stream"
    run = Run()
    t0 = time.monotonic()
    async with websockets.connect(ws_url, subprotocols=["streamlit"], max_size=None) as ws:
        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = page
        await ws.send(msg.SerializeToString())
        while True:
            data = await asyncio.wait_for(ws.recv(), timeout)
            fm = ForwardMsg()
            fm.ParseFromString(data)
            kind = fm.WhichOneof("type")
            if kind == "new_session":
                run.elements.clear()
            elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                run.elements.append(fm.delta.new_element)
            elif kind == "script_finished":
                if fm.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    run.reruns += 1
                    run.elements.clear()
                    continue
                break
        run.seconds = time.monotonic() - t0
        for i in range(min(downloads, len(run.of("download_button")))):
            run.downloads.append(await asyncio.to_thread(run.download, base_url, i))
        if hold:
            await asyncio.sleep(hold)
    return run


def run_sync(coro_fn, *args, **kwargs):
    """Run ``coro_fn(*args, **kwargs)`` to completion on a fresh event loop in its own
    thread (the test process may already have one running, e.g. Playwright's)."""
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(coro_fn(*args, **kwargs))).result()
