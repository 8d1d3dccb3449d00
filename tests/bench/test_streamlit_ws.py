"""bench/streamlit_ws.py against a scripted connection: what it sends for a form submit, and which run it keeps.

The messages are built as the server builds them (one ``ForwardMsg`` per element, addressed by
``delta_path``); bench/load.py --quick (tests/bench/test_load_quick.py) covers the real server.
"""

from __future__ import annotations

import asyncio

import pytest
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.Element_pb2 import Element
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.streamlit_ws import StreamlitProtocolError, StreamlitSession, Widget, stream_url, user_key
from tests.helpers import run_async

FORM = "form-7"
SUBMIT_ID = "$$ID-c3-FormSubmitter:form-7-Finish"


def _message(kind: str, **fields) -> ForwardMsg:
    message = ForwardMsg()
    if kind == "new_session":
        message.new_session.page_script_hash = fields.get("page_script_hash", "page-hash")
    elif kind == "script_finished":
        message.script_finished = fields["status"]
    else:
        raise ValueError(kind)
    return message


def _element(path: tuple[int, ...], fill) -> ForwardMsg:
    message = ForwardMsg()
    message.metadata.delta_path[:] = path
    fill(message.delta.new_element)
    return message


def _survey_step(error: str | None = None) -> list[ForwardMsg]:
    """A run drawing the demo survey's last step: number, radio, text area and the submit button."""

    def age(e: Element):
        e.number_input.id, e.number_input.label, e.number_input.form_id = "$$ID-a1-step7-age", "Your age", FORM

    def ai_use(e: Element):
        e.radio.id, e.radio.form_id = "$$ID-b2-step7-ai_use", FORM
        e.radio.options[:] = ["Never", "Monthly", "Weekly", "Daily"]

    def comments(e: Element):
        e.text_area.id, e.text_area.form_id = "$$ID-d4-step7-comments", FORM

    def submit(e: Element):
        e.button.id, e.button.label, e.button.form_id, e.button.is_form_submitter = SUBMIT_ID, "Finish", FORM, True

    messages = [_message("new_session"), _element((0, 0), age), _element((0, 1), ai_use),
                _element((0, 2), comments), _element((0, 3), submit)]
    if error:
        def alert(e: Element):
            e.alert.body, e.alert.format = error, Alert.ERROR

        messages.append(_element((0, 4), alert))
    return [*messages, _message("script_finished", status=ForwardMsg.FINISHED_SUCCESSFULLY)]


def _completion() -> list[ForwardMsg]:
    def code(e: Element):
        e.code.code_text = "DEMO2026"

    return [_message("new_session"), _element((0, 0), code),
            _message("script_finished", status=ForwardMsg.FINISHED_SUCCESSFULLY)]


class ScriptedConnection:
    """Stands in for the websocket: records what is sent, answers each send with the next scripted run."""

    def __init__(self, runs: list[list[ForwardMsg]]):
        self.runs = list(runs)
        self.sent: list[BackMsg] = []
        self._inbox: asyncio.Queue[bytes] = asyncio.Queue()

    async def send(self, payload: bytes) -> None:
        message = BackMsg()
        message.ParseFromString(payload)
        self.sent.append(message)
        for forward in self.runs.pop(0):
            self._inbox.put_nowait(forward.SerializeToString())

    async def recv(self) -> bytes:
        return await self._inbox.get()


def _states(message: BackMsg) -> dict[str, object]:
    return {s.id: getattr(s, s.WhichOneof("value")) for s in message.rerun_script.widget_states.widgets}


def test_user_key_keeps_dashes_of_the_key():
    assert user_key("$$ID-38f5-step0-agree") == "step0-agree"
    assert user_key("$$ID-a01b-FormSubmitter:form-0-I agree, continue") == "FormSubmitter:form-0-I agree, continue"
    assert user_key("$$ID-38f5-None") is None


