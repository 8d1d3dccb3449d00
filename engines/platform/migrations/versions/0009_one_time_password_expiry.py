"""one-time passwords expire

An account remembers when its one-time password (an invitation's, an admin reset's) stops working;
existing accounts get none, so nothing that works today stops working.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03 12:00:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0009'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.add_column(sa.Column('password_expires_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))


def downgrade() -> None:
    # Plain ALTER TABLE ... DROP COLUMN (SQLite >= 3.35): a batch copy of "user" would drop the table,
    # which its foreign keys refuse once accounts exist.
    op.drop_column('user', 'password_expires_at')
