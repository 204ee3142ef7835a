"""String built-ins: ``strcat``, ``join``, ``toUpper``/``toLower``, ``substr``, ``strcmp``/``stricmp``,
version comparisons, and the string-list family of HTCondor's compatibility layer (``stringList*``,
``split*``, environment and argument conversions).  Regular expressions live in ``_fn_regex``.

Strings are compared as C does, byte by byte in UTF-8 (``stricmp`` folds ASCII only).  Where a
built-in takes "a string", other values are converted as ``string()`` converts them, so
``strcat(1.5)`` is ``"1.500000000000000E+00"``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, AnyStr

from ._builtins import Library
from ._coerce import strtod, to_string
from ._ops import ascii_lower
from ._values import ERROR, UNDEFINED, text_of_bytes, utf8, wrap32

Value = Any
LIBRARY = Library()
strict = LIBRARY.strict


MAX_STRING = 1 << 24  # characters; longer results of strcat/join/replace* are ERROR


def _join_strings(sep: Value, items: list[Value], is_join: bool) -> Value:
    parts: list[str] = []
    undefined = False
    for item in [sep, *items] if is_join else items:
        if is_join and item is UNDEFINED:
            undefined = True
            if not parts:
                parts.append("")  # an undefined separator is no separator
            continue  # join skips undefined items...
        text = item if type(item) is str else to_string(item)
        if text is UNDEFINED:
            return UNDEFINED
        if type(text) is not str:
            return ERROR
        parts.append(text)
    if sum(map(len, parts)) * (2 if is_join else 1) > MAX_STRING:
        return ERROR  # a bound on size: doubling strcat(a, a) chains must not eat the memory
    if is_join:
        # (undefined items were skipped; when all are, the join is UNDEFINED)
        return UNDEFINED if undefined and len(parts) < 2 else _joined(parts[0], parts[1:])
    return "".join(parts)


def _joined(sep: str, items: list[str]) -> str:
    """HTCondor's join puts the separator before an item only once the text so far is not empty:
    ``join(",", {"", "a"})`` is ``"a"``, ``join(",", {"a", "", "b"})`` is ``"a,,b"``."""
    first = next((index for index, item in enumerate(items) if item), len(items))
    return sep.join(items[first:])


@strict("strcat")
def strcat(args: list[Value]) -> Value:
    return _join_strings(None, args, False)


@strict("join")
def join(args: list[Value]) -> Value:
    if not args:
        return ""
    if args[0] is ERROR:
        return ERROR
    if len(args) <= 2 and args[-1] is UNDEFINED:
        return UNDEFINED
    if len(args) <= 2 and isinstance(args[-1], list):
        sep = args[0] if len(args) == 2 else ""
        return _join_strings(sep, args[-1], True)
    return _join_strings(args[0], args[1:], True)


def _ascii_upper(text: str) -> str:
    return text.upper() if text.isascii() else "".join(c.upper() if c.isascii() else c for c in text)


def _change_case(convert: Callable[[str], str]) -> Callable[[list[Value]], Value]:
    def change_case(args: list[Value]) -> Value:
        if len(args) != 1:
            return ERROR
        text = to_string(args[0])
        return convert(text) if type(text) is str else text
    return change_case


strict("toUpper")(_change_case(_ascii_upper))
strict("toLower")(_change_case(ascii_lower))


@strict("substr")
def substr(args: list[Value]) -> Value:
    if len(args) not in (2, 3):
        return ERROR
    if any(arg is UNDEFINED for arg in args):
        return UNDEFINED
    text, offset = args[0], args[1]
    length = args[2] if len(args) == 3 else 0
    if type(text) is not str or type(offset) is not int or type(length) is not int:
        return ERROR
    offset, length = wrap32(offset), wrap32(length)  # HTCondor takes them as C ints
    if len(args) == 3 and length == 0:
        return ""
    if text.isascii():
        return _cut(text, offset, length)
    return text_of_bytes(_cut(utf8(text), offset, length))  # HTCondor cuts the UTF-8 bytes


def _cut(text: AnyStr, offset: int, length: int) -> AnyStr:
    """``text[offset:]`` for ``length`` (from the end where ``offset`` < 0; up to ``-length`` from
    the end where ``length`` <= 0)."""
    size = len(text)
    if offset < 0:
        offset = max(size + offset, 0)
    elif offset >= size:
        offset = size
    if length <= 0:
        length = max(size - offset + length, 0)
    elif length > size - offset:
        length = size - offset
    return text[offset:offset + length]


def _c_order(a: bytes, b: bytes) -> int:
    return -1 if a < b else 1 if a > b else 0


def _string_pair(args: list[Value]) -> Value:
    if len(args) != 2:
        return ERROR
    if args[0] is UNDEFINED or args[1] is UNDEFINED:
        return UNDEFINED
    left, right = to_string(args[0]), to_string(args[1])
    if type(left) is not str or type(right) is not str:
        return ERROR
    return left, right


@strict("strcmp")
def strcmp(args: list[Value]) -> Value:
    pair = _string_pair(args)
    return pair if type(pair) is not tuple else _c_order(pair[0].encode(), pair[1].encode())


@strict("stricmp")
def stricmp(args: list[Value]) -> Value:
    pair = _string_pair(args)
    if type(pair) is not tuple:
        return pair
    return _c_order(ascii_lower(pair[0]).encode(), ascii_lower(pair[1]).encode())


def _digit(byte: int) -> bool:
    """C's isdigit of a byte (``chr(byte).isdigit()`` would take a UTF-8 byte such as 0xB2, "²")."""
    return 0x30 <= byte <= 0x39


