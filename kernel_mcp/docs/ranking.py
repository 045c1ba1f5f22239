"""Ranking that knows the domain: architecture names, counter and instruction names, coverage.

BM25 (SQLite FTS5) finds candidate passages for any of the query's words; they are then ordered
by
- coverage: the share of the query's words a passage holds (BM25 alone lets one rare word
  outweigh the rest of the question);
- exact names: a counter, instruction or metric named in the query (SQ_INSTS_MFMA, TCC_HIT,
  v_mfma_f32_16x16x32_bf16, ALUStalledByLDS) lifts the table row or entry that defines it;
- architecture: a target named by any of its names (CDNA4 = gfx950 = MI350X/MI355X, from the
  hardware tables' aliases, docs_index/hardware/) is a filter-like preference, not a word the
  text must contain: passages about that target go up, passages only about others go down.
No list of archs, counters or questions lives here: names come from the registry and the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kernel_mcp.arch_registry import docs_index_dir, registry, read_table
from kernel_mcp.errors import KernelMcpError

STOPWORDS = frozenset(
    "a about an and any are as at be by can do does for from get has have how i in is it its many me much my of on or our "
    "per should so than that the their there these this those to was we what when where which who why will with you".split()
)
# snake_case / UPPER_SNAKE names (counters, instructions, environment variables) and CamelCase
# metric names (ALUStalledByLDS, VALUUtilization): matched exactly, whatever the case
_SNAKE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b")
# (a hump, lower-to-upper or an acronym before a word: "dB" in StalledBy, "UUti" in VALUUtilization;
# not the plural of an acronym, "XCDs", "VGPRs")
_CAMEL = re.compile(r"\b(?=[A-Za-z0-9]*(?:[a-z][A-Z]|[A-Z]{2}[a-z]{2}))[A-Z][A-Za-z0-9]{3,}\b")
_WORD = re.compile(r"[A-Za-z0-9_]+")


def identifiers(text: str) -> list[str]:
    return _SNAKE.findall(text) + _CAMEL.findall(text)


def compact(name: str) -> str:
    """The form names are matched in: lower case, no underscores (SQ_WAVES -> sqwaves)."""
    return name.replace("_", "").lower()


def stem(word: str) -> str:
    """A light suffix strip for coverage (counters/counter, caches/cache); BM25 uses Porter."""
    word = word.lower()
    for suffix, repl in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("es", "e"), ("s", ""), ("ed", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: len(word) - len(suffix)] + repl
    return word


def arch_names() -> dict[str, tuple[tuple[str, ...], ...]]:
    """Per arch, its names as word tuples: the arch, its aliases, its family and its label."""
    out = {}
    for arch, entry in registry().items():
        names = {arch.lower(), entry.family.lower(), *(a.lower() for a in entry.aliases)}
        if " " not in entry.label.strip():
            names.add(entry.label.lower())
        out[arch] = tuple(tuple(n.split()) for n in sorted(names) if n.strip())
    return out


def _names_word(name: str, word: str) -> bool:
    # "mi355x" names the alias "mi355"; a bare alias of letters must match whole ("hopper")
    return word == name or (len(name) >= 4 and any(c.isdigit() for c in name) and word.startswith(name))


def archs_named(words: list[str]) -> tuple[set[str], set[int]]:
    """The archs the words name, and the positions of the words that named them."""
    found: set[str] = set()
    used: set[int] = set()
    for arch, names in arch_names().items():
        for name in names:
            n = len(name)
            for i in range(len(words) - n + 1):
                if all(_names_word(name[k], words[i + k]) if k == n - 1 else words[i + k] == name[k] for k in range(n)):
                    found.add(arch)
                    used.update(range(i, i + n))
    return found, used


_MENTION: dict[tuple, tuple[re.Pattern, list[str]]] = {}


def archs_mentioned(text: str) -> set[str]:
    """The archs a passage names, in one regex pass (thousands of ISA entries are tagged at ingest)."""
    names = arch_names()
    key = tuple(sorted(names.items()))
    if key not in _MENTION:
        groups, order = [], []
        for arch, tuples in names.items():
            alts = []
            for words in tuples:
                last = re.escape(words[-1]) + ("[a-z0-9]*" if len(words[-1]) >= 4 and any(c.isdigit() for c in words[-1]) else "")
                alts.append(r"\s+".join([re.escape(w) for w in words[:-1]] + [last]))
            groups.append(f"(?P<a{len(order)}>" + "|".join(sorted(alts, key=len, reverse=True)) + ")")
            order.append(arch)
        _MENTION[key] = (re.compile(r"(?<![a-z0-9_])(?:" + "|".join(groups) + r")(?![a-z0-9_])"), order)
    pattern, order = _MENTION[key]
    return {order[int(name[1:])] for m in pattern.finditer(text.lower()) for name, value in m.groupdict().items() if value}


_SYNONYMS: dict[str, dict[str, tuple[str, ...]]] = {}


def synonyms() -> dict[str, tuple[str, ...]]:
    """Word -> the other spellings of its group, from docs_index/synonyms.toml (none without it)."""
    try:
        path = docs_index_dir() / "synonyms.toml"
    except KernelMcpError:
        return {}
    key = str(path)
    if key not in _SYNONYMS:
        table: dict[str, tuple[str, ...]] = {}
        try:
            groups = read_table(path).get("groups", []) if path.is_file() else []
        except KernelMcpError:
            groups = []
        for group in groups if isinstance(groups, list) else []:
            words = [" ".join(str(w).lower().split()) for w in group if isinstance(w, str) and w.strip()] if isinstance(group, list) else []
            for word in words:
                table[word] = tuple(dict.fromkeys(table.get(word, ()) + tuple(w for w in words if w != word)))
        _SYNONYMS[key] = table
    return _SYNONYMS[key]


def _fts_phrase(text: str) -> str:
    return '"' + " ".join(_WORD.findall(text)) + '"'


@dataclass
class Query:
    text: str
    terms: list[str]  # the words a passage should hold (stop words and arch names removed)
    keys: list[str]  # exact names, compacted
    archs: set[str] = field(default_factory=set)  # targets the query names (or filters on)
    arch_words: list[str] = field(default_factory=list)  # the words that named them ("mi300a")
    alternatives: dict[str, tuple[str, ...]] = field(default_factory=dict)  # term -> its synonyms

    def fts(self) -> str:
        """FTS5 MATCH expression: any term (as a prefix: hbm finds HBM3E) or synonym, or a name
        in the keys/defines columns."""
        parts = [f'"{t}"*' if len(t) >= 3 and " " not in t else _fts_phrase(t) for t in self.terms[:24]]
        parts += [_fts_phrase(a) for t in self.terms[:24] for a in self.alternatives.get(t, ()) if _WORD.search(a)]
        parts += [f'keys:"{k}"' for k in self.keys[:8]] + [f'defines:"{k}"' for k in self.keys[:8]]
        return " OR ".join(parts)


def analyse(text: str, arch: str | None) -> Query | None:
    """None when the text has no word to search for."""
    words = [w.lower() for w in _WORD.findall(text)]
    if not words:
        return None
    archs, used = archs_named(words)
    terms = [w for i, w in enumerate(words) if i not in used and w not in STOPWORDS]
    if not terms:  # only arch names or stop words: search for them after all
        terms = [w for w in words if w not in STOPWORDS] or words
    keys = list(dict.fromkeys(compact(k) for k in identifiers(text)))
    table = synonyms()
    # two query words that a synonym group lists as one phrase ("compute units" = "cus") are one term
    joined: list[str] = []
    for term in terms:
        if joined and f"{joined[-1]} {term}" in table and " " not in joined[-1]:
            joined[-1] = f"{joined[-1]} {term}"
        else:
            joined.append(term)
    terms = list(dict.fromkeys(joined))
    alternatives = {t: table[t] for t in terms if t in table}
    return Query(text, terms, keys, archs | ({arch} if arch else set()), [words[i] for i in sorted(used)], alternatives)


def passage_words(*texts: str) -> frozenset[str]:
    """The stemmed words of a passage, a snake_case name also as its parts (SQ_WAVES: sq, waves)."""
    out: set[str] = set()
    for text in texts:
        for word in _WORD.findall(text.lower()):
            out.add(stem(word))
            if "_" in word:
                out.update(stem(part) for part in word.split("_") if part)
    return frozenset(out)


def _holds(word: str, words: frozenset[str], text: str) -> bool:
    if " " in word or "/" in word:  # a phrase: in the running text
        return re.search(r"\b" + r"\W+".join(re.escape(w) for w in _WORD.findall(word)) + r"\b", text) is not None
    s = stem(word)
    return s in words or (len(s) >= 3 and any(w.startswith(s) for w in words))


# How much a query word counts where it is found: in the passage itself (a table row with its
# header, a chunk of prose), in its section's heading, or only in the headings above, which every
# passage of the page shares and which therefore say little about this one.
PLACES = (1.0, 0.75, 0.5)


def coverage(query: Query, places: list[tuple[frozenset[str], str]]) -> float:
    """The weighted share of the query's terms the passage holds (a term, a prefix of a word, a synonym)."""
    if not query.terms:
        return 1.0
    total = 0.0
    for term in query.terms:
        alternatives = (term, *query.alternatives.get(term, ()))
        for weight, (words, text) in zip(PLACES, places):
            if any(_holds(a, words, text) for a in alternatives):
                total += weight
                break
    return total / len(query.terms)


