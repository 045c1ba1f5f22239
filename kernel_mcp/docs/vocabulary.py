"""The words of the domain that search treats specially, all read from data, none listed here.

- Architecture names: each hardware table's arch, family, label and aliases
  (docs_index/hardware/*.toml), so CDNA4, gfx950, MI350X and MI355X name one target.
- Exact names: snake_case counters, instructions and environment variables (SQ_INSTS_MFMA,
  v_mfma_f32_16x16x32_bf16, HIP_FORCE_DEV_KERNARG) and CamelCase metrics (ALUStalledByLDS),
  found in the text by their shape.
- Synonyms: docs_index/synonyms.toml (CU = compute unit, wave = wavefront).
- The bridge: docs_index/bridge.toml, from the words people use (scratchpad, thread block, chiplet,
  idle lanes) to the documents' terms and the counters that measure them, one way.
Everything is cached per docs index in use (KERNEL_MCP_DOCS_INDEX may point at another one).
"""

from __future__ import annotations

import os
import re

from dataclasses import dataclass

from kernel_mcp.arch_registry import DOCS_INDEX_ENV, docs_index_dir, read_table, registry
from kernel_mcp.errors import KernelMcpError

# Function words, and the words a question asks with rather than about ("which counter shows",
# "how do I find out", "e.g."): no passage answers by holding them
STOPWORDS = frozenset(
    "a about again all also an and any are as at be because been being both but by can could did do does doing e eg etc "
    "each every for from g get gets give gives had has have having he how i ie if in into is it its just know like many me might "
    "much must my need needs no nor not of on only or our own per she should show shows so some such tell tells than "
    "that the their them then there these they this those to too use used using very want was we were what when "
    "where which while who whom why will with would you your "
    # and the filler of a question in plain words, which names nothing a GPU document is about
    "actually anything basically carry carries else even ever everything exactly generally happen happens idea instead kind "
    "possible possibly rather really roughly simply something thing things typically usually versus vs way whether "
    # and "claim", mostly a verb in a question (how much LDS a workgroup can claim); the one passage
    # holding it uses the noun (the claim a measurement settles), which it put among every such
    # question's first hits
    "claim claimed claims".split()
)
# snake_case / UPPER_SNAKE names, and CamelCase names with a hump (lower-to-upper, "dB" in
# StalledBy) or an acronym before a word ("UUti" in VALUUtilization), not an acronym's plural
# ("XCDs", "VGPRs")
_SNAKE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b")
_CAMEL = re.compile(r"\b(?=[A-Za-z0-9]*(?:[a-z][A-Z]|[A-Z]{2}[a-z]{2}))[A-Z][A-Za-z0-9]{3,}\b")
WORD = re.compile(r"[A-Za-z0-9_]+")


def identifiers(text: str) -> list[str]:
    return _SNAKE.findall(text) + _CAMEL.findall(text)


_HUMP = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def name_parts(text: str) -> list[str]:
    """The words that the CamelCase names of a text are written in, lower case ("LibraryLogic":
    library, logic; "ALUStalledByLDS": alu, stalled, by, lds): a question spells them apart."""
    return [part.lower() for name in _CAMEL.findall(text) for part in _HUMP.findall(name)]


def compact(name: str) -> str:
    """The form names are matched in: lower case, no underscores (SQ_WAVES -> sqwaves)."""
    return name.replace("_", "").lower()


_STEMS: dict[str, str] = {}


def stem(word: str) -> str:
    """A light suffix strip for coverage (counters/counter, caches/cache); BM25 uses Porter."""
    found = _STEMS.get(word)
    if found is None:
        found = low = word.lower()
        for suffix, repl in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("es", "e"), ("s", ""), ("ed", "")):
            if low.endswith(suffix) and len(low) - len(suffix) >= 3 and not low.endswith("ss"):
                found = low[: len(low) - len(suffix)] + repl
                break
        if len(_STEMS) < 200_000:
            _STEMS[word] = found
    return found


_CACHE: dict[tuple[str, str], object] = {}


def cached(what: str, build):
    """`build()` once per docs index in use (KERNEL_MCP_DOCS_INDEX may point at another one)."""
    key = (what, os.environ.get(DOCS_INDEX_ENV, ""))
    if key not in _CACHE:
        _CACHE[key] = build()
    return _CACHE[key]


def arch_names() -> dict[str, tuple[tuple[str, ...], ...]]:
    """Per arch, its names as word tuples: the arch, its aliases, its family and its label."""

    def build():
        out = {}
        for arch, entry in registry().items():
            names = {arch.lower(), entry.family.lower(), *(a.lower() for a in entry.aliases)}
            if " " not in entry.label.strip():
                names.add(entry.label.lower())
            out[arch] = tuple(tuple(n.split()) for n in sorted(names) if n.strip())
        return out

    return cached("arch names", build)


