"""What the pages show of the version matrix (results.json, written by `nox -s versions`).

Pages ask for generated text with HTML comments, which the build replaces before rendering
(`fill`), so that no version number on a page is typed by hand:

    <!-- version: jax -->            the pinned (installed) version of a package
    <!-- probe: pvary -->             three table cells: what the old spelling does on the pinned
                                      versions, the release it was deprecated in, and the
                                      release it was removed (or its result changed) in
    <!-- deprecated: pvary -->        one of those versions, in prose
    <!-- removed: pvary -->
    <!-- changed: axis-types -->
    <!-- added: jax-shard-map -->
    <!-- state: runs -->              the icon and word of a state (runs, warns, raises), as
                                      the matrix shows them: the page's key to its colours
    <!-- generated: NAME -->          a whole block: `pip-install`, `matrix-versions`,
                                      `compatibility-api`, `compatibility-old`,
                                      `compatibility-error`

`needs_note(code)` is the note a page gets when its code needs something newer than the
oldest release line in the matrix.
"""

from __future__ import annotations

import html
import importlib.metadata
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from docs_build.versions.probes import PROBES, Probe

RESULTS = Path(__file__).resolve().parent / "results.json"
MARKER = re.compile(
    r"<!-- (version|probe|deprecated|removed|changed|added|generated|state): ([\w.-]+) -->"
)
SHOWN = ("jax", "flax", "optax")
BY_ID = {p.id: p for p in PROBES}


class VersionsError(ValueError):
    """A page asked for something the matrix does not have."""


@cache
def load() -> dict:
    return json.loads(RESULTS.read_text(encoding="utf-8"))


def probed() -> list[dict]:
    """The matrix's columns that ran, oldest JAX first."""
    return [row for row in load()["versions"] if row["status"] == "probed"]


def pinned() -> dict[str, str]:
    """The installed versions the site is built with."""
    return {name: importlib.metadata.version(name) for name in SHOWN}


def pinned_row() -> dict:
    jax = pinned()["jax"]
    for row in probed():
        if row["jax"] == jax:
            return row
    raise VersionsError(
        f"docs_build/versions/results.json has no column for the pinned jax {jax}: "
        "run `nox -s versions` and commit the result."
    )


@dataclass(frozen=True)
class History:
    added: str | None  # first release (in the matrix) from which it runs, to the newest
    deprecated: str | None  # the release where it began to warn
    removed: str | None  # the release from which it raises again, having run before
    changed: str | None  # the release whose value differs from the one before


# What a message says about when: "deprecated in JAX v0.8.2", "removed in JAX v0.10.0",
# "As of Flax 0.11.0 ... is required", "will change in JAX v0.9.0".
STATED = {
    "deprecated": re.compile(r"deprecated in (?:(JAX|Flax) )?v?(\d+(?:\.\d+)+)", re.I),
    "removed": re.compile(
        r"(?:removed in|As of) (?:(JAX|Flax) )?v?(\d+(?:\.\d+)+)", re.I
    ),
    "changed": re.compile(r"change in (?:(JAX|Flax) )?v?(\d+(?:\.\d+)+)", re.I),
}


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


def stated(probe_id: str, kind: str) -> set[str]:
    """The releases that the probe's own messages, in any column, give for `kind`."""
    package = BY_ID[probe_id].package
    found = set()
    for row in probed():
        result = row["results"].get(probe_id) or {}
        for text in (result.get("message"), result.get("warning_message")):
            for name, version in STATED[kind].findall(text or ""):
                if not name or name.lower() == package:
                    found.add(version)
    return found


def _label(rows: list[dict], i: int, package: str, said: set[str] = frozenset()) -> str:
    """When something first seen in column `i` happened. The matrix holds the latest patch of
    each line, so it only brackets a change: after column i - 1, by column i. A release that
    the messages name inside that bracket is the answer; otherwise the bracket is."""
    name = "JAX" if package == "jax" else "Flax"
    version = rows[i]["packages"][package]
    before = rows[i - 1]["packages"][package] if i else None
    inside = {
        v
        for v in said
        if _key(v) <= _key(version) and (before is None or _key(v) > _key(before))
    }
    if len(inside) == 1:
        return f"{name} {inside.pop()}"
    if before is None:  # before the first line we know nothing
        return f"{name} {version} or earlier"
    if before == version:
        return f"{name} {version}"
    return f"between {name} {before} and {version}"