def proximity(query: Query, text: str) -> float:
    """The share of the query's neighbouring term pairs that stand within three words of each
    other in the passage ("wave size" in "Wave size is 64"; "CUs per XCD")."""
    pairs = [(a, b) for a, b in zip(query.terms, query.terms[1:]) if " " not in a + b][:12]
    if not pairs:
        return 0.0
    near = 0
    for a, b in pairs:
        pattern = r"\b" + re.escape(stem(a)) + r"\w*\W+(?:\w+\W+){0,2}?" + re.escape(stem(b))
        if re.search(pattern, text):
            near += 1
    return near / len(pairs)


def arch_factor(query_archs: set[str], mentions: set[str], tags: set[str]) -> float:
    """Passages about an asked-for target rise; those about other targets only sink. A target
    named in passing by a page about another (a CDNA2 page listing what gfx950 added) counts little."""
    if not query_archs:
        return 1.0
    tagged = not tags or "all" in tags or bool(tags & query_archs)
    if mentions & query_archs:
        return 1.3 if tagged else 0.85
    if mentions:
        return 0.8 if tagged else 0.7
    return 1.0 if tagged else 0.85


def score(bm25_share: float, cover: float, near: float, defines: bool, names: bool, factor: float) -> float:
    base = bm25_share * (0.2 + 0.8 * cover * cover) * (1.0 + 0.3 * near)
    if defines:
        base += 0.6  # the row or entry that defines the counter/instruction asked about
    elif names:
        base += 0.15
    return base * factor


