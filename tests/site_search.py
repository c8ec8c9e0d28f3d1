"""What the site's search box finds, worked out from the built index the way the theme does.

Material for MkDocs 9 (its search worker, lunr underneath) splits the text of each index entry,
outside its HTML tags, at every match of the index's `config.separator`, lowercases the pieces
and keeps them as they are: the site's `pipeline` has no stemmer and no trimmer, only the
stop-word filter, which no query here meets. A query is split by the same separator, each
piece matches the pieces that start with it (the theme appends `*` to every query word), and
a page is found when any of its entries matches any piece: the words are alternatives, not
all required. The browser test (tests/browser/test_site.py) holds this model to the real
search box.
"""

from __future__ import annotations

import re
from collections import defaultdict

TAG = re.compile(r"<[^>]*>")


def _words(html: str, separator: re.Pattern) -> set[str]:
    return {
        word.lower()
        for text in TAG.split(html)
        for word in separator.split(text)
        if word
    }


def pages_found(index: dict, query: str) -> set[str]:
    """The pages (as `section/page/`) whose entries match a query typed into search."""
    separator = re.compile(index["config"]["separator"])
    terms = [t.lower() for t in separator.split(query) if t]
    words: dict[str, set[str]] = defaultdict(set)
    for entry in index["docs"]:
        page = entry["location"].split("#")[0]
        words[page] |= _words(entry["title"], separator)
        words[page] |= _words(entry["text"], separator)
    return {
        page
        for page, found in words.items()
        if any(word.startswith(term) for word in found for term in terms)
    }


def pages_using(index: dict, identifier: str) -> set[str]:
    """The pages whose indexed text shows `identifier` where a name can start: not after a
    letter, digit or underscore (`jax.reshard(`, `resharding`, but not `can_reshard`),
    whatever the separator does."""
    starts = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(identifier)}", re.IGNORECASE)
    return {
        entry["location"].split("#")[0]
        for entry in index["docs"]
        if starts.search(TAG.sub(" ", entry["title"] + " " + entry["text"]))
    }
