"""Recruitment panels: who a participant is, from their study link, and where they go at the end.

Prolific appends ``PROLIFIC_PID``, ``STUDY_ID`` and ``SESSION_ID`` (docs.prolific.com, the
study object's URL placeholders) and expects a redirect to
``https://app.prolific.com/submissions/complete?cc=CODE`` once the data is saved. MTurk's
external question passes ``workerId``, ``assignmentId``, ``hitId`` and ``turkSubmitTo``; an
``assignmentId`` of ``ASSIGNMENT_ID_NOT_AVAILABLE`` is a preview, and completion is a POST to
``<turkSubmitTo>/mturk/externalSubmit``. Other panels pass a generic ``pid``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlparse

PROLIFIC_COMPLETE_URL = "https://app.prolific.com/submissions/complete"
MTURK_PREVIEW_ASSIGNMENT = "ASSIGNMENT_ID_NOT_AVAILABLE"
MTURK_SUBMIT_HOSTS = frozenset({"www.mturk.com", "mturk.com", "workersandbox.mturk.com"})
# Panel ids are opaque tokens; this keeps them printable and short without assuming a format.
_ID_PATTERN = re.compile(r"^[A-Za-z0-9_.@:\-]{1,128}$")
_SLUG_PATTERN = re.compile(r"^[a-z0-9][a-z0-9\-]{0,62}$")


class LinkError(ValueError):
    """A study link that cannot identify a participant; the message says which parameter."""


@dataclass(frozen=True)
class PanelIdentity:
    """Who arrived: the panel, the participant's id there, and the panel's other parameters."""

    panel: str  # "prolific" | "mturk" | "generic"
    external_id: str
    params: dict[str, str] = field(default_factory=dict)
    preview: bool = False


@dataclass(frozen=True)
class CompletionTarget:
    """How the participant returns to the panel: a redirect URL, a form POST, or a code only."""

    kind: str  # "redirect" | "post" | "code"
    code: str
    url: str | None = None
    fields: dict[str, str] = field(default_factory=dict)


def _single(params: Mapping[str, object], key: str) -> str | None:
    value = params.get(key)
    if isinstance(value, (list, tuple)):
        if len(value) > 1:
            raise LinkError(f"The link repeats the parameter '{key}'; it must appear once.")
        value = value[0] if value else None
    if value is None:
        return None
    return str(value).strip()


def _checked_id(key: str, value: str) -> str:
    if not value:
        raise LinkError(f"The link's parameter '{key}' is empty.")
    if not _ID_PATTERN.match(value):
        raise LinkError(
            f"The link's parameter '{key}' is not a valid id: use up to 128 letters, digits or _.@:- characters."
        )
    return value


def validate_slug(slug: str) -> str:
    """A study slug: lowercase letters, digits and dashes, starting with a letter or digit."""
    if not _SLUG_PATTERN.match(slug or ""):
        raise LinkError(
            f"'{slug}' is not a valid study name: use lowercase letters, digits and dashes (max 63)."
        )
    return slug


# The parameters that identify a participant, per panel (STUDY_ID, hitId... only accompany them).
PANEL_ID_KEYS = {"Prolific": ("PROLIFIC_PID",), "MTurk": ("workerId", "assignmentId"), "other panel": ("pid",)}


def parse_link(params: Mapping[str, object]) -> PanelIdentity:
    """Identify the participant from a study link's query parameters.

    Raises:
        LinkError: when no panel id is present, or one is empty, repeated or malformed; when the
            study or a panel parameter is repeated; or when the link carries the ids of more than
            one panel (which one the participant came from would be a guess).
    """
    _single(params, "study")  # a link naming two studies must not enrol in whichever comes last
    panels = {name: keys for name, keys in PANEL_ID_KEYS.items() if any(params.get(k) for k in keys)}
    if len(panels) > 1:
        found = "; ".join(f"{name}: {', '.join(k for k in keys if params.get(k))}" for name, keys in panels.items())
        raise LinkError(f"The link carries the ids of more than one panel ({found}); open the study from the "
                        "link your panel gave you.")
    prolific = _single(params, "PROLIFIC_PID")
    if prolific is not None:
        # Every value kept is checked like an id: an unchecked STUDY_ID could carry up to the
        # server's whole query-string limit into the database on every visit.
        extra = {k: _checked_id(k, v) for k in ("STUDY_ID", "SESSION_ID") if (v := _single(params, k))}
        return PanelIdentity("prolific", _checked_id("PROLIFIC_PID", prolific), extra)
    worker = _single(params, "workerId")
    assignment = _single(params, "assignmentId")
    if assignment == MTURK_PREVIEW_ASSIGNMENT:
        return PanelIdentity("mturk", "", {"assignmentId": assignment}, preview=True)
    if worker is not None or assignment is not None:
        if worker is None:
            raise LinkError("The MTurk link has an assignmentId but no workerId.")
        if assignment is None:
            raise LinkError("The MTurk link has a workerId but no assignmentId.")
        extra = {k: _checked_id(k, v) for k in ("hitId",) if (v := _single(params, k))}
        extra["assignmentId"] = _checked_id("assignmentId", assignment)
        submit_to = _single(params, "turkSubmitTo")
        if submit_to:
            extra["turkSubmitTo"] = submit_to
            parsed = urlparse(submit_to)
            if len(submit_to) > 200 or parsed.scheme != "https" or parsed.hostname not in MTURK_SUBMIT_HOSTS:
                # Otherwise a crafted link could send the completion code to any site.
                raise LinkError("The MTurk link's turkSubmitTo must be https://www.mturk.com or "
                                "https://workersandbox.mturk.com.")
        return PanelIdentity("mturk", _checked_id("workerId", worker), extra)
    generic = _single(params, "pid")
    if generic is not None:
        return PanelIdentity("generic", _checked_id("pid", generic), {})
    raise LinkError(
        "This study link has no participant id. Open the study from your recruitment panel: "
        "the link needs PROLIFIC_PID (Prolific), workerId and assignmentId (MTurk), or pid."
    )


def completion_target(panel: str, params: Mapping[str, str], code: str) -> CompletionTarget:
    """Where a participant who finished (or was screened out) with ``code`` goes next."""
    if panel == "prolific":
        return CompletionTarget("redirect", code, f"{PROLIFIC_COMPLETE_URL}?{urlencode({'cc': code})}")
    if panel == "mturk" and params.get("turkSubmitTo"):
        url = params["turkSubmitTo"].rstrip("/") + "/mturk/externalSubmit"
        return CompletionTarget("post", code, url, {"assignmentId": params.get("assignmentId", ""), "completion_code": code})
    return CompletionTarget("code", code)


def study_link(base_url: str, slug: str, panel: str = "prolific") -> str:
    """The link to paste into a panel, with that panel's placeholders."""
    base = f"{base_url.rstrip('/')}/?study={slug}"
    if panel == "prolific":
        return base + "&PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    if panel == "mturk":
        # MTurk's ExternalQuestion appends workerId, assignmentId, hitId and turkSubmitTo itself.
        return base
    if panel == "generic":
        return base + "&pid=<PARTICIPANT_ID>"
    raise ValueError(f"unknown panel {panel!r}; expected prolific, mturk or generic")
