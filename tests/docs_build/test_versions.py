"""The version matrix: its committed result matches the pins, covers every probe and every row
the migration page shows, and the pages read it without typing a version by hand."""

import dataclasses
import json
import os
import re
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from html import escape as html_escape
from pathlib import Path

import pytest

from docs_build.versions import matrix, pages, probes

ROOT = Path(__file__).resolve().parents[2]
MIGRATION = ROOT / "docs" / "guides" / "migration.md"
COMPATIBILITY = ROOT / "docs" / "guides" / "compatibility.md"


def pins() -> dict[str, str]:
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    found = {}
    for requirement in groups["examples"]:
        name, _, version = requirement.partition("==")
        found[name] = version
    return found


def test_the_committed_matrix_has_a_column_for_the_pins():
    """Moving a pin without running `nox -s versions` fails here."""
    newest = pages.probed()[-1]
    for name in ("jax", "jaxlib", "flax", "optax"):
        assert newest["packages"][name] == pins()[name], (
            f"results.json was made with {name} {newest['packages'][name]}, the pin is "
            f"{pins()[name]}: run `nox -s versions` and commit the result"
        )
    assert pages.pinned_row() is newest


def test_the_matrix_holds_at_least_nine_jax_lines_with_real_outcomes():
    rows = pages.probed()
    assert len(rows) >= 9
    lines = [tuple(int(x) for x in r["jax"].split(".")[:2]) for r in rows]
    assert lines == sorted(set(lines)), "one column per minor line, oldest first"
    assert rows[0]["jax"] == "0.4.38"
    for row in rows:
        outcomes = {r["outcome"] for r in row["results"].values()}
        assert outcomes <= {"works", "warns", "raises"}
        assert "raises" in outcomes and "works" in outcomes


def test_every_probe_has_a_result_in_every_column():
    """Adding a probe without running `nox -s versions` fails here."""
    ids = [p.id for p in probes.PROBES]
    assert len(ids) == len(set(ids))
    for row in pages.probed():
        assert sorted(row["results"]) == sorted(ids), row["jax"]


def test_every_migration_row_has_a_probe_and_no_typed_version():
    text = MIGRATION.read_text(encoding="utf-8")
    table = text[text.index("## At a glance") : text.index("## Setup")]
    rows = [line for line in table.splitlines() if line.startswith("| [")]
    assert len(rows) >= 20
    for row in rows:
        found = re.findall(r"<!-- probe: ([\w-]+) -->", row)
        assert len(found) == 1, row
        assert found[0] in pages.BY_ID, row
        assert pages.BY_ID[found[0]].group == "old"
    # Every version number on the page comes from a marker.
    prose = re.sub(r"<!-- [^>]* -->", "", text)
    assert not re.findall(r"\b\d+\.\d+\.\d+\b", prose)


def test_the_migration_table_fills_three_cells_per_row():
    filled = pages.fill(MIGRATION.read_text(encoding="utf-8"), "guides/migration.md")
    assert "<!--" not in filled.split("## Setup")[0]
    table = filled[filled.index("| Old spelling") : filled.index("## Setup")]
    for line in table.strip().splitlines():
        assert len(cells(line)) == 5, line


def test_the_pinned_column_agrees_with_a_fresh_run_of_the_probes(tmp_path):
    """The committed results for the pinned versions are what these versions do today."""
    out = tmp_path / "probes.json"
    env = {**os.environ, **matrix.DEVICES}
    subprocess.run(
        [sys.executable, str(Path(probes.__file__)), str(out)],
        check=True,
        env=env,
        cwd=tmp_path,
        capture_output=True,
    )
    fresh = json.loads(out.read_text())["results"]
    committed = pages.pinned_row()["results"]

    def essence(result):
        return {k: result.get(k) for k in ("outcome", "exception", "value", "warning")}

    assert {k: essence(v) for k, v in fresh.items()} == {
        k: essence(v) for k, v in committed.items()
    }


def cells(row: str) -> list[str]:
    """A Markdown table row's cells."""
    return row.replace("\\|", "").strip().strip("|").split("|")


