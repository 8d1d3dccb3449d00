"""The one way to name, read and pass on a secret.

- **API keys** of model endpoints are read only from environment variables the operator declared
  for that purpose: any ``HAI_API_KEY_<NAME>``, or a variable listed in ``HAI_API_KEY_VARIABLES``.
  A researcher names the variable (``api_key_env``), never the key; any other name (the database
  URL, the admin password, ``HOME``) is refused by ``check_key_variable`` when a job or a form is
  validated, before any request is made.
- **Server keys** (the pseudonym key, the arena key) are a setting, or a random key made once and
  kept in a 0600 file of the data folder (``server_key``).
- **Child processes** (job workers, sweep processes) get ``child_environment``: the system's basics,
  the ``HAI_*`` settings and the declared API keys, not the whole environment of the server.
"""

from __future__ import annotations

import os
import secrets as _random  # the standard library's
import stat
from collections.abc import Mapping
from pathlib import Path

from engines.platform.files import echo
from engines.platform.settings import get_settings

API_KEY_PREFIX = "HAI_API_KEY_"
MIN_KEY_LENGTH = 32
# What a Python child needs from the system to start and find its libraries and locale.
SYSTEM_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV",
                    "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                    "HF_HOME", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "PYTHONDONTWRITEBYTECODE")


class SecretRefused(ValueError):
    """A secret asked for in a way the app does not allow; the message says the allowed way."""


class ServerKeyError(ValueError):
    """A server key is unusable; the message says why and how to fix it."""


def declared_key_variables() -> frozenset[str]:
    """The variables listed in ``HAI_API_KEY_VARIABLES`` (those named ``HAI_API_KEY_*`` are declared too)."""
    listed = get_settings().api_key_variables
    return frozenset(name.strip() for name in listed.split(",") if name.strip())


def check_key_variable(name: str | None, *, field: str = "api_key_env") -> str | None:
    """``name`` when it may hold an API key (None or empty: no key), else ``SecretRefused``."""
    if name is None or not str(name).strip():
        return None
    name = str(name).strip()
    if (name.startswith(API_KEY_PREFIX) and len(name) > len(API_KEY_PREFIX)) or name in declared_key_variables():
        return name
    raise SecretRefused(f"{field}: {echo(name)} is not a variable declared for API keys; name one that starts with "
                        f"{API_KEY_PREFIX} (for example {API_KEY_PREFIX}OPENAI) or ask the operator to list it in "
                        "HAI_API_KEY_VARIABLES.")


def api_key(name: str | None, *, field: str = "api_key_env", required: bool = False) -> str | None:
    """The API key in the declared variable ``name`` (None when no name or, unless ``required``, unset)."""
    name = check_key_variable(name, field=field)
    if name is None:
        return None
    value = os.environ.get(name, "").strip()
    if not value and required:
        raise SecretRefused(f"{field}: the variable {name} is not set on the server.")
    return value or None


def child_environment(extra: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a child process of the app: system basics, ``HAI_*`` settings and declared
    API key variables from ``base`` (default: this process's environment), then ``extra``."""
    base = os.environ if base is None else base
    declared = declared_key_variables()
    env = {name: value for name, value in base.items()
           if name in SYSTEM_VARIABLES or name.startswith("HAI_") or name in declared}
    env.pop("HAI_ADMIN_PASSWORD", None)  # only the first start needs it, never a job
    env.update(extra or {})
    return env


def _new_key_file(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{_random.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(_random.token_hex(32) + "\n")
        try:
            os.link(tmp, path)  # atomic and never overwrites: two processes end up with one key
        except FileExistsError:
            pass
    finally:
        tmp.unlink(missing_ok=True)


def server_key(file_name: str, configured: str, setting: str, data_dir: str | Path | None = None) -> bytes:
    """A secret key of the installation: ``configured`` (the value of ``setting``), else the key in
    ``<data_dir>/<file_name>``, made on first use (mode 0600).

    Raises:
        ServerKeyError: a configured key shorter than 32 characters, or a key file readable by
            other users or empty.
    """
    configured = configured.strip()
    if configured:
        if len(configured) < MIN_KEY_LENGTH:
            raise ServerKeyError(
                f"{setting} has {len(configured)} characters; use at least {MIN_KEY_LENGTH} "
                "(for example: python -c 'import secrets; print(secrets.token_hex(32))')")
        return configured.encode()
    path = Path(data_dir if data_dir is not None else get_settings().data_dir) / file_name
    if not path.exists():
        _new_key_file(path)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise ServerKeyError(f"{path} is readable by other users (mode {mode:o}); run: chmod 600 {path}")
    key = path.read_text().strip()
    if not key:
        raise ServerKeyError(f"{path} is empty; delete it to make a new key")
    return key.encode()


__all__ = ["API_KEY_PREFIX", "SecretRefused", "ServerKeyError", "api_key", "check_key_variable", "child_environment",
           "declared_key_variables", "server_key"]
