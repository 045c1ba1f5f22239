"""Ranking that knows the domain: coverage of the question, exact names, architecture names.

BM25 (SQLite FTS5) finds candidate passages holding any of the query's words (as prefixes, with
their synonyms) or naming the query's counters and instructions; they are then ordered by
- coverage: the share of the query's words a passage holds, counted fully in the passage itself,
  less in its heading, least in the headings above it that every passage of the page shares
  (BM25 alone lets one rare word outweigh the rest of the question);
- proximity: neighbouring query words standing together ("wave size" in "Wave size is 64");
- exact names: a counter, instruction or metric named in the query (SQ_INSTS_MFMA, TCC_HIT,
  ALUStalledByLDS) lifts the table row or entry that defines it;
- architecture: a target named by any of its names (vocabulary.py) is a preference, not a word
  the text must hold: passages about it rise, passages about other targets only sink; where the
  query names none, the workspace's target and product are preferred, a little less;
- the bridge (docs_index/bridge.toml): the words people use ("scratchpad", "thread block",
  "chiplet", "idle lanes") also find the documents' terms for them, counting a little less;
- the asked quantity: a question about a bandwidth, a size, a clock, a peak rate, a latency or a
  count lifts the table row that gives that quantity over its neighbours.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from kernel_mcp.arch_registry import docs_index_dir, products, read_table, registry
from kernel_mcp.docs.hardware_pages import PAGE_PREFIX as HARDWARE_PAGES
from kernel_mcp.docs.readers import slug
from kernel_mcp.docs.vocabulary import STOPWORDS, WORD, arch_names, archs_named, bridged, cached, compact, identifiers, name_parts, stem, synonyms, vendor_words
from kernel_mcp.errors import KernelMcpError

# How much a query word counts where it is found: in the passage (a table row with its header,
# a chunk of prose), in its section's heading, or only in the headings above.
PLACES = (1.0, 0.75, 0.5)
# The hardware tables restate, as one row per figure, what the documents say in their own words and
# tables; they answer first only where no document does (hw_spec serves them by key)
TABLES_FACTOR = 0.7
# An arch's own table (hardware/gfx950, hardware/sm-90) carries what the compiler and measurements
# checked (the LDS a workgroup may claim, the 1 KiB CUDA reserves per block, the bank count), which
# the documents often state less exactly; a product's table restates its datasheet, as they do
ARCH_TABLES_FACTOR = 0.9
# A passage naming only a sibling of the product asked about (MI300X rows for an MI300A question);
# a topic page's table row without the product's column (0.85 left the MI300X's "38 active CUs per
# XCD" row above the MI300A's own 228 CUs; 0.6 and 0.4 read the same on the blind sets)
SIBLING, SIBLING_ROW = 0.85, 0.6
OWN_WORD = 60  # a word in this many passages is the documents' own: the bridge adds no candidates for it
OTHER_TARGET = 0.5  # a page about another target than the one asked about (0.7 let the H100 occupancy rule outrank MI300X's)
DTYPE_LIFT = 1.6  # a passage naming the data type or cache level the query names
BRIDGED = 0.8  # a term found only as the documents' word for it (bridge.toml) counts for less than the word itself
# a passage that defines another name than those the query names (a counter, an instruction, a
# variable) is about that one, even where it mentions the asked name ("convert
# SQ_INSTS_VALU_MFMA_MOPS_BF16 into FLOPs" is no question about the MFMA instruction entry that says
# which counter counts it)
OTHER_NAME = 0.7
# products named together that make a comparison ("MI350X vs MI300X vs H100"); two are often a
# question about one with the other as its context ("does it still exist on MI350X?")
COMPARED = 3
# each product of a comparison that a passage leaves out: a row of one product's figure answers a
# third of "MI350X vs MI300X vs H100", and outranked the one line that compares all three
LEFT_OUT = 0.8
QUANTITY_LIFT = 1.2  # a table row that gives the quantity asked for (a row giving another one was sunk too: it cost answers)
# a product's model number (mi300a, mi100, h100, a100); and a data type (bf16, fp8, e4m3) or a cache
# level (l1, l2), which tell a table's rows apart as a product does (not a die or a register: xcd0, v0)
MODEL = re.compile(r"(?:mi|h|a|b|gb|gh|v|p|rx|w)[0-9]{2,}[a-z0-9]*")
DTYPE = re.compile(r"(?:mx)?(?:fp|bf|tf|xf|int|uint|f|i|u)[0-9]+|e[0-9]m[0-9]|l[0-3]")


def _fts_phrase(text: str) -> str:
    return '"' + " ".join(WORD.findall(text)) + '"'


class Near:
    """A pattern and the literal strings every match of it contains: a text that lacks one of them
    is passed over without running the pattern, which is most texts and most of a search's time.
    The pattern is compiled when a text first holds them all: most of a long question's never are."""

    __slots__ = ("source", "literals", "_pattern")

    def __init__(self, source: str, literals: tuple[str, ...]) -> None:
        self.source, self.literals = source, literals
        self._pattern: re.Pattern[str] | None = None

    def search(self, text: str) -> bool:
        for literal in self.literals:
            if literal not in text:
                return False
        if self._pattern is None:
            self._pattern = re.compile(self.source)
        return self._pattern.search(text) is not None


