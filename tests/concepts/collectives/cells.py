"""Helpers for the collectives page's tests: the page's data, what each device holds, and
the words and colours read back out of a table that `per_device_table` drew."""

from html.parser import HTMLParser

import numpy as np

from docs_build.render import per_device_table

# Row d: device d's block of the page's `x` (two numbers) and `x8` (eight).
BLOCKS = 10 * np.arange(8.0)[:, None] + np.arange(2)
BLOCKS8 = 10 * np.arange(8.0)[:, None] + np.arange(8)


def rows(array):
    """What each device holds, in device order."""
    shards = sorted(array.addressable_shards, key=lambda s: s.device.id)
    return np.stack([np.asarray(s.data[0]) for s in shards])


class _Rows(HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows: list[list[list[tuple[str, str | None]]]] = []
        self.colours: list[str | None] = []
        self.in_body = False

    def handle_starttag(self, tag, attrs):
        style = dict(attrs).get("style") or ""
        colour = style.removeprefix("color:") if style.startswith("color:") else None
        if tag == "tbody":
            self.in_body = True
        elif self.in_body and tag == "tr":
            self.rows.append([])
        elif self.in_body and tag in ("th", "td"):
            self.rows[-1].append([])
            self.colours = [colour]
        elif tag == "span":
            self.colours.append(colour)

    def handle_endtag(self, tag):
        if tag == "span":
            self.colours.pop()
        elif tag == "tbody":
            self.in_body = False

    def handle_data(self, data):
        if self.in_body and self.rows and self.rows[-1]:
            colour = self.colours[-1] if self.colours else None
            self.rows[-1][-1] += [(word, colour) for word in data.split()]


def cells(before, after, title="a title"):
    """Per device row, per column (device, before, after): its (word, colour) pairs."""
    parser = _Rows()
    parser.feed(per_device_table(before, after, title).html)
    return parser.rows