def _names_word(name: str, word: str) -> bool:
    # "mi355x" names the alias "mi355"; a bare alias of letters must match whole ("hopper")
    return word == name or (len(name) >= 4 and any(c.isdigit() for c in name) and word.startswith(name))


def _names_by_first_word() -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    index: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for arch, names in arch_names().items():
        for name in names:
            index.setdefault(name[0], []).append((arch, name))
    return index


def archs_named(words: list[str]) -> tuple[set[str], set[int]]:
    """The archs that a query's words name, and the positions of the words that named them."""
    found: set[str] = set()
    used: set[int] = set()
    index = cached("arch names by first word", _names_by_first_word)
    for i, word in enumerate(words):
        # the names that start with this word, or whose one word begins it (mi355 in mi355x: _names_word)
        for first in {word, *(word[:n] for n in range(4, len(word)))}:
            for arch, name in index.get(first, ()):
                n = len(name)
                if i + n <= len(words) and all(_names_word(name[k], words[i + k]) if k == n - 1 else words[i + k] == name[k] for k in range(n)):
                    found.add(arch)
                    used.update(range(i, i + n))
    return found, used


def _mention_pattern() -> tuple[re.Pattern, list[str]]:
    groups: list[str] = []
    order: list[str] = []
    for arch, tuples in arch_names().items():
        alternatives = []
        for words in tuples:
            last = re.escape(words[-1]) + ("[a-z0-9]*" if len(words[-1]) >= 4 and any(c.isdigit() for c in words[-1]) else "")
            alternatives.append(r"\s+".join([re.escape(w) for w in words[:-1]] + [last]))
        groups.append(f"(?P<a{len(order)}>" + "|".join(sorted(alternatives, key=len, reverse=True)) + ")")
        order.append(arch)
    return re.compile(r"(?<![a-z0-9_])(?:" + "|".join(groups) + r")(?![a-z0-9_])"), order


def archs_mentioned(text: str) -> set[str]:
    """The archs a passage names, in one regex pass (thousands of ISA entries are tagged at ingest)."""
    pattern, order = cached("mention pattern", _mention_pattern)
    return {order[int(name[1:])] for m in pattern.finditer(text.lower()) for name, value in m.groupdict().items() if value}


def _read_synonyms() -> dict[str, tuple[str, ...]]:
    try:
        path = docs_index_dir() / "synonyms.toml"
        groups = read_table(path).get("groups", []) if path.is_file() else []
    except KernelMcpError:
        return {}
    table: dict[str, tuple[str, ...]] = {}
    for group in groups if isinstance(groups, list) else []:
        words = [" ".join(w.lower().split()) for w in group if isinstance(w, str) and w.strip()] if isinstance(group, list) else []
        for word in words:
            table[word] = tuple(dict.fromkeys(table.get(word, ()) + tuple(w for w in words if w != word)))
    return table


def _read_vendor_words() -> dict[str, str]:
    try:
        path = docs_index_dir() / "synonyms.toml"
        vendors = read_table(path).get("vendors", {}) if path.is_file() else {}
    except KernelMcpError:
        return {}
    words = {entry.vendor.lower(): entry.vendor for entry in registry().values()}
    for vendor, said in vendors.items() if isinstance(vendors, dict) else []:
        words.update({w.lower(): vendor for w in said if isinstance(w, str)} if isinstance(said, list) else {})
    return words


def vendor_words() -> dict[str, str]:
    """Word -> the vendor it names ("instinct": amd, "ncu": nvidia): the vendors' own names and the
    `vendors` table of docs_index/synonyms.toml."""
    return cached("vendor words", _read_vendor_words)


def synonyms() -> dict[str, tuple[str, ...]]:
    """Word or phrase -> the other spellings of its group (none without docs_index/synonyms.toml)."""
    return cached("synonyms", _read_synonyms)


@dataclass(frozen=True)
class BridgeEntry:
    phrases: tuple[tuple[str, ...], ...]  # what people say, each phrase as its words' stems (no stop words)
    alternatives: tuple[str, ...]  # the documents' terms and the counters, as a passage may hold them
    vendor: str = ""  # whose documents use those terms, where only one vendor's do ("" for both)

    def serves(self, vendors: set[str] | frozenset[str]) -> bool:
        """Whether it widens a question about targets of these vendors (none: no target named)."""
        return not self.vendor or not vendors or self.vendor in vendors


def phrase_words(phrase: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in WORD.findall(phrase.lower()) if w not in STOPWORDS)


