"""Query texts for fuzzing the CEQL parser and compiler: generated from the grammar, and mutated.

:class:`GrammarGenerator` walks kleene's own grammar (``grammar.lark``, loaded
with lark, so a rule added there is fuzzed without touching this file): from
``start`` it picks an expansion of each rule at random, and once the depth
budget is spent the expansion that ends soonest, so every text is finite.
Terminals come from small vocabularies (a few event types, variables and
attributes, so that a good share of the texts are valid queries that reach the
compiler, not only the parser), keywords in random case.

:func:`mutate` damages a text as a careless user or an attacker would: token
deletions, duplications, swaps and insertions, random bytes and unicode,
numbers of many digits, deep nesting, truncation.

Everything is driven by a :class:`random.Random`, so a seed replays a run.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

import lark
from lark.grammar import NonTerminal, Rule, Terminal

GRAMMAR = Path(__file__).resolve().parents[2] / "src" / "kleene" / "language" / "grammar.lark"
CORPUS = Path(__file__).resolve().parents[1] / "data" / "core_benchmark_queries.ceql"

TYPES = ("SELL", "BUY", "A", "B", "C", "_")
VARIABLES = ("a", "b", "c", "x")
ATTRIBUTES = ("price", "name", "volume", "t", "type")
STREAMS = ("S", "T")
FUNCTIONS = ("prev",)
NAMES = TYPES + VARIABLES + ATTRIBUTES + STREAMS + FUNCTIONS

# Valid queries the mutations start from, besides the generated ones that compile.
SEEDS = (
    "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 10 EVENTS",
    "SELECT * WHERE (SELL as a ; BUY+ as b ; SELL as c) FILTER a[price < c.price] WITHIN 5 seconds",
    "SELECT MAX a, b[price] FROM S WHERE A as a : B as b FILTER a[name LIKE 'x%'] PARTITION BY [name]",
    "SELECT NEXT * WHERE (A OR B)+ AND C WITHIN 10 EVENTS CONSUME BY ANY LIMIT 3",
    "SELECT * WHERE A as a ; B{2,3} as b FILTER b[price > prev(b).price] WITHIN 3 [t]",
    "SELECT STRICT * WHERE A ; NOT(B) ; C UNLESS B FILTER A[volume IN {1, 2, 3}]",
    "QUERY up: SELECT * WHERE _ AS e ; BUY FILTER e[price IN RANGE(1, 2 * 3)]\n"
    "QUERY down: SELECT LAST NONE WHERE A:{2} ALL B ? WITHIN 1 minutes 30 seconds",
    "CREATE STREAM S { EVENT A { price: double }, EVENT B { } }; SELECT * FROM S WHERE S>A ; S>B",
    "SELECT * WHERE A as a ; B as b FILTER a[NOT (price = 1 OR name <> 'it''s')] AND b[-price % 2 = 0]",
)


def corpus() -> list[str]:
    """The seeds plus the CORE paper's queries kept in ``tests/data`` (one per ``-- query:`` block)."""
    blocks = re.split(r"^-- query: .*$", CORPUS.read_text(), flags=re.M)[1:]
    return [*SEEDS, *(b.strip() for b in blocks if b.strip())]


@dataclass(frozen=True)
class _Term:
    name: str
    literal: str | None  # the text of a string terminal ("(", ";"), None for a regex


