"""Setup folds: code a page runs but does not teach, collapsed on the site.

    ??? note "Setup: the helpers from earlier pages"

        ```{.python}
        --8<-- "snippets/hlo.py:count-collectives"
        ```

Material for MkDocs draws it as a closed box (pymdownx.details). The Python fences inside
a fold whose title starts with "Setup" are blocks of the page like any other: run by the
build and by pytest-markdown-docs, given their outputs, and code cells of the notebook.
Other folds (an exercise's hints and solution) stay prose: their code is not run.

Everything that reads a page's blocks reads `unfold(text)`: the same lines, each setup
fold's body moved out by its indentation and its opening line turned into the title in
bold, so that line numbers still point into the page.
"""

from __future__ import annotations

import re

SETUP = re.compile(
    r'^(?P<indent>[ \t]*)\?\?\?\+?[ \t]+\w+[ \t]+"(?P<title>Setup\b[^"]*)"'
)


def unfold(text: str) -> str:
    """The page with its setup folds opened, line for line."""
    out, body = [], None  # body: the indentation of the open fold's body
    for line in text.split("\n"):
        if body is not None and line.strip() and not line.startswith(body):
            body = None  # a line less indented than the fold: the fold has ended
        if body is not None:
            out.append(line[len(body) :])
        elif fold := SETUP.match(line):
            out.append(f"{fold['indent']}**{fold['title']}**")
            body = fold["indent"] + "    "
        else:
            out.append(line)
    return "\n".join(out)