def _read_bridge() -> tuple[BridgeEntry, ...]:
    try:
        path = docs_index_dir() / "bridge.toml"
        entries = read_table(path).get("entry", []) if path.is_file() else []
    except KernelMcpError:
        return ()
    out = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        said = [w for w in entry.get("say", []) if isinstance(w, str)]
        meant = [" ".join(w.split()) for w in (*entry.get("docs", []), *entry.get("counters", [])) if isinstance(w, str) and w.strip()]
        # a phrase that stop words leave one word of ("wait for all": wait) would widen every
        # question holding that word: it is left out
        phrases = tuple(dict.fromkeys(p for w in said for p in [phrase_words(w)] if p and (len(p) > 1 or len(WORD.findall(w)) == 1)))
        vendor = entry.get("docs_vendor", "")
        if phrases and meant:
            out.append(BridgeEntry(phrases, tuple(dict.fromkeys(m.lower() if "_" not in m else m for m in meant)), vendor if isinstance(vendor, str) else ""))
    return tuple(out)


def bridge() -> tuple[BridgeEntry, ...]:
    """The entries of docs_index/bridge.toml (none without it), their phrases stemmed once."""
    return cached("bridge", _read_bridge)


def _lead(word: str) -> str:
    # the key a phrase's first word is found by: a stem, or its first five letters (see _same_word)
    return word[:5] if len(word) >= 5 else word


def _bridge_index() -> dict[str, list[tuple[tuple[str, ...], BridgeEntry]]]:
    index: dict[str, list[tuple[tuple[str, ...], BridgeEntry]]] = {}
    for entry in bridge():
        for phrase in entry.phrases:
            index.setdefault(_lead(phrase[0]), []).append((phrase, entry))
    return index


# What may follow a stem and leave the word the same ("diverg" / "divergence"); a longer word that
# goes on with another word ("group" / "groupshar", "through" / "throughput", "scratch" / "scratchpad")
# or with a model's digits ("mi300" / "mi300x", "float" / "float4") is another word, and so is one
# whose ending names a thing or a doer ("collect" / "collective", "count" / "counter", "serve" / "server").
ENDINGS = frozenset("e s es ed d ing ion ions ation tion ence nce ance ent nt ant al ally ly ize ise iz able ably ity".split())


def _same_word(said: str, asked: str) -> bool:
    # stems, or one a prefix of the other when both are words of some length and differ by an ending
    # ("diverg" / "divergence"), not by another word ("group" is no "groupshared")
    if said == asked:
        return True
    short, long = sorted((said, asked), key=len)
    return len(short) >= 5 and long.startswith(short) and long[len(short) :] in ENDINGS


def _phrase_at(phrase: tuple[str, ...], stems: list[str], start: int) -> list[int]:
    """The positions of the phrase's words from `start` on, in order, each at most two after the one
    before ("lanes sit idle" holds "lanes idle"); empty when it is not there. In order: "memory
    (global load)" is no global memory."""
    if not _same_word(phrase[0], stems[start]):
        return []
    hit = [start]
    for word in phrase[1:]:
        nxt = next((i for i in range(hit[-1] + 1, min(len(stems), hit[-1] + 3)) if _same_word(word, stems[i])), -1)
        if nxt < 0:
            return []
        hit.append(nxt)
    return hit


def bridged(terms: list[str], vendors: set[str] | frozenset[str] = frozenset()) -> dict[int, tuple[str, ...]]:
    """Per position in `terms` (a query's words, stop words and arch names out), the documents' terms
    that the bridge adds. A phrase matches its words in order with at most one other word between
    two of them; the longest phrase found takes its words ("thread block" is a workgroup, not a
    thread and a block). `vendors`: of the targets the question is about, which picks the entries
    that serve it (BridgeEntry.serves)."""
    stems = [stem(t) for t in terms]
    index = cached("bridge index", _bridge_index)
    matches: list[tuple[int, list[int], tuple[str, ...]]] = []
    for start, word in enumerate(stems):
        for phrase, entry in index.get(_lead(word), ()):
            hit = _phrase_at(phrase, stems, start) if entry.serves(vendors) else []
            if hit:
                matches.append((len(phrase), hit, entry.alternatives))
    found: dict[int, tuple[str, ...]] = {}
    claimed: dict[int, int] = {}  # position -> the length of the longest phrase that holds it
    for length, hit, alternatives in sorted(matches, key=lambda m: -m[0]):
        if any(claimed.get(i, length) > length for i in hit):
            continue
        for i in hit:
            claimed[i] = length
            found[i] = tuple(dict.fromkeys(found.get(i, ()) + alternatives))
    return found