def test_stream_url_keeps_the_path_prefix():
    assert stream_url("http://127.0.0.1:8501/") == "ws://127.0.0.1:8501/_stcore/stream"
    assert stream_url("https://example.org/studio") == "wss://example.org/studio/_stcore/stream"


def test_each_widget_kind_is_encoded_as_the_server_registered_it():
    radio = Widget("r", "radio", "k", "Scale", FORM, options=("1", "2", "3"))
    assert radio.state(2).string_value == "2"  # a likert option is sent as its label
    with pytest.raises(ValueError, match="offers"):
        radio.state(9)
    assert Widget("c", "checkbox", "k", "", FORM).state(True).bool_value is True
    with pytest.raises(ValueError):
        Widget("c", "checkbox", "k", "", FORM).state("yes")
    assert Widget("n", "number_input", "k", "", FORM).state(34).double_value == 34.0
    assert list(Widget("s", "slider", "k", "", FORM).state(4).double_array_value.data) == [4.0]
    assert Widget("t", "text_area", "k", "", FORM).state("Clear.").string_value == "Clear."
    assert Widget("b", "button", "k", "", FORM, is_form_submitter=True).state(True).trigger_value is True


def test_a_refused_then_accepted_submit_sends_what_the_frontend_sends():
    connection = ScriptedConnection([_survey_step(), _survey_step("Please enter a number no smaller than 18."),
                                     _completion()])
    session = StreamlitSession(connection, "study=demo&PROLIFIC_PID=p1")

    async def play():
        first = await session.load()
        refused = await session.submit(FORM, {"step7-age": 12, "step7-ai_use": "Weekly"})
        done = await session.submit(FORM, {"step7-age": 34, "step7-comments": "Clear and quick."})
        return first, refused, done

    first, refused, done = run_async(play())
    assert [w.key for w in first.widgets] == ["step7-age", "step7-ai_use", "step7-comments",
                                              "FormSubmitter:form-7-Finish"]
    assert first.form_ids == [FORM] and first.latency_s >= 0
    assert refused.alerts() == ["Please enter a number no smaller than 18."]
    assert done.code_blocks == ["DEMO2026"] and done.form_ids == []

    load, refusal, accepted = connection.sent
    assert load.rerun_script.query_string == "study=demo&PROLIFIC_PID=p1"
    assert list(load.rerun_script.widget_states.widgets) == []
    assert list(load.rerun_script.cached_message_hashes) == []  # no client cache: every element comes in full
    assert _states(refusal) == {"$$ID-a1-step7-age": 12.0, "$$ID-b2-step7-ai_use": "Weekly", SUBMIT_ID: True}
    # The radio keeps the value set before the refusal, as the frontend keeps a form's widget values.
    assert _states(accepted) == {"$$ID-a1-step7-age": 34.0, "$$ID-b2-step7-ai_use": "Weekly",
                                 "$$ID-d4-step7-comments": "Clear and quick.", SUBMIT_ID: True}
    assert accepted.rerun_script.page_script_hash == "page-hash"


def test_a_run_cut_short_by_rerun_is_followed_to_the_next_one():
    cut_short = [_message("new_session"), *_survey_step()[1:-1],
                 _message("script_finished", status=ForwardMsg.FINISHED_EARLY_FOR_RERUN)]
    connection = ScriptedConnection([_survey_step(), cut_short + _completion()])
    session = StreamlitSession(connection, "study=demo&PROLIFIC_PID=p1")

    async def play():
        await session.load()
        return await session.submit(FORM, {"step7-age": 34, "step7-ai_use": "Weekly"})

    page = run_async(play())
    assert page.code_blocks == ["DEMO2026"] and page.widgets == []


def test_filling_a_widget_the_page_does_not_show_is_an_error():
    session = StreamlitSession(ScriptedConnection([_survey_step()]), "study=demo&PROLIFIC_PID=p1")

    async def play():
        await session.load()
        await session.submit(FORM, {"step7-favourite_colour": "blue"})

    with pytest.raises(StreamlitProtocolError, match="no widget with key 'step7-favourite_colour'"):
        run_async(play())
