"""Numbers a page prints, compared the way they hold on every CPU.

XLA's CPU code depends on the instruction set (AVX-512, AVX2, SSE4.2, ARM's): the same jitted
program can differ in the last bits of float32 from one machine to the next, and a few training
steps carry that into the fifth or sixth significant digit. So the site's rule is:

- a page prints a float with at most `SIGNIFICANT` significant digits, and prints agreement
  as the bound its code checks ("within 1e-05 ...: True"), never as a measured difference;
- the golden snapshots compare text exactly, integers exactly, and floats within `RELATIVE`
  of each other, or one unit of their last printed digit (a rounding that tipped the other way).

A number below `NOISE`, or any in scientific notation, that is not a power of ten (a bound such
as 1e-05) is a measured difference at float32's noise floor, whose every digit changes from CPU
to CPU (0.0e+00 on one, 2.4e-07 on another): also refused.
"""

from __future__ import annotations

import math
import re

# A relative 1e-3 covers what the ISA changes (about 1e-5 relative after a few bfloat16 steps,
# 1e-7 in float32); four significant digits are what it leaves stable.
RELATIVE = 1e-3
SIGNIFICANT = 4
NOISE = 1e-4

# A number standing alone: not part of a name (`v5e`, `x86_64`), nor of a version (0.12.0.1).
NUMBER = re.compile(
    r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w]|\.\d)"
)


def is_float(token: str) -> bool:
    return "." in token or "e" in token.lower()


def significant_digits(token: str) -> int:
    """How many significant digits a printed number carries: 0.00365 has 3, 1.50 has 3."""
    mantissa = re.split(r"[eE]", token.lstrip("+-"))[0].replace(".", "")
    return len(mantissa.lstrip("0")) or 1


def last_digit_unit(token: str) -> float:
    """The value of one unit in the last printed digit: 0.001 for 3.890, 1e-09 for 3.0e-08."""
    mantissa, _, exponent = token.lower().lstrip("+-").partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def numbers_match(a: str, b: str) -> bool:
    """Two printed numbers that count as the same output: integers exactly, floats within
    RELATIVE of the larger, or one unit of the coarser last digit apart."""
    if not (is_float(a) and is_float(b)):
        return a == b
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    gap = abs(x - y)
    unit = max(last_digit_unit(a), last_digit_unit(b))
    # The small slack absorbs the binary representation of the decimal unit.
    return gap <= RELATIVE * max(abs(x), abs(y)) or gap <= unit * (1 + 1e-9)


def split(text: str) -> tuple[list[str], list[str]]:
    """The text between numbers, and the numbers, in order."""
    return NUMBER.split(text), NUMBER.findall(text)


def texts_match(a: str, b: str) -> bool:
    """Whether two outputs are the same but for float noise within the tolerance."""
    if a == b:
        return True
    words_a, numbers_a = split(a)
    words_b, numbers_b = split(b)
    # Column widths may follow a number's length ("0.5" vs "0.50"): the words between the
    # numbers are compared with runs of spaces folded (equal words, as many numbers).
    if [re.sub(r" +", " ", w) for w in words_a] != [
        re.sub(r" +", " ", w) for w in words_b
    ]:
        return False
    return all(numbers_match(x, y) for x, y in zip(numbers_a, numbers_b, strict=True))


def unstable(text: str) -> list[str]:
    """The floats in printed text that another CPU may print otherwise: more significant
    digits than the tolerance keeps, or a difference at the noise floor (printed as such)."""
    found = []
    for token in NUMBER.findall(text):
        if not is_float(token):
            continue
        value = abs(float(token))
        power_of_ten = value > 0 and math.log10(value).is_integer()
        scientific = "e" in token.lower()
        if significant_digits(token) > SIGNIFICANT or (
            (0 < value < NOISE or scientific) and not power_of_ten
        ):
            found.append(token)
    return found
