"""A browser-less client of Streamlit's websocket protocol, enough to fill in and submit ``st.form``s.

A Streamlit page is a conversation over one websocket (``/_stcore/stream``): the client sends a
``BackMsg`` whose ``rerun_script`` (a ``ClientState``) carries the query string, the page and the
widget values; the server runs the script and streams ``ForwardMsg``s back: ``new_session`` when a
run starts, one ``delta`` per element drawn (addressed by ``metadata.delta_path``), and
``script_finished`` when the run ends. A run cut short by ``st.rerun()`` ends with
``FINISHED_EARLY_FOR_RERUN`` and the next run follows on its own, so a page is what the last run
that finished normally drew.

Widgets are found by their user key (the part of the element id after ``$$ID-<hash>-``). Submitting a
form sends what the frontend sends when the submit button is clicked: the value of every widget
the participant set (kept, as the frontend keeps them, for the widgets still on the page) and the
submit button's ``trigger_value``. Widgets never touched are not reported; the server then keeps
their current value, which for a widget just drawn is its default. Values are encoded as the
server's widgets registered them (``value_type``): a checkbox as ``bool_value``, a radio or
selectbox as the chosen option's label in ``string_value``, a number input as ``double_value``, a
slider as ``double_array_value``, text as ``string_value``.

The client announces no cached messages (``cached_message_hashes`` stays empty), so the server
sends every element in full and never a ``ref_hash`` reference to one the browser would have kept.

Example::

    async with StreamlitSession.open("http://127.0.0.1:8501", "study=demo&PROLIFIC_PID=p1") as session:
        page = await session.load()
        page = await session.submit("form-0", {"step0-agree": True})
        print(page.finished_at - page.sent_at, [w.key for w in page.widgets])
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.Element_pb2 import Element
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import ClientConnection, connect

STREAM_PATH = "/_stcore/stream"
# Element types the client can fill in (the names of ``Element``'s ``type`` oneof).
FILLABLE = frozenset({"checkbox", "radio", "selectbox", "slider", "number_input", "text_area", "text_input"})
WIDGET_TYPES = FILLABLE | {"button"}
_ENDED = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR,
          ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY}


class StreamlitProtocolError(RuntimeError):
    """The server answered something this client cannot follow (closed, timed out, an unknown widget...)."""


def user_key(element_id: str) -> str | None:
    """The key a script gave a widget (``key=...``), from its element id ``$$ID-<hash>-<key>``."""
    # Same rule as streamlit.runtime.state.common.user_key_from_element_id.
    key = element_id.split("-", maxsplit=2)[-1]
    return None if key == "None" else key


def option_label(value: Any) -> str:
    """How a radio or selectbox shows ``value`` with the default ``format_func`` (``str``)."""
    return value if isinstance(value, str) else str(value)


@dataclass(frozen=True)
class Widget:
    """One widget of a page: its element id, user key, type, label, form and options (labels)."""

    id: str
    kind: str
    key: str | None
    label: str
    form_id: str
    options: tuple[str, ...] = ()
    is_form_submitter: bool = False

    @classmethod
    def from_element(cls, element: Element) -> Widget | None:
        kind = element.WhichOneof("type")
        if kind not in WIDGET_TYPES:
            return None
        proto = getattr(element, kind)
        return cls(id=proto.id, kind=kind, key=user_key(proto.id), label=proto.label, form_id=proto.form_id,
                   options=tuple(getattr(proto, "options", ())),
                   is_form_submitter=bool(getattr(proto, "is_form_submitter", False)))

    def state(self, value: Any) -> WidgetState:
        """The ``WidgetState`` the frontend sends when a participant gives this widget ``value``."""
        state = WidgetState(id=self.id)
        if self.kind == "checkbox":
            if not isinstance(value, bool):
                raise ValueError(f"checkbox {self.key!r} takes True or False, not {value!r}")
            state.bool_value = value
        elif self.kind in ("radio", "selectbox"):
            label = option_label(value)
            if label not in self.options:
                raise ValueError(f"{self.kind} {self.key!r} offers {list(self.options)}, not {value!r}")
            state.string_value = label
        elif self.kind == "number_input":
            state.double_value = float(value)
        elif self.kind == "slider":
            values = value if isinstance(value, (list, tuple)) else [value]
            state.double_array_value.data[:] = [float(v) for v in values]
        elif self.kind in ("text_area", "text_input"):
            state.string_value = str(value)
        elif self.kind == "button":
            state.trigger_value = bool(value)
        else:  # pragma: no cover - WIDGET_TYPES lists every kind handled above
            raise ValueError(f"cannot fill a {self.kind}")
        return state


@dataclass
class Page:
    """What one script run drew, by delta path, and when it ended.

    ``sent_at`` is when the message that started the run was sent and ``finished_at`` when its
    ``script_finished`` arrived (``time.perf_counter()`` seconds).
    """

    elements: dict[tuple[int, ...], Element] = field(default_factory=dict)
    status: int | None = None
    sent_at: float = 0.0
    finished_at: float = 0.0
    page_script_hash: str = ""

    @property
    def latency_s(self) -> float:
        return self.finished_at - self.sent_at

    def _in_order(self) -> list[Element]:
        return [self.elements[path] for path in sorted(self.elements)]

    @property
    def widgets(self) -> list[Widget]:
        return [w for e in self._in_order() if (w := Widget.from_element(e)) is not None]

    def widget(self, key: str) -> Widget | None:
        return next((w for w in self.widgets if w.key == key), None)

    def submit_button(self, form_id: str) -> Widget | None:
        return next((w for w in self.widgets if w.is_form_submitter and w.form_id == form_id), None)

    @property
    def form_ids(self) -> list[str]:
        """The forms that have a submit button on this page, in page order."""
        return [w.form_id for w in self.widgets if w.is_form_submitter]

    def alerts(self, level: int = Alert.ERROR) -> list[str]:
        """Texts of the ``st.error`` (or, with ``level``, ``st.warning``...) boxes."""
        return [e.alert.body for e in self._in_order() if e.WhichOneof("type") == "alert" and e.alert.format == level]

    @property
    def exceptions(self) -> list[str]:
        return [f"{e.exception.type}: {e.exception.message}" for e in self._in_order()
                if e.WhichOneof("type") == "exception"]

    @property
    def code_blocks(self) -> list[str]:
        return [e.code.code_text for e in self._in_order() if e.WhichOneof("type") == "code"]


def stream_url(base_url: str) -> str:
    """``http://host:port[/prefix]`` -> ``ws://host:port[/prefix]/_stcore/stream``."""
    base = base_url.rstrip("/")
    if base.startswith("https://"):
        return "wss://" + base[len("https://"):] + STREAM_PATH
    if base.startswith("http://"):
        return "ws://" + base[len("http://"):] + STREAM_PATH
    return base + STREAM_PATH