def history(probe_id: str) -> History:
    p = BY_ID[probe_id]
    rows = probed()
    states = [row["results"].get(probe_id) for row in rows]
    if any(s is None for s in states):
        missing = [row["jax"] for row, s in zip(rows, states, strict=True) if s is None]
        raise VersionsError(f"probe {probe_id!r} has no result for jax {missing}")
    runs = [s["outcome"] != "raises" for s in states]

    def at(i, kind=None):
        return _label(rows, i, p.package, stated(probe_id, kind) if kind else set())

    added = deprecated = removed = changed = None
    if runs[-1]:
        i = len(runs) - 1
        while i > 0 and runs[i - 1]:
            i -= 1
        # The first column that runs it: what a page may say its code needs.
        added = f"{'JAX' if p.package == 'jax' else 'Flax'} {rows[i]['packages'][p.package]}"
        added += " or earlier" if i == 0 else ""
    warns = [i for i, s in enumerate(states) if s["outcome"] == "warns"]
    if warns:
        deprecated = at(warns[0], "deprecated")
    if not runs[-1] and any(runs):
        i = len(runs) - 1
        while runs[i - 1] is False:
            i -= 1
        removed = at(i, "removed")
    values = [s.get("value") for s in states]
    for i in range(1, len(values)):
        if runs[i] and runs[i - 1] and values[i] != values[i - 1]:
            changed = at(i, "changed")
    return History(added, deprecated, removed, changed)


# What Markdown reads before it sets raw HTML aside: code spans (backticks, which the tables
# extension also follows when it splits a row into cells), backslash escapes, links, emphasis
# and cell borders. In a cell's raw HTML they are plain characters, so they go in as
# character references.
_MARKDOWN_MARKUP = str.maketrans({c: f"&#{ord(c)};" for c in "`\\|[]*_"})


def _cell(result: dict) -> str:
    """A cell of a Markdown table (the migration page's): what the probe did, in the matrix's
    icon, words and colour, its messages in the matrix's fold (`_fold`), never in a hover.
    Raw HTML, with the characters Markdown would read as markup written as references."""
    state = state_of(result)
    label = _cell_label(result)
    messages = _messages(result)
    if messages:
        shown = _fold(label, messages, f"vm-{state}")
    else:
        shown = f'<span class="vm-{state}">{label}</span>'
    return shown.translate(_MARKDOWN_MARKUP)


def probe_cells(probe_id: str) -> str:
    if probe_id not in BY_ID:
        raise VersionsError(
            f"no probe named {probe_id!r} (docs_build/versions/probes.py)"
        )
    h = history(probe_id)
    now = _cell(pinned_row()["results"][probe_id])
    last = h.removed or ""
    if h.changed:
        last = f"result changed {'' if h.changed.startswith('between') else 'in '}{h.changed}"
    return f"{now} | {h.deprecated or ''} | {last}"


# What a cell of the matrix shows: a colour (extra.css), an icon and a word, so that no state
# is told by colour alone. The icons are text (U+FE0E asks for the plain glyph, not an emoji).
STATES = {
    "runs": ("\u2713", "runs"),
    "warns": ("\u26a0\ufe0e", "warns"),
    "raises": ("\u2717", "raises"),
    "none": ("\u2013", "not probed"),
}


def state_of(result: dict) -> str:
    """`runs`, `warns` or `raises`: what a probe did, as the matrix colours it."""
    return {"works": "runs", "warns": "warns", "raises": "raises"}[result["outcome"]]


# Where long code in a row name may break: after a comma or a bracket, and after a dot that a
# name follows (not inside `...`).
_BREAK = re.compile(r"([(,]|\.(?=\w))")