def _matcher(word: str) -> str | Near:
    """A word as its stem, found exactly or (3 letters or more) as a prefix of a passage word: the
    string to find in a Place's `joined`; a phrase as a pattern."""
    if " " in word or "/" in word:
        # the words apart, or joined in a snake_case name ("compute units" in compute_units)
        words = WORD.findall(word)
        return Near(r"(?<![a-z0-9])" + r"[\W_]+".join(re.escape(w) for w in words) + r"(?![a-z0-9])", tuple(words))
    root = stem(word)
    return SEP + root + ("" if len(root) >= 3 else SEP)


@dataclass
class Query:
    text: str
    terms: list[str]  # the words a passage should hold (stop words and arch names removed)
    keys: list[str]  # exact names, compacted
    archs: set[str] = field(default_factory=set)  # targets the query names (or filters on)
    arch_words: list[str] = field(default_factory=list)  # the words that named them ("mi300a")
    alternatives: dict[str, tuple[str, ...]] = field(default_factory=dict)  # term -> its synonyms
    bridged: dict[str, tuple[str, ...]] = field(default_factory=dict)  # term -> the documents' words for it (bridge.toml)
    asks: frozenset[str] = frozenset()  # the quantities it asks for (asked_quantities): bandwidth, size, clock, ...
    preferred: tuple[str, ...] = ()  # the workspace's product, when the query names none: its model number ("mi355x")
    assumed: bool = False  # the target is the workspace's: the query names none
    described: tuple[str, ...] = ()  # the products it describes without naming them, in the order described

    def __post_init__(self) -> None:
        # each term's matchers, its own spellings first, then the bridge's words, which count for less
        self.matchers = [
            [(_matcher(a), 1.0) for a in (t, *self.alternatives.get(t, ()))] + [(_matcher(a), BRIDGED) for a in self.bridged.get(t, ())] for t in self.terms
        ]
        pairs = [(a, b) for a, b in zip(self.terms, self.terms[1:]) if " " not in a + b][:12]
        self.pairs = [Near(r"\b" + re.escape(stem(a)) + r"\w*\W+(?:\w+\W+){0,2}?" + re.escape(stem(b)), (stem(a), stem(b))) for a, b in pairs]
        # the products it names by model number, stemmed as passage words are, and their families
        # ("mi300" of "mi300a"), once per query rather than once per candidate passage
        models = [w for w in (*self.arch_words, *self.terms) if is_product(w)]
        if not any(MODEL.fullmatch(m) for m in models):
            models += self.preferred  # "peak bf16 TFLOPS" in an MI355X workspace: the MI355X's
        self.products = {stem(m) for m in models}
        self.models = {p for p in self.products if not DTYPE.fullmatch(p)}
        # of two products named, the first is what the question is about ("does the H200 have more
        # SMs than the H100 SXM"), the second its yardstick
        low = self.text.lower()
        # (a product described rather than named is where its description stands: "the refreshed Hopper ... over the 80 GB one")
        self.subject = min(self.models, key=lambda m: (self._position(m, low), m)) if len(self.models) == 2 else ""
        self.dtypes = self.products - self.models
        # a model's family: its letters and first digit (mi300a, mi325x and mi355x are mi3 products)
        self.families = tuple({f.group() for m in self.models for f in [re.match(r"[a-z]+[0-9]", m)] if f})
        self.weights = [1.0] * len(self.terms)
        self.stems = frozenset(stem(w) for t in self.terms for w in t.split())
        # what a count question counts, in its words and the documents' ("chiplets": xcd, gcd)
        self.counted = self.stems | {
            stem(w) for t in self.terms for a in (*self.alternatives.get(t, ()), *self.bridged.get(t, ())) for w in WORD.findall(a.lower())
        }
        self.own_words: set[str] = set()  # bridged terms the documents use themselves (settle_bridge)
        self.how_to = HOW_TO.search(self.text.lower()) is not None
        self.formula = FORMULA_ASKED.search(self.text.lower()) is not None

    def _position(self, model: str, low: str) -> int:
        if model in low:
            return low.find(model)
        return len(low) + (self.described.index(model) if model in self.described else len(self.described))

    def weigh(self, found: dict[str, int], total: int) -> None:
        """Weights the terms by rarity (inverse document frequency): a passage holding "latency"
        and "average" answers more of "average vector memory latency" than one holding "vector"
        and "memory", words of every other passage. `found`: passages holding each term."""
        idf = [math.log(1 + total / (1 + found[t])) if t in found else 1.0 for t in self.terms]
        if any(found.get(t, 1) for t in self.terms):
            # a word no passage holds ("idea", "roughly") tells no passage from another: it weighs nothing,
            # where its rarity would have made it the heaviest term of the question
            idf = [0.0 if found.get(t, 1) == 0 else w for t, w in zip(self.terms, idf)]
        mean = sum(idf) / len(idf) if idf else 1.0
        self.weights = [w / mean for w in idf] if mean > 0 else [1.0] * len(self.terms)

    def term_fts(self, term: str, bridged: bool = True) -> str:
        """One term as FTS5: the word as a prefix (hbm finds HBM3E) or a phrase, or a synonym, and
        (`bridged`, unless the documents use the word itself: see `settle_bridge`) the bridge's words."""
        bridge = self.bridged.get(term, ()) if bridged and term not in self.own_words else ()
        forms = [f'"{term}"*' if len(term) >= 3 and " " not in term else _fts_phrase(term)]
        forms += [_fts_phrase(a) for a in (*self.alternatives.get(term, ()), *bridge) if WORD.search(a)]
        return forms[0] if len(forms) == 1 else "(" + " OR ".join(forms) + ")"

    def settle_bridge(self, found: dict[str, int]) -> None:
        """`found`: passages holding each bridged term in its own spelling. A term the documents use
        in many passages ("block", "size") finds its candidates by itself: the bridge's words would
        only crowd BM25's hundred with passages about them, so they count in coverage alone. The
        bridge widens the search for the words the documents seldom use ("scratchpad", "chiplet")."""
        self.own_words = {t for t, n in found.items() if n >= OWN_WORD}

    def fts(self, common: set[str] | frozenset[str] = frozenset()) -> str:
        """FTS5 MATCH expression for the candidates: any rare term, all the common ones together
        (a word in a third of the index finds everything and ranks nothing), or a name in the
        keys/defines columns."""
        rare = [self.term_fts(t) for t in self.terms[:24] if t not in common]
        shared = [self.term_fts(t) for t in self.terms[:24] if t in common]
        names = [f'keys:"{k}"' for k in self.keys[:8]] + [f'defines:"{k}"' for k in self.keys[:8]]
        # a product named by its model number is no word the text must hold (it names an arch),
        # but the rows about that very product must be among the candidates ("MI300A" in a table)
        products = [f'"{w}"' for w in self.arch_words[:4] if is_product(w) and (w,) not in aliases()]
        parts = rare + names + products
        compared = [w for w in dict.fromkeys((*self.arch_words, *self.terms)) if is_model_number(w)]
        if len(compared) >= COMPARED:
            # a comparison's products are named together by the passage that compares them (a line
            # of the map, a table with a column each), whatever words it has for the figure
            parts.append("(" + " AND ".join(f'"{w}"' for w in compared[:4]) + ")")
        if shared and (len(shared) > 1 or not parts):
            parts.append("(" + " AND ".join(shared) + ")")
        if shared and rare:
            # selects nothing new, but puts the common terms in the expression, so BM25 counts them
            parts.append("((" + " OR ".join(shared) + ") AND (" + " OR ".join(rare) + "))")
        return " OR ".join(parts)


