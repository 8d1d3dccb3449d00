"""What ``make run`` loads for the judge area: the labeling project of the synthetic demo set.

The panel study ``studies/judge_labeling`` draws from the project named by its ``PROJECT``
constant (``demo-labeling``); this creates that project from ``assets/judge/demo_items.jsonl``
(synthetic and redacted, see ``assets/judge/README.md``) when it does not exist yet.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from engines.judge import labeling
from engines.judge.items import read_items
from engines.platform.settings import REPO_ROOT

DEMO_ITEMS = REPO_ROOT / "assets" / "judge" / "demo_items.jsonl"
DEMO_PROJECT = "demo-labeling"


def load_demo(*, engine: Engine | None = None) -> list[str]:
    """Create the demo labeling project if missing; returns what was created."""
    if not DEMO_ITEMS.exists():
        return []
    try:
        labeling.get_project(DEMO_PROJECT, engine=engine)
        return []
    except labeling.LabelingError:
        pass
    items = read_items(DEMO_ITEMS)
    gold = sum(item.is_gold for item in items)
    settings = labeling.ProjectSettings(
        title="Demo: rate AI responses (synthetic, redacted)",
        guidelines="Synthetic demo data: every harmful detail is replaced by a [REDACTED] marker.",
        quiz_size=min(10, gold), gold_every=20 if gold > 10 else 0)
    labeling.create_project(DEMO_PROJECT, items, settings, engine=engine)
    return [f"labeling project {DEMO_PROJECT}"]