def _inline(markdown_text: str) -> str:
    """A probe's title (Markdown whose only markup is code spans) as HTML; its code may break
    where `_BREAK` says (<wbr/>), as a narrow first column wraps it."""
    parts = markdown_text.split("`")
    return "".join(
        f"<code>{_BREAK.sub(r'\1<wbr/>', html.escape(part))}</code>"
        if i % 2
        else html.escape(part)
        for i, part in enumerate(parts)
    )


def state_chip(state: str) -> str:
    """The icon and word of a state, coloured as the matrix colours it (the page's key)."""
    icon, word = STATES[state]
    return (
        f'<span class="vm-chip vm-{state}"><span class="vm-icon" aria-hidden="true">'
        f"{icon}</span> {word}</span>"
    )


def _cell_label(result: dict) -> str:
    """What a cell says, as HTML: the icon, then words (the exception name in code)."""
    state = state_of(result)
    icon = f'<span class="vm-icon" aria-hidden="true">{STATES[state][0]}</span> '
    if state == "raises":
        text = f'<span class="a11y-hidden">raises </span><code>{html.escape(result["exception"])}</code>'
        if "warning" in result:
            text = f"warns, then {text}"
        return icon + text
    value = f": {html.escape(str(result['value']))}" if "value" in result else ""
    return icon + ("warns, runs" if state == "warns" else "runs") + value


EXCLUDED = ' data-search-exclude="repeat"'  # Material's search skips the element


def _fold(
    label: str, messages: list[tuple[str, str]], css: str = "", seen: set | None = None
) -> str:
    """A cell's label, opening onto its messages: a <details> fold, which a click, a tap or
    Enter on the focused label opens (no hover needed). Messages already in `seen` (an
    earlier cell of the row said the same) are left out of the search index, which then
    holds each of a row's messages once, not once per release."""
    if not messages:
        return label
    body = "".join(
        f'<p><span class="vm-said">{html.escape(kind)}:</span> {html.escape(text)}</p>'
        for kind, text in messages
    )
    again = seen is not None and body in seen
    if seen is not None:
        seen.add(body)
    return (
        f'<details class="{" ".join(filter(None, ["vm-fold", css]))}">'
        f"<summary>{label}</summary>"
        f'<div class="vm-message"{EXCLUDED if again else ""}>{body}</div>'
        "</details>"
    )


def _messages(result: dict) -> list[tuple[str, str]]:
    """What a probe's run said, each message under the name of what said it, as Python
    prints it: the exception's class, or the warning's."""
    warning = result.get("warning", "Warning")
    messages = []
    if result.get("warning_message"):
        messages.append((warning, result["warning_message"]))
    if result.get("message"):
        said = {"raises": result.get("exception"), "warns": warning}
        messages.append((said.get(result["outcome"]) or "Message", result["message"]))
    return messages


def matrix_cell(row: dict, probe_id: str, seen: set | None = None) -> str:
    """One <td> of the matrix: a column that did not run says why; one that did, what the
    probe did there, with its messages in a fold (`seen`: the row's messages so far)."""
    if row["status"] != "probed":
        label = f'<span class="vm-icon" aria-hidden="true">{STATES["none"][0]}</span> {html.escape(row["status"])}'
        reason = row.get("reason", "")
        fold = _fold(label, [("Why", reason)] if reason else [], seen=seen)
        return f'<td class="vm-none">{fold}</td>'
    result = row["results"][probe_id]
    state = state_of(result)
    fold = _fold(_cell_label(result), _messages(result), seen=seen)
    return f'<td class="vm-{state}">{fold}</td>'


def columns() -> list[dict]:
    """The matrix's columns, newest JAX first (by version, whatever order the file holds)."""
    return sorted(load()["versions"], key=lambda r: _key(r["jax"]), reverse=True)


def compatibility_table(group: str) -> str:
    """One section of the matrix as an HTML table: a row per probe, named in a header cell
    that stays in view while the table scrolls sideways (extra.css), and a column per JAX
    release line, newest first."""
    rows = columns()
    head = "".join(f'<th scope="col">JAX {html.escape(r["jax"])}</th>' for r in rows)
    lines = [
        '<div class="version-matrix">',
        "<table>",
        f'<thead><tr><th scope="col">What</th>{head}</tr></thead>',
        "<tbody>",
    ]
    for p in PROBES:
        if p.group != group:
            continue
        seen: set[str] = set()
        cells = "".join(matrix_cell(r, p.id, seen) for r in rows)
        lines.append(f'<tr><th scope="row">{_inline(p.title)}</th>{cells}</tr>')
    lines += ["</tbody>", "</table>", "</div>"]
    # A raw HTML block: Markdown leaves it as it is (no blank line inside, none needed).
    return "\n".join(lines)


