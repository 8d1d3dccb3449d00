"""Pseudonyms for participant ids, for exports that leave the lab.

A participant's panel id (``external_id``: the ``PROLIFIC_PID``, MTurk ``workerId`` or a
generic ``pid``) and the other ids a panel passes in the link (``STUDY_ID``, ``SESSION_ID``,
``assignmentId``, ``hitId``) identify a person on the panel. A pseudonymised export writes
``"anon-" + HMAC-SHA256(key, id)``, truncated to 16 hex digits (64 bits), in their place:

- the same id gets the same pseudonym in every file and every export of one installation, so
  rows still join across files and across a study's successive exports;
- another installation has another key, so its pseudonyms differ;
- without the key nobody can recompute a pseudonym from a list of guessed ids (a plain hash
  could be reversed that way: Prolific ids are 24 hex digits, but MTurk ids are enumerable).

The key: the setting ``HAI_PSEUDONYM_KEY`` (at least 32 characters; set it when several machines
export the same data), or else a random key made once and kept in ``<data_dir>/pseudonym.key``,
readable by its owner only (mode 0600). Losing the key only stops new exports from joining
older ones; it reveals nothing. Keep it out of what you share.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from engines.platform.credentials import ServerKeyError, server_key
from engines.platform.settings import get_settings

KEY_FILE_NAME = "pseudonym.key"
PSEUDONYM_PREFIX = "anon-"
PSEUDONYM_HEX_DIGITS = 16  # 64 bits: a collision among a million participants has odds below 1 in 30 million
# Panel parameters that name a place, not a person, and stay readable (MTurk's live vs sandbox host).
KEPT_PANEL_PARAMS = frozenset({"turkSubmitTo"})
# Inside free text (answers, study variables, files a study adds) an id is replaced wherever it
# stands as a whole token; shorter ids than this would also match ordinary answers ("7", "ok"),
# so they are replaced in the id columns only.
MIN_SCRUB_LENGTH = 6
_TOKEN_EDGE = rb"A-Za-z0-9"


def _trie_pattern(words: Iterable[bytes]) -> bytes:
    """A regex matching any of ``words``, longest first, built as a trie: an export with thousands of
    participants is searched once, following one branch per byte, not once per id."""
    trie: dict = {}
    for word in words:
        node = trie
        for byte in word:
            node = node.setdefault(byte, {})
        node[None] = {}  # a word ends here

    def pattern(node: dict) -> bytes:
        branches = [re.escape(bytes([byte])) + pattern(child) for byte, child in sorted(
            (k, v) for k, v in node.items() if k is not None)]
        if not branches:
            return b""
        body = branches[0] if len(branches) == 1 else b"(?:" + b"|".join(branches) + b")"
        return b"(?:" + body + b")?" if None in node else body  # greedy: the longer word is tried first

    return pattern(trie)


class PseudonymKeyError(ServerKeyError):
    """The pseudonym key is unusable; the message says why and how to fix it."""


def load_key(data_dir: str | Path | None = None) -> bytes:
    """The installation's pseudonym key: ``HAI_PSEUDONYM_KEY``, else ``<data_dir>/pseudonym.key``.

    The key file is created (mode 0600) on first use.

    Raises:
        PseudonymKeyError: when ``HAI_PSEUDONYM_KEY`` is shorter than 32 characters, or the key
            file is readable by other users or empty.
    """
    try:
        return server_key(KEY_FILE_NAME, get_settings().pseudonym_key, "HAI_PSEUDONYM_KEY", data_dir)
    except ServerKeyError as exc:
        message = str(exc)
        if message.endswith("to make a new key"):
            message += " (older exports will no longer join)"
        raise PseudonymKeyError(message) from None


@dataclass(frozen=True)
class Pseudonymiser:
    """Maps raw ids to pseudonyms with one key (``load_key()``); see the module docstring."""

    key: bytes

    def __call__(self, raw: str) -> str:
        digest = hmac.new(self.key, raw.encode(), hashlib.sha256).hexdigest()
        return PSEUDONYM_PREFIX + digest[:PSEUDONYM_HEX_DIGITS]

    @property
    def key_id(self) -> str:
        """A short fingerprint of the key: two exports whose ``key_id`` match join on pseudonyms."""
        return hmac.new(self.key, b"hai-studio pseudonym key id", hashlib.sha256).hexdigest()[:8]

    def panel_params(self, params: Mapping[str, object]) -> dict[str, object]:
        """``params`` with every value pseudonymised except those of ``KEPT_PANEL_PARAMS``."""
        return {k: (v if k in KEPT_PANEL_PARAMS or v in (None, "") else self(str(v))) for k, v in params.items()}

    def scrub(self, content: bytes, raw_ids: Iterable[str]) -> bytes:
        """``content`` with each of ``raw_ids`` (of ``MIN_SCRUB_LENGTH`` or more characters) replaced by
        its pseudonym wherever it stands as a whole token (no letter or digit right before or after)."""
        encoded = {i.encode(): self(i).encode() for i in set(raw_ids) if len(i) >= MIN_SCRUB_LENGTH}
        if not encoded:
            return content
        pattern = re.compile(rb"(?<![" + _TOKEN_EDGE + rb"])" + _trie_pattern(encoded) + rb"(?![" + _TOKEN_EDGE + rb"])")
        return pattern.sub(lambda m: encoded[m.group(0)], content)


def pseudonym_key_problem() -> str | None:
    """Why ``load_key()`` fails (the message to show before offering a pseudonymised export), or None."""
    try:
        load_key()
    except (PseudonymKeyError, OSError) as exc:
        return f"No pseudonymised export: {exc}"
    return None


def pseudonymiser(data_dir: str | Path | None = None) -> Pseudonymiser:
    """The installation's ``Pseudonymiser`` (its key from ``load_key``)."""
    return Pseudonymiser(load_key(data_dir))


__all__ = ["KEPT_PANEL_PARAMS", "MIN_SCRUB_LENGTH", "PSEUDONYM_PREFIX", "PseudonymKeyError", "Pseudonymiser",
           "load_key", "pseudonym_key_problem", "pseudonymiser"]