_DEVICE_ITSELF = re.compile(r"\b(?:(?:this|that|my|our|your)\s+(?:card|chip|gpu|accelerator|device|board|part|target|hardware|platform)\b|here\b)", re.I)
_ID_ASKED = re.compile(r"\b(?:lspci|pci|device ids?|vendor ids?)\b", re.I)
_PCI_ID = re.compile(r"(?:0x)?[0-9a-f]{4}")
_EXCLUDED = re.compile(r"\((?:non-[\w-]+|not\b[^)]*)\)|\bnon-[\w-]+(?=\s*\()")


# a product described rather than named: by its memory ("the 141 GB Hopper card", "the 192 GB one")
# or by its model number's digits ("the liquid-cooled 355 part", "the 300-series card")
_CAPACITY = re.compile(r"\b(\d{2,3})\s*gi?b\b(?!/)", re.I)
_MODEL_DIGITS = re.compile(r"\b(\d{3})(?:[- ]?series\b|\s+(?:parts?|cards?|boards?|gpus?|accelerators?|models?)\b)", re.I)


def _described() -> list[tuple[str, frozenset[int], str]]:
    """Each product's model number ("mi300x"), its memory in GB and GiB, and its model number's digits."""

    def build():
        out = []
        for entry in products().values():
            model = next((w for w in WORD.findall(entry.label.lower()) if MODEL.fullmatch(w)), None)
            if model is None:
                continue
            try:
                figure = read_table(docs_index_dir() / "hardware" / "products" / f"{entry.slug}.toml").get("figures", {}).get("hbm_bytes", {})
            except KernelMcpError:  # a table that cannot be read describes no memory
                figure = {}
            value = figure.get("value") if isinstance(figure, dict) else None
            sizes = frozenset({round(value / 1e9), round(value / 2**30)}) if isinstance(value, (int, float)) else frozenset()
            out.append((model, sizes, "".join(re.findall(r"\d", model))))
        return out

    return cached("described products", build)


# a vendor named as the yardstick of an analogy ("like NVIDIA's constant bank", "the equivalent of
# ncu's thread efficiency", "coming from CUDA"): the question is about the other vendor's GPUs
_ANALOGY = re.compile(
    r"\b(?:like|unlike|equivalent(?:s)?(?: of| to)?|counterpart(?:s)?(?: of| to)?|analog(?:ue)?(?: of| to)?|similar to|same as|"
    r"instead of|than|versus|vs\.?|(?:coming|porting|ported|moving|moved) from|compared (?:to|with))\s+(?:(?:the|a|an|my|our)\s+)?$"
)


def named_vendors(text: str) -> set[str]:
    """The vendors a query names as what it asks about: by their names and tools ("AMD Instinct",
    "ncu shows"), not where a vendor is only the yardstick of an analogy ("like NVIDIA's"), unless
    that leaves none: then the other vendor ("the equivalent of ncu's thread efficiency" is asked of AMD)."""
    table = vendor_words()
    low = text.lower()
    asked: set[str] = set()
    compared: set[str] = set()
    for match in WORD.finditer(low):
        vendor = table.get(match.group())
        if vendor is not None:
            (compared if _ANALOGY.search(low[max(0, match.start() - 40) : match.start()]) else asked).add(vendor)
    if asked or not compared:
        return asked
    others = set(table.values()) - compared
    return others if len(others) == 1 else set()


def is_model_number(word: str) -> bool:
    """A product's model number ("mi300a", "h100"), not a data type that has the same shape ("fp8")."""
    return bool(MODEL.fullmatch(word)) and not DTYPE.fullmatch(word)


