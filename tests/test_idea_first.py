"""Idea first: a guide page shows little code before its first idea.

What counts is the code a reader sees before the page's first `##` section (the first one
after "## Setup" where the page has a Setup section): the lines of its Python fences, with
their `--8<--` includes expanded and their imports deduped as the site shows them, outside
collapsed `???` folds. Code in a collapsed fold (`??? note "Setup: ..."`) is still run,
copied and in the notebook, but a reader opens it only to look; an open fold (`???+`),
an admonition (`!!!`) or a content tab (`===`) shows its code, so it counts.

`python -m tests.test_idea_first` prints the count of every guide page.
"""

import re
import sys

import pytest
from markdown_it import MarkdownIt

from docs_build import imports, outputs
from tests.test_takeaways import DOCS, guide_pages

# At most this many lines of visible code before a page's first idea: the devices, the imports
# and a mesh fit, the helpers of earlier pages do not.
# Before issue 30 §1 (python -m tests.test_idea_first): checkpoints 65, multi-host 62,
# automatic and explicit sharding 27, sharding-parameters 25, tensor-parallel 21,
# transformer 19 (its imports block repeated jax, nnx, Mesh and NamedSharding), pipeline 16,
# named-sharding and migration 15. After folding the plumbing into each page's Setup fold:
# automatic sharding 16 (devices and imports folded; its mesh, its `show` helper, which is
# how the page looks at every example, and its input stay), named-sharding and migration 15,
# pipeline 12, explicit sharding 3, the other five 0.
BUDGET = 16

OPENER = re.compile(r"^(?P<indent>[ \t]*)(?P<kind>\?\?\?\+?|!!!|===)(?=[ \t])")


def visible(text: str) -> str:
    """The page line for line, with the bodies of collapsed folds blanked and the bodies of
    open folds, admonitions and tabs moved out by their indentation."""
    out: list[str] = []
    stack: list[
        tuple[str, bool]
    ] = []  # each open box: its body's indentation, collapsed
    for line in text.split("\n"):
        while stack and line.strip() and not line.startswith(stack[-1][0]):
            stack.pop()  # a line less indented than the box: the box has ended
        if any(collapsed for _, collapsed in stack):
            out.append("")
            continue
        body = stack[-1][0] if stack else ""
        line = line[len(body) :]
        if opener := OPENER.match(line):
            stack.append((body + opener["indent"] + "    ", opener["kind"] == "???"))
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def lines_before_the_idea(text: str, where: str = "page") -> int:
    """Lines of visible Python code before the first `##` section that is not Setup (after
    Setup where there is one)."""
    tokens = MarkdownIt("commonmark").parse(visible(text))
    heads = [
        (token.map[0], tokens[i + 1].content)
        for i, token in enumerate(tokens)
        if token.type == "heading_open" and token.tag == "h2"
    ]
    setup = next((at for at, title in heads if title == "Setup"), -1)
    ideas = [at for at, title in heads if at > setup and title != "Setup"]
    end = ideas[0] if ideas else len(text.split("\n"))
    count = 0
    for token in tokens:
        if token.type != "fence" or token.map[0] >= end:
            continue
        lang, _ = outputs.fence_info(token.info)
        if lang in outputs.PYTHON_LANGS:
            code = imports.dedupe(outputs.expand(token.content, where))
            count += len(code.rstrip("\n").split("\n"))
    return count


def counts() -> dict[str, int]:
    return {
        page.relative_to(DOCS).as_posix(): lines_before_the_idea(
            page.read_text(encoding="utf-8"), str(page)
        )
        for page in guide_pages()
    }


@pytest.mark.parametrize(
    "page", guide_pages(), ids=lambda p: p.relative_to(DOCS).as_posix()
)
def test_a_guide_page_shows_its_idea_before_a_screen_of_code(page):
    count = lines_before_the_idea(page.read_text(encoding="utf-8"), str(page))
    assert count <= BUDGET, (
        f"{count} lines of visible code before the first section after Setup "
        f"(budget {BUDGET}): fold what the page does not teach into its "
        '`??? note "Setup: ..."` fold'
    )


SAMPLE = """\
# A page

## Setup

??? note "Setup: the helpers"

    ```{.python}
    --8<-- "snippets/cpu_devices.py:setup"
    ```

```{.python}
mesh = 1
```

!!! tip "Seen"

    ```{.python}
    x = 2
    y = 3
    ```

## The idea

```{.python}
not = counted
```
"""


def test_the_count_skips_collapsed_folds_and_counts_everything_else():
    assert lines_before_the_idea(SAMPLE) == 3  # `mesh = 1`, and two lines in the tip
    unfolded = SAMPLE.replace('??? note "Setup', '???+ note "Setup')
    # The device setup is 4 lines with its blank one.
    assert lines_before_the_idea(unfolded) == 3 + 4
    no_setup = SAMPLE.replace("## Setup\n", "")
    assert lines_before_the_idea(no_setup) == 3
    assert lines_before_the_idea(SAMPLE.replace("## The idea", "### The idea")) == 4


def test_the_count_sees_the_included_lines():
    page = '# P\n\n```{.python}\n--8<-- "snippets/models.py:mlp"\n```\n\n## Idea\n'
    assert lines_before_the_idea(page) > 10


if __name__ == "__main__":
    found = counts()
    for name, count in sorted(found.items(), key=lambda item: (-item[1], item[0])):
        print(f"{count:4d}  {name}")
    sys.exit(max(found.values()) > BUDGET)
