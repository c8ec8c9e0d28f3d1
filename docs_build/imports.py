"""One import per name in a block that includes several snippet sections.

A block such as

    ```{.python}
    --8<-- "snippets/advanced/transformer/model.py:imports"
    --8<-- "snippets/advanced/transformer/init.py:imports"
    ```

joins the imports of two modules, which each import `jax` for themselves: pasted as is, the
block would say `import jax` twice. Each module must keep its own imports (it is imported and
tested on its own), so the block drops the repeats instead, in one place for every reader of
a page: the site (this module is also a Markdown extension, `docs_build.imports` in mkdocs.yml,
run right after pymdownx.snippets has expanded the includes), and `outputs.parse_blocks`, whose
blocks the build runs, the notebooks hold and pytest-markdown-docs tests (conftest.py).

Only the block's leading imports are touched (import lines, blank lines and comments before
its first other line), so no code can have rebound a name between an import and its repeat.
An `import x` or `from m import a, b` line goes when every name it binds was bound the same way
above it; a `from` line some of whose names are new keeps just those.
"""

from __future__ import annotations

import ast
import re

from markdown import Extension
from markdown.preprocessors import Preprocessor

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>.*)$")
PYTHON = re.compile(r"^\{?\s*\.?(?:python|py|pycon)\b")


def _bindings(line: str) -> tuple[str, list[tuple[str, str | None]]] | None:
    """The module and the (name, alias) pairs a one-line import binds, else None."""
    try:
        tree = ast.parse(line)
    except SyntaxError:
        return None
    if len(tree.body) != 1:
        return None
    node = tree.body[0]
    if isinstance(node, ast.Import):
        return "", [(a.name, a.asname) for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and not node.level:
        if any(a.name == "*" for a in node.names):
            return None
        return node.module, [(a.name, a.asname) for a in node.names]
    return None


def dedupe(code: str) -> str:
    """`code` with the repeated imports of its leading import lines left out, and the blank
    lines they stood between made one."""
    lines = code.split("\n")
    seen: set[tuple[str, str, str | None]] = set()
    head: list[str] = []
    at = 0  # the first line that is not an import, blank or a comment
    changed = False
    for line in lines:
        stripped = line.strip()
        found = _bindings(line) if stripped and line == stripped else None
        if stripped and not stripped.startswith("#") and found is None:
            break  # the rest stays as it is
        at += 1
        if found is None:
            head.append(line)
            continue
        module, names = found
        new = [(n, a) for n, a in names if (module, n, a) not in seen]
        seen |= {(module, n, a) for n, a in names}
        changed |= len(new) < len(names)
        if len(new) == len(names):
            head.append(line)
        elif new:  # `from m import a, b` where `a` came earlier: `from m import b`
            head.append(
                f"from {module} import "
                + ", ".join(n if a is None else f"{n} as {a}" for n, a in new)
            )
    if not changed:
        return code
    head = [
        line
        for i, line in enumerate(head)
        if line.strip() or (i and head[i - 1].strip())
    ]
    rest = lines[at:]
    if not any(line.strip() for line in rest):  # the block is all imports
        while head and not head[-1].strip():
            head.pop()
        rest = [""] if code.endswith("\n") else []
    return "\n".join(head + rest)


def dedupe_fences(lines: list[str]) -> list[str]:
    """Markdown lines with `dedupe` applied to each Python fence, at whatever indentation
    (a fence in a setup fold is indented)."""
    out, at = [], 0
    while at < len(lines):
        opening = FENCE.match(lines[at])
        out.append(lines[at])
        at += 1
        if not opening:
            continue
        indent, fence = opening["indent"], opening["fence"]
        body = []
        while at < len(lines):
            line = lines[at]
            if line.strip() == fence and line.startswith(indent):
                break
            body.append(line)
            at += 1
        if PYTHON.match(opening["info"]) and all(
            not line.strip() or line.startswith(indent) for line in body
        ):
            code = dedupe("\n".join(line[len(indent) :] for line in body))
            body = [indent + line if line else line for line in code.split("\n")]
        out += body
        if at < len(lines):
            out.append(lines[at])  # the closing fence
            at += 1
    return out


class DedupeImports(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        return dedupe_fences(lines)


class DedupeImportsExtension(Extension):
    def extendMarkdown(self, md):  # Python-Markdown's name
        # After pymdownx.snippets (32) has expanded the includes, before SuperFences
        # (31.05 and 25) takes the fences out of the text.
        md.preprocessors.register(DedupeImports(md), "dedupe_imports", 31.5)


def makeExtension(**kwargs):  # Python-Markdown's name
    return DedupeImportsExtension(**kwargs)