def described_products(text: str) -> list[str]:
    """The model numbers of the products a query describes instead of naming them, in the order it
    describes them ("the 141 GB card ... the 80 GB one": h200, h100): each memory size stated, narrowed
    by the model number's digits stated, that fits one product (or the products of one model number,
    h100 for both H100s); none where the query names a model number itself."""
    return [model for _at, model in _described_at(text)]


def _described_at(text: str) -> list[tuple[int, str]]:
    """described_products, each with where in the text its description starts."""
    sizes: list[tuple[int, int | None]] = [(m.start(), int(m.group(1))) for m in _CAPACITY.finditer(text)]
    digits_at = [(m.start(), m.group(1)) for m in _MODEL_DIGITS.finditer(text)]
    digits = {d for _at, d in digits_at}
    if not sizes and not digits:
        return []
    if any(MODEL.fullmatch(w) for w in WORD.findall(text.lower())):
        return []
    out: list[tuple[int, str]] = []
    for at, size in sizes or [(digits_at[0][0], None)]:
        fit = [
            model
            for model, memory, own in _described()
            if (size is None or size in memory) and (not digits or any(own == d or (d.endswith("00") and own.startswith(d[:2])) for d in digits))
        ]
        models = {re.sub(r"(?<=\d)[a-z]+$", "", m) if len(fit) > 1 else m for m in fit}
        if len(models) == 1 and (model := models.pop()) not in [m for _a, m in out]:
            out.append((at, model))
    return out


def bridged_products(text: str) -> list[str]:
    """The model numbers of the products a query describes in words the bridge gives a product's
    model number for ("the MI300 flavour with CPU cores in the same package", "the APU": mi300a),
    so that the product is named as if the query had said it, in the order described. None where the
    query names a model number of its own that is not of that product's family ("MI300X" against
    mi300a; "MI300" is)."""
    return [model for _at, model in _bridged_at(text)]


def _bridged_at(text: str) -> list[tuple[int, str]]:
    """bridged_products, each with where in the text the words that describe it start."""
    found = [(m.start(), m.group().lower()) for m in WORD.finditer(text) if m.group().lower() not in STOPWORDS]
    words = [w for _at, w in found]
    named = [w for w in words if is_model_number(w)]
    out: list[tuple[int, str]] = []
    for i, alternatives in sorted(bridged(words).items()):
        for model in alternatives:
            if is_model_number(model) and model not in [m for _a, m in out] and all(model.startswith(n) for n in named):
                out.append((found[i][0], model))
    return out


def analyse(text: str, arch: str | None, prefer: tuple[str | None, str | None] = (None, None)) -> Query | None:
    """None when the text has no word to search for. `prefer`: the workspace's target arch and
    product (its model number, "MI355X"): where the query names no target, its target is the one
    preferred, and where it names no product, its product is."""
    # "kernel's" is the kernel, "isn't" is not: no term "s" or "t" (a letter alone is no word to search for)
    plain = re.sub(r"n['’]t\b", " not", re.sub(r"(?<=\w)['’]s\b", "", text))
    # an aside that says what is not meant ("vector (non-matrix)", "non-matrix (vector)", "(not bank
    # conflicts)") holds no words to look for
    plain = _EXCLUDED.sub(" ", plain)
    # "this card", "my GPU", "here": the target itself, which the arch (asked or the workspace's)
    # already stands for; as words they find every page that says "GPU" or "chip"
    plain = _DEVICE_ITSELF.sub(" ", plain)
    described = list(dict.fromkeys(model for _at, model in sorted(_described_at(plain) + _bridged_at(plain))))
    plain += "".join(" " + m for m in described)
    words = [w.lower() for w in WORD.findall(plain) if len(w) > 1 or w.isdigit()]
    if not words:
        return None
    archs, used = archs_named(words)
    asks = asked_quantities(plain.lower())
    # "how fast", "how big": the words that ask for a quantity are no words its answer holds
    cues = _CUES if asks else frozenset()
    terms = [w for i, w in enumerate(words) if i not in used and w not in STOPWORDS and w not in cues]
    if not terms:  # only arch names or stop words: search for them after all
        terms = [w for w in words if w not in STOPWORDS] or words
    table = synonyms()
    targets = archs | ({arch} if arch else set())
    prefer_arch, prefer_product = prefer
    assumed = False
    vendors = named_vendors(plain)
    if not targets and len(vendors) == 1:
        # "an AMD Instinct card", "ncu shows": that vendor's targets, as a preference (a page about
        # another vendor's GPU sinks), the way a workspace's target is preferred
        targets, assumed = {a for a, e in registry().items() if e.vendor in vendors}, True
    if not targets and prefer_arch is not None:
        targets, assumed = {prefer_arch}, True  # a question asked in a gfx950 workspace is about gfx950 unless it says otherwise
    # the workspace's product by its model number ("H100 PCIe": h100), where the query is about its arch
    own_product = [w for w in WORD.findall((prefer_product or "").lower()) if MODEL.fullmatch(w)][:1] if prefer_arch in targets else []
    bridge = bridged(terms, {registry()[a].vendor for a in targets if a in registry()})  # the documents' words for the query's own
    # two query words that a synonym group lists as one phrase ("compute units" = "cus") are one term
    joined: list[str] = []
    added: dict[str, tuple[str, ...]] = {}
    for i, term in enumerate(terms):
        if joined and " " not in joined[-1] and f"{joined[-1]} {term}" in table:
            joined[-1] = f"{joined[-1]} {term}"
            added[joined[-1]] = added.pop(joined[-1].split()[0], ()) + bridge.get(i, ())
        else:
            joined.append(term)
            added[term] = added.get(term, ()) + bridge.get(i, ())
    terms = list(dict.fromkeys(joined))
    keys = list(dict.fromkeys(compact(k) for k in identifiers(text)))
    alternatives = {t: table[t] for t in terms if t in table}
    for term in terms:  # a name also as the words it is written in ("ds_read" in "class: DS read")
        if "_" in term.strip("_"):
            spaced = " ".join(part for part in term.split("_") if part)
            alternatives[term] = (*alternatives.get(term, ()), spaced)
    if _ID_ASKED.search(plain):
        for term in terms:  # a PCI id as lspci prints it (74b5) and as the documents write it (0x74b5)
            if _PCI_ID.fullmatch(term) and re.search(r"[0-9]", term):
                alternatives[term] = (*alternatives.get(term, ()), term[2:] if term.startswith("0x") else "0x" + term)
    bridged_words = {t: tuple(a for a in dict.fromkeys(added[t]) if a != t and a not in alternatives.get(t, ())) for t in terms if added.get(t)}
    for term in terms:
        # a long name also as its last two parts, where its qualifier sits: the documents name a stall
        # reason (long_scoreboard) more often than the profiler metric that samples it
        # (smsp__pcsamp_warps_issue_stalled_long_scoreboard); found there it counts as the bridge's words
        parts = [part for part in term.split("_") if part]
        if len(parts) >= 5:
            bridged_words[term] = (*bridged_words.get(term, ()), " ".join(parts[-2:]))
    return Query(
        text,
        terms,
        keys,
        targets,
        [words[i] for i in sorted(used)],
        alternatives,
        {t: a for t, a in bridged_words.items() if a},
        asks,
        tuple(own_product),
        assumed,
        tuple(described),
    )