def _char(byte: int) -> int:
    """A byte as a C ``char`` (signed on the platforms HTCondor runs on): what versioncmp subtracts."""
    return byte - 256 if byte > 127 else byte


def natural_cmp(s1: bytes, s2: bytes) -> int:
    """HTCondor's version order (strverscmp-like): digit runs compare as numbers."""
    s1, s2 = s1 + b"\0", s2 + b"\0"
    i = 0
    while s1[i] and s1[i] == s2[i]:
        i += 1
    if s1[i] == s2[i]:
        return 0
    n = i
    while n > 0 and _digit(s1[n - 1]):
        n -= 1
    digit1, digit2 = _digit(s1[i]), _digit(s2[i])
    if n == i and (not digit1 or not digit2):
        return _char(s1[i]) - _char(s2[i])
    z1 = n
    while s1[z1] == 0x30:
        z1 += 1
    z2 = n
    while s2[z2] == 0x30:
        z2 += 1
    if z1 > n and not _digit(s1[z1]):
        z1 -= 1
    if z2 > n and not _digit(s2[z2]):
        z2 -= 1
    if z1 - n != z2 - n:
        return (z2 - n) - (z1 - n)
    if z1 > n:
        return _char(s1[i]) - _char(s2[i])
    e1 = z1
    while _digit(s1[e1]):
        e1 += 1
    e2 = z2
    while _digit(s2[e2]):
        e2 += 1
    if e1 - n != e2 - n:
        return (e1 - n) - (e2 - n)
    return _char(s1[i]) - _char(s2[i])


_VERSION_TESTS: dict[str, Callable[[int], Value]] = {
    "versioncmp": lambda r: r, "versionLE": lambda r: r <= 0, "versionLT": lambda r: r < 0,
    "versionGE": lambda r: r >= 0, "versionGT": lambda r: r > 0, "versionEQ": lambda r: r == 0,
}


def _version(test: Callable[[int], Value]) -> Callable[[list[Value]], Value]:
    def version(args: list[Value]) -> Value:
        pair = _string_pair(args)
        return pair if type(pair) is not tuple else test(natural_cmp(pair[0].encode(), pair[1].encode()))
    return version


for _name, _test in _VERSION_TESTS.items():
    strict(_name)(_version(_test))


@strict("version_in_range")
def version_in_range(args: list[Value]) -> Value:
    if len(args) != 3:
        return ERROR
    if args[1] is UNDEFINED or args[2] is UNDEFINED:
        return UNDEFINED
    texts = [to_string(arg) for arg in args]
    if any(type(text) is not str for text in texts):
        return ERROR
    test, low, high = (text.encode() for text in texts)
    return natural_cmp(low, test) <= 0 and natural_cmp(test, high) <= 0


# -- string lists ---------------------------------------------------------------------------------

def split_list(text: str, delims: str | None = None, trim: bool = True, blanks: bool = False) -> list[str]:
    """Items of a string list: split on any delimiter character (default space and comma; an empty
    delimiter string splits nothing), items trimmed of blanks unless ``trim`` is false (``split()``
    keeps them), empty items dropped)."""
    delims = " ," if delims is None else delims
    if blanks and " " in delims:
        delims += "\t\n\r"  # the membership tests split on any blank where a space is a delimiter
    items: list[str] = []
    current: list[str] = []
    for char in text:
        if char in delims:
            if current:
                items.append("".join(current))
            current = []
        else:
            current.append(char)
    if current:
        items.append("".join(current))
    if trim:
        items = [item.strip(" \t\r\n") for item in items]
    return [item for item in items if item]


def _list_args(args: list[Value], lo: int, hi: int, strings: int) -> Value:
    """Check arity, UNDEFINED/ERROR, and that the first ``strings`` arguments (and a delimiter) are
    strings; returns the argument list or the value to answer with."""
    if not lo <= len(args) <= hi:
        return ERROR
    for arg in args:
        if arg is ERROR or arg is UNDEFINED:
            return ERROR
    for arg in args[:strings]:
        if type(arg) is not str:
            return ERROR
    return args


