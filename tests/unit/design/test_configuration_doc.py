"""docs/configuration.md is written from the settings models and the stack's options
(infra/configuration.py, `make docs`): a model changed without the page fails here, naming
the command to run."""

import re
from pathlib import Path

from functions.registry import ALL_FUNCTIONS, ALL_SETTINGS
from infra import configuration

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"


def test_the_configuration_page_is_the_one_the_models_write():
    written = configuration.PAGE.read_text()
    assert written == configuration.render(), "docs/configuration.md is out of date: run `make docs`"


def test_the_check_names_the_command_to_run(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "configuration.md"
    stale.write_text(configuration.render().replace("BATCH_WINDOW_SECONDS", "BATCH_WINDOW"))
    monkeypatch.setattr(configuration, "PAGE", stale)
    monkeypatch.setattr(configuration, "ROOT", tmp_path)

    assert configuration.main(["--check"]) == 1
    assert "configuration.md is out of date: run `make docs`" in capsys.readouterr().err
    assert configuration.main([]) == 0
    assert configuration.main(["--check"]) == 0


def test_every_setting_has_its_row_with_the_functions_that_receive_it():
    rows = {
        match[1]: match[2]
        for match in re.finditer(r"^\| `([A-Z_]+)` \|.*\| ([^|]+) \|$", configuration.render(), re.M)
    }
    for model in ALL_SETTINGS:
        readers = {f.logical_id for f in ALL_FUNCTIONS if model in f.settings}
        for variable in model.variables():
            listed = rows[variable].strip()
            named = (
                {f.logical_id for f in ALL_FUNCTIONS}
                if listed == "every function"
                else set(listed.split(", "))
            )
            assert named == readers, variable


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_models_page_and_every_link_of_the_configuration_page_exist():
    links = re.findall(r"\]\(([^)#]+\.md)(?:#([^)]+))?\)", configuration.render())
    links += [tuple((m.docs.partition("#")[0], m.docs.partition("#")[2])) for m in ALL_SETTINGS]
    assert all(m.docs for m in ALL_SETTINGS)
    for page, anchor in links:
        assert (DOCS / page).is_file(), page
        if anchor:
            assert anchor in _anchors(DOCS / page), f"{page}#{anchor}"
