"""The served app refuses uploads beyond a browser session's quota before holding them (no account needed
to reach the upload endpoint, so the limit must hold for anyone with a session)."""

from __future__ import annotations

import uuid

import httpx
from websockets.asyncio.client import connect

from engines.platform.settings import Settings
from tests.helpers import run_async


async def _upload_in_one_session(base: str, count: int) -> list[httpx.Response]:
    """Open a tab's websocket, run the script once (the login page), then PUT ``count`` files to the
    upload endpoint as that session, the way a script (not the page) would."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    async with connect(base.replace("http://", "ws://") + "/_stcore/stream", subprotocols=["streamlit"]) as ws:
        message = BackMsg()
        message.rerun_script.query_string = ""
        await ws.send(message.SerializeToString())
        session = ""
        while True:
            forward = ForwardMsg()
            forward.ParseFromString(await ws.recv())
            kind = forward.WhichOneof("type")
            if kind == "new_session":
                session = forward.new_session.initialize.session_id
            elif kind == "script_finished":
                break
        with httpx.Client() as client:
            token = client.get(f"{base}/_stcore/health").cookies["_streamlit_xsrf"]
            return [client.put(f"{base}/_stcore/upload_file/{session}/{uuid.uuid4()}",
                               files={"file": ("a.jsonl", b"{}\n" * 100)}, headers={"X-Xsrftoken": token})
                    for _ in range(count)]


def test_a_session_may_hold_only_its_quota_of_uploads(app_server):
    allowed = Settings().upload_session_files
    responses = run_async(_upload_in_one_session(app_server.base, allowed + 2))
    assert [r.status_code for r in responses] == [204] * allowed + [413, 413]
    assert f"at most {allowed} uploads" in responses[-1].text
