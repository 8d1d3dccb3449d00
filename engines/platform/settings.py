"""Process-wide configuration, read from ``HAI_*`` environment variables and an optional ``.env``.

Uses ``pydantic-settings`` so every option is typed, documented and validated once at start-up.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parents[2]  # the repository root: defined here once, imported elsewhere


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def trusted_networks(text: str) -> tuple[Network, ...]:
    """The networks of ``HAI_TRUSTED_PROXIES`` (comma separated addresses or CIDR networks).

    Raises:
        ValueError: an entry is neither; the message names it and the setting.
    """
    networks = []
    for entry in (part.strip() for part in (text or "").split(",")):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(f"HAI_TRUSTED_PROXIES: {entry[:60]!r} is not an IP address or CIDR network "
                             "(for example 127.0.0.1, 10.0.0.0/8 or ::1)") from None
    return tuple(networks)


class Settings(BaseSettings):
    """All settings of one HAI Studio process.

    Args:
        database_url: SQLAlchemy URL. Default: a SQLite file under ``data_dir`` (WAL mode).
            PostgreSQL: ``postgresql+psycopg://user@host:5432/db``.
        data_dir: where the default database, job results and exports are written.
        admin_username / admin_password: bootstrap account created when no admin exists.
        public_base_url: the address participants reach the app at; used to build study links.
        job_workers: how many jobs the executor runs at once (the local one in child processes,
            the Ray one as tasks on the cluster).
        job_executor: where jobs run: "local" (a child process per job on this machine) or "ray"
            (a Ray task per job, on the cluster at ``ray_address``).
        ray_address: the Ray cluster of ``job_executor="ray"`` and of fanned-out sweeps: empty starts
            a local Ray inside the app's process; ``auto`` joins the cluster this machine is a node
            of; ``ray://host:10001`` connects to a cluster's client server; ``host:6379`` to its head.
        fanout_workers: processes the cells of a sweep run in when jobs run locally; 1 runs them
            one after another in the job's own process (no start-up cost, right for small grids).
            With ``job_executor="ray"`` the cells are Ray tasks and the cluster sets the pace.
        job_stale_after_s: a running job whose heartbeat is older than this is marked failed.
        participant_timeout_minutes: an unfinished participant still counts toward condition
            balance for this long after they were last seen (psiTurk's model).
        studies_package: the import path where study protocols are discovered.
        device: torch device for model work ("auto" picks CUDA when present).
        run_jobs_in_app: start a local job executor inside each app process (turn off when
            separate ``python -m engines.platform worker`` processes run the jobs).
        db_write_concurrency: PostgreSQL write transactions one process runs at once, first
            come first served (0: no limit). SQLite always admits one writer per process.
        oidc_provider: name of an ``[auth]`` provider in Streamlit's secrets, to show "log in
            with ..." through ``st.login``; empty turns OIDC off.
        pseudonym_key: secret key of pseudonymised exports (at least 32 characters; the same on every
            machine that exports); empty: a random key kept in ``data_dir/pseudonym.key`` (mode 0600).
        login_idle_minutes: a browser login unused for this long ends (it ends after 14 days
            in any case).
        trusted_proxies: addresses (or CIDR networks) of reverse proxies in front of the app, comma
            separated. A request whose direct peer is one of them is counted under the address the
            proxy puts last in ``X-Forwarded-For``; any other request under its own peer address, so
            a client cannot choose its address. Empty: never read the header.
        upload_max_mb: the largest file one upload may be (also Streamlit's ``server.maxUploadSize``).
        upload_session_files / upload_session_mb: uploads one browser session may hold at once.
        upload_total_mb: uploads all sessions of one process may hold in memory at once.
        uploads_disk_mb: what the stored uploads under ``data_dir/uploads`` may take on disk.
        max_frame_pixels: the largest video frame (width x height) the app decodes.
        max_json_depth: how deeply a JSON document (or line) may nest.
        api_key_variables: environment variables (besides those named ``HAI_API_KEY_*``) that a
            researcher may name as an endpoint's API key, comma separated.
        endpoint_hosts: hosts a model endpoint URL may point at, comma separated; ``*`` admits any
            host except link-local ones (cloud metadata services), which must be listed. ``make
            serve`` starts with an empty list unless the operator sets one.
        invitation_hours: how long a one-time invitation password stays valid.
        arena_key: secret mixed into arena pair assignment (at least 32 characters); empty: a random
            key kept in ``data_dir/arena.key`` (mode 0600).
    """

    model_config = SettingsConfigDict(env_prefix="HAI_", env_file=".env", extra="ignore")

    database_url: str = ""
    data_dir: Path = REPO_ROOT / "data"
    admin_username: str = "admin"
    admin_password: str = ""
    public_base_url: str = "http://localhost:8501"
    job_workers: int = Field(default=2, ge=1, le=64)
    job_stale_after_s: float = Field(default=60.0, gt=0)
    participant_timeout_minutes: float = Field(default=60.0, gt=0)
    studies_package: str = "studies"
    device: Literal["auto", "cpu", "cuda", "mps"] = "auto"
    oidc_provider: str = ""
    login_idle_minutes: float = Field(default=120.0, gt=0)
    trusted_proxies: str = ""
    upload_max_mb: int = Field(default=50, ge=1, le=4096)
    upload_session_files: int = Field(default=8, ge=1, le=1000)
    upload_session_mb: int = Field(default=120, ge=1, le=65536)
    upload_total_mb: int = Field(default=600, ge=1, le=262144)
    uploads_disk_mb: int = Field(default=20_000, ge=1)
    max_frame_pixels: int = Field(default=3840 * 2160, ge=64 * 64)
    max_json_depth: int = Field(default=64, ge=4, le=10_000)
    api_key_variables: str = ""
    endpoint_hosts: str = "*"
    invitation_hours: float = Field(default=72.0, gt=0)
    arena_key: str = ""
    job_executor: Literal["local", "ray"] = "local"
    ray_address: str = ""
    fanout_workers: int = Field(default=1, ge=1, le=256)
    run_jobs_in_app: bool = True
    db_write_concurrency: int = Field(default=4, ge=0, le=256)
    pseudonym_key: str = ""

    @field_validator("database_url")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        if value and not value.startswith(("sqlite", "postgresql")):
            raise ValueError(
                f"HAI_DATABASE_URL must start with 'sqlite' or 'postgresql', got {value.split(':')[0]!r}"
            )
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _proxy_networks(cls, value: str) -> str:
        trusted_networks(value)  # a bad entry stops the start, not the first login
        return value

    @field_validator("ray_address")
    @classmethod
    def _ray_address_form(cls, value: str) -> str:
        value = value.strip()
        if value in ("", "auto") or value.startswith("ray://") or re.fullmatch(r"[\w.\-]+:\d+", value):
            return value
        raise ValueError(f"HAI_RAY_ADDRESS must be empty (a local Ray), 'auto', 'ray://host:10001' or "
                         f"'host:6379', got {value!r}")

    @property
    def resolved_database_url(self) -> str:
        """The database URL in use: the configured one, or the default SQLite file."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'hai_studio.db').as_posix()}"


@functools.lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The settings of this process, read once."""
    return Settings()


def reset_settings() -> None:
    """Forget cached settings (tests change the environment between cases)."""
    get_settings.cache_clear()
