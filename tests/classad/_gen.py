"""A seeded generator of random ClassAd expressions (and my/target ads) over the whole language.

Hypothesis draws one example at a time, which is too slow for the 100,000-expression differential
run; this generator builds expression *text* straight from the grammar with ``random.Random(seed)``
so a batch is cheap and reproducible.  Every operator, every built-in (with arguments of the kinds it
expects, and sometimes of the wrong kinds or count), literals of every type, attribute references in
all scopes (``MY.``, ``TARGET.``, unqualified, nested ads, self- and mutual references), and the
UNDEFINED/ERROR paths all occur.  ``tests/classad/test_differential.py`` checks the counts.
"""

from __future__ import annotations

import random
import re
from typing import Final

BINARY_OPS: Final = ("||", "&&", "|", "^", "&", "==", "!=", "=?=", "=!=", "is", "isnt", "<", "<=", ">",
                     ">=", "<<", ">>", ">>>", "+", "-", "*", "/", "%")
UNARY_OPS: Final = ("-", "+", "!", "~")
OTHER_OPS: Final = ("?:", "elvis", "select", "subscript", "list", "ad")

# name -> argument kinds (a trailing "?" marks an optional argument).
FUNCTIONS: Final[dict[str, tuple[str, ...]]] = {
    "isUndefined": ("a",), "isError": ("a",), "isString": ("a",), "isInteger": ("a",), "isReal": ("a",),
    "isList": ("a",), "isClassAd": ("a",), "isBoolean": ("a",), "isAbstime": ("a",), "isReltime": ("a",),
    "ifThenElse": ("b", "a", "a"), "int": ("a",), "real": ("a",), "string": ("a",), "bool": ("a",),
    "floor": ("n",), "ceiling": ("n",), "ceil": ("n",), "round": ("n",), "pow": ("n", "n"),
    "quantize": ("n", "q"), "eval": ("e",), "unparse": ("r",), "debug": ("a",), "interval": ("i",),
    "member": ("a", "l"), "identicalMember": ("a", "l"), "size": ("z",), "sum": ("l",), "avg": ("l",),
    "min": ("l",), "max": ("l",), "anyCompare": ("c", "l", "a"), "allCompare": ("c", "l", "a"),
    "evalInEachContext": ("P", "L"), "countMatches": ("P", "L"),
    "strcat": ("s", "s?", "s?"), "join": ("s", "l?"), "toUpper": ("s",), "toLower": ("s",),
    "substr": ("s", "i", "i?"), "strcmp": ("s", "s"), "stricmp": ("s", "s"), "versioncmp": ("v", "v"),
    "versionLT": ("v", "v"), "versionLE": ("v", "v"), "versionGT": ("v", "v"), "versionGE": ("v", "v"),
    "versionEQ": ("v", "v"), "version_in_range": ("v", "v", "v"), "regexp": ("p", "s", "o?"),
    "regexpMember": ("p", "l", "o?"), "regexps": ("p", "s", "s", "o?"), "replace": ("p", "s", "s", "o?"),
    "replaceAll": ("p", "s", "s", "o?"), "stringListsIntersect": ("S", "S", "d?"),
    "stringListSize": ("S", "d?"), "stringListSum": ("N", "d?"), "stringListAvg": ("N", "d?"),
    "stringListMin": ("N", "d?"), "stringListMax": ("N", "d?"), "stringListMember": ("s", "S", "d?"),
    "stringListIMember": ("s", "S", "d?"), "stringList_regexpMember": ("p", "S", "d?", "o?"),
    "stringListSubsetMatch": ("S", "S", "d?"), "stringListISubsetMatch": ("S", "S", "d?"),
    "split": ("S", "d?"), "splitUserName": ("u",), "splitSlotName": ("u",), "envV1ToV2": ("E",),
    "mergeEnvironment": ("E", "E?"), "listToArgs": ("l",), "argsToList": ("A",),
    "absTime": ("T", "i?"), "relTime": ("T",), "getYear": ("t",), "getMonth": ("t",),
    "getDayOfYear": ("t",), "getDayOfMonth": ("t",), "getDayOfWeek": ("t",), "getDays": ("t",),
    "getHours": ("t",), "getMinutes": ("t",), "getSeconds": ("t",), "splitTime": ("t",),
    "formatTime": ("t", "F?"), "timeZoneOffset": (), "userHome": ("U", "s?"), "unresolved": ("r", "p?"),
}
# Built-ins whose value depends on the clock or on chance: tested by properties, not by value.
NONDETERMINISTIC: Final = ("random", "time", "currentTime", "dayTime")