def test_the_migration_table_shows_each_message_in_a_fold_not_a_hover():
    """What an old spelling does on the pinned versions: the matrix's icon and words, and
    each message it printed as text in the matrix's fold, which a tap or Enter opens; no
    `title` that only a mouse shows. Markdown leaves the cell's HTML as it is."""
    import markdown

    text = MIGRATION.read_text(encoding="utf-8")
    table = text[text.index("| Old spelling") : text.index("## Setup")]
    pinned = pages.pinned_row()["results"]
    folds = 0
    for line in table.strip().splitlines()[2:]:
        probe = re.search(r"<!-- probe: ([\w-]+) -->", line)[1]
        filled = pages.fill(line, "guides/migration.md")
        assert "title=" not in filled
        cell = cells(filled)[2].strip()
        # As the page renders it: the row through Markdown's tables, the cell's HTML intact.
        rendered = markdown.markdown(
            "| a | b | c | d | e |\n|---|---|---|---|---|\n" + filled,
            extensions=["tables"],
        )
        td = ET.fromstring(re.search(r"<tbody>.*</tbody>", rendered, re.S)[0]).findall(
            "tr/td"
        )[2]
        result = pinned[probe]
        state = pages.state_of(result)
        said = [result[k] for k in ("warning_message", "message") if result.get(k)]
        fold = td.find("details")
        if not said:
            assert fold is None and td.find("span").get("class") == f"vm-{state}"
            continue
        folds += 1
        assert cell.startswith(f'<details class="vm-fold vm-{state}"><summary>')
        assert (
            text_of(fold.find("summary/span[@class='vm-icon']"))
            == (pages.STATES[state][0])
        )
        shown = [text_of(par) for par in fold.find("div[@class='vm-message']")]
        assert [s.split(": ", 1)[1] for s in shown] == said, probe
    assert folds >= 10


def fake_results(monkeypatch, outcomes, values=None, package="jax"):
    versions = []
    for i, outcome in enumerate(outcomes):
        result = {"outcome": outcome}
        if outcome == "raises":
            result["exception"] = "AttributeError"
        if values:
            result["value"] = values[i]
        versions.append(
            {
                "jax": f"0.{i + 4}.0",
                "status": "probed",
                "packages": {"jax": f"0.{i + 4}.0", "flax": f"0.1{i}.0"},
                "results": {p.id: result for p in probes.PROBES},
            }
        )
    monkeypatch.setattr(pages, "load", lambda: {"versions": versions})
    probe = dataclasses.replace(pages.BY_ID["pvary"], package=package)
    monkeypatch.setitem(pages.BY_ID, "pvary", probe)


def test_history_reads_added_deprecated_and_removed(monkeypatch):
    fake_results(monkeypatch, ["raises", "works", "warns", "warns", "raises", "raises"])
    h = pages.history("pvary")
    assert h == pages.History(
        added=None,
        deprecated="between JAX 0.5.0 and 0.6.0",
        removed="between JAX 0.7.0 and 0.8.0",
        changed=None,
    )


def test_history_of_an_api_that_arrived(monkeypatch):
    fake_results(monkeypatch, ["raises", "raises", "works", "works"])
    h = pages.history("pvary")
    assert (h.added, h.removed, h.deprecated) == ("JAX 0.6.0", None, None)


def test_history_before_the_first_column_is_not_invented(monkeypatch):
    fake_results(monkeypatch, ["warns", "raises"])
    h = pages.history("pvary")
    assert h.deprecated == "JAX 0.4.0 or earlier"
    assert h.removed == "between JAX 0.4.0 and 0.5.0"


def test_history_of_a_changed_value(monkeypatch):
    fake_results(monkeypatch, ["works"] * 3, values=["Auto", "Auto", "Explicit"])
    assert pages.history("pvary").changed == "between JAX 0.5.0 and 0.6.0"


def test_a_release_the_message_names_inside_the_bracket_is_the_answer(monkeypatch):
    fake_results(monkeypatch, ["works", "works", "warns", "raises"])
    warned = pages.load()["versions"][2]["results"]["pvary"]
    warned["warning_message"] = "pvary is deprecated in JAX v0.5.2; use pcast"
    raised = pages.load()["versions"][3]["results"]["pvary"]
    raised["message"] = "pvary was removed in JAX v0.9.0"  # outside (0.6.0, 0.7.0]
    h = pages.history("pvary")
    assert h.deprecated == "JAX 0.5.2"
    assert h.removed == "between JAX 0.6.0 and 0.7.0"