class GrammarGenerator:
    """Random sentences of the CEQL grammar, depth-bounded."""

    def __init__(self, max_depth: int = 12) -> None:
        parser = lark.Lark(GRAMMAR.read_text(), parser="lalr", lexer="contextual", start="start")
        self.max_depth = max_depth
        self.rules: dict[str, list[list[NonTerminal | Terminal]]] = {}
        for rule in parser.rules:
            assert isinstance(rule, Rule)
            self.rules.setdefault(rule.origin.name, []).append(list(rule.expansion))
        self.terms: dict[str, _Term] = {}
        for t in parser.terminals:
            literal = t.pattern.value if t.pattern.type == "str" else None
            self.terms[t.name] = _Term(t.name, literal)
        self.height = self._heights()

    def _heights(self) -> dict[str, int]:
        """For each rule, the least depth of a finite derivation (a fixpoint)."""
        height: dict[str, int] = {}
        changed = True
        while changed:
            changed = False
            for name, expansions in self.rules.items():
                for exp in expansions:
                    parts = [height.get(s.name) if isinstance(s, NonTerminal) else 0 for s in exp]
                    if any(p is None for p in parts):
                        continue
                    h = 1 + max((p for p in parts if p is not None), default=0)
                    if h < height.get(name, 1 << 30):
                        height[name] = h
                        changed = True
        return height

    def tokens(self, rng: random.Random, start: str = "start") -> list[str]:
        """One sentence, its depth budget drawn up to ``max_depth`` (small ones compile more often)."""
        out: list[str] = []
        self._expand(rng, start, self.max_depth - rng.randint(3, self.max_depth), out)
        return out

    def text(self, rng: random.Random) -> str:
        return join(rng, self.tokens(rng))

    def _expand(self, rng: random.Random, name: str, depth: int, out: list[str]) -> None:
        expansions = self.rules[name]
        if depth >= self.max_depth:
            least = min(self._exp_height(e) for e in expansions)
            expansions = [e for e in expansions if self._exp_height(e) == least]
        exp = rng.choice(expansions)
        for sym in exp:
            if isinstance(sym, NonTerminal):
                self._expand(rng, sym.name, depth + 1, out)
            else:
                out.append(self.terminal(rng, sym.name))

    def _exp_height(self, exp: list[NonTerminal | Terminal]) -> int:
        return max((self.height[s.name] for s in exp if isinstance(s, NonTerminal)), default=0)

    def terminal(self, rng: random.Random, name: str) -> str:
        """A text for terminal ``name``: the literal, a keyword in random case, or a sample."""
        term = self.terms[name]
        if term.literal is not None:
            return term.literal
        if name == "NAME":
            return rng.choice(NAMES)
        if name == "QUOTED_NAME":
            return "`" + rng.choice((*NAMES, "a b", "x``y", "ünï")) + "`" if rng.random() < 0.3 else rng.choice(NAMES)
        if name == "NUMBER":
            return rng.choice(("0", "1", "2", "3", "10", "100", "2.5", ".5", "1e3", "7", "1", "2", "5"))
        if name == "STRING_SQ":
            return rng.choice(("'x'", "'MSFT'", "'it''s'", "'%a_'", "''"))
        if name == "STRING_DQ":
            return rng.choice(('"x"', '"y"', '""'))
        if name == "TIME_UNIT":
            return rng.choice(("seconds", "minute", "HOURS", "milliseconds", "days"))
        if name in ("LINE_COMMENT", "BLOCK_COMMENT", "WS"):
            return " "
        word = name.lstrip("_").lower()
        return "".join(c.upper() if rng.random() < 0.3 else c for c in word)


def join(rng: random.Random, tokens: list[str]) -> str:
    """Tokens separated by white space, now and then a newline or a comment."""
    parts: list[str] = []
    for tok in tokens:
        parts.append(tok)
        r = rng.random()
        parts.append("\n" if r < 0.05 else " /* c */ " if r < 0.07 else " -- c\n" if r < 0.08 else " ")
    return "".join(parts).strip()


# ----------------------------------------------------------------- mutations
_TOKEN = re.compile(r"`(?:[^`]|``)*`|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\w+|:\{|:\+|<=|>=|<>|!=|==|\S")
EXTRA_TOKENS = (
    "(", ")", "[", "]", "{", "}", ";", ":", ",", ".", "+", "*", "?", ">", "<", "=", "-", "%", "/",
    "SELECT", "WHERE", "FROM", "FILTER", "AS", "OR", "AND", "ALL", "UNLESS", "NOT", "WITHIN",
    "EVENTS", "PARTITION", "BY", "CONSUME", "LIMIT", "LIKE", "IN", "RANGE", "TRUE", "FALSE",
    "NONE", "ANY", "NEXT", "LAST", "MAX", "STRICT", "QUERY", "CREATE", "STREAM", "EVENT",
    "seconds", "prev", "_", "a", "b", "A", "B", "price", "0", "-1", "1.5e300", "'s'",
    "/*", "*/", "--", "`", "'", '"', "\\", "\x00", "é", "\u200b", "\U0001f600", "\ud800",
)


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text)


def huge_number(rng: random.Random) -> str:
    """Numbers that test the limits: many digits, huge exponents, near the int64 edges."""
    return rng.choice((
        str(2**63), str(2**63 - 1), str(2**64), "9" * rng.randint(19, 40), "1" * rng.randint(40, 4000),
        "1e308", "1e309", "1e-400", "0." + "0" * 500 + "1", "1" + "0" * 300 + ".5", "00000000000001",
    ))


def mutate(rng: random.Random, text: str, rounds: int | None = None) -> str:
    """``text`` with 1-4 random damages (tokens, characters, numbers, nesting); half the time
    one change that keeps the syntax (a token for another of its class), which reaches the
    compiler and the engine rather than the parser."""
    if rounds is None and rng.random() < 0.5:
        return _same_class(rng, text)
    for _ in range(rounds or rng.randint(1, 4)):
        text = rng.choice(_MUTATORS)(rng, text)
    return text