# The quantities a question asks for, by its words, and how a table row shows that it gives one: the
# row that gives the asked figure rises over its neighbours in the same table ("how fast can an
# MI300X stream from device memory" is the HBM bandwidth row, not the HBM size row beside it).
_UNITS = {
    "bandwidth": r"[kmgtp]i?b/s|bytes/s|b/clk|bytes? per (?:clock|cycle|second)",
    "size": r"[kmgt]i?b|bytes|b",
    "clock": r"[mg]hz",
    "rate": r"[tpg]?flops|[tpg]?flop/s|tops|flop/clk(?:/cu)?",
    "latency": r"cycles?|ns|clocks",
    "intensity": r"flop/b(?:yte)?",
}
_ASKED = {
    "bandwidth": re.compile(r"\bbandwidths?\b|\b(?:tb|gb)/s\b|\bbytes per (?:\w+ per )?(?:second|clock|cycle|clk)\b"),
    "size": re.compile(
        r"\bsizes?\b|\bcapacity\b|\bhow (?:big|large)\b|\bhow much (?:device |on-chip |shared |hbm |gpu )?"
        r"(?:memory|lds|cache|scratchpad|hbm|vram|l1|l2|l3|register)|\b[kmg]i?b of\b"
    ),
    "clock": re.compile(r"\bclocks?\b|\bfrequenc(?:y|ies)\b|\b[mg]hz\b"),
    "rate": re.compile(r"\b[tpg]?flops\b|\bflop/s\b|\btops\b|\bthroughput\b|\bpeak (?:fp|bf|int|tf|mxfp|dense|matrix|vector)"),
    "latency": re.compile(r"\blatency\b|\bhow long\b|\bcycles\b"),
    # FLOPs per byte of memory traffic: a roofline's arithmetic intensity, not a FLOP rate
    "intensity": re.compile(r"\bflops?[ /-]?(?:per[ -])?bytes?\b|\bflop/b\b|\b(?:arithmetic|operational) intensity\b|\bridge points?\b"),
}
# a throughput of bytes (of a memory, a cache, reads) is a bandwidth; of math, a FLOP rate
_BYTES_MOVED = re.compile(r"\bbytes?\b|\b(?:memory|hbm|dram|caches?|lds|scratchpad|scratch|l1|l2|reads?|writes?|loads?|stores?|fetch\w*)\b")
_MATH = re.compile(r"\b[tpg]?flops?\b|\bflop/s\b|\btops\b|\bops\b|\bfma\b|\bmfma\b|\bmatrix\b|\bmath\b|\bmultipl\w*|\badds?\b|\bfp\d+|\bbf16\b|\bint8\b")
_FAST = re.compile(r"\b(?:fast|faster|fastest|quickly|speed|stream|streams)\b")
_CUES = frozenset("big bigger large larger fast faster fastest quickly".split())
_MEMORY = re.compile(r"\b(?:memory|hbm|dram|vram|caches?|l1|l2|lds|scratchpad|read|reads|load|loads|fetch|deliver)\b")
_COUNT = re.compile(r"\b(?:how many|number of|count of)\s+(\w+)")
_ROW_VALUE = re.compile(r"(?:^|; )figure: (?P<figure>[^;]*); value: (?P<value>[^;]*)")


# "block size" and "wave size" count threads; a figure the question states ("the 2100 MHz default",
# "64 KB of LDS") is its context, not what it asks
_NOT_A_SIZE = re.compile(r"\b(?:block|workgroup|work-group|group|wave|wavefront|warp|grid|tile|batch|problem|step|vector|instruction)\s+sizes?\b")
_STATED = re.compile(r"\b\d[\d,.]*\s*(?:[kmgt]i?b|bytes|[mg]hz|[tg]b/s|[tpg]?flops|cycles)\b")


