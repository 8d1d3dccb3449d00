"""Study links and completion targets of Prolific, MTurk and generic panels."""

import pytest

from engines.platform.panels import LinkError, completion_target, parse_link, study_link


def test_prolific_link_keeps_study_and_session():
    identity = parse_link({"PROLIFIC_PID": "5f1e2d", "STUDY_ID": "st", "SESSION_ID": "se", "other": "x"})
    assert (identity.panel, identity.external_id) == ("prolific", "5f1e2d")
    assert identity.params == {"STUDY_ID": "st", "SESSION_ID": "se"}


def test_mturk_link_and_preview():
    identity = parse_link({"workerId": "W", "assignmentId": "A", "hitId": "H", "turkSubmitTo": "https://www.mturk.com"})
    assert identity.panel == "mturk" and identity.external_id == "W" and identity.params["hitId"] == "H"
    assert parse_link({"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE"}).preview
    lookalikes = ("https://evilmturk.com", "https://www.mturk.com.evil.example", "https://mturk.com@evil.example",
                  "https://evil.example/www.mturk.com", "https://evil.example?x=www.mturk.com",
                  "https://sandbox.mturk.com.evil.example", "https://evil.workersandbox.mturk.com")
    for target in ("javascript:alert(1)", "https://evil.example", "http://www.mturk.com", *lookalikes):
        with pytest.raises(LinkError, match="workersandbox.mturk.com"):
            parse_link({"workerId": "W", "assignmentId": "A", "turkSubmitTo": target})


def test_every_real_mturk_submit_host_is_accepted_exactly():
    """MTurk posts to one of its three hosts (https, any path); the check is an exact host match."""
    for target in ("https://www.mturk.com", "https://mturk.com/", "https://workersandbox.mturk.com/x",
                   "https://WWW.MTURK.COM"):
        identity = parse_link({"workerId": "W", "assignmentId": "A", "turkSubmitTo": target})
        assert identity.params["turkSubmitTo"] == target


def test_generic_pid():
    assert parse_link({"pid": "lab-07"}).panel == "generic"


def test_completion_targets():
    assert completion_target("prolific", {}, "AB C").url == "https://app.prolific.com/submissions/complete?cc=AB+C"
    post = completion_target("mturk", {"turkSubmitTo": "https://www.mturk.com/", "assignmentId": "A"}, "K")
    assert post.kind == "post" and post.url == "https://www.mturk.com/mturk/externalSubmit"
    assert completion_target("generic", {}, "K").kind == "code"


def test_study_link_has_prolific_placeholders():
    link = study_link("https://hai.example.org/", "pilot")
    assert link == ("https://hai.example.org/?study=pilot&PROLIFIC_PID={{%PROLIFIC_PID%}}"
                    "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")
    with pytest.raises(ValueError, match="unknown panel"):
        study_link("https://x", "pilot", "mechanical")
