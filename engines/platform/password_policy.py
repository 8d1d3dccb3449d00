"""What a new password must be: long enough, and not on the shipped list of common and breached ones.

The list (``assets/security/common-passwords.txt``) holds the passwords of at least
``MIN_PASSWORD_LENGTH`` characters among the 30,000 most frequent ones in public breach corpora,
as collected by zxcvbn (Wheeler, "zxcvbn: Low-Budget Password Strength Estimation", USENIX
Security 2016; MIT licence). NIST SP 800-63B, section 3.1.1.2, asks verifiers to refuse exactly
such passwords. Regenerate it with::

    pip install zxcvbn==4.5.0 && python -m engines.platform.password_policy
"""

from __future__ import annotations

import functools
from pathlib import Path

from engines.platform.settings import REPO_ROOT

MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 1024  # Argon2 hashes any length; this only stops absurd pastes
# A username this long or longer may not appear anywhere in the password ("ritarita" for "rita"); a
# shorter one ("al") is too common a pair of letters to refuse, so only the username itself is refused.
MIN_CONTAINED_USERNAME = 3
COMMON_PASSWORDS = REPO_ROOT / "assets" / "security" / "common-passwords.txt"


class WeakPassword(ValueError):
    """A password the policy refuses; the message says why and is safe to show."""


@functools.lru_cache(maxsize=1)
def common_passwords(path: Path = COMMON_PASSWORDS) -> frozenset[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip().lower() for line in lines if line.strip() and not line.startswith("#"))


def check_new_password(password: str | None, username: str = "") -> str:
    """Return ``password`` if it may be set, else raise WeakPassword saying what is wrong."""
    password = password or ""
    if len(password) < MIN_PASSWORD_LENGTH:
        raise WeakPassword(f"Password must have at least {MIN_PASSWORD_LENGTH} characters.")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise WeakPassword(f"Password must have at most {MAX_PASSWORD_LENGTH} characters.")
    name = (username or "").strip().lower()
    if name and password.lower() == name:
        raise WeakPassword("The password must not be the username.")
    if len(name) >= MIN_CONTAINED_USERNAME and name in password.lower():
        # A guesser tries the username repeated, in other case or with digits added (NIST SP 800-63B
        # 5.1.1.2 names "context-specific words, such as ... the username").
        raise WeakPassword("The password must not contain the username.")
    if password.lower() in common_passwords():
        raise WeakPassword("This password is on a list of common or breached passwords; choose another.")
    return password


def write_list(out: Path = COMMON_PASSWORDS) -> int:
    """Write the shipped list from zxcvbn's frequency list; returns how many passwords it holds."""
    from zxcvbn.frequency_lists import FREQUENCY_LISTS  # only needed to regenerate the file

    kept = [p for p in FREQUENCY_LISTS["passwords"] if len(p) >= MIN_PASSWORD_LENGTH]
    header = ["# Common and breached passwords of at least 8 characters, most frequent first.",
              "# From zxcvbn 4.5.0's frequency list (MIT licence); regenerate: python -m engines.platform.password_policy"]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(header + kept) + "\n", encoding="utf-8")
    return len(kept)


if __name__ == "__main__":
    print(f"wrote {write_list()} passwords to {COMMON_PASSWORDS}")
