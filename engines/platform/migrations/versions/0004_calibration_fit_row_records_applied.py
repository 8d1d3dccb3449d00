"""controller streams: the row completing a calibration batch records the fitted thresholds

Streams written before this revision stored the starting thresholds as that row's q_*_after, while
the stream and every later row used the fitted ones; this data migration writes what was applied
(the fitted state kept in controller_stream.calibration). No schema change.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 12:40:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0004'
down_revision: str | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

streams = sa.table('controller_stream', sa.column('id', sa.Integer), sa.column('calibration', sa.JSON))
updates = sa.table('controller_update', sa.column('stream_id', sa.Integer), sa.column('seq', sa.Integer),
                   sa.column('q_harm_after', sa.Float), sa.column('q_comp_after', sa.Float))


def upgrade() -> None:
    bind = op.get_bind()
    for stream_id, calibration in bind.execute(sa.select(streams.c.id, streams.c.calibration)).all():
        if not calibration or not calibration.get('state'):
            continue
        state = calibration['state']  # the fitted state (or the starting one, if the fit failed)
        bind.execute(updates.update()
                     .where(updates.c.stream_id == stream_id, updates.c.seq == int(calibration['seq']))
                     .values(q_harm_after=float(state['q_harm']), q_comp_after=float(state['q_comp'])))


def downgrade() -> None:
    pass  # the old value was a recording error; nothing to restore
