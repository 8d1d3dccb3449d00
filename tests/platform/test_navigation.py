"""Page declarations are discovered, valid, and page files never shadow a top-level package."""

from pathlib import Path

import pytest

from engines.platform.navigation import GROUPS, PageDeclarationError, discover_pages, read_page_spec

ROOT = Path(__file__).resolve().parents[2]


def test_every_page_declares_itself():
    pages = discover_pages()
    assert {p.path.stem for p in pages} >= {"participate", "login", "account", "manage_studies", "accounts", "jobs"}
    assert all(p.group in GROUPS for p in pages)
    assert [p.group for p in pages] == sorted((p.group for p in pages), key=GROUPS.index)


def test_page_files_do_not_shadow_packages():
    # Streamlit puts a page's folder on sys.path; pages/studies.py would hide the studies package.
    top_level = {p.name for p in ROOT.iterdir() if p.is_dir()} | {"streamlit", "engines", "studies", "torch"}
    assert not {p.stem for p in (ROOT / "pages").glob("*.py")} & top_level


def test_participant_pages_never_open_from_a_login():
    participate = next(p for p in discover_pages() if p.group == "Participate")
    assert not any(participate.allows(role) for role in (None, "annotator", "researcher", "admin"))


@pytest.mark.parametrize(("source", "message"), [
    ("x = 1\n", "no `PAGE"),
    ("PAGE = {'title': 'T', 'group': 'Nowhere', 'roles': []}\n", "group 'Nowhere'"),
    ("PAGE = {'title': 'T', 'group': 'Admin', 'roles': ['wizard']}\n", "unknown roles"),
    ("PAGE = {'title': 'T'}\n", "lacks group, roles"),
    ("PAGE = dict(title=f())\n", "literal dict"),
])
def test_bad_declarations_name_file_and_line(tmp_path, source, message):
    path = tmp_path / "page.py"
    path.write_text(source)
    with pytest.raises(PageDeclarationError, match=message) as info:
        read_page_spec(path)
    assert str(path) in str(info.value)