_LIST_MAKERS: Final = re.compile(r"(?i)(split\w*|argsToList|evalInEachContext)\(")
NAMES: Final = ("a", "b", "c", "x", "Memory", "Name", "Rank", "Requirements")
_STRINGS: Final = ('"abc"', '"ABC"', '""', '"a b,c"', '"x\\ny"', '"12"', '"1.5e3"', '"true"', '"FALSE"',
                   '"ab\\"c"', '" 7 "', '"0x1F"', '"inf"', '"a,b"', '"b"', '"\\101\\t"', '"12abc"')
_REALS: Final = ("0.0", "1.5", "2.0", "-0.5", "1e308", "3.25e-3", "100.0", "0.1", ".5", "7.0")
_INTS: Final = ("0", "1", "2", "3", "7", "10", "42", "255", "1024", "9223372036854775807", "65", "64")
_VERSIONS: Final = ('"1.10"', '"1.9"', '"1.2.3"', '"8.9.11"', '"1.010"', '"10"', '"1.0a"', '"1.0b"', '"01"',
                    '"1.002"', '"1.02"', '"2"', '"a1"', '"1.10.0"')
_PATTERNS: Final = ('"a"', '"^a"', '"b$"', '"(a)(b)"', '"[0-9]+"', '"A.*"', '"x*"', '"(a|b)+"', '"["',
                    '"[[:digit:]]"', '"\\\\s"', '"."', '"^$"', '"(c)?b"')
_OPTIONS: Final = ('"i"', '"f"', '"g"', '"fg"', '"ig"', '"s"', '"m"', '"x"', '""', '"if"')
_STRING_LISTS: Final = ('"a,b,c"', '"a b, c"', '"A,B"', '""', '"b"', '"c,d"', '" , a"', '"a;b"', '"x,y,a"',
                        '" "', '","', '" , "', '"a,,b"', '"a, ,c"')  # blank items: stringListSubsetMatch
_NUMBER_LISTS: Final = ('"1,2,3"', '"1.5, 2"', '"-1,4"', '""', '"7"', '"1,x"', '"2e1,3"', '"0x10,1"')
_DELIMS: Final = ('","', '";"', '" "', '""', '",;"')
_TIMES: Final = ('absTime("2020-06-01T12:00:00Z")', 'absTime("2001-02-03T04:05:06+02:00")',
                 'relTime("1+02:03:04")', 'relTime("90")', 'relTime("-1:00")', "absTime(1700000000, 3600)",
                 "relTime(100000.5)", "absTime(86400)", "relTime(-59)", "0", "1700000000", "1.5e9",
                 # fractional relTime and the lenient absTime forms the official library reads
                 'relTime("2+25:14:16.123")', 'relTime("1d2h3m4.5s")', 'relTime("4.5")', 'relTime(".5")',
                 'relTime("-1+00:00:00.25")', 'absTime("2020-06-01T12Z")', 'absTime("2020-06Z")',
                 'absTime("2020Z")', 'absTime("20200601120000Z")', 'absTime("2020-13-01Z")',
                 'absTime("2020-06-01TZ")')
