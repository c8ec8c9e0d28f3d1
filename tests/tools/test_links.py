"""The two tools are linked from the pages whose readers need them, in the page's text where
the question comes up, not only in its closing list of links."""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
EXPLORER = "tools/sharding-explorer.md"
PLANNER = "tools/strategy-planner.md"

NEEDED = [
    ("basics/partition-spec.md", EXPLORER),
    ("basics/named-sharding.md", EXPLORER),
    ("concepts/collectives.md", EXPLORER),
    ("training/choosing.md", EXPLORER),
    ("training/choosing.md", PLANNER),
    ("training/fsdp.md", PLANNER),
    ("training/scaling.md", PLANNER),
]


@pytest.mark.parametrize(("page", "tool"), NEEDED, ids=lambda p: Path(p).stem)
def test_the_page_links_the_tool_in_its_text(page, tool):
    text = (DOCS / page).read_text(encoding="utf-8")
    body = text.split("\n## Where next")[0]
    target = Path("..", tool).as_posix()
    links = re.findall(rf"\[([^\]]+)\]\({re.escape(target)}\)", body)
    assert links, f"{page} does not link {tool} before its closing links"
    title = (DOCS / tool).read_text(encoding="utf-8").split("\n")[0].removeprefix("# ")
    assert title.lower() in {link.lower() for link in links}, links
