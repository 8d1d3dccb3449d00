"""Page registry: every ``pages/*.py`` declares ``PAGE = {...}`` and is picked up without wiring.

The declaration is read with ``ast`` (the page script is not executed), e.g.::

    PAGE = {"title": "Studies", "group": "Admin", "roles": ["admin"], "icon": ":material/science:", "order": 10}

``group`` is one of ``GROUPS``; ``roles`` lists the account roles allowed to open the page
(admins may open every page). The "Participate" group is reached only through a study link.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from engines.platform.models import Role
from engines.platform.settings import REPO_ROOT

GROUPS = ("Participate", "Research", "Annotate", "Admin", "Account")
PUBLIC = "public"  # pseudo-role of pages shown before login


@dataclass(frozen=True)
class PageSpec:
    path: Path
    title: str
    group: str
    roles: tuple[str, ...]
    icon: str | None = None
    order: int = 100
    url_path: str = ""

    def allows(self, role: str | None) -> bool:
        if self.group == "Participate":
            return False  # participant pages open only from a study link, never from a login
        if role is None:
            return PUBLIC in self.roles
        return role == Role.ADMIN or role in self.roles


class PageDeclarationError(ValueError):
    pass


def read_page_spec(path: Path) -> PageSpec:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PAGE" for t in node.targets):
            try:
                decl = ast.literal_eval(node.value)
            except ValueError as exc:
                raise PageDeclarationError(f"{path}:{node.lineno}: PAGE must be a literal dict ({exc})") from None
            break
    else:
        raise PageDeclarationError(f"{path}: no `PAGE = {{...}}` declaration")
    missing = {"title", "group", "roles"} - set(decl)
    if missing:
        raise PageDeclarationError(f"{path}:{node.lineno}: PAGE lacks {', '.join(sorted(missing))}")
    if decl["group"] not in GROUPS:
        raise PageDeclarationError(f"{path}:{node.lineno}: PAGE group {decl['group']!r} is not one of {GROUPS}")
    unknown = set(decl["roles"]) - set(Role.ALL) - {PUBLIC}
    if unknown:
        raise PageDeclarationError(f"{path}:{node.lineno}: PAGE names unknown roles {sorted(unknown)}")
    return PageSpec(path=path, title=decl["title"], group=decl["group"], roles=tuple(decl["roles"]),
                    icon=decl.get("icon"), order=int(decl.get("order", 100)),
                    url_path=decl.get("url_path", path.stem.replace("_", "-")))


def discover_pages(pages_dir: Path | None = None) -> list[PageSpec]:
    """All declared pages, ordered by group then ``order`` then title."""
    pages_dir = pages_dir or REPO_ROOT / "pages"
    specs = [read_page_spec(p) for p in sorted(pages_dir.glob("*.py")) if not p.name.startswith("_")]
    return sorted(specs, key=lambda s: (GROUPS.index(s.group), s.order, s.title))