_WELL_FORMED_TIMES: Final = (*_TIMES[:5], *_TIMES[12:])
_TIME_ARGS: Final = ("0", "1700000000", "86400.5", '"x"', 'relTime("10")', "-3600", "1e10")
_FORMATS: Final = ('"%Y-%m-%d"', '"%H:%M:%S"', '"%j %a %b"', '"%c"', '"%y%%"', '""')
_ENVS: Final = ('"A=1;B=2"', '"A=1"', '"X=a b;Y="', '"\\"A=1 B=\'x y\'\\""', '";"', '"bad"', '"C=3;A=4"')
_ARGS: Final = ('"a b"', '"\'a b\' c"', '"x  y"', '""', '"it\'\'s"', '"\'unterminated"')
_USERS: Final = ('"alice@example.org"', '"slot1_2@host"', '"plain"', '"@x"', '"a@b@c"')
# Literals of the ClassAd language reference: adjacent string literals, minus infinity.
_SPECIAL_LITERALS: Final = ('"a" "b"', '"a"  "bc" ""', '"x" "\\"y" "z"', '-real("INF")', 'real("-INF")',
                            'string(-real("INF"))', '-real("inf") * 0', 'string({-real("INF")})')
# Strings for old-syntax ads, where a backslash is an ordinary character.
_OLD_STRINGS: Final = ('"C:\\temp\\new"', '"S\\1"', '"a\\tb"', '"end\\"', '"\\\\x"', '"\\101"')
_COMPARE_OPS: Final = ('"<"', '"<="', '"=="', '"!="', '">"', '">="', '"is"', '"isnt"', '"~"')


