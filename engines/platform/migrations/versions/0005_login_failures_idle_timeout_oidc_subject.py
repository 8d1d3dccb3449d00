"""login failures, idle timeout and OIDC subject

Failed logins are counted per username and per client address (to slow down guessing), a login's
last activity is kept (for the idle timeout; existing logins start from their creation time), and
an account remembers its single sign-on subject id.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 17:16:57.243402
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision: str = '0005'
down_revision: str | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('loginfailure',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('username', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
    sa.Column('address', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('failed_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_loginfailure'))
    )
    with op.batch_alter_table('loginfailure', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_loginfailure_address'), ['address'], unique=False)
        batch_op.create_index(batch_op.f('ix_loginfailure_failed_at'), ['failed_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_loginfailure_username'), ['username'], unique=False)

    with op.batch_alter_table('loginsession', schema=None) as batch_op:
        batch_op.add_column(sa.Column('last_seen_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
    sessions = sa.table('loginsession', sa.column('created_at', sa.DateTime), sa.column('last_seen_at', sa.DateTime))
    op.execute(sessions.update().values(last_seen_at=sessions.c.created_at))
    with op.batch_alter_table('loginsession', schema=None) as batch_op:
        batch_op.alter_column('last_seen_at', existing_type=sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False)

    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.add_column(sa.Column('oidc_subject', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True))
        batch_op.create_index(batch_op.f('ix_user_oidc_subject'), ['oidc_subject'], unique=True)



def downgrade() -> None:
    # Plain ALTER TABLE ... DROP COLUMN (SQLite >= 3.35): a batch copy of "user" would drop the table,
    # which its foreign keys refuse once accounts exist.
    op.drop_index(op.f('ix_user_oidc_subject'), table_name='user')
    op.drop_column('user', 'oidc_subject')
    op.drop_column('loginsession', 'last_seen_at')
    op.drop_index(op.f('ix_loginfailure_username'), table_name='loginfailure')
    op.drop_index(op.f('ix_loginfailure_failed_at'), table_name='loginfailure')
    op.drop_index(op.f('ix_loginfailure_address'), table_name='loginfailure')
    op.drop_table('loginfailure')
