"""Command line of the platform: ``python -m engines.platform --help``.

Examples::

    python -m engines.platform bootstrap            # migrate, first admin, demo studies
    python -m engines.platform studies create pilot-1 demo_survey
    python -m engines.platform studies links pilot-1
    python -m engines.platform export pilot-1 --out exports/
    python -m engines.platform export pilot-1 --out shared/ --pseudonymise   # ids as keyed hashes
    python -m engines.platform jobs submit platform.countdown --params '{"seconds": 3}' --wait
    python -m engines.platform bots demo_survey --participants 5
    python -m engines.platform registries           # every registry and its entries (docs/extending.md)
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from dataclasses import asdict, is_dataclass
from typing import Any

from engines.platform.settings import get_settings


def _emit(args: argparse.Namespace, payload: Any, text: str | None = None) -> None:
    if args.json:
        print(json.dumps(payload, default=lambda o: asdict(o) if is_dataclass(o) else str(o), indent=None))
    else:
        print(text if text is not None else payload)


def cmd_migrate(args: argparse.Namespace) -> None:
    from engines.platform import migrate

    migrate.upgrade()
    _emit(args, {"migrated": True}, "database is at the latest migration")


def cmd_bootstrap(args: argparse.Namespace) -> None:
    from engines.platform import auth, migrate
    from engines.platform.demo import load_demo_data

    settings = get_settings()
    migrate.upgrade()
    generated = auth.ensure_admin(settings.admin_username, settings.admin_password or None)
    created = load_demo_data() if args.demo else []
    payload = {"database": settings.resolved_database_url.split("://")[0], "demo_studies_created": created,
               "admin_created": generated is not None or None, "admin_username": settings.admin_username}
    if generated:
        payload["one_time_password"] = generated
    if args.json:
        _emit(args, payload)
        return
    print(f"database ready ({payload['database']}); demo studies created: {', '.join(created) or 'none new'}")
    if generated:
        bar = "=" * 72
        print(f"\n{bar}\n  First admin account created.\n  username: {settings.admin_username}\n"
              f"  one-time password: {generated}\n  You will be asked to choose a new password at first login.\n{bar}\n")


def cmd_create_user(args: argparse.Namespace) -> None:
    from engines.platform import auth

    password = args.password or getpass.getpass(f"Password for {args.username}: ")
    identity = auth.create_user(args.username, password, args.role, display_name=args.display_name or "")
    _emit(args, asdict(identity), f"created {identity.role} account {identity.username!r}")


def cmd_set_password(args: argparse.Namespace) -> None:
    from engines.platform import auth

    password = args.password or getpass.getpass(f"New password for {args.username}: ")
    auth.set_password(args.username, password)
    _emit(args, {"username": args.username}, f"password of {args.username!r} changed")


def cmd_protocols(args: argparse.Namespace) -> None:
    from engines.platform.registry import all_protocols

    rows = [{"name": p.name, "title": p.title, "steps": len(p.steps), "conditions": p.conditions}
            for p in all_protocols().values()]
    _emit(args, rows, "\n".join(f"{r['name']:24} {r['steps']:4} steps  conditions={r['conditions']}  {r['title']}" for r in rows))


def cmd_registries(args: argparse.Namespace) -> None:
    from engines.platform.discovery import discover_all
    from engines.platform.registries import every_registry, markdown_table

    discover_all()
    rows = [{"area": r.area, "holds": r.holds, "entries": [{"name": n, "description": d} for n, d in r.described()]}
            for r in every_registry()]
    _emit(args, rows, markdown_table())


def cmd_studies(args: argparse.Namespace) -> None:
    from engines.platform import study_admin

    if args.action == "list":
        rows = study_admin.list_studies()
        _emit(args, rows, "\n".join(
            f"{s.slug:24} {s.protocol:20} {'open' if s.is_open else 'closed':7} {s.completed}/{s.participants} completed"
            for s in rows) or "no studies")
    elif args.action == "create":
        config = json.loads(args.config) if args.config else None
        study = study_admin.create_study(args.slug, args.protocol, title=args.title or "", config=config,
                                         is_open=not args.closed)
        _emit(args, {"slug": study.slug, "protocol": study.protocol}, f"created study {study.slug}")
    elif args.action in ("open", "close"):
        study_admin.set_open(args.slug, args.action == "open")
        _emit(args, {"slug": args.slug, "is_open": args.action == "open"}, f"{args.slug} is now {'open' if args.action == 'open' else 'closed'}")
    elif args.action == "links":
        links = study_admin.participant_links(args.slug, args.base_url)
        _emit(args, links, "\n".join(f"{k:9} {v}" for k, v in links.items()))
    elif args.action == "progress":
        rows = study_admin.progress(args.slug)
        _emit(args, rows, "\n".join(
            f"{r.condition:16} active {r.active:4}  completed {r.completed:4}  screened out {r.screened_out:4}" for r in rows))


def cmd_export(args: argparse.Namespace) -> None:
    from engines.platform.export import export_study

    export = export_study(args.slug, pseudonymise=args.pseudonymise)
    paths = export.write(args.out)
    _emit(args, {"files": [str(p) for p in paths]}, "\n".join(str(p) for p in paths))


def cmd_jobs(args: argparse.Namespace) -> None:
    from engines.platform import jobqueue

    if args.action == "list":
        jobs = jobqueue.list_jobs(limit=args.limit)
        rows = [{"id": j.id, "kind": j.kind, "status": j.status, "progress": j.progress, "message": j.message} for j in jobs]
        _emit(args, rows, "\n".join(f"{r['id']:5} {r['kind']:28} {r['status']:10} {r['progress']:5.0%} {r['message']}" for r in rows) or "no jobs")
    elif args.action == "kinds":
        kinds = jobqueue.discover_job_kinds()
        _emit(args, sorted(kinds), "\n".join(f"{k:28} {v.title}" for k, v in sorted(kinds.items())))
    elif args.action == "params":
        from engines.platform.param_docs import job_parameters_markdown

        print(job_parameters_markdown(jobqueue.discover_job_kinds()), end="")
    elif args.action == "submit":
        params = json.loads(args.params) if args.params else {}
        job_id = jobqueue.submit_job(args.kind, params)
        if args.wait:
            # Run it here, in the foreground; the database records it exactly as a worker would.
            jobqueue.run_job(job_id)
            job = jobqueue.get_job(job_id)
            _emit(args, {"id": job.id, "status": job.status, "result": job.result, "error": job.error},
                  f"job {job.id}: {job.status}\n{json.dumps(job.result, indent=2) if job.result else job.error or ''}")
            if job.status != "succeeded":
                sys.exit(1)
        else:
            _emit(args, {"id": job_id}, f"queued job {job_id}")
    elif args.action == "cancel":
        status = jobqueue.cancel_job(args.job_id)
        _emit(args, {"id": args.job_id, "status": status}, f"job {args.job_id}: {status}")
    elif args.action == "show":
        job = jobqueue.get_job(args.job_id)
        _emit(args, job.model_dump(mode="json"), json.dumps(job.model_dump(mode="json"), indent=2))


def cmd_run_job(args: argparse.Namespace) -> None:
    import os

    from engines.platform.jobqueue import PARENT_PID_ENV, run_job, watch_parent

    if os.environ.get(PARENT_PID_ENV):  # started by an executor: stop with it
        watch_parent(args.job_id, int(os.environ[PARENT_PID_ENV]))
    status = run_job(args.job_id)
    sys.exit(0 if status in ("succeeded", "cancelled") else 1)


def cmd_worker(args: argparse.Namespace) -> None:
    import signal
    import time

    from engines.platform.jobqueue import make_executor

    def stop(signum, frame) -> None:  # noqa: ARG001 - signal handler signature
        raise KeyboardInterrupt

    # Ctrl-C and a service manager's SIGTERM both stop it cleanly, also when it was started from a
    # script's background job, which inherits SIGINT ignored.
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    executor = make_executor(args.workers)
    executor.start()
    print(f"worker running {executor.max_workers} jobs at a time; Ctrl-C to stop", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        executor.shutdown()


def cmd_serve(args: argparse.Namespace) -> None:
    from engines.platform import serve

    try:
        config = serve.ServeConfig(processes=args.processes, workers=args.workers, host=args.host, port=args.port,
                                   app_port=args.app_port or args.port + 10, proxy=args.proxy, nginx=args.nginx)
        serve.serve_forever(config)
    except serve.ServeError as exc:
        print(f"serve: {exc}", file=sys.stderr)
        sys.exit(2)


def cmd_setting(args: argparse.Namespace) -> None:
    """Print one setting's value (``make run`` passes the upload limit on to Streamlit)."""
    settings = get_settings()
    if args.name not in type(settings).model_fields:
        raise SystemExit(f"unknown setting {args.name!r}")
    print(getattr(settings, args.name))