def asked_quantities(text: str) -> frozenset[str]:
    """The quantities a lower-cased question asks for: bandwidth, size, clock, rate (FLOP/s), latency, count."""
    text = _STATED.sub(" ", _NOT_A_SIZE.sub(" count ", text))
    asked = {name for name, pattern in _ASKED.items() if pattern.search(text)}
    if _FAST.search(text) and "clock" not in asked and _MEMORY.search(text):
        asked.add("bandwidth")  # "how fast can it read HBM": a rate of bytes
    if "intensity" in asked:
        asked.discard("rate")  # "flops per byte" names FLOPs, but asks for no FLOP rate
    if "rate" in asked and "throughput" in text and _BYTES_MOVED.search(text) and not _MATH.search(text):
        asked = (asked - {"rate"}) | {"bandwidth"}  # "read throughput of the LDS": bytes per clock
    for match in _COUNT.finditer(text):
        unit = match.group(1)
        if not any(re.fullmatch(_UNITS[q], unit) for q in _UNITS):
            asked.add("count")  # "how many CUs", not "how many cycles"
    return frozenset(asked)


def given_quantities(kind: str, text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The quantities a passage gives, and the words of the things it gives a bare count of.
    A hardware table's row by its figure's name and value's unit (a bare number of things is a
    count); any other row by the units of its cells, after the number or in the column's name ("Peak
    TFLOPS: 2614.9", "L2 Cache (MiB): 4"), a cell of a bare number counting what its column or the
    row's first cell names. Prose gives none here: lifting prose that states a figure in the asked
    unit cost answers on the question sets."""
    if kind != "row":
        return frozenset(), frozenset()
    low = text.lower()
    row = _ROW_VALUE.search(text)
    if row is not None:
        figure, value = row.group("figure").lower(), row.group("value").lower()
        given = {q for q, unit in _UNITS.items() if re.search(r"[\d)]\s*(?:" + unit + r")(?![\w/])", value)}
        given |= {q for q, word in (("bandwidth", "bandwidth"), ("clock", "clock"), ("latency", "latency"), ("rate", "flops")) if word in figure}
        if figure.endswith("_bytes") and "bandwidth" not in given:
            given.add("size")
        if not given and re.match(r"[\d,.]+ [a-z]", value):  # 304 CU, 8 XCD, 528 tensor cores: a count of them
            return frozenset({"count"}), frozenset(stem(w) for w in WORD.findall(figure.replace("_", " ") + " " + value))
        return frozenset(given), frozenset()
    given = set()
    counted: set[str] = set()
    cells = low.split("; ")
    for cell in cells:
        name, _, value = cell.rpartition(": ")
        if not value[:1].isdigit():
            continue
        cell_gives = {q for q, unit in _UNITS.items() if re.match(r"[\d.,]+\s*(?:" + unit + r")(?![\w/])", value)}
        cell_gives |= {q for q, pattern in _ASKED.items() if pattern.search(name)}
        cell_gives |= {q for q, unit in _UNITS.items() if q != "size" and re.search(r"\b(?:" + unit + r")\b", name)}
        if re.search(r"\((?:[kmgt]i?b|bytes)\)", name):
            cell_gives.add("size")
        given |= cell_gives
        if not cell_gives:  # a count of what the column names, or of what the row is about ("XCDs; MI300X: 8")
            counted.update(stem(w) for w in WORD.findall(name + " " + cells[0].rpartition(": ")[2]))
    return frozenset(given), frozenset(counted)


def quantity_factor(query: Query, given: tuple[frozenset[str], frozenset[str]]) -> float:
    """A table row that gives the quantity asked for rises over its neighbours (a count: of the
    things the question counts, in its words or the documents')."""
    classes, counted = given
    if classes & (query.asks - {"count"}) or ("count" in query.asks and counted & query.counted):
        return QUANTITY_LIFT
    return 1.0


SEP = "\0"  # stands before each word of a Place's `joined`, and after the last; no word holds it


class Place:
    """Where in a passage a query's term is looked for (its own text, its title, its path): its
    stemmed words as one string in which a term is found by a substring test (a word exactly:
    SEP + word + SEP; a word as a prefix: SEP + prefix), as a set, and its lower-cased text."""

    __slots__ = ("text", "joined", "set")

    def __init__(self, text: str) -> None:
        words = passage_words(text)
        self.text = text.lower()
        self.joined = SEP + SEP.join(words) + SEP
        self.set = frozenset(words)


def passage_words(text: str) -> tuple[str, ...]:
    """The sorted stemmed words of a text, a name also as its parts (SQ_WAVES: sq, waves;
    LibraryLogic: library, logic)."""
    out: set[str] = {stem(part) for part in name_parts(text)}
    for word in WORD.findall(text.lower()):
        out.add(stem(word))
        if "_" in word:
            out.update(stem(part) for part in word.split("_") if part)
    return tuple(sorted(out))


def _holds(matcher: str | Near, place: Place) -> bool:
    if isinstance(matcher, str):
        return matcher in place.joined
    return matcher.search(place.text)


def coverage(query: Query, places) -> float:
    """The share of the query's terms the passage holds (a term, a prefix of a word, a synonym),
    each term weighed by its rarity and by where it is found (PLACES)."""
    if not query.terms:
        return 1.0
    total = 0.0
    for matchers, rarity in zip(query.matchers, query.weights):
        best = 0.0
        for weight, place in zip(PLACES, places):
            if weight <= best:
                break
            for matcher, strength in matchers:
                if weight * strength > best and _holds(matcher, place):
                    best = weight * strength
                    if strength == 1.0:
                        break
        total += best * rarity
    return total / sum(query.weights)


def proximity(query: Query, text: str) -> float:
    """The share of the query's neighbouring word pairs that stand within three words of each other."""
    if not query.pairs:
        return 0.0
    return sum(1 for p in query.pairs if p.search(text)) / len(query.pairs)


def arch_factor(query_archs: set[str], mentions: set[str], tags: set[str], assumed: bool = False) -> float:
    """Passages about an asked-for target rise; those about other targets only sink. A page about
    another target sinks even where it names the asked one in passing (a CDNA2 page listing the
    gfx950 forms that gfx90a rejects). `assumed`: the target is the workspace's, not named in the
    query: its passages rise less, and another target's page still sinks below them."""
    if not query_archs:
        return 1.0
    if tags and "all" not in tags and not tags & query_archs:
        return OTHER_TARGET
    if mentions & query_archs:
        return 1.15 if assumed else 1.3
    return 0.8 if mentions else 1.0


def arch_pages() -> frozenset[str]:
    """The page names of the archs' own hardware tables (gfx950, sm-90), as the store names them."""
    return cached("arch pages", lambda: frozenset(slug(a) for a in registry()))


def _product_words() -> frozenset[str]:
    words = {stem(w) for e in products().values() for name in (e.label, *e.names) for w in WORD.findall(name.lower())}
    return frozenset(w for w in words if MODEL.fullmatch(w) and not re.match(r"(?:hbm|sxm|pcie|oam|nvl)\d", w))


def product_words() -> frozenset[str]:
    """The model numbers of the products that have a table (mi300x, mi355x, h100, ...), as passage words."""
    return cached("product words", _product_words)


def is_product(word: str) -> bool:
    """A model number ("mi300a", "mi100", "h100") or a qualifier of one (bf16, l2), not an arch's own name ("gfx942")."""
    return (MODEL.fullmatch(word) is not None or DTYPE.fullmatch(word) is not None) and word not in arch_names()


def aliases() -> set[tuple[str, ...]]:
    """Every name of every arch ("mi300x" is one; "mi300a", a product of the family, is not)."""
    return {name for names in arch_names().values() for name in names}


def product_factor(query: Query, places, topic_row: bool = False) -> float:
    """A product the query names by its model number ("MI300A", "MI100") lifts the passages that
    name that very product, and sinks those that name only its siblings (a row of MI300X figures
    for a question about the MI300A): a table lists several products in the same words. A topic
    page's table row (`topic_row`: a column per product, not a hardware table's row) that has no
    column for the product asked about sinks further: its figures are the other products'. A question
    that compares products ("MI350X vs MI300X vs H100") lifts most the passage that names them all.
    A data type or cache level it names (bf16, fp8, L2) lifts the passages that name it: rows differ by it too."""
    if not query.products:
        return 1.0
    own, models = places[4], places[5]
    factor = 1.0
    if query.models:
        # "MI300" names the series: its MI300A and MI300X rows are about it
        named = {m for m in query.models if m in own or any(w.startswith(m) for w in models)}
        if named:
            lift = 0.15 if query.models <= set(query.preferred) else 0.4  # the workspace's product, not one the query names
            if len(query.models) >= COMPARED:
                # each product of the comparison that the passage names lifts it as one product named
                # alone does: a row about one of three products answers a third of the question, and
                # only the passage naming them all (the map's one line) answers the rest
                factor = (1.0 + lift) ** len(named) * LEFT_OUT ** (len(query.models) - len(named))
            elif query.subject:
                # the subject counts twice the yardstick: a row about the subject rises over the other's
                factor = 1.0 + lift * (2 * (query.subject in named) + len(named - {query.subject})) / 3
            else:
                factor = 1.0 + lift * (len(named) / len(query.models) if len(query.models) >= 2 else 1.0)
        elif any(w.startswith(query.families) and not any(m.startswith(w) or w.startswith(m) for m in query.models) for w in own & product_words()):
            # a sibling of the family (a product with a table), not the product asked about
            factor = SIBLING_ROW if topic_row else SIBLING
    if query.dtypes & own:
        factor *= DTYPE_LIFT
    return factor


# A question that asks how to do something with a name ("how do I turn SQ_LDS_BANK_CONFLICT into
# conflicts per access", "formula for ...") is answered by the prose that uses the name, more than by
# the row that defines it
HOW_TO = re.compile(r"\bhow (?:do|can|should|would) (?:i|you|we)\b|\bhow to\b|\bformula\b|\bconvert\b|\bturn (?:it|them|this|that) into\b")
# A question that asks how a figure is worked out ("how do I compute mean occupancy per CU from the
# counters", "how is FETCH_SIZE derived") is answered by the passage that writes the formula
# ("MeanOccupancyPerCU = accumulated SQ_LEVEL_WAVES / ..."), more than by the rows it names
FORMULA_ASKED = re.compile(
    r"\bhow (?:do|can|should|would) (?:i|you|we) (?:compute|calculate|derive|get|work out|turn|convert)\b|\bformula\b"
    r"|\bhow (?:is|are) [\w ]{1,40}? (?:derived|computed|calculated)\b"
)
# an equation: a name, "=", then an expression with an operator in it
EQUATION = re.compile(r"[\w)\]] ?= ?[^=;\n]{0,60}?(?:/| x |\*|\+| - )")
FORMULA_LIFT = 1.4
DEFINES = 0.45  # the row or entry that defines the counter/instruction asked about
DEFINES_HOW_TO = 0.15
NAMES = 0.4  # a passage that names it without defining it
# How much of the BM25 share a passage keeps whatever its coverage (the rest scales with coverage^COVER_POWER), and
# how much the query's word pairs standing close lift it. This and the constants above were set by one sweep of each
# (one at a time) on blind sets 1-15, kept where they raised hit@1 + hit@3; chosen that way on 14 sets, the 15th held
# out, the sweep raised the held-out sets' hit@1 from 0.705 to 0.720 and hit@3 from 0.908 to 0.916 (RESULTS.md)
BM25_FLOOR, COVER_POWER, NEAR_LIFT = 0.1, 1.5, 0.8


def score(bm25_share: float, cover: float, near: float, defines: bool, names: bool, factor: float, how_to: bool = False) -> float:
    base = bm25_share * (BM25_FLOOR + 0.8 * cover**COVER_POWER) * (1.0 + NEAR_LIFT * near)
    if defines:
        base += DEFINES_HOW_TO if how_to else DEFINES
    elif names:
        base += NAMES
    return base * factor


def rank(query: Query, rows: list, cache: dict[int, tuple]) -> list[tuple[float, Any]]:
    """BM25 candidates (rows with rowid, path, title, context, text, layer, arch, mentions, keys,
    defines, bm25) in the order of `score`, best first. `cache` keeps each passage's words."""
    if not rows:
        return []
    best = max(-r["bm25"] for r in rows) or 1.0
    scored = []
    for r in rows:
        places = cache.get(r["rowid"])
        if places is None:
            own = r["context"] + " " + r["text"]
            text, title = Place(own), Place(r["title"])
            words = text.set | title.set  # the words of the passage and its title, where products are named
            places = cache[r["rowid"]] = (
                text,
                title,
                Place(r["path"]),
                given_quantities(r["kind"], r["text"]),
                words,
                frozenset(w for w in words if MODEL.fullmatch(w)),
            )
        factor = arch_factor(query.archs, set(filter(None, r["mentions"].split(","))), set(filter(None, r["arch"].split(","))), query.assumed)
        factor *= product_factor(query, places, r["kind"] == "row" and not r["id"].startswith(HARDWARE_PAGES))
        factor *= quantity_factor(query, places[3])
        if query.formula and EQUATION.search(r["text"]):
            factor *= FORMULA_LIFT
        if r["layer"] == 0:
            factor *= 0.7  # the map points at pages (docs_map shows it); the pages hold the answers
        elif r["id"].startswith(HARDWARE_PAGES):
            factor *= ARCH_TABLES_FACTOR if r["id"].split("/")[1] in arch_pages() else TABLES_FACTOR
        keys, defines = r["keys"].split(), r["defines"].split()
        defines_asked = any(k in defines for k in query.keys)
        if query.keys and defines and not defines_asked:
            factor *= OTHER_NAME
        value = score(
            -r["bm25"] / best,
            coverage(query, places),
            proximity(query, places[1].text + " " + places[0].text),
            defines_asked,
            any(k in keys for k in query.keys),
            factor,
            query.how_to,
        )
        scored.append((value, r))
    scored.sort(key=lambda pair: -pair[0])
    return scored


# How far from an earlier passage of its section a hit may end and still be on the first page that
# docs_read gives from that passage at the default budget (about 3,500 characters), with room to spare
OPENING_SPAN = 2000


def held_terms(query: Query, place: Place) -> frozenset[int]:
    """The query's terms (by position) that a passage's own text holds, in any of their spellings."""
    return frozenset(i for i, matchers in enumerate(query.matchers) if any(_holds(m, place) for m, _strength in matchers))


def opening(query: Query, hit, section: list, cache: dict[int, tuple]):
    """Where a hit opens: at itself, or at an earlier candidate passage of its section close enough
    before it that docs_read shows both on one page, when that one holds query terms the hit lacks
    or gives the quantity asked for where the hit does not (the table a paragraph comments on).
    A question about two rows of one table ("which mask selects DS reads and which transcendental
    ops") or about two sentences of one paragraph is answered by the page that holds both, and
    docs_read shows a section from the passage it opens at on: the earlier passage's page holds the
    later one, not the other way round. `section`: the candidate passages of the hit's section."""
    start, end = hit["start"], hit["end"]
    before = [r for r in section if r["start"] < start and end - r["start"] <= OPENING_SPAN]
    if not before:
        return hit
    own = held_terms(query, cache[hit["rowid"]][0])
    gives = quantity_factor(query, cache[hit["rowid"]][3]) > 1.0
    best, gained = hit, 0
    for r in before:
        # the terms it adds, and the asked quantity where the hit (prose under a table) gives none
        more = len(held_terms(query, cache[r["rowid"]][0]) - own) + (not gives and quantity_factor(query, cache[r["rowid"]][3]) > 1.0)
        if more > gained or (more == gained and more and r["start"] < best["start"]):
            best, gained = r, more
    return best


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
        distinct = set()
        for p, n in hits[i:]:
            if p >= pos + width * 2 // 3:
                break
            distinct.add(n)
        if len(distinct) > best_count:
            best, best_count = pos, len(distinct)
    start = max(0, best - width // 4)
    start = flat.rfind(" ", 0, start) + 1 if start > 0 else 0
    end = min(len(flat), start + width)
    cut = flat[start:end]
    if end < len(flat):
        cut = cut.rsplit(" ", 1)[0] + " ..."
    return ("... " if start > 0 else "") + cut
