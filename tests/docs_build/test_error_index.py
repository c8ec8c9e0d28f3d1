"""The error index (docs_build/errorindex.py): which printed lines are errors, the section each
is under, how a message is shown and when two are one row, and what it refuses. The built page,
its links and its search entries are tested with the built site (tests/test_site_hooks.py)."""

import re
from pathlib import Path

import pytest

from docs_build import errorindex, outputs

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "guides" / "error-index.md"

CONTRACTION = (
    "Contracting dimensions are sharded and it is ambiguous how the output should be "
    "sharded. Please specify the output sharding via the `out_sharding` parameter. Got "
    "lhs_contracting_spec=({0!r},) and rhs_contracting_spec=({0!r},)"
)


def fake_page(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fake.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_page_types_no_row():
    text = PAGE.read_text(encoding="utf-8")
    assert text.count(errorindex.MARKER) == 1
    assert not [line for line in text.splitlines() if line.startswith("|")]


def test_a_printed_line_is_an_error_when_it_starts_with_a_class_or_a_label_and_one():
    blocks = outputs.parse_blocks("# Title\n\n```{.python}\nprint(1)\n```\n", "p.md")
    printed = "\n".join(
        [
            "x: float32[8@x]  w: float32[8]",  # a label, but no class after it
            "device_put: ValueError: Please set a mesh",
            "from_zeros: TypeError:",
            "scan body function carry input and carry output must have equal types",
            "caught a ValueError: in the middle of a line is not one",
            "DeprecationWarning: `with mesh:` context manager has been deprecated.",
            "ShardingTypeError: add got incompatible shardings",
        ]
    )
    ran = [[{"svg": "<svg/>", "alt": "ValueError: in a drawing"}, {"text": printed}]]
    found = errorindex.printed_errors(
        "p.md", blocks, ran, errorindex.headings("# Title\n")
    )
    assert [(p.type, p.message) for p in found] == [
        ("ValueError", "Please set a mesh"),
        (
            "TypeError",
            "scan body function carry input and carry output must have equal types",
        ),
        (
            "DeprecationWarning",
            "`with mesh:` context manager has been deprecated.",
        ),
        ("ShardingTypeError", "add got incompatible shardings"),
    ]
    assert {(p.title, p.heading.anchor) for p in found} == {("Title", "title")}


def test_each_error_goes_to_the_nearest_heading_above_its_block():
    text = (
        "# Errors\n\n```{.python}\nprint(0)\n```\n\n"
        "## First\n\n```{.python}\nprint(1)\n```\n\n"
        "### `ValueError`: second { #second }\n\n```{.python}\nprint(2)\n```\n"
    )
    blocks = outputs.parse_blocks(text, "p.md")
    ran = [[{"text": f"ValueError: {i}\n"}] for i in range(3)]
    found = errorindex.printed_errors("p.md", blocks, ran, errorindex.headings(text))
    assert [(p.message, p.heading.anchor, p.heading.text) for p in found] == [
        ("0", "errors", "Errors"),
        ("1", "first", "First"),
        ("2", "second", "`ValueError`: second"),
    ]


def test_heading_ids_are_the_ones_toc_gives():
    text = (
        "# Title\n\n## `ValueError`: a thing { #thing }\n\n"
        "```{.python}\n# a comment, not a heading\n```\n\n"
        "## Setup\n\n### Setup\n\n## `shard_map`\n\n## [A link](other.md) here\n"
    )
    found = errorindex.headings(text)
    assert [(h.line, h.level, h.anchor) for h in found] == [
        (1, 1, "title"),
        (3, 2, "thing"),
        (9, 2, "setup"),
        (11, 3, "setup_1"),
        (13, 2, "shard_map"),
        (15, 2, "a-link-here"),
    ]
    assert found[1].text == "`ValueError`: a thing"
    assert found[-1].text == "A link here"


def test_an_error_under_no_heading_names_the_page_and_the_block(tmp_path):
    page = fake_page(tmp_path, "Some prose.\n\n```{.python}\nprint(1)\n```\n\n# Late\n")
    blocks = outputs.page_blocks(page)
    with pytest.raises(
        errorindex.ErrorIndexError,
        match=re.escape(
            f"{page} block 1 (line 3: inline code) prints `ValueError: boom`"
        )
        + ".*no heading comes before the block",
    ):
        errorindex.printed_errors(
            str(page),
            blocks,
            [[{"text": "ValueError: boom\n"}]],
            errorindex.headings(page.read_text()),
        )


def test_a_class_with_no_message_names_the_block():
    blocks = outputs.parse_blocks("# T\n\n```{.python}\nprint(1)\n```\n", "p.md")
    with pytest.raises(errorindex.ErrorIndexError, match=r"p\.md block 1 .*no message"):
        errorindex.printed_errors(
            "p.md", blocks, [[{"text": "TypeError:\n\n"}]], errorindex.headings("# T")
        )


def test_outputs_that_do_not_match_the_page_ask_for_a_new_build():
    blocks = outputs.parse_blocks("# T\n\n```{.python}\nprint(1)\n```\n", "p.md")
    with pytest.raises(errorindex.ErrorIndexError, match=r"p\.md: 1 blocks .* build"):
        errorindex.printed_errors("p.md", blocks, [], errorindex.headings("# T"))


def test_an_address_in_a_message_fails_naming_the_page(tmp_path):
    fake_page(tmp_path, "# Fake\n\n```{.python}\nprint(1)\n```\n")
    result = outputs.PageResult(
        "fake.md",
        False,
        0.0,
        [[{"text": "RuntimeError: object at 0x7f3a2c1d90 died\n"}]],
    )
    with pytest.raises(
        errorindex.ErrorIndexError,
        match=r"fake\.md block 1 .*0x7f3a2c1d90.*differs from run to run",
    ):
        errorindex.rows({"fake.md": result}, ["fake.md"], docs=tmp_path)


def test_fill_names_the_index_page_when_it_fails(tmp_path):
    fake_page(tmp_path, "Prose.\n\n```{.python}\nprint(1)\n```\n")
    result = outputs.PageResult("fake.md", False, 0.0, [[{"text": "ValueError: x\n"}]])
    assert errorindex.fill("# No marker\n", "guides/p.md", {}, []) == "# No marker\n"
    with pytest.raises(
        errorindex.ErrorIndexError,
        match=r"^guides/error-index\.md: <!-- generated: error-index -->: .*fake\.md block 1",
    ):
        errorindex.fill(
            f"# Index\n\n{errorindex.MARKER}\n",
            "guides/error-index.md",
            {"fake.md": result},
            [],
            docs=tmp_path,
        )


def test_a_long_message_is_cut_after_a_sentence_or_a_word():
    contraction = CONTRACTION.format("y")
    assert errorindex.shown(contraction) == (
        contraction[: contraction.index(" Got")] + " …"
    )
    long_words = "word " * 60
    cut = errorindex.shown(long_words.strip())
    assert cut.endswith("word …") and len(cut) <= errorindex.LIMIT + 2
    assert errorindex.shown("short message.") == "short message."


def test_the_sentence_naming_where_the_code_ran_is_left_out():
    message = (
        "PartitionSpec passed to reshard cannot contain axis names that are of type Auto "
        "or Manual. Got PartitionSpec: P('x', None) with axis name: x of type: "
        "AxisType.Auto. This error occurs at source:  <python-input-19>:2:4 (<module>)"
    )
    assert errorindex.shown(message).endswith("of type: AxisType.Auto.")


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        (CONTRACTION.format("y"), CONTRACTION.format("model"), True),
        (
            "add got incompatible shardings for broadcasting: (('x', 'y'),), (('y', 'x'),).",
            "add got incompatible shardings for broadcasting: ('x',), ('y',).",
            True,
        ),
        (
            "shard_map applied to the function 'gather' was given out_specs which require "
            "replication which can't be statically inferred given the mesh:",
            "shard_map applied to the function 'local_sum' was given out_specs which "
            "require replication which can't be statically inferred given the mesh:",
            True,
        ),
        (
            "in_specs passed to shard_map: P('rows', None) does not match the specs of the "
            "input: P(None, None) for arg: float32[16,3].",
            "in_specs passed to shard_map: P('x',) does not match the specs of the input: "
            "P(None,) for arg: float32[8].",
            True,
        ),
        (
            "shard_map applied to the function 'f' was given an out_specs entry which is "
            "too long to be compatible with the corresponding output value from the "
            "function:",
            "shard_map applied to the function 'f' was given an out_specs entry which is "
            "too long to be compatible with the corresponding output value from the "
            "function: ...",
            True,
        ),
        (
            "module 'jax.lax' has no attribute 'pvary'",
            "module 'jax' has no attribute 'tree_map'",
            False,
        ),
        (
            "shard_map applied to the function 'f' was given out_specs which require "
            "replication which can't be statically inferred given the mesh:",
            "shard_map applied to the function 'f' was given an out_specs entry which is "
            "too long to be compatible with the corresponding output value from the "
            "function:",
            False,
        ),
        ("Found an unbound axis name: x.", "unbound axis name: x", False),
    ],
)
def test_one_row_holds_one_message_whatever_its_values(first, second, same):
    assert (errorindex.key("E", first) == errorindex.key("E", second)) is same
    assert errorindex.key("ValueError", first) != errorindex.key("TypeError", first)