# What a message says about when, read independently of pages.STATED.
WHEN = {
    "deprecated": r"deprecated in",
    "removed": r"removed in|as of",
    "changed": r"change in",
}


def interval(cell: str) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
    """(low, high, exact) of a history cell: `X or earlier`, `between A and B` or `V`."""

    def key(v):
        return tuple(int(x) for x in v.split("."))

    versions = re.findall(r"\d+(?:\.\d+)+", cell)
    if cell.endswith("or earlier"):
        return (0,), key(versions[0]), False
    if cell.startswith("between"):
        return key(versions[0]), key(versions[1]), False
    return key(versions[0]), key(versions[0]), True


@pytest.mark.parametrize("probe", [p.id for p in probes.PROBES if p.group == "old"])
def test_no_cell_contradicts_the_release_its_message_names(probe):
    """A cell that says 0.8.3 beside a message that says "deprecated in v0.8.0" was wrong:
    the matrix only brackets a change, and the message's own release wins inside it."""
    h = pages.history(probe)
    messages = [
        r["results"][probe].get(k) or ""
        for r in pages.probed()
        for k in ("message", "warning_message")
    ]
    for kind, words in WHEN.items():
        cell = getattr(h, kind)
        if cell is None:
            continue
        named = {
            v
            for m in messages
            for v in re.findall(
                rf"(?:{words}) (?:JAX |Flax )?v?(\d+(?:\.\d+)+)", m, re.I
            )
        }
        low, high, exact = interval(cell)
        for version in named:
            key = tuple(int(x) for x in version.split("."))
            if exact:
                assert key == low, (probe, kind, cell, version)
            else:
                assert low < key <= high or (low == (0,) and key <= high), (
                    probe,
                    kind,
                    cell,
                    version,
                )
        if exact:  # a single release is only given where a message names it
            assert named == {cell.split()[-1]}, (probe, kind, cell)


def test_not_installable_columns_are_shown_as_such(monkeypatch):
    fake_results(monkeypatch, ["works", "raises"])
    data = pages.load()
    data["versions"].append(
        {
            "jax": "0.9.0",
            "status": "not installable here",
            "reason": "needs Python 3.14",
        }
    )
    table = pages.compatibility_table("old")
    assert "JAX 0.9.0" in table and "not installable here" in table
    assert pages.history("pvary").removed == "between JAX 0.4.0 and 0.5.0"


def test_unknown_markers_fail_naming_the_page():
    with pytest.raises(
        pages.VersionsError, match=r"guides/x\.md.*no probe named 'nope'"
    ):
        pages.fill("<!-- probe: nope -->", "guides/x.md")
    with pytest.raises(pages.VersionsError, match=r"guides/x\.md.*no generated block"):
        pages.fill("<!-- generated: nope -->", "guides/x.md")
    with pytest.raises(pages.VersionsError, match=r"was never removed"):
        pages.fill("<!-- removed: pmap -->", "guides/x.md")


def test_pinned_versions_are_filled_from_the_installed_packages():
    import flax
    import jax

    assert pages.fill("<!-- version: jax --> <!-- version: flax -->", "p") == (
        f"{jax.__version__} {flax.__version__}"
    )
    assert f'"jax=={jax.__version__}"' in pages.fill(
        "<!-- generated: pip-install -->", "p"
    )
    import importlib.metadata
    import tomllib

    examples = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    for name in ("orbax-checkpoint", "grain"):
        version = importlib.metadata.version(name)
        assert f'"{name}=={version}"' in pages.fill(
            "<!-- generated: pip-install-orbax -->", "p"
        )
        assert f"{name}=={version}" in examples["examples"]


def test_a_page_that_needs_a_newer_release_is_told_so():
    note = pages.needs_note("y = jax.reshard(x, P())\nz = jax.typeof(y)\n", "c.md")
    added = pages.history("reshard").added
    assert note.startswith(f'??? info "Needs {added} or newer"')
    assert "`jax.reshard` from " + added in note
    assert "(c.md)" in note
    assert pages.needs_note("y = x + 1\n", "c.md") == ""


