"""The site's search finds code and errors: an identifier finds every page that shows it, in
prose or in code, and no other; the out-of-memory page is found by the names of its error.

Worked out from the built search index as the theme's search does (tests/site_search.py); the
browser test types one of these queries into the real search box and gets the same count.
"""

import json

import pytest

import docs_build.built_site
from tests.site_search import pages_found, pages_using

# Names a reader copies from code: with the theme's default separator (whitespace and
# hyphens), `jax.reshard(x, ...)` was one word, and "reshard" found 6 of the 12 pages that
# use it. CamelCase names stay whole, so that an error class finds the pages that show it
# rather than every page with "error" (or "jax") in it.
IDENTIFIERS = [
    "reshard",
    "with_sharding_constraint",
    "shard_map",
    "NamedSharding",
    "JaxRuntimeError",
]


@pytest.fixture(scope="module")
def index() -> dict:
    # The strict build of this tree (docs_build/built_site.py), shared with the other tests.
    site = docs_build.built_site.built_site()
    return json.loads((site / "search" / "search_index.json").read_text("utf-8"))


@pytest.mark.parametrize("identifier", IDENTIFIERS)
def test_an_identifier_finds_every_page_that_shows_it_and_no_other(index, identifier):
    using = pages_using(index, identifier)
    assert len(using) >= 2, f"{identifier} is on {sorted(using)} only"
    found = pages_found(index, identifier)
    assert found == using, (
        f"{identifier}: missed {sorted(using - found)}, extra {sorted(found - using)}"
    )


@pytest.mark.parametrize("query", ["OOM", "RESOURCE_EXHAUSTED"])
def test_searching_for_an_out_of_memory_error_finds_its_page(index, query):
    assert "guides/out-of-memory/" in pages_found(index, query)


@pytest.mark.parametrize(
    ("query", "page"),
    [
        ("interleaved", "training/pipeline-training/"),
        ("ragged_all_to_all", "advanced/expert-parallel/"),
        ("num_pipeline_repeats", "training/pipeline-training/"),
    ],
)
def test_a_topic_finds_the_page_that_teaches_it(index, query, page):
    assert page in pages_found(index, query)


def test_the_model_splits_code_where_a_reader_reads_names(index):
    """The separator, as the model applies it, on the code shapes the pages show."""
    tiny = {
        "config": index["config"],
        "docs": [
            {
                "location": "a/",
                "title": "A",
                "text": "<code>jax.reshard(x, P('x'))</code>",
            },
            {"location": "b/", "title": "B", "text": "y = f(x)[0]; z = {'k': `v`}"},
            {"location": "c/", "title": "C", "text": "<code>can_reshard</code> 0.12.0"},
        ],
    }
    assert pages_found(tiny, "reshard") == {"a/"}
    assert pages_found(tiny, "can_reshard") == {"c/"}
    assert pages_found(tiny, "0.12") == {"c/"}  # a version stays one word
    assert pages_found(tiny, "k") == {"b/"}
    assert pages_found(tiny, "v") == {"b/"}
