"""What Java prints and parses where Kafka's metadata shell does: the ``toString()`` of the values its nodes
show (``Double``, ``Optional``, lists and arrays, ``ZonedDateTime`` in ISO form) and the parsing its nodes do
of a path component (``Integer.parseInt``, ``Uuid.fromString``), and Java's string order (UTF-16 code units),
in which the shell sorts every listing."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import math
import re
from collections.abc import Iterable
from decimal import Decimal

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_INT = re.compile(r"[+-]?\d+")  # \d: Unicode decimal digits, as Character.digit(ch, 10) accepts them
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


class JavaException(RuntimeError):
    """An exception Kafka's shell throws at this point (its message is Java's): the non-interactive shell then
    prints ``Unexpected error: <message>`` on stderr and exits with status 1."""


def java_order(name: str) -> bytes:
    """Sort key of Java's ``String.compareTo``: UTF-16 code units (code point order except beyond the BMP)."""
    return name.encode("utf-16-be", "surrogatepass")


def java_sorted(names: Iterable[str]) -> list[str]:
    """``names`` sorted as Kafka's shell sorts them (``names.sort(String::compareTo)``)."""
    return sorted(names, key=java_order)


def java_bool(value: bool) -> str:
    return "true" if value else "false"


def java_list(items: Iterable[object]) -> str:
    """``List.toString()`` / ``Arrays.toString()``: ``[a, b]``."""
    return "[" + ", ".join(str(i) for i in items) + "]"


def java_optional(value: str | None) -> str:
    """``Optional.toString()``: ``Optional[value]`` or ``Optional.empty``."""
    return "Optional.empty" if value is None else f"Optional[{value}]"


def java_double(value: float) -> str:
    """``Double.toString``: the shortest digits that identify the value (as JDK 19+; JDK 17's older algorithm
    gives more digits for rare values), plain from 10^-3 to 10^7, else ``d.dddE±n``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0.0"
    shortest = Decimal(repr(abs(value))).normalize().as_tuple()  # value = digits × 10^exponent
    digits = "".join(map(str, shortest.digits))
    exp10 = len(digits) - 1 + int(shortest.exponent)  # the decimal exponent of the first digit
    if 1e-3 <= abs(value) < 1e7:
        if exp10 < 0:
            return f"{sign}0.{'0' * (-exp10 - 1)}{digits}"
        whole, frac = digits[: exp10 + 1].ljust(exp10 + 1, "0"), digits[exp10 + 1 :]
        return f"{sign}{whole}.{frac or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp10}"


def zoned_utc(ms: int) -> str:
    """``DateTimeFormatter.ISO_ZONED_DATE_TIME`` of an epoch-millisecond instant at zone ``UTC``:
    ``2026-11-22T08:42:48.984Z[UTC]`` (the fraction without trailing zeros, none when zero)."""
    moment = _EPOCH + dt.timedelta(milliseconds=ms)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += "." + f"{moment.microsecond // 1000:03d}".rstrip("0")
    return text + "Z[UTC]"


def parse_int(text: str) -> int | None:
    """``Integer.parseInt(text)``, None where it throws ``NumberFormatException``."""
    if not _INT.fullmatch(text):
        return None
    value = int(text)
    return value if INT_MIN <= value <= INT_MAX else None


def uuid_from_string(text: str) -> str | None:
    """The canonical form (22 url-safe base64 characters) of ``Uuid.fromString(text)``, None where it throws:
    longer than 24 characters, not url-safe base64 (padding optional), or not 16 bytes."""
    if len(text) > 24:
        return None
    body = text.rstrip("=")
    if len(text) - len(body) > 2 or (text != body and len(text) % 4):
        return None
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) != 16:
        return None
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")