def _delims(args: list[Value], index: int) -> Value:
    if len(args) > index:
        return args[index] if type(args[index]) is str else ERROR
    return None


@strict("stringListSize")
def string_list_size(args: list[Value]) -> Value:
    checked = _list_args(args, 1, 2, 1)
    if not isinstance(checked, list):
        return checked
    delims = _delims(args, 1)
    return ERROR if delims is ERROR else len(split_list(args[0], delims))


_INTEGER = re.compile(r"\s*[+-]?\d+\s*\Z", re.ASCII)


def _list_numbers(args: list[Value]) -> Value:
    checked = _list_args(args, 1, 2, 1)
    if not isinstance(checked, list):
        return checked
    delims = _delims(args, 1)
    if delims is ERROR:
        return ERROR
    numbers: list[int | float] = []
    for item in split_list(args[0], delims):
        number = strtod(item)
        if number is None:
            return ERROR
        numbers.append(_list_int(item, number) if _INTEGER.match(item) else number)
    return numbers


def _list_int(item: str, number: float) -> int:
    """An integer item, exact within 64 bits; beyond, the double's value (HTCondor works in doubles
    there), read without converting the digits (Python refuses more than 4,300, in quadratic time).
    The results go through ``_in_range``."""
    if len(item.strip().lstrip("+-")) <= 19:
        return int(item)
    return int(number) if math.isfinite(number) else -(1 << 63)


def _in_range(total: int) -> int:
    """An integer result as HTCondor's double-to-long-long cast leaves it: out of range is INT64_MIN."""
    return total if -(1 << 63) <= total < (1 << 63) else -(1 << 63)


@strict("stringListSum")
def string_list_sum(args: list[Value]) -> Value:
    numbers = _list_numbers(args)
    if not isinstance(numbers, list):
        return numbers
    total = sum(numbers)
    return float(total) if not numbers or any(type(n) is float for n in numbers) else _in_range(int(total))


@strict("stringListAvg")
def string_list_avg(args: list[Value]) -> Value:
    numbers = _list_numbers(args)
    if not isinstance(numbers, list):
        return numbers
    if not numbers:
        return 0.0
    if any(type(n) is float for n in numbers):
        return sum(numbers) / len(numbers)
    return _in_range(int(sum(numbers) / len(numbers)))


_FLT_MIN = 1.1754943508222875e-38
_FLT_MAX = 3.4028234663852886e38


def _string_list_bound(pick: Callable[[list[Any]], Any], start_int: int, start_real: float) -> Any:
    """HTCondor starts its running bound at 0 (integers) or FLT_MIN (reals) for the maximum -- so a
    maximum below that is not found -- and at the type's largest value for the minimum."""
    def bound(args: list[Value]) -> Value:
        numbers = _list_numbers(args)
        if not isinstance(numbers, list):
            return numbers
        if not numbers:
            return UNDEFINED
        if any(type(n) is float for n in numbers):
            return float(pick([start_real, *numbers]))
        return _in_range(pick([start_int, *numbers]))
    return bound


strict("stringListMin")(_string_list_bound(min, (1 << 63) - 1, _FLT_MAX))
strict("stringListMax")(_string_list_bound(max, 0, _FLT_MIN))


def _lists_or_empty(args: list[Value], lists: int) -> Value:
    """The compatibility layer's reading of (item, list) arguments: UNDEFINED reads as an empty
    string unless every one of them is UNDEFINED (then the answer is UNDEFINED); an UNDEFINED
    delimiter means the default."""
    head = args[:lists]
    if any(arg is ERROR for arg in args):
        return ERROR
    delims = args[lists] if len(args) > lists else None
    if delims is UNDEFINED:
        delims = None
    if delims is not None and type(delims) is not str:
        return ERROR
    if all(arg is UNDEFINED for arg in head):
        return UNDEFINED
    values = ["" if arg is UNDEFINED else arg for arg in head]
    return values, delims


def _two_strings(args: list[Value]) -> Value:
    """``(a, b, delims)`` for ``f(a, b [, delims])`` where a and b must be strings, else the value
    the function returns (ERROR, or UNDEFINED as ``_lists_or_empty`` decides)."""
    if not 2 <= len(args) <= 3:
        return ERROR
    read = _lists_or_empty(args, 2)
    if type(read) is not tuple:
        return read
    (first, second), delims = read
    if type(first) is not str or type(second) is not str:
        return ERROR
    return first, second, delims