def place(page: str, title: str, level: int, text: str, anchor: str):
    heading = errorindex.Heading(3, level, text, anchor)
    return errorindex.Printed(page, title, "b", "ValueError", "m", heading)


def test_a_row_links_each_section_once_relative_to_the_index_page():
    row = errorindex.Row(
        "ValueError",
        "Please set a mesh via `jax.set_mesh` if a PartitionSpec is passed",
        [
            place("basics/a.md", "A", 2, "`x`: first", "first"),
            place("basics/a.md", "A", 2, "`x`: first", "first"),
            place(
                "guides/errors.md", "Error gallery", 1, "Error gallery", "error-gallery"
            ),
        ],
    )
    table = errorindex.tables([row], "guides/error-index.md")
    assert table.splitlines() == [
        "## `ValueError`",
        "",
        "| Message (its first line, as printed) | Shown and fixed in |",
        "|---|---|",
        "| ``Please set a mesh via `jax.set_mesh` if a PartitionSpec is passed`` | "
        "[A \u203a `x`: first](../basics/a.md#first){ .index-link } <br> "
        "[Error gallery](errors.md#error-gallery){ .index-link } |",
    ]


def test_inline_code_holds_any_backticks():
    assert errorindex.code_span("plain") == "`plain`"
    assert errorindex.code_span("`x` at the start") == "`` `x` at the start ``"
    assert errorindex.code_span("a ``b`` c") == "```a ``b`` c```"


@pytest.fixture(scope="module")
def site_rows():
    return errorindex.rows(
        outputs.ensure(outputs.doc_pages()), errorindex.reading_order()
    )


def test_no_row_holds_a_value_that_differs_between_runs(site_rows):
    assert len(site_rows) >= 40  # the pages print many errors; none was lost on the way
    for row in site_rows:
        assert not errorindex.PER_RUN.search(row.text), row.text
        assert not re.search(r"block \d+ \(line \d+", row.text), row.text
        assert len(row.text) <= errorindex.LIMIT + 2, row.text


def test_the_migration_pages_errors_are_rows(site_rows):
    pages = {p.page for row in site_rows for p in row.places}
    assert {"guides/migration.md", "guides/migration-flax.md"} <= pages
    assert "DeprecationWarning" in {row.type for row in site_rows}


def test_reading_order_is_the_navigation():
    order = errorindex.reading_order()
    assert order[0] == "index.md"
    assert order.index("guides/error-index.md") == order.index("guides/errors.md") + 1