CLASSES = (
    ("ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT"),
    (";", ":", "OR", "AND", "ALL", "UNLESS"),
    ("+", ":+", "*", "?", "{2}", "{1,3}", "{,2}", "{2,}", ":{2}"),
    ("<", "<=", ">", ">=", "=", "==", "!=", "<>"),
    ("+", "-", "*", "/", "%"),
    ("EVENTS", "seconds", "minutes", "hours", "days", "milliseconds", "[t]", "[price]"),
    ("ANY", "PARTITION", "NONE"),
    (*TYPES, *VARIABLES, *ATTRIBUTES, *STREAMS),
    ("0", "1", "2", "-1", "3.5", "1e3", "100", "0.0001"),
)
"""Tokens that can stand for each other (a strategy, a pattern operator, a comparison, ...)."""


def _same_class(rng: random.Random, text: str) -> str:
    toks = tokenize(text)
    spots = [(i, c) for i, t in enumerate(toks) for c in CLASSES if t.upper() in c or t in c]
    for _ in range(rng.randint(1, 2)):
        if spots:
            i, cls = rng.choice(spots)
            toks[i] = rng.choice(cls)
    return " ".join(toks)


def _delete_token(rng: random.Random, text: str) -> str:
    toks = tokenize(text)
    if toks:
        del toks[rng.randrange(len(toks))]
    return " ".join(toks)


def _duplicate_token(rng: random.Random, text: str) -> str:
    toks = tokenize(text)
    if toks:
        i = rng.randrange(len(toks))
        toks.insert(i, toks[i])
    return " ".join(toks)


def _swap_tokens(rng: random.Random, text: str) -> str:
    toks = tokenize(text)
    if len(toks) > 1:
        i, j = rng.randrange(len(toks)), rng.randrange(len(toks))
        toks[i], toks[j] = toks[j], toks[i]
    return " ".join(toks)


def _insert_token(rng: random.Random, text: str) -> str:
    toks = tokenize(text)
    toks.insert(rng.randint(0, len(toks)), rng.choice(EXTRA_TOKENS))
    return " ".join(toks)


def _replace_number(rng: random.Random, text: str) -> str:
    numbers = list(re.finditer(r"\d+(?:\.\d*)?", text))
    if not numbers:
        return text + " WITHIN " + huge_number(rng) + " EVENTS"
    m = rng.choice(numbers)
    return text[: m.start()] + huge_number(rng) + text[m.end():]


def _nest(rng: random.Random, text: str) -> str:
    """Wrap a pattern or predicate in many parentheses, or chain many terms."""
    depth = rng.choice((20, 60, 150, 300, 1000))
    kind = rng.random()
    if kind < 0.4:
        return re.sub(r"\bWHERE\b", "WHERE " + "(" * depth, text, count=1, flags=re.I) + ")" * depth
    if kind < 0.7:
        m = re.search(r"\[", text)
        if m:
            return text[: m.end()] + "(" * depth + "price > 1" + ")" * depth + " AND " + text[m.end():]
        return text
    chain = rng.choice((" ; ", " OR ", " AND ", " : "))
    return re.sub(r"\bWHERE\b", "WHERE " + chain.join(["A"] * depth) + chain, text, count=1, flags=re.I)


def _random_chars(rng: random.Random, text: str) -> str:
    i = rng.randint(0, len(text))
    alphabet = rng.choice((
        "()[]{};:,.+*?<>=-%/'\"`_ \n\t",
        "\x00\x01\x7f\u00a0\u200b\u2028\ufeff\ufffd\ud800\udfff",
        "éßж中😀\U0010ffff",
    ))
    chars = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
    return text[:i] + chars + text[i:]


def _random_bytes(rng: random.Random, text: str) -> str:
    """Bytes decoded as a careless reader would: latin-1, or UTF-8 with surrogate escapes."""
    raw = bytearray(text.encode("utf-8", "surrogatepass"))
    for _ in range(rng.randint(1, 8)):
        raw.insert(rng.randint(0, len(raw)), rng.randrange(256))
    codec = rng.choice(("latin-1", "surrogateescape"))
    return raw.decode("latin-1") if codec == "latin-1" else raw.decode("utf-8", "surrogateescape")


def _truncate(rng: random.Random, text: str) -> str:
    return text[: rng.randint(0, len(text))]


def _splice(rng: random.Random, text: str) -> str:
    other = rng.choice(SEEDS)
    i, j = rng.randint(0, len(text)), rng.randint(0, len(other))
    return text[:i] + other[j:]


_MUTATORS = (
    _delete_token, _duplicate_token, _swap_tokens, _insert_token, _insert_token, _replace_number,
    _nest, _random_chars, _random_bytes, _truncate, _splice,
)