class Generator:
    """Random expressions; ``max_depth`` bounds nesting."""

    def __init__(self, seed: int, max_depth: int = 5) -> None:
        self.rng = random.Random(seed)
        self.max_depth = max_depth
        self.functions = sorted(FUNCTIONS)
        self.old_syntax = False  # adjacent string literals are new syntax only

    # -- leaves ------------------------------------------------------------------------------
    def literal(self) -> str:
        r = self.rng
        kind = r.randrange(10)
        if kind < 3:
            return r.choice(_INTS)
        if kind < 5:
            return r.choice(_REALS)
        if kind < 7:
            return r.choice(_STRINGS)
        if kind == 7:
            return r.choice(("true", "false", "TRUE", "False"))
        if kind == 8:
            return r.choice(("undefined", "error", "UNDEFINED"))
        if r.random() < 0.3:
            return r.choice(_SPECIAL_LITERALS[3:] if self.old_syntax else _SPECIAL_LITERALS)
        return r.choice(_TIMES[:9] + _TIMES[12:])

    def name(self) -> str:
        name = self.rng.choice(NAMES)
        return name.upper() if self.rng.random() < 0.15 else name

    def reference(self) -> str:
        r = self.rng.random()
        name = self.name()
        if r < 0.45:
            return name
        if r < 0.65:
            return f"MY.{name}"
        if r < 0.9:
            return f"TARGET.{name}"
        return self.rng.choice((f"nested.{name}", "nested.inner", "nested", "MY", "TARGET", "nested.up"))

    # -- composites ---------------------------------------------------------------------------
    def expr(self, depth: int = 0) -> str:
        r = self.rng
        if depth >= self.max_depth or r.random() < 0.2 + 0.12 * depth:
            return self.literal() if r.random() < 0.6 else self.reference()
        choice = r.randrange(100)
        sub = depth + 1
        if choice < 30:
            return f"{self.expr(sub)} {r.choice(BINARY_OPS)} {self.expr(sub)}"
        if choice < 38:
            return f"{r.choice(UNARY_OPS)}{self.operand(sub)}"
        if choice < 44:
            return f"{self.expr(sub)} ? {self.expr(sub)} : {self.expr(sub)}"
        if choice < 48:
            return f"{self.expr(sub)} ?: {self.expr(sub)}"
        if choice < 54:
            return f"({self.expr(sub)})"
        if choice < 80:
            return self.call(sub)
        if choice < 86:
            return self.list_(sub) + (f"[{self.index(sub)}]" if r.random() < 0.5 else "")
        if choice < 92:
            return self.ad(sub) + r.choice((".a", ".b", '["a"]', '["B"]', ".x", ".nosuch"))
        if r.random() < 0.5:
            return f"{self.selectable(sub)}.{self.name()}"
        return f"{self.operand(sub)}[{self.index(sub)}]"

    def selectable(self, depth: int) -> str:
        """An operand for ``.name``: the official library crashes (segfault) selecting from a list
        that a built-in made, so those built-ins are kept out of selected operands."""
        while True:
            text = self.operand(depth)
            if not _LIST_MAKERS.search(text):
                return text

    def operand(self, depth: int) -> str:
        text = self.expr(depth)
        simple = text[:1].isalpha() and text.replace(".", "").replace("_", "").isalnum()
        return text if simple else f"({text})"

    def index(self, depth: int) -> str:
        return self.rng.choice(("0", "1", "2", "-1", '"a"', "1.0", "true")) if self.rng.random() < 0.7 \
            else self.expr(depth)

    def list_(self, depth: int) -> str:
        return "{" + ", ".join(self.expr(depth) for _ in range(self.rng.randrange(4))) + "}"

    def ad(self, depth: int) -> str:
        names = self.rng.sample(("a", "b", "x", "A"), self.rng.randrange(1, 4))
        body = "; ".join(f"{n} = {self.expr(depth)}" for n in names if n != "A" or "a" not in names)
        return f"[{self._semicolons(body)}]"

    def _semicolons(self, body: str) -> str:
        """Empty statements (``[ ;; a = 3;; ]``) now and then: the official library skips them."""
        r = self.rng.random()
        if r < 0.1:
            return f";; {body.replace('; ', ';; ')};;"
        if r < 0.15:
            return f"; {body} ;"
        return body

    def call(self, depth: int) -> str:
        r = self.rng
        name = r.choice(self.functions)
        kinds = FUNCTIONS[name]
        args = [self.argument(kind.rstrip("?"), depth) for kind in kinds
                if not kind.endswith("?") or r.random() < 0.5]
        if name in ("absTime", "relTime"):
            # a literal string here is read by the parser; keep to a fixed set of forms (the
            # grammar of time texts is compared with the library's in test_time_text.py)
            args = [arg if not arg.startswith('"') else r.choice(_WELL_FORMED_TIMES) for arg in args]
        if r.random() < 0.05 and name not in ("absTime", "formatTime"):  # wrong arity (not "now")
            args = args[:-1] if args and r.random() < 0.5 else [*args, self.expr(depth)]
        spelled = name if r.random() < 0.8 else r.choice((name.lower(), name.upper()))
        return f"{spelled}({', '.join(args)})"

    def argument(self, kind: str, depth: int) -> str:
        r = self.rng
        if r.random() < 0.25 and kind not in ("L", "P"):
            return self.expr(depth)
        table = {
            "s": _STRINGS, "v": _VERSIONS, "p": _PATTERNS, "o": _OPTIONS,
            "S": _STRING_LISTS, "N": _NUMBER_LISTS,
            "d": _DELIMS, "t": _TIMES, "T": _TIME_ARGS, "F": _FORMATS, "E": _ENVS, "A": _ARGS, "u": _USERS,
            "c": _COMPARE_OPS, "U": ('"root"', '"nosuchuser"', "undefined"), "i": (*_INTS[:9], "-1", "-2"),
            "n": _INTS[:8] + _REALS + ('"2.5"', "true"),
        }
        if kind in table:
            return r.choice(table[kind])
        if kind == "l":
            return r.choice(("{1, 2, 3}", '{"a", "b"}', "{}", "{1.5, 2}", "{1, undefined}", '{"x", 1}',
                             "{true}", "{2, 1.0, 7}")) if r.random() < 0.6 else self.list_(depth)
        if kind == "L":
            return r.choice(("{[p = 1], [p = 2; q = p]}", "{[p = true], [q = 3], 4}", "{}", "{[p = q]}"))
        if kind == "P":
            # names only the listed ads define: which scope wins for a name that MY or TARGET also
            # have is murky in the official library (see the report), so it is not compared
            if r.random() < 0.3:  # an attribute reference: its expression is evaluated in each ad
                return r.choice(("nested.inner", "nested.a", "MY.nested.inner", "pe", "MY.pe", "qe"))
            return r.choice(("p", "q", "p + 1", "isUndefined(q)", "p * 2 > 1", "p == 1", "q ?: p"))
        if kind == "q":
            return r.choice(("3", "2.5", "{2, 4, 8}", "0", "{}", "{1.5, 3}", '"x"'))
        if kind == "b":
            return r.choice(("true", "false", "a == 1", "isUndefined(b)", "1", "0.0", "undefined"))
        if kind == "e":
            return r.choice(('"1 + 2"', '"a"', '"x * 2"', '"("', '"strcat(\\"a\\", b)"', "1", '"TARGET.a"'))
        if kind == "r":
            return r.choice(("a", "b", "x", "Memory", "nosuch", "TARGET.a", "nested", "nested.inner", "MY.a"))
        if kind == "z":
            return r.choice(('"abc"', "{1, 2}", "[a = 1; b = 2]", "{}", '""', "1"))
        return self.expr(depth)

    # -- whole cases --------------------------------------------------------------------------
    def _bindings(self, depth: int, old_strings: float = 0.0) -> list[str]:
        """``name = expression`` for a few of NAMES (expressions at most ``depth`` deep); with
        probability ``old_strings`` a value is one of the backslash strings of old syntax."""
        r = self.rng
        saved, self.max_depth = self.max_depth, depth
        try:
            names = r.sample(NAMES, r.randrange(1, len(NAMES)))
            body = [f"{n} = {r.choice(_OLD_STRINGS) if r.random() < old_strings else self.expr(1)}"
                    for n in names]
            body = [text for text in body if not _LIST_MAKERS.search(text)] or ["a = 1"]
            if not old_strings and r.random() < 0.6:
                body.append(f"nested = [inner = {self.expr(2)}; up = parent.{self.name()};"
                            f" a = {self.expr(2)}]")
            return body
        finally:
            self.max_depth = saved

    def scope_ad(self, depth: int = 3) -> str:
        """An ad text for MY or TARGET: a few attributes, possibly (mutually) self-referencing,
        with a nested ad that refers outwards."""
        body = self._bindings(depth)
        if self.rng.random() < 0.3:  # expressions for a reference in evalInEachContext/countMatches
            body.append(self.rng.choice(("pe = p * 2 > 1", "pe = p", "qe = q ?: -1", "pe = p + 1")))
        self.rng.shuffle(body)
        return "[" + self._semicolons("; ".join(body)) + "]"

    def old_ad(self, depth: int = 3) -> str:
        """An ad in old syntax (one ``name = expression`` a line): strings in it keep their
        backslashes as ordinary characters."""
        self.old_syntax = True
        try:
            return "\n".join(self._bindings(depth, old_strings=0.4))
        finally:
            self.old_syntax = False

    def case(self, ads: list[str] | None = None) -> tuple[str, str | None, str | None]:
        """(expression, MY ad or None, TARGET ad or None); ads come from ``ads`` when given."""
        r = self.rng.random()
        pick = (lambda: self.rng.choice(ads)) if ads else self.scope_ad
        my = pick() if r < 0.85 else None
        target = pick() if r < 0.6 else None
        if target is not None and my is None:
            my = "[]"
        return self.expr(), my, target


def batch(seed: int, count: int, max_depth: int = 5,
          pool: int = 300) -> list[tuple[str, str | None, str | None]]:
    """``count`` cases; scope ads are drawn from a pool of ``pool`` generated ads (cheaper to parse)."""
    generator = Generator(seed, max_depth)
    ads = [generator.scope_ad() for _ in range(pool)] + ["[]"]
    ads += [generator.old_ad() for _ in range(pool // 10)]  # old syntax: text not starting with "["
    return [generator.case(ads) for _ in range(count)]