def cmd_bots(args: argparse.Namespace) -> None:
    from engines.platform.bots import run_protocol_bots

    reports = run_protocol_bots(args.protocol, participants=args.participants, slug=args.study)
    _emit(args, reports, "\n".join(f"{r.external_id:16} {r.condition:12} {r.status:12} {r.steps} steps, "
                                   f"{r.must_fail_checked} rejected inputs checked" for r in reports))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m engines.platform", description="HAI Studio platform commands.")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("migrate", help="apply database migrations").set_defaults(fn=cmd_migrate)
    p = sub.add_parser("bootstrap", help="migrate, create the first admin, load demo studies")
    p.add_argument("--no-demo", dest="demo", action="store_false")
    p.set_defaults(fn=cmd_bootstrap)

    p = sub.add_parser("create-user", help="create a researcher, annotator or admin account")
    p.add_argument("username")
    p.add_argument("--role", required=True, choices=["admin", "researcher", "annotator"])
    p.add_argument("--password", help="omit to be prompted")
    p.add_argument("--display-name")
    p.set_defaults(fn=cmd_create_user)
    p = sub.add_parser("set-password", help="change an account's password")
    p.add_argument("username")
    p.add_argument("--password", help="omit to be prompted")
    p.set_defaults(fn=cmd_set_password)

    sub.add_parser("protocols", help="list study protocols found in studies/").set_defaults(fn=cmd_protocols)
    sub.add_parser("registries", help="every registry of named things (job kinds, rules, roles...) as "
                   "Markdown (docs/extending.md)").set_defaults(fn=cmd_registries)
    p = sub.add_parser("studies", help="create, open, close and inspect studies")
    p.add_argument("action", choices=["list", "create", "open", "close", "links", "progress"])
    p.add_argument("slug", nargs="?")
    p.add_argument("protocol", nargs="?")
    p.add_argument("--title")
    p.add_argument("--config", help="JSON: completion_code, screened_out_code, constants, max_participants, prolific_study_id")
    p.add_argument("--closed", action="store_true", help="create without opening")
    p.add_argument("--base-url", help="public address for links (default HAI_PUBLIC_BASE_URL)")
    p.set_defaults(fn=cmd_studies)

    p = sub.add_parser("export", help="export a study's data (CSV, JSONL, dictionary, config)")
    p.add_argument("slug")
    p.add_argument("--out", required=True)
    p.add_argument("--pseudonymise", action="store_true",
                   help="replace participants' panel ids by keyed hashes, for sharing outside the lab")
    p.set_defaults(fn=cmd_export)

    p = sub.add_parser("jobs", help="list, submit, cancel and show jobs")
    p.add_argument("action", choices=["list", "kinds", "params", "submit", "cancel", "show"],
                   help="params: every kind's parameters as Markdown (docs/jobs.md)")
    p.add_argument("kind", nargs="?", help="job kind (submit)")
    p.add_argument("--job-id", type=int)
    p.add_argument("--params", help="JSON object of parameters")
    p.add_argument("--wait", action="store_true", help="run in the foreground and print the result")
    p.add_argument("--limit", type=int, default=20)
    p.set_defaults(fn=cmd_jobs)
    p = sub.add_parser("run-job", help="run one job in this process (used by workers)")
    p.add_argument("job_id", type=int)
    p.set_defaults(fn=cmd_run_job)
    p = sub.add_parser("worker", help="run queued jobs until stopped (a separate worker process)")
    p.add_argument("--workers", type=int)
    p.set_defaults(fn=cmd_worker)

    p = sub.add_parser("serve", help="several app processes behind nginx with sticky sessions, plus job workers",
                       description="Serve the app from several Streamlit processes on one database (PostgreSQL "
                                   "for more than one), behind nginx with sticky sessions, with separate job "
                                   "workers. Migrate first (bootstrap).")
    p.add_argument("--processes", type=int, default=2, help="app processes (default 2; about one core each when busy)")
    p.add_argument("--workers", type=int, default=1, help="job worker processes (default 1; 0: none)")
    p.add_argument("--host", default="127.0.0.1", help="address the proxy listens on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8501, help="port the proxy listens on (default 8501)")
    p.add_argument("--app-port", type=int, default=None,
                   help="first app process's port on 127.0.0.1; the others follow (default: --port + 10)")
    p.add_argument("--no-proxy", dest="proxy", action="store_false",
                   help="start no nginx (put a sticky proxy of your own in front of the app ports)")
    p.add_argument("--nginx", default="nginx", help="nginx executable (default: nginx on PATH)")
    p.set_defaults(fn=cmd_serve)

    p = sub.add_parser("setting", help="print one setting's value (HAI_* variables, .env, defaults)")
    p.add_argument("name", help="the setting's name, e.g. upload_max_mb")
    p.set_defaults(fn=cmd_setting)
    p = sub.add_parser("bots", help="run a protocol's bot headless against a scratch study")
    p.add_argument("protocol")
    p.add_argument("--participants", type=int, default=3)
    p.add_argument("--study", help="existing study slug to use (default: a new bot-* study)")
    p.set_defaults(fn=cmd_bots)
    # --json is also accepted after the command (`studies progress pilot-1 --json`), as people type it.
    for command in sub.choices.values():
        command.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                             help="machine-readable output")
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    needs_slug = {"studies": args.command == "studies" and args.action != "list"}
    if needs_slug["studies"] and not args.slug:
        parser.error(f"studies {args.action} needs a study slug")
    if args.command == "studies" and args.action == "create" and not args.protocol:
        parser.error("studies create needs SLUG PROTOCOL")
    if args.command == "jobs" and args.action == "submit" and not args.kind:
        parser.error("jobs submit needs a job kind (see `jobs kinds`)")
    if args.command == "jobs" and args.action in ("cancel", "show") and args.job_id is None:
        parser.error(f"jobs {args.action} needs --job-id")
    from sqlalchemy.exc import OperationalError, ProgrammingError

    from engines.platform.auth import AuthError
    from engines.platform.jobqueue import JobError
    from engines.platform.panels import LinkError
    from engines.platform.private_files import make_private
    from engines.platform.pseudonyms import PseudonymKeyError
    from engines.platform.registry import UnknownProtocol
    from engines.platform.runtime import StudyError
    from engines.platform.settings import get_settings as _settings

    make_private(_settings().data_dir)  # the database, job folders and keys: this user's only
    try:
        args.fn(args)
    except (AuthError, JobError, LinkError, PseudonymKeyError, StudyError, UnknownProtocol,
            json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except (OperationalError, ProgrammingError) as exc:
        # A database without the tables is the common case (a new HAI_DATABASE_URL): say what to run.
        from engines.platform.settings import get_settings

        url = get_settings().resolved_database_url
        detail = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc)
        missing = "no such table" in detail or "does not exist" in detail
        hint = ("; the database has no HAI Studio tables yet: run `python -m engines.platform migrate` "
                "(or `make run`, which migrates)") if missing else ""
        print(f"error: database {url.split('@')[-1]}: {detail}{hint}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