def test_the_needs_note_names_each_api_whole(monkeypatch):
    """A probe's title is a list: the note names its first item whole, even where the
    item's code holds a comma (`jax.make_mesh(..., axis_types=...)`)."""
    import markdown

    api = [p for p in probes.PROBES if p.uses]
    monkeypatch.setattr(pages, "needs", lambda code: [(p, "JAX 9.9") for p in api])
    note = pages.needs_note("x = 1\n", "c.md")
    html = markdown.Markdown(extensions=["admonition"]).convert(
        note.replace("??? info", "!!! info")
    )
    shown = re.findall(r"<code>([^<]*)</code>", html)
    assert shown == [html_escape(p.items[0].strip("`"), quote=False) for p in api]
    assert "`" not in re.sub(r"<code>[^<]*</code>", "", html)
    assert "<code>jax.make_mesh(..., axis_types=...)</code>" in html


def test_a_probe_title_is_its_items_joined():
    probe = pages.BY_ID["optimizer-wrt-update"]
    assert probe.items == (
        "`nnx.Optimizer(model, tx, wrt=nnx.Param)`",
        "`optimizer.update(model, grads)`",
    )
    assert probe.title == ", ".join(probe.items)
    assert probes.Probe("x", "api", "`one`", lambda: None).items == ("`one`",)


def matrix_tables(markdown_text: str) -> list[ET.Element]:
    """The matrix's tables in a filled page, parsed (the generator writes well-formed HTML)."""
    found = re.findall(
        r'<div class="version-matrix">\n(<table>.*?</table>)\n</div>',
        markdown_text,
        re.S,
    )
    return [ET.fromstring(table) for table in found]


def text_of(element: ET.Element) -> str:
    return "".join(element.itertext())


def filled_compatibility_page() -> str:
    return pages.fill(
        COMPATIBILITY.read_text(encoding="utf-8"), "guides/compatibility.md"
    )


def test_the_compatibility_page_shows_every_probe_in_every_column():
    tables = matrix_tables(filled_compatibility_page())
    assert len(tables) == 3
    columns = len(pages.load()["versions"])
    body = [tr for t in tables for tr in t.find("tbody")]
    assert len(body) == len(probes.PROBES)
    assert [text_of(tr[0]) for tr in body] == [
        p.title.replace("`", "")
        for group in ("api", "old", "error")
        for p in probes.PROBES
        if p.group == group
    ]
    for tr in body:
        assert tr[0].tag == "th" and tr[0].get("scope") == "row"
        assert [c.tag for c in tr[1:]] == ["td"] * columns


def test_the_matrix_puts_the_newest_release_first(monkeypatch):
    """The order comes from the versions themselves, not from where results.json lists them."""
    shown = [
        text_of(th)
        for th in matrix_tables(filled_compatibility_page())[0].find("thead/tr")
    ]
    newest_first = sorted(
        (r["jax"] for r in pages.load()["versions"]),
        key=lambda v: [int(x) for x in v.split(".")],
        reverse=True,
    )
    assert shown == ["What"] + [f"JAX {v}" for v in newest_first]
    assert shown[1] == f"JAX {pages.pinned()['jax']}"
    # Listed in any order, the columns still come newest first (0.10 after 0.9 by number).
    fake_results(monkeypatch, ["works"] * 7)
    data = {**pages.load(), "generated": "2026-01-01"}
    monkeypatch.setattr(pages, "load", lambda: data)
    for row in data["versions"]:
        row["packages"].update(optax="0.2.0", numpy="2.0.0")
        row["python"] = "3.12"
    data["versions"].reverse()
    data["versions"].insert(3, data["versions"].pop())
    header = ET.fromstring(
        re.search(r"<table>.*</table>", pages.compatibility_table("old"), re.S)[0]
    ).find("thead/tr")
    assert [text_of(th) for th in header][1:] == [
        f"JAX 0.{n}.0" for n in (10, 9, 8, 7, 6, 5, 4)
    ]
    versions = pages.matrix_versions().splitlines()[2:9]
    assert [line.split(" | ")[0] for line in versions] == [
        f"| 0.{n}.0" for n in (10, 9, 8, 7, 6, 5, 4)
    ]