def _string_list_member(fold: bool) -> Callable[[list[Value]], Value]:
    def member(args: list[Value]) -> Value:
        read = _two_strings(args)
        if type(read) is not tuple:
            return read
        needle, text, delims = read
        items = split_list(text, delims, blanks=True)
        if fold:
            needle = ascii_lower(needle)
            return any(ascii_lower(item) == needle for item in items)
        return needle in items
    return member


strict("stringListMember")(_string_list_member(False))
strict("stringListIMember")(_string_list_member(True))


def _subset(fold: bool) -> Callable[[list[Value]], Value]:
    def subset(args: list[Value]) -> Value:
        read = _two_strings(args)
        if type(read) is not tuple:
            return read
        small, big, delims = read
        if not small:
            return True  # the empty string is a subset of anything
        norm = ascii_lower if fold else (lambda text: text)
        have = {norm(item) for item in split_list(big, delims, blanks=True)}
        wanted = split_list(small, delims, blanks=True)
        # HTCondor answers with the last item's test, starting from false: a list of blank items
        # only (" ", ", ,") is not a subset
        return bool(wanted) and all(norm(item) in have for item in wanted)
    return subset


strict("stringListSubsetMatch")(_subset(False))
strict("stringListISubsetMatch")(_subset(True))


@strict("stringListsIntersect")
def string_lists_intersect(args: list[Value]) -> Value:
    # from the core library: ERROR beats UNDEFINED, UNDEFINED passes through
    if not 2 <= len(args) <= 3:
        return ERROR
    if any(arg is ERROR for arg in args):
        return ERROR
    if any(arg is UNDEFINED for arg in args):
        return UNDEFINED
    if any(type(arg) is not str for arg in args):
        return ERROR
    delims = _delims(args, 2)
    delims = delims or None  # this one (from the core library) treats "" as the default, trims nothing
    have = set(split_list(args[1], delims, trim=False))
    return any(item in have for item in split_list(args[0], delims, trim=False))


@strict("split")
def split(args: list[Value]) -> Value:
    checked = _list_args(args, 1, 2, 1)
    if not isinstance(checked, list):
        return checked
    delims = _delims(args, 1)
    return ERROR if delims is ERROR else _split_arb(args[0], ", \t" if delims is None else delims)


_C_SPACE = " \t\n\v\f\r"


def _split_arb(text: str, seps: str) -> list[Value]:
    """``split`` as HTCondor's ``splitArb_func``: empty items are dropped, except between two of the
    same non-blank separator (``"a,,b"`` has three items, ``"a, ,c"`` too, ``"a, b"`` two); with no
    separators the whole text is one item."""
    items: list[Value] = []
    last, previous = 0, ""
    for ix, char in enumerate(text):
        if not seps or char not in seps:
            continue
        if ix > last:
            items.append(text[last:ix])
        elif char == previous:
            items.append("")
        if char not in _C_SPACE:
            previous = char
        last = ix + 1
    if len(text) > last:
        items.append(text[last:])
    return items


def _split_at(args: list[Value], slot: bool) -> Value:
    checked = _list_args(args, 1, 1, 1)
    if not isinstance(checked, list):
        return checked
    text = args[0]
    if "@" not in text:
        return ["", text] if slot else [text, ""]
    head, _, tail = text.partition("@")
    return [head, tail]


strict("splitUserName")(lambda args: _split_at(args, False))
strict("splitSlotName")(lambda args: _split_at(args, True))


@strict("userHome")
def user_home(args: list[Value]) -> Value:
    """Home directory of a user; the default (2nd argument) answers for a user that is not a string
    or not known, but only if it is a non-empty string."""
    if not 1 <= len(args) <= 2:
        return ERROR
    user = args[0]
    if len(args) == 1:
        if type(user) is not str:
            return UNDEFINED if user is UNDEFINED else ERROR
        return _home(user)
    default = args[1] if type(args[1]) is str and args[1] else UNDEFINED
    if type(user) is not str:
        if default is UNDEFINED and user is not UNDEFINED:
            return ERROR
        return default
    home = _home(user)
    return default if home is UNDEFINED else home


def _home(user: str) -> Value:
    try:
        import pwd
        return pwd.getpwnam(user).pw_dir
    except (KeyError, ImportError, ValueError):
        return UNDEFINED


@strict("userMap")
def user_map(args: list[Value]) -> Value:
    """``userMap(map, user [, preferred [, default]])``.  No map files are configured in sheaf, so every
    lookup misses: the default if given, else undefined -- but an error map or user name is an error,
    as in HTCondor's function (another value that is no string misses like an unknown user)."""
    if not 2 <= len(args) <= 4:
        return ERROR
    if args[0] is ERROR or args[1] is ERROR:
        return ERROR
    return args[3] if len(args) == 4 else UNDEFINED


