"""Platform shared by every capability: settings, database, accounts, study runtime, jobs.

References: oTree (study model and bots), psiTurk (least-filled assignment), Prolific and MTurk
panel conventions, SQLModel/Alembic; the manual is ``docs/platform.md`` and the design of the kit
``docs/design.md``.
"""
