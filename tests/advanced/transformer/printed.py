"""Run a snippet step and keep what it printed, for fixtures wider than one test."""

import contextlib
import io


def quietly(function, *args):
    """Call `function`, returning its result and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = function(*args)
    return result, out.getvalue()