def matrix_versions() -> str:
    """A table of the releases each column holds, newest first, and when the matrix was made."""
    data = load()
    lines = [
        "| JAX | Flax | Optax | NumPy | Python | Status |",
        "|---|---|---|---|---|---|",
    ]
    for r in columns():
        if r["status"] == "probed":
            pk = r["packages"]
            cells = [
                pk["jax"],
                pk["flax"],
                pk["optax"],
                pk["numpy"],
                r["python"],
                "probed",
            ]
        else:
            cells = [r["jax"], "", "", "", "", f"{r['status']}: {r.get('reason', '')}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + f"\n\nThe matrix was made on {data['generated']}."


def pip_install() -> str:
    pins = " ".join(f'"{k}=={v}"' for k, v in pinned().items())
    return f"```{{.bash}}\npip install {pins} rich matplotlib\n```"


def pip_install_orbax() -> str:
    """The checkpoints page's extra packages, Orbax and Grain, at the versions the site is
    built with."""
    pins = " ".join(
        f'"{name}=={importlib.metadata.version(name)}"'
        for name in ("orbax-checkpoint", "grain")
    )
    return f"```{{.bash}}\npip install {pins}\n```"


GENERATED = {
    "pip-install": pip_install,
    "pip-install-orbax": pip_install_orbax,
    "matrix-versions": matrix_versions,
    "compatibility-api": lambda: compatibility_table("api"),
    "compatibility-old": lambda: compatibility_table("old"),
    "compatibility-error": lambda: compatibility_table("error"),
}


def fill(markdown: str, where: str) -> str:
    """Replace every marker in a page's Markdown; an unknown one names the page."""

    def replace(m: re.Match) -> str:
        kind, name = m.groups()
        try:
            if kind == "version":
                return pinned()[name]
            if kind == "probe":
                return probe_cells(name)
            if kind == "state":
                if name not in STATES:
                    raise VersionsError(f"no state {name!r}; known: {sorted(STATES)}")
                return state_chip(name)
            if kind == "generated":
                if name not in GENERATED:
                    raise VersionsError(
                        f"no generated block {name!r}; known: {sorted(GENERATED)}"
                    )
                return GENERATED[name]()
            if name not in BY_ID:
                raise VersionsError(f"no probe named {name!r}")
            found = getattr(history(name), kind)
            if found is None:
                raise VersionsError(f"probe {name!r} was never {kind} in the matrix")
            return found
        except (VersionsError, KeyError) as err:
            raise VersionsError(f"{where}: {m.group(0)}: {err}") from None

    return MARKER.sub(replace, markdown)


def needs(code: str) -> list[tuple[Probe, str]]:
    """The APIs a page's code uses that the oldest release line in the matrix lacks."""
    found = []
    for p in PROBES:
        if p.uses and re.search(p.uses, code):
            added = history(p.id).added
            if added and not added.endswith("or earlier"):
                found.append((p, added))
    return found


def needs_note(code: str, compatibility_link: str) -> str:
    """A short admonition naming what the page's code needs, or '' when it runs on all."""
    found = needs(code)
    if not found:
        return ""

    def key(label: str) -> list[int]:
        return [int(x) for x in re.findall(r"\d+", label)]

    newest: dict[str, str] = {}
    for p, added in found:
        if p.package not in newest or key(added) > key(newest[p.package]):
            newest[p.package] = added
    uses = "; ".join(f"{p.items[0]} from {added}" for p, added in found)
    return (
        f'??? info "Needs {" and ".join(newest.values())} or newer"\n'
        f"    The code on this page uses {uses}. Older releases fail on it; "
        f"[the compatibility matrix]({compatibility_link}) shows what each release has.\n"
    )