class StreamlitSession:
    """One browser tab's session: load the page, then submit its forms. Not safe to share between tasks."""

    def __init__(self, connection: ClientConnection, query_string: str, page_name: str = "",
                 timeout_s: float = 60.0):
        self._connection = connection
        self.query_string = query_string
        self.page_name = page_name
        self.timeout_s = timeout_s
        self.page = Page()
        self._page_script_hash = ""
        # Widget values the participant set, by element id: the frontend's committed widget state.
        self._values: dict[str, WidgetState] = {}

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, base_url: str, query_string: str, *, page_name: str = "", timeout_s: float = 60.0,
                   headers: Mapping[str, str] | None = None) -> AsyncIterator[StreamlitSession]:
        """Connect to the app at ``base_url`` as a new tab showing ``/<page_name>?<query_string>``.

        ``headers`` go with the websocket's opening request, as a browser sends its cookies
        (a sticky proxy routes by one).
        """
        # No keep-alive pings from this side (the server pings; a busy client must not drop the link),
        # and no size limit: a page's element can be large. Compression is offered, as browsers do.
        async with connect(stream_url(base_url), subprotocols=["streamlit"], max_size=None,
                           ping_interval=None, open_timeout=timeout_s, close_timeout=2,
                           additional_headers=dict(headers or {})) as connection:
            yield cls(connection, query_string, page_name, timeout_s)

    async def load(self) -> Page:
        """The page's first run, as a browser opening the link starts it."""
        return await self._rerun([])

    async def submit(self, form_id: str, values: Mapping[str, Any]) -> Page:
        """Set the widgets named by key in ``values`` and click ``form_id``'s submit button.

        Returns the page once a run after the click finished normally (runs ended early by
        ``st.rerun`` are followed through).
        """
        button = self.page.submit_button(form_id)
        if button is None:
            raise StreamlitProtocolError(f"no submit button for {form_id!r}; the page has forms {self.page.form_ids}")
        for key, value in values.items():
            widget = self.page.widget(key)
            if widget is None or widget.kind not in FILLABLE:
                raise StreamlitProtocolError(f"no widget with key {key!r} to fill; the page has "
                                             f"{[w.key for w in self.page.widgets]}")
            if widget.form_id != form_id:
                raise StreamlitProtocolError(f"widget {key!r} belongs to {widget.form_id!r}, not {form_id!r}")
            self._values[widget.id] = widget.state(value)
        shown = {w.id for w in self.page.widgets}
        kept = [state for widget_id, state in self._values.items() if widget_id in shown]
        return await self._rerun([*kept, button.state(True)])

    async def _rerun(self, states: list[WidgetState]) -> Page:
        message = BackMsg()
        client_state = message.rerun_script
        client_state.query_string = self.query_string
        client_state.page_name = self.page_name
        client_state.page_script_hash = self._page_script_hash
        client_state.widget_states.widgets.extend(states)
        payload = message.SerializeToString()
        sent_at = time.perf_counter()
        await self._connection.send(payload)
        page = await self._until_run_ends()
        page.sent_at = sent_at
        self.page = page
        # Widgets no longer drawn are forgotten, as the frontend forgets them after a run.
        shown = {w.id for w in page.widgets}
        self._values = {widget_id: state for widget_id, state in self._values.items() if widget_id in shown}
        return page

    async def _until_run_ends(self) -> Page:
        page = Page()
        deadline = time.monotonic() + self.timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise StreamlitProtocolError(f"no finished script run within {self.timeout_s:g} s")
            try:
                raw = await asyncio.wait_for(self._connection.recv(), timeout=left)
            except TimeoutError:
                raise StreamlitProtocolError(f"no finished script run within {self.timeout_s:g} s") from None
            except Exception as exc:  # the connection closed: websockets' ConnectionClosed and kin
                raise StreamlitProtocolError(f"the connection ended: {type(exc).__name__}: {exc}") from None
            message = ForwardMsg()
            message.ParseFromString(raw)
            kind = message.WhichOneof("type")
            if kind == "new_session":  # a run starts: what earlier (cut-short) runs drew is replaced
                page = Page()
                self._page_script_hash = message.new_session.page_script_hash or self._page_script_hash
            elif kind == "navigation" and message.navigation.page_script_hash:
                self._page_script_hash = message.navigation.page_script_hash
            elif kind == "delta" and message.delta.WhichOneof("type") == "new_element":
                page.elements[tuple(message.metadata.delta_path)] = message.delta.new_element
            elif kind == "ref_hash":
                raise StreamlitProtocolError("the server sent a cached-message reference though none was announced")
            elif kind == "page_not_found":
                raise StreamlitProtocolError(f"page not found: {message.page_not_found.page_name!r}")
            elif kind == "script_finished" and message.script_finished in _ENDED:
                page.status = message.script_finished
                page.finished_at = time.perf_counter()
                page.page_script_hash = self._page_script_hash
                if message.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                    raise StreamlitProtocolError(f"the script failed to compile: {page.exceptions}")
                return page
