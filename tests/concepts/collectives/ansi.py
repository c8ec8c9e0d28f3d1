"""Read the colours back out of a table that show_per_device printed in truecolour."""

import re

from snippets.concepts.collectives.diagram import CARD

INK = CARD.split()[0]  # the card's own text colour: a number no device owns


def cells(out: str) -> list[list[list[tuple[str, str | None]]]]:
    """Per device row, per column: the (word, colour) pairs printed in that cell.

    A word in the card's ink, or with no colour at all, is uncoloured (None).
    """
    rows = []
    for line in out.splitlines():
        if "cpu:" not in line:
            continue
        row, colour = [], None
        for token in re.split(r"(\x1b\[[\d;]*m)", line):
            if token.startswith("\x1b"):
                rgb = re.search(r"38;2;(\d+);(\d+);(\d+)", token)
                colour = (
                    "#{:02x}{:02x}{:02x}".format(*map(int, rgb.groups()))
                    if rgb
                    else None
                )
                colour = None if colour == INK else colour
                continue
            for part in re.split("(│)", token):
                if part == "│":
                    row.append([])
                elif row:
                    row[-1] += [(word, colour) for word in part.split()]
        rows.append(row[:-1])  # the last border opens no cell
    return rows
