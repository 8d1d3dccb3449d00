"""judge labeling: project teams (which annotator accounts may label which project)

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03 10:00:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('labeling_member',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('added_by', sa.Integer(), nullable=True),
    sa.Column('added_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['added_by'], ['user.id'], name=op.f('fk_labeling_member_added_by_user')),
    sa.ForeignKeyConstraint(['project_id'], ['labeling_project.id'], name=op.f('fk_labeling_member_project_id_labeling_project')),
    sa.ForeignKeyConstraint(['user_id'], ['user.id'], name=op.f('fk_labeling_member_user_id_user')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_labeling_member')),
    sa.UniqueConstraint('project_id', 'user_id', name='uq_labeling_member_project_user')
    )
    with op.batch_alter_table('labeling_member', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_labeling_member_user_id'), ['user_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('labeling_member', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_labeling_member_user_id'))

    op.drop_table('labeling_member')
