"""controller streams: calibration batch and update delays

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 20:40:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('controller_stream', schema=None) as batch_op:
        batch_op.add_column(sa.Column('calibration_size', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('calibration', sa.JSON(), nullable=True))
    with op.batch_alter_table('controller_update', schema=None) as batch_op:
        batch_op.add_column(sa.Column('phase', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False,
                                      server_default='online'))
        batch_op.add_column(sa.Column('frozen_seq', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('score_true', sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('controller_update', schema=None) as batch_op:
        batch_op.drop_column('score_true')
        batch_op.drop_column('frozen_seq')
        batch_op.drop_column('phase')
    with op.batch_alter_table('controller_stream', schema=None) as batch_op:
        batch_op.drop_column('calibration')
        batch_op.drop_column('calibration_size')
