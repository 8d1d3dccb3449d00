"""Demo data loaded by ``make run``: one open study instance per shipped protocol, and what each
area's ``engines.<area>.demo_data.load_demo`` adds (a labeling project, say)."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from engines.platform import study_admin
from engines.platform.discovery import import_area_modules
from engines.platform.registry import all_protocols
from engines.platform.runtime import UnknownStudy


def demo_slug(protocol_name: str) -> str:
    return protocol_name.replace("_", "-")


def load_demo_data(*, engine: Engine | None = None) -> list[str]:
    """Create a study for every protocol that has none yet; returns the slugs created."""
    created = []
    # Area data first: a study's constants may name it (the judge study's labeling project).
    for module in import_area_modules("demo_data"):
        created += module.load_demo(engine=engine)
    for name, protocol in sorted(all_protocols().items()):
        slug = demo_slug(name)
        try:
            study_admin.get_study(slug, engine=engine)
        except UnknownStudy:
            study_admin.create_study(slug, name, title=protocol.title, engine=engine)
            created.append(slug)
    return created