def snippet(text: str, query: Query, width: int = 220) -> str:
    """About `width` characters of `text` around the densest cluster of the query's words."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    lowered = flat.lower()
    # a word by its stem; a name also where the text spells it with underscores
    patterns = {t: r"\b" + re.escape(stem(t)) for t in query.terms if len(stem(t)) >= 2}
    patterns.update({k: r"\b" + "_?".join(re.escape(c) for c in k[:64]) for k in query.keys})
    hits: list[tuple[int, str]] = []
    for needle, pattern in patterns.items():
        for match in re.finditer(pattern, lowered):
            hits.append((match.start(), needle))
            if len(hits) > 400:
                break
    if not hits:
        return flat[:width].rsplit(" ", 1)[0] + " ..."
    hits.sort()
    best, best_count = hits[0][0], 0
    for i, (pos, _n) in enumerate(hits):
        distinct = {n for p, n in hits[i:] if p < pos + width * 2 // 3}
        if len(distinct) > best_count:
            best, best_count = pos, len(distinct)
    start = max(0, best - width // 4)
    start = flat.rfind(" ", 0, start) + 1 if start > 0 else 0
    end = min(len(flat), start + width)
    cut = flat[start:end]
    if end < len(flat):
        cut = cut.rsplit(" ", 1)[0] + " ..."
    return ("... " if start > 0 else "") + cut


def rank(query: Query, rows: list, cache: dict[int, tuple]) -> list[tuple[float, object]]:
    """BM25 candidates (rows with path, title, context, text, arch, mentions, keys, defines, bm25)
    in the order of `score`, best first. `cache` keeps each passage's words between queries."""
    if not rows:
        return []
    best = max(-r["bm25"] for r in rows) or 1.0
    scored = []
    for r in rows:
        places = cache.get(r["rowid"])
        if places is None:
            own = " ".join((r["context"], r["text"])).lower()
            places = cache[r["rowid"]] = ((passage_words(own), own), (passage_words(r["title"]), r["title"].lower()),
                                          (passage_words(r["path"]), r["path"].lower()))
        factor = arch_factor(query.archs, set(filter(None, r["mentions"].split(","))), set(filter(None, r["arch"].split(","))))
        if any(w in places[0][0] or w in places[1][0] for w in query.arch_words):
            factor *= 1.15  # the very product the query names ("MI300A" of the MI300 family)
        if r["layer"] == 0:
            factor *= 0.7  # the map points at pages (docs_map shows it); the pages hold the answers
        keys, defines = r["keys"].split(), r["defines"].split()
        value = score(-r["bm25"] / best, coverage(query, list(places)), proximity(query, places[1][1] + " " + places[0][1]),
                      any(k in defines for k in query.keys), any(k in keys for k in query.keys), factor)
        scored.append((value, r))
    scored.sort(key=lambda pair: -pair[0])
    return scored