def test_every_cell_says_its_state_in_colour_icon_and_word():
    """Never colour alone: each cell's class (its colour, extra.css) goes with an icon and a
    word or exception name that say the same."""
    rows = pages.columns()
    seen = set()
    for table in matrix_tables(filled_compatibility_page()):
        for tr in table.find("tbody"):
            title = text_of(tr[0])
            p = next(p for p in probes.PROBES if p.title.replace("`", "") == title)
            for row, td in zip(rows, tr[1:], strict=True):
                result = row["results"][p.id]
                state = {"works": "runs", "warns": "warns", "raises": "raises"}[
                    result["outcome"]
                ]
                seen.add(state)
                assert td.get("class") == f"vm-{state}"
                label = td.find("details/summary")
                label = td if label is None else label
                icon = label.find("span[@class='vm-icon']")
                assert icon.get("aria-hidden") == "true"
                assert text_of(icon) == pages.STATES[state][0]
                words = text_of(label).replace(text_of(icon), "", 1).strip()
                if state == "raises":
                    prefix = "warns, then " if "warning" in result else ""
                    assert words == f"{prefix}raises {result['exception']}"
                    assert label.find("code").text == result["exception"]
                else:
                    word = "runs" if state == "runs" else "warns, runs"
                    value = f": {result['value']}" if "value" in result else ""
                    assert words == word + value
    assert seen == {"runs", "warns", "raises"}


def test_every_message_is_text_in_a_fold_not_a_hover():
    """A message is in the page as text, in a <details> fold that a click, a tap or Enter
    opens; nothing hides in a `title` that only a mouse can show."""
    filled = filled_compatibility_page()
    matrix = "".join(
        re.findall(r'<div class="version-matrix">.*?</div>\n', filled, re.S)
    )
    assert "title=" not in matrix
    rows = pages.columns()
    folds = 0
    for table in matrix_tables(filled):
        for tr in table.find("tbody"):
            p = next(
                p for p in probes.PROBES if p.title.replace("`", "") == text_of(tr[0])
            )
            for row, td in zip(rows, tr[1:], strict=True):
                result = row["results"][p.id]
                said = [result.get(k) for k in ("warning_message", "message")]
                said = [m for m in said if m]
                fold = td.find("details")
                if not said:
                    assert fold is None
                    continue
                folds += 1
                assert fold.find("summary") is not None
                shown = [text_of(par) for par in fold.find("div[@class='vm-message']")]
                assert [s.split(": ", 1)[1] for s in shown] == said
                # Each under the name of what said it, as Python prints it.
                who = [s.split(": ", 1)[0] for s in shown]
                if result["outcome"] == "raises":
                    assert who[-1] == result["exception"]
                    assert who[:-1] == [result.get("warning")] * (len(who) - 1)
                else:
                    assert who == [result["warning"]] * len(who)
    assert folds > 100


def test_a_column_that_did_not_run_says_why_in_a_fold(monkeypatch):
    fake_results(monkeypatch, ["works", "raises"])
    pages.load()["versions"].append(
        {
            "jax": "0.9.0",
            "status": "not installable here",
            "reason": "needs Python 3.14",
        }
    )
    table = ET.fromstring(
        re.search(r"<table>.*</table>", pages.compatibility_table("api"), re.S)[0]
    )
    first = table.find("tbody/tr")[1]  # newest first: the column that did not run
    assert first.get("class") == "vm-none"
    assert text_of(first.find("details/summary")).endswith("not installable here")
    assert text_of(first.find("details/div")) == "Why: needs Python 3.14"


def test_the_key_shows_each_state_as_the_cells_do():
    for state, (icon, word) in pages.STATES.items():
        chip = ET.fromstring(pages.fill(f"<!-- state: {state} -->", "p"))
        assert chip.get("class") == f"vm-chip vm-{state}"
        assert text_of(chip) == f"{icon} {word}"
    with pytest.raises(pages.VersionsError, match="no state 'nope'"):
        pages.fill("<!-- state: nope -->", "p")


