"""The docs say what the code is: the options page and ARCHITECTURE.md's floors are the code's, the README is a
door (at most 200 lines), and README, docs and notebooks speak of the project only (no history, no local paths)."""

import re
from pathlib import Path

import nbformat
import pytest
from test_architecture import FLOORS

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs" / "pages").glob("*.md"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
HISTORY = re.compile(
    r"\bissues? \d+|\b(earlier|previous|last) (round|session)s?\b|\brounds'|\bthis (2-core )?machine\b|\bCI run\b",
    re.IGNORECASE,
)
LOCAL_PATH = re.compile(r"(?<![\w.])/(?:work|tmp|root|home|Users)/[\w./-]+")


def test_the_options_page_is_the_configs():
    """docs/pages/options.md's table is generated from the fields (``make docs-options``): a field added, removed or
    re-documented without regenerating it fails here."""
    from poly_epo_trl.trainer.config import options_table

    page = (ROOT / "docs" / "pages" / "options.md").read_text()
    table = page.split("<!-- options:start -->\n", 1)[1].split("\n<!-- options:end -->", 1)[0]
    assert table == options_table(), "the options page is stale: run `make docs-options`"


def test_architectures_floor_table_is_the_tests_floors():
    """ARCHITECTURE.md's table of floors names each room on the floor ``tests/test_architecture.FLOORS`` gives it."""
    documented = {}
    for line in (ROOT / "ARCHITECTURE.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            for name in re.findall(r"`([\w/]+)`", cells[1]):
                documented[name.rstrip("/")] = int(cells[0])
    assert documented == FLOORS


def test_the_readme_is_a_door():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for page in re.findall(r"\(docs/pages/([\w-]+\.md)\)", readme):
        assert (ROOT / "docs" / "pages" / page).is_file(), page


@pytest.mark.parametrize("path", [ROOT / "README.md", *PAGES], ids=lambda p: p.name)
def test_the_docs_speak_of_the_project_only(path):
    text = path.read_text()
    assert not HISTORY.findall(text), HISTORY.findall(text)
    assert not LOCAL_PATH.findall(text), LOCAL_PATH.findall(text)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebooks_are_clean(path):
    """Saved outputs without local paths or library warnings; an install cell; no cell ends in a bare assert."""
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert any("%pip install" in cell.source for cell in code)
    for cell in code:
        lines = [line for line in cell.source.strip().splitlines() if line.strip()]
        assert lines and not lines[-1].startswith("assert"), cell.source
        for output in cell.get("outputs", []):
            text = output.get("text", "") + str(output.get("data", {}).get("text/plain", ""))
            assert not LOCAL_PATH.findall(text), LOCAL_PATH.findall(text)
            assert "warning" not in text.lower() and output.get("name") != "stderr", text[:300]
    for cell in notebook.cells:
        assert not HISTORY.findall(cell.source), HISTORY.findall(cell.source)


def test_the_citation_file_validates_against_the_citation_file_format_schema():
    """CITATION.cff against CFF 1.2.0's schema (the one cffconvert --validate uses, kept in tests/helpers/schemas):
    the software's authors and version at the top, the paper under preferred-citation; the version is the package's."""
    import configparser
    import json

    import jsonschema
    import yaml

    schema = json.loads((ROOT / "tests/helpers/schemas/citation-file-format-1.2.0.json").read_text())
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    jsonschema.validate(citation, schema)
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    assert str(citation["version"]) == setup["metadata"]["version"]
    assert citation["preferred-citation"]["identifiers"][0]["value"] == "arXiv:2604.17654"
    without_authors = {k: v for k, v in citation.items() if k != "authors"}
    with pytest.raises(jsonschema.ValidationError, match="'authors' is a required property"):
        jsonschema.validate(without_authors, schema)


def test_the_pages_give_the_fast_tiers_test_count():
    """README, quickstart and development page say how many tests ``make test`` runs: the count pytest collects for
    the fast tier (a clone's run collects the same; tests that need CI's data skip, collected)."""
    import subprocess
    import sys

    marker = "not slow and not engines and not vllm"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", marker],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    found = re.search(r"^(\d+)(?:/\d+)? tests? collected", done.stdout, flags=re.M)
    assert found, done.stdout[-2000:]
    count = found.group(1)
    for page in ("README.md", "docs/pages/quickstart.md", "docs/pages/development.md"):
        text = (ROOT / page).read_text()
        assert f"{count} tests" in text, f"{page} does not say the fast tier's {count} tests"
