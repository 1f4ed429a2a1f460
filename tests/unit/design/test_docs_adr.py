"""The decisions are one file each under docs/adr/ (docs/adr/README.md says how to read and
add one): every file begins with its number and title, then its status and date; the
numbers run 1, 2, 3... with no gap; every link to a decision leads to a file that exists;
and nothing points to the single-file log they replaced (git keeps it)."""

from __future__ import annotations

import datetime
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ADR = ROOT / "docs" / "adr"
NAME = re.compile(r"^(\d{4})-[a-z0-9]+(?:-[a-z0-9]+)*\.md$")
HEADING = re.compile(r"^# (\d{4})\. \S.*$")
SUPERSEDED_BY = r"superseded by \[\d{4}\]\(\d{4}-[a-z0-9-]+\.md\)"
STATUS = re.compile(
    rf"^Status: (?:accepted|accepted, partly {SUPERSEDED_BY}: .+|{SUPERSEDED_BY})"
    r" · Date: (\d{4}-\d{2}-\d{2})$"
)
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE = re.compile(r"```.*?```|`[^`]+`", re.S)
OLD_LOG = "docs/decisions.md"
# The one form that may still name the old log: where a removed entry is in git's history.
HISTORY = "git history of " + OLD_LOG


def decisions() -> list[Path]:
    return sorted(p for p in ADR.glob("*.md") if p.name != "README.md")


def repository_texts() -> list[tuple[Path, str]]:
    """Every text file the repository holds (tracked, or new and not ignored), not git's
    history; this test's own file aside."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    texts = []
    for name in filter(None, listed.split("\0")):
        path = ROOT / name
        if not path.is_file() or path.resolve() == Path(__file__).resolve():
            continue
        try:
            texts.append((path, path.read_text()))
        except UnicodeDecodeError:
            continue
    return texts


def test_every_decision_begins_with_its_number_and_title_then_its_status_and_date():
    files = decisions()
    assert files, "no decision in docs/adr/"
    wrong = []
    for path in files:
        name = NAME.match(path.name)
        first, second = ([*path.read_text().splitlines(), "", ""])[:2]
        heading, status = HEADING.match(first), STATUS.match(second)
        if not (name and heading and status and heading[1] == name[1]):
            wrong.append(f"{path.name}: {first!r} / {second!r}")
            continue
        datetime.date.fromisoformat(status[1])
    assert wrong == []


def test_the_numbers_are_unique_and_run_from_one_without_a_gap():
    numbers = [int(path.name[:4]) for path in decisions()]
    assert numbers == list(range(1, len(numbers) + 1))


def test_the_index_lists_every_decision():
    index = (ADR / "README.md").read_text()
    missing = [
        p.name for p in decisions() if f"| {p.name[:4]} | [" not in index or f"]({p.name})" not in index
    ]
    assert missing == []


def test_every_relative_link_to_a_decision_in_the_docs_leads_to_a_file():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = []
    for page in pages:
        prose = CODE.sub("", page.read_text())  # an example in code is no link
        for target in LINK.findall(prose):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            resolved = (page.parent / target.split("#")[0]).resolve()
            inside_adr = resolved.is_relative_to(ADR)
            if (inside_adr or page.parent == ADR) and not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_every_decision_the_code_names_by_its_path_exists():
    named = re.compile(r"docs/adr/(\d{4}-[a-z0-9-]+\.md)")
    missing = [
        f"{path.relative_to(ROOT)}: {match}"
        for path, text in repository_texts()
        for match in named.findall(text)
        if not (ADR / match).exists()
    ]
    assert missing == []


def test_nothing_points_to_the_old_single_file_log_any_more():
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path, text in repository_texts()
        for number, line in enumerate(text.splitlines(), 1)
        if "decisions.md" in line.replace(HISTORY, "")
    ]
    assert found == []
