"""judge labeling tables: projects, items, claims, human labels, adjudications

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 18:43:45.330375
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0006'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('labeling_project',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('slug', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('title', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('guidelines', sa.Text(), nullable=False),
    sa.Column('overlap_k', sa.Integer(), nullable=False),
    sa.Column('overlap_fraction', sa.Float(), nullable=False),
    sa.Column('gold_every', sa.Integer(), nullable=False),
    sa.Column('gold_min_accuracy', sa.Float(), nullable=False),
    sa.Column('min_gold_checks', sa.Integer(), nullable=False),
    sa.Column('quiz_size', sa.Integer(), nullable=False),
    sa.Column('quiz_pass', sa.Float(), nullable=False),
    sa.Column('release_after_minutes', sa.Float(), nullable=False),
    sa.Column('is_open', sa.Boolean(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('created_by', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['created_by'], ['user.id'], name=op.f('fk_labeling_project_created_by_user')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_labeling_project'))
    )
    with op.batch_alter_table('labeling_project', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_labeling_project_slug'), ['slug'], unique=True)

    op.create_table('labeling_item',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(length=512), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('target_labels', sa.Integer(), nullable=False),
    sa.Column('active_claims', sa.Integer(), nullable=False),
    sa.Column('is_gold', sa.Boolean(), nullable=False),
    sa.Column('gold_score', sa.Integer(), nullable=True),
    sa.Column('item', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['project_id'], ['labeling_project.id'], name=op.f('fk_labeling_item_project_id_labeling_project')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_labeling_item')),
    sa.UniqueConstraint('project_id', 'key', name='uq_labeling_item_key')
    )
    with op.batch_alter_table('labeling_item', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_labeling_item_project_id'), ['project_id'], unique=False)
        batch_op.create_index('ix_labeling_item_queue', ['project_id', 'is_gold', 'position'], unique=False)

    op.create_table('labeling_adjudication',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('item_id', sa.Integer(), nullable=False),
    sa.Column('score', sa.Integer(), nullable=False),
    sa.Column('by', sqlmodel.sql.sqltypes.AutoString(length=160), nullable=False),
    sa.Column('note', sqlmodel.sql.sqltypes.AutoString(length=2000), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['item_id'], ['labeling_item.id'], name=op.f('fk_labeling_adjudication_item_id_labeling_item')),
    sa.ForeignKeyConstraint(['project_id'], ['labeling_project.id'], name=op.f('fk_labeling_adjudication_project_id_labeling_project')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_labeling_adjudication')),
    sa.UniqueConstraint('item_id', name='uq_labeling_adjudication_item')
    )
    with op.batch_alter_table('labeling_adjudication', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_labeling_adjudication_project_id'), ['project_id'], unique=False)

    op.create_table('labeling_claim',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('item_id', sa.Integer(), nullable=False),
    sa.Column('annotator', sqlmodel.sql.sqltypes.AutoString(length=160), nullable=False),
    sa.Column('purpose', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('claimed_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('finished_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('skip_reason', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True),
    sa.ForeignKeyConstraint(['item_id'], ['labeling_item.id'], name=op.f('fk_labeling_claim_item_id_labeling_item')),
    sa.ForeignKeyConstraint(['project_id'], ['labeling_project.id'], name=op.f('fk_labeling_claim_project_id_labeling_project')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_labeling_claim')),
    sa.UniqueConstraint('item_id', 'annotator', name='uq_labeling_claim_item_annotator')
    )
    with op.batch_alter_table('labeling_claim', schema=None) as batch_op:
        batch_op.create_index('ix_labeling_claim_annotator', ['project_id', 'annotator', 'status'], unique=False)
        batch_op.create_index(batch_op.f('ix_labeling_claim_item_id'), ['item_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_labeling_claim_project_id'), ['project_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_labeling_claim_status'), ['status'], unique=False)

    op.create_table('human_label',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('item_id', sa.Integer(), nullable=False),
    sa.Column('claim_id', sa.Integer(), nullable=False),
    sa.Column('annotator', sqlmodel.sql.sqltypes.AutoString(length=160), nullable=False),
    sa.Column('score', sa.Integer(), nullable=False),
    sa.Column('flags', sa.JSON(), nullable=False),
    sa.Column('rationale', sqlmodel.sql.sqltypes.AutoString(length=2000), nullable=False),
    sa.Column('ms_spent', sa.Integer(), nullable=True),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['claim_id'], ['labeling_claim.id'], name=op.f('fk_human_label_claim_id_labeling_claim')),
    sa.ForeignKeyConstraint(['item_id'], ['labeling_item.id'], name=op.f('fk_human_label_item_id_labeling_item')),
    sa.ForeignKeyConstraint(['project_id'], ['labeling_project.id'], name=op.f('fk_human_label_project_id_labeling_project')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_human_label')),
    sa.UniqueConstraint('claim_id', name='uq_human_label_claim')
    )
    with op.batch_alter_table('human_label', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_human_label_annotator'), ['annotator'], unique=False)
        batch_op.create_index(batch_op.f('ix_human_label_item_id'), ['item_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_human_label_project_id'), ['project_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('human_label', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_human_label_project_id'))
        batch_op.drop_index(batch_op.f('ix_human_label_item_id'))
        batch_op.drop_index(batch_op.f('ix_human_label_annotator'))

    op.drop_table('human_label')
    with op.batch_alter_table('labeling_claim', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_labeling_claim_status'))
        batch_op.drop_index(batch_op.f('ix_labeling_claim_project_id'))
        batch_op.drop_index(batch_op.f('ix_labeling_claim_item_id'))
        batch_op.drop_index('ix_labeling_claim_annotator')

    op.drop_table('labeling_claim')
    with op.batch_alter_table('labeling_adjudication', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_labeling_adjudication_project_id'))

    op.drop_table('labeling_adjudication')
    with op.batch_alter_table('labeling_item', schema=None) as batch_op:
        batch_op.drop_index('ix_labeling_item_queue')
        batch_op.drop_index(batch_op.f('ix_labeling_item_project_id'))

    op.drop_table('labeling_item')
    with op.batch_alter_table('labeling_project', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_labeling_project_slug'))

    op.drop_table('labeling_project')
