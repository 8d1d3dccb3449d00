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
DEMO_QUIZ = 10  # the qualification quiz: the first 10 gold items (the paper's workers took a 10-item quiz)
# One gold check after every 9 new items: a tenth of a worker's items after the quiz, so that the
# panel study's 20 items (studies/judge_labeling, ITEMS) hold 2 checks. The 30 gold items left
# after the quiz last an annotator 300 items.
DEMO_GOLD_EVERY = 9


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
        quiz_size=min(DEMO_QUIZ, gold), gold_every=DEMO_GOLD_EVERY if gold > DEMO_QUIZ else 0)
    labeling.create_project(DEMO_PROJECT, items, settings, engine=engine)
    return [f"labeling project {DEMO_PROJECT}"]