def test_release_lines_take_the_latest_patch_and_resolve_at_the_next_line():
    releases = [
        {"version": v, "uploaded": t, "requires_python": ""}
        for v, t in [
            ("0.4.37", "2024-12-10"),
            ("0.4.38", "2024-12-17"),
            ("0.5.0", "2025-01-17"),
            ("0.5.3", "2025-03-19"),
            ("0.8.2", "2025-12-18"),
            ("0.9.0", "2026-01-20"),
            ("0.8.3", "2026-01-29"),  # a patch after the next line began
        ]
    ]
    releases.sort(key=lambda r: [int(x) for x in r["version"].split(".")])
    lines = matrix.release_lines(releases, "0.4.38")
    assert [(r["version"], r["resolve_at"]) for r in lines] == [
        ("0.4.38", "2025-01-17"),
        ("0.5.3", "2025-12-18"),
        ("0.8.3", "2026-01-29"),
        ("0.9.0", None),
    ]


def test_the_interpreter_is_chosen_from_what_a_release_requires():
    assert matrix.choose_python(">=3.10", ["3.11", "3.12", "3.13"]) == "3.12"
    assert matrix.choose_python(">=3.13", ["3.11", "3.12", "3.13"]) == "3.13"
    assert matrix.choose_python(">=3.14", ["3.12", "3.13"]) is None


def test_a_release_that_needs_a_missing_python_is_not_installable_here():
    row = matrix.build_and_probe(
        {"version": "9.9", "resolve_at": None, "requires_python": ">=3.99"}, ["3.12"]
    )
    assert row["status"] == "not installable here"
    assert "needs Python >=3.99" in row["reason"]
    assert "results" not in row


def test_a_release_uv_cannot_install_is_recorded_as_such(monkeypatch):
    """No result is invented for it: the row says why, and holds no probes."""

    def fake_run(command, **kwargs):
        failed = command[:3] == ["uv", "pip", "install"]
        stderr = "error: no wheels with a matching platform tag" if failed else ""
        return subprocess.CompletedProcess(command, 1 if failed else 0, "", stderr)

    monkeypatch.setattr(matrix.subprocess, "run", fake_run)
    row = matrix.build_and_probe(
        {"version": "0.4.38", "resolve_at": "2025-01-17", "requires_python": ">=3.10"},
        ["3.12"],
    )
    assert row["status"] == "not installable here"
    assert "no wheels with a matching platform tag" in row["reason"]
    assert "results" not in row


def test_probes_that_die_are_reported_not_filled_in(monkeypatch):
    def fake_run(command, **kwargs):
        if command[0].endswith("python"):  # the probe program itself
            return subprocess.CompletedProcess(
                command, 1, "", "Fatal Python error: abort"
            )
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(matrix.subprocess, "run", fake_run)
    row = matrix.build_and_probe(
        {"version": "0.4.38", "resolve_at": None, "requires_python": ""}, ["3.12"]
    )
    assert row["status"] == "probes failed"
    assert "Fatal Python error" in row["reason"]
    assert "results" not in row


def test_an_unexpected_exception_in_a_probe_is_recorded_with_its_type():
    def boom():
        raise KeyError("not what anyone expected")

    result = probes.run(probes.Probe("x", "api", "x", boom))
    assert result == {
        "outcome": "raises",
        "exception": "KeyError",
        "message": "'not what anyone expected'",
    }


@pytest.mark.parametrize("group", ["api", "old", "error"])
def test_search_indexes_each_message_of_a_row_once(group):
    """A message several releases print alike (most of them) is left out of the search
    index after its first cell in the row; every distinct one stays in once."""
    table = pages.compatibility_table(group)
    repeated = 0
    for row in re.findall(r"<tr><th scope=\"row\">.*?</tr>", table, re.S):
        folds = re.findall(
            r'<div class="vm-message"( data-search-exclude="repeat")?>(.*?)</div>', row
        )
        indexed = [body for excluded, body in folds if not excluded]
        assert len(indexed) == len(set(indexed))
        assert {body for _, body in folds} == set(indexed)
        repeated += len(folds) - len(indexed)
    assert repeated > 0
