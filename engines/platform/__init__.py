"""Platform shared by every capability: settings, database, accounts, study runtime, jobs.

References: oTree (study model and bots), psiTurk (least-filled assignment), Prolific and MTurk
panel conventions, SQLModel/Alembic; see ``shared/specs/platform.md``.
"""
