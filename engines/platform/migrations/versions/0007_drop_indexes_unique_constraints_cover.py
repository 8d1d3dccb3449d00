"""drop the indexes that a unique constraint's index already covers

``stepresponse.participant_id``, ``stepattempt.participant_id`` and ``participant.study_id``
each had an index of their own beside a unique constraint whose index leads with the same
column, so every look-up the single-column index served, the constraint's serves too. Each
stored answer wrote both; now one.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02 02:00:00
"""
from collections.abc import Sequence

from alembic import op


revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COVERED = (
    ('ix_stepresponse_participant_id', 'stepresponse', 'participant_id'),
    ('ix_stepattempt_participant_id', 'stepattempt', 'participant_id'),
    ('ix_participant_study_id', 'participant', 'study_id'),
)


def upgrade() -> None:
    for name, table, _column in _COVERED:
        op.drop_index(name, table_name=table)


def downgrade() -> None:
    for name, table, column in _COVERED:
        op.create_index(name, table, [column], unique=False)
