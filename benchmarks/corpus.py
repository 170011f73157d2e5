"""Deterministic benchmark corpus: one memory scope at the SPEC limits.

The benchmark is only worth quoting if the scope looks like what the store will
really hold, so the generator aims at the SPEC §2 limits rather than a toy:
1,024 documents (`MEMORY.md` included), sizes 1–64 KiB with a median near 3 KiB,
a total just under the 8 MiB scan budget (a full search must be able to finish
without `incomplete`), about 30% mostly-Chinese documents, Zipf-distributed
engineering vocabulary with a long tail of identifiers (so rare terms are really
rare), per-document topic words (real notes repeat their subject), headings,
front matter on some documents and the folder layout the protocol teaches
(`projects/<stable id>/…`, `preferences/…`, `feedback/…`, `reference/…`).

Everything comes from one seeded `random.Random`, so the same seed writes the
same bytes on every machine and results stay comparable across runs.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import statistics
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks import vocab

DEFAULT_SEED = 20261130
DOCUMENTS = 1024
"""SPEC §2 scope limit, `MEMORY.md` included."""
SCAN_BUDGET_BYTES = 8 * 1024 * 1024
"""SPEC §2 search-scan budget; the corpus must stay at or below it."""
TARGET_TOTAL_BYTES = 8_370_000
"""Aim a little under the budget: documents only ever come out shorter than planned."""
MIN_DOC_BYTES = 1_100
MAX_DOC_BYTES = 64 * 1024
MEDIAN_DOC_BYTES = 3 * 1024
ENTRY_MAX_BYTES = 2 * 1024
CHINESE_SHARE = 0.30
FRONT_MATTER_SHARE = 0.45
TOPIC_SHARE = 0.08
"""Share of a document's words drawn from its own few topic words (burstiness)."""
EN_TAIL_SIZE = 40_000
ZH_TAIL_SIZE = 20_000
ZIPF_EXPONENT = 1.2


@dataclass
class ZipfWords:
    """A ranked word list and its cumulative Zipf weights, for `random.choices`."""

    words: list[str]
    cum_weights: list[float] = field(repr=False)

    @classmethod
    def ranked(cls, words: list[str]) -> ZipfWords:
        weights = (1.0 / (rank ** ZIPF_EXPONENT) for rank in range(1, len(words) + 1))
        return cls(words, list(itertools.accumulate(weights)))

    def draw(self, rng: random.Random, count: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cum_weights, k=count)


@dataclass
class Vocabulary:
    """Both languages' ranked words, plus the bands the search benchmark draws terms from."""

    en: ZipfWords
    zh: ZipfWords
    en_tech: list[str]
    en_rare: list[str]
    en_tail: list[str]
    zh_tech: list[str]
    zh_rare: list[str]
    zh_tail: list[str]


def _unique(words: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(words))


def build_vocabulary(seed: int = DEFAULT_SEED) -> Vocabulary:
    """Rank the hand-written lists and grow a compound-identifier tail behind them.

    Real rare words are scattered through the tail rather than appended, so a
    "rare English word" query hits a handful of documents, as it would in life.
    """
    rng = random.Random(f"vocabulary-{seed}")
    en_function = _unique(vocab.EN_FUNCTION)
    en_tech = [w for w in _unique(vocab.EN_TECH) if w not in en_function]
    rng.shuffle(en_tech)
    en_rare = [w for w in _unique(vocab.EN_RARE) if w not in en_tech]
    en_tail = _compounds(rng, en_tech, EN_TAIL_SIZE, english=True)
    en_ranked = en_function + en_tech + _scatter(rng, en_tail, en_rare, start=4_000)

    zh_function = _unique(vocab.ZH_FUNCTION)
    zh_tech = [w for w in _unique(vocab.ZH_TECH) if w not in zh_function]
    rng.shuffle(zh_tech)
    zh_rare = [w for w in _unique(vocab.ZH_RARE) if w not in zh_tech]
    zh_tail = _compounds(rng, zh_tech, ZH_TAIL_SIZE, english=False)
    zh_ranked = zh_function + zh_tech + _scatter(rng, zh_tail, zh_rare, start=2_000)
    return Vocabulary(
        en=ZipfWords.ranked(en_ranked),
        zh=ZipfWords.ranked(zh_ranked),
        en_tech=en_tech,
        en_rare=en_rare,
        en_tail=en_tail,
        zh_tech=zh_tech,
        zh_rare=zh_rare,
        zh_tail=zh_tail,
    )


def _compounds(rng: random.Random, base: list[str], count: int, *, english: bool) -> list[str]:
    """`count` distinct two-word identifiers (`retry_budget`, `cacheWarmup`, 缓存配置)."""
    seen: dict[str, None] = {}
    base_set = set(base)
    while len(seen) < count:
        first, second = rng.sample(base, 2)
        if english:
            style = rng.random()
            if style < 0.45:
                word = f"{first}_{second}"
            elif style < 0.75:
                word = f"{first}-{second}"
            else:
                word = first + second[:1].upper() + second[1:]
        else:
            word = first + second
        if word not in base_set:
            seen[word] = None
    return list(seen)


def _scatter(rng: random.Random, tail: list[str], rare: list[str], start: int) -> list[str]:
    """Insert the `rare` words at random ranks of `tail` beyond position `start`."""
    out = list(tail)
    for word in rare:
        out.insert(rng.randrange(start, len(out)), word)
    return out


# -- document plan --------------------------------------------------------------


@dataclass
class PlannedDocument:
    path: str
    name: str
    kind: str
    chinese: bool
    front_matter: bool
    target_bytes: int


def _plan_sizes(rng: random.Random, count: int, total: int) -> list[int]:
    """Truncated log-normal sizes (median ≈ 3 KiB), the upper half scaled to hit `total`.

    Scaling only sizes above the median moves the mean without moving the median,
    which is what a "median 3 KiB, total 8 MiB" corpus needs (mean ≈ 8 KiB).
    """
    sizes: list[int] = []
    mu = math.log(MEDIAN_DOC_BYTES - MIN_DOC_BYTES)  # shifted: the median lands on 3 KiB
    while len(sizes) < count:
        size = MIN_DOC_BYTES + int(rng.lognormvariate(mu, 1.5))
        if size <= MAX_DOC_BYTES:
            sizes.append(size)
    median = statistics.median(sizes)

    def scaled(factor: float) -> list[int]:
        return [s if s <= median else int(min(MAX_DOC_BYTES, max(median, s * factor)))
                for s in sizes]

    low, high = 0.1, 50.0
    for _ in range(60):
        middle = (low + high) / 2
        if sum(scaled(middle)) > total:
            high = middle
        else:
            low = middle
    return scaled(low)


def _slug(rng: random.Random, words: list[str], parts: int) -> str:
    chosen = [w.replace("_", "-").lower() for w in rng.sample(words, parts)]
    return "-".join(chosen)


def plan(seed: int = DEFAULT_SEED, vocabulary: Vocabulary | None = None) -> list[PlannedDocument]:
    """Where each document goes, its language, front matter and target size."""
    vocabulary = vocabulary or build_vocabulary(seed)
    rng = random.Random(f"plan-{seed}")
    slug_words = vocabulary.en_tech + vocabulary.en_rare
    projects = _unique(
        f"github.com-{rng.choice(vocab.PROJECT_OWNERS)}-{_slug(rng, vocabulary.en_tech, 2)}"
        for _ in range(40)
    )[:30]
    areas = _unique(_slug(rng, vocabulary.en_tech, 1) for _ in range(30))[:8]
    subfolders = ["decisions", "runbooks", "notes", "incidents", "design"]
    folders: list[tuple[str, str]] = []  # (folder, kind)
    folders += [("preferences", "user")] * 40
    folders += [("feedback", "feedback")] * 60
    folders += [(f"reference/{rng.choice(areas)}", "reference") for _ in range(100)]
    remaining = DOCUMENTS - 1 - len(folders)
    folders += [
        (f"projects/{rng.choice(projects)}/{rng.choice(subfolders)}", "project")
        for _ in range(remaining)
    ]
    sizes = _plan_sizes(rng, len(folders), TARGET_TOTAL_BYTES - ENTRY_MAX_BYTES)
    chinese = set(rng.sample(range(len(folders)), round(CHINESE_SHARE * DOCUMENTS)))
    used: set[str] = set()
    documents: list[PlannedDocument] = []
    for index, ((folder, kind), size) in enumerate(zip(folders, sizes, strict=True)):
        is_chinese = index in chinese
        while True:
            if is_chinese and rng.random() < 0.1:
                name = "-".join(rng.sample(vocabulary.zh_tech, 2))  # some notes get CJK names
            else:
                name = _slug(rng, slug_words, rng.randint(2, 4))
            path = f"{folder}/{name}.md"
            if path not in used:
                used.add(path)
                break
        documents.append(PlannedDocument(path, name, kind, is_chinese,
                                         rng.random() < FRONT_MATTER_SHARE, size))
    return documents


# -- text -------------------------------------------------------------------------


class _Writer:
    """Produces Markdown for one document from a stream of Zipf words plus topic words."""

    def __init__(self, rng: random.Random, vocabulary: Vocabulary, chinese: bool,
                 names: list[str]) -> None:
        self.rng = rng
        self.vocabulary = vocabulary
        self.chinese = chinese
        self.names = names
        self.en_topics = rng.sample(vocabulary.en_tech, 2) + rng.sample(vocabulary.en_tail, 2)
        self.zh_topics = rng.sample(vocabulary.zh_tech, 2) + rng.sample(vocabulary.zh_tail, 2)
        self._en: Iterator[str] = iter(())
        self._zh: Iterator[str] = iter(())

    def _stream(self, words: ZipfWords, topics: list[str]) -> Iterator[str]:
        while True:
            batch = words.draw(self.rng, 512)
            for index in range(len(batch)):
                if self.rng.random() < TOPIC_SHARE:
                    batch[index] = self.rng.choice(topics)
            yield from batch

    def en_word(self) -> str:
        try:
            return next(self._en)
        except StopIteration:
            self._en = self._stream(self.vocabulary.en, self.en_topics)
            return next(self._en)

    def zh_word(self) -> str:
        try:
            return next(self._zh)
        except StopIteration:
            self._zh = self._stream(self.vocabulary.zh, self.zh_topics)
            return next(self._zh)

    def sentence(self) -> str:
        rng = self.rng
        if self.chinese:
            parts: list[str] = []
            for _ in range(rng.randint(8, 26)):
                if rng.random() < 0.12:
                    parts.append(f" {self._decorated(self.en_word())} ")
                else:
                    parts.append(self.zh_word())
                if rng.random() < 0.08:
                    parts.append("，")
            return "".join(parts).strip().replace("  ", " ") + "。"
        words = [self._decorated(self.en_word()) for _ in range(rng.randint(6, 20))]
        words[0] = words[0][:1].upper() + words[0][1:]
        return " ".join(words) + rng.choice([".", ".", ".", ":", "?"])

    def _decorated(self, word: str) -> str:
        roll = self.rng.random()
        if ("_" in word or "-" in word or word != word.lower()) and roll < 0.5:
            return f"`{word}`"
        if roll < 0.004 and self.names:
            return f"[[{self.rng.choice(self.names)}]]"
        if roll < 0.008:
            return f"{self.rng.choice(['INC', 'PR', 'JIRA'])}-{self.rng.randint(100, 9999)}"
        return word

    def heading(self) -> str:
        pool = vocab.ZH_HEADINGS if self.chinese else vocab.EN_HEADINGS
        return self.rng.choice(pool)

    def title(self) -> str:
        if self.chinese:
            return "".join(self.zh_word() for _ in range(self.rng.randint(2, 4)))
        return " ".join(w.capitalize() for w in (self.en_word() for _ in range(3)))

    def block(self) -> list[str]:
        """A paragraph, a bullet list, a code block or a new section."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.45:
            return [" ".join(self.sentence() for _ in range(rng.randint(1, 3))), ""]
        if roll < 0.75:
            return [f"- {self.sentence()}" for _ in range(rng.randint(2, 6))] + [""]
        if roll < 0.85:
            lines = ["```sh" if rng.random() < 0.5 else "```toml"]
            for _ in range(rng.randint(2, 6)):
                key = self.vocabulary.en_tail[rng.randrange(len(self.vocabulary.en_tail))]
                lines.append(f"{key.replace('-', '_').lower()} = {rng.randint(1, 65536)}")
            return [*lines, "```", ""]
        return [f"## {self.heading()}", ""]


def render(document: PlannedDocument, rng: random.Random, vocabulary: Vocabulary,
           names: list[str]) -> bytes:
    """The document's Markdown, at most `target_bytes` long and within a few bytes of it."""
    writer = _Writer(rng, vocabulary, document.chinese, names)
    lines: list[str] = []
    if document.front_matter:
        lines += [
            "---",
            f"name: {document.name}",
            f"description: {writer.sentence()}",
            "metadata:",
            f"  type: {document.kind}",
            "---",
            "",
        ]
    lines += [f"# {writer.title()}", ""]
    if document.kind in ("feedback", "project") and rng.random() < 0.6:
        why, how = ("原因", "如何应用") if document.chinese else ("Why", "How to apply")
        lines += [f"**{why}:** {writer.sentence()}", "",
                  f"**{how}:** {writer.sentence()}", ""]
    lines.append(f"Updated 2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}.")
    lines.append("")
    size = sum(len(line.encode()) + 1 for line in lines)
    budget = document.target_bytes
    misses = 0
    while misses < 8:  # blocks until none fits, then single sentences to close the gap
        candidate = writer.block() if misses < 3 else [writer.sentence()]
        cost = sum(len(line.encode()) + 1 for line in candidate)
        if size + cost <= budget:
            lines += candidate
            size += cost
        else:
            misses += 1
    tail: list[str] = []
    while True:  # fill the last line word by word so sizes land close to the plan
        word = writer.zh_word() if document.chinese else writer.en_word()
        piece = word if document.chinese else (" " + word if tail else word)
        if size + len(piece.encode()) + 1 > budget:
            break
        tail.append(piece)
        size += len(piece.encode())
    if tail:
        lines.append("".join(tail))
    return "\n".join(lines).encode() + b"\n"


def memory_entry(documents: list[PlannedDocument]) -> bytes:
    """`MEMORY.md`: a few preferences and pointers to topic areas, ≤ 2 KiB, ≤ 64 lines."""
    projects = sorted({d.path.split("/")[1] for d in documents if d.kind == "project"})
    lines = [
        "# Memory",
        "",
        "Shared memory entry point. Search for detail; this file stays small.",
        "",
        "## Preferences",
        "",
        "- Answer in the language the user writes in; 中文提问用中文回答。",
        "- Prefer small focused commits with a test for every fix.",
        "- Run `ruff check` and the test suite before claiming a change is done.",
        "- Never store secrets, tokens or temporary credentials in memory.",
        "",
        "## Where things are",
        "",
        "- `preferences/`: how the user likes to work.",
        "- `feedback/`: corrections and lessons, with **Why:** and **How to apply:**.",
        "- `reference/`: stable background about tools and systems.",
        "- `projects/<stable id>/`: decisions, runbooks, incidents per project:",
    ]
    for project in projects:
        line = f"  - `projects/{project}/`"
        if len("\n".join([*lines, line]).encode()) + 1 > ENTRY_MAX_BYTES - 16:
            break
        lines.append(line)
    data = "\n".join(lines).encode() + b"\n"
    assert len(data) <= ENTRY_MAX_BYTES and data.count(b"\n") <= 64
    return data


# -- public API -------------------------------------------------------------------


@dataclass
class CorpusStats:
    """What was written: the figures the report prints next to every result."""

    seed: int
    root: str
    documents: int
    total_bytes: int
    median_bytes: int
    min_bytes: int
    max_bytes: int
    chinese_documents: int
    front_matter_documents: int
    directories: int
    entry_bytes: int
    generate_seconds: float

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def generate(dest_dir: Path, seed: int = DEFAULT_SEED) -> CorpusStats:
    """Write the corpus into `dest_dir` (a scope directory, e.g. `<root>/global/`).

    Fails loudly if the result breaks a SPEC figure the benchmark relies on
    (document count, 8 MiB total, 64 KiB per document, 2 KiB entry).
    """
    started = time.perf_counter()
    dest_dir = Path(dest_dir)
    vocabulary = build_vocabulary(seed)
    documents = plan(seed, vocabulary)
    names = [d.name for d in documents if d.front_matter]
    rng = random.Random(f"text-{seed}")
    sizes: list[int] = []
    directories: set[str] = set()
    entry = memory_entry(documents)
    dest_dir.mkdir(parents=True, exist_ok=True)
    (dest_dir / "MEMORY.md").write_bytes(entry)
    sizes.append(len(entry))
    for document in documents:
        data = render(document, rng, vocabulary, names)
        target = dest_dir / document.path
        folder = os.path.dirname(document.path)
        if folder not in directories:
            target.parent.mkdir(parents=True, exist_ok=True)
            directories.add(folder)
        target.write_bytes(data)
        sizes.append(len(data))
    total = sum(sizes)
    stats = CorpusStats(
        seed=seed,
        root=str(dest_dir),
        documents=len(sizes),
        total_bytes=total,
        median_bytes=int(statistics.median(sizes)),
        min_bytes=min(sizes),
        max_bytes=max(sizes),
        chinese_documents=sum(d.chinese for d in documents),
        front_matter_documents=sum(d.front_matter for d in documents),
        directories=len({p for f in directories for p in _ancestors(f)}),
        entry_bytes=len(entry),
        generate_seconds=round(time.perf_counter() - started, 3),
    )
    if stats.documents != DOCUMENTS or total > SCAN_BUDGET_BYTES or stats.max_bytes > MAX_DOC_BYTES:
        raise AssertionError(f"corpus outside the SPEC figures it must meet: {stats}")
    return stats


def _ancestors(folder: str) -> list[str]:
    parts = folder.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def iter_documents(scope_dir: Path) -> Iterator[tuple[str, bytes]]:
    """(logical path, bytes) of every `*.md` below `scope_dir`, in bytewise path order.

    The brute-force reference for recall checks and term selection: no store code.
    """
    scope_dir = Path(scope_dir)
    found = []
    for dirpath, dirnames, filenames in os.walk(scope_dir):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for filename in filenames:
            if filename.endswith(".md") and not filename.startswith("."):
                full = Path(dirpath) / filename
                found.append((full.relative_to(scope_dir).as_posix(), full))
    found.sort(key=lambda item: item[0].encode())
    for logical, full in found:
        yield logical, full.read_bytes()


def document_frequency(folded_documents: list[bytes], term: str) -> int:
    """How many documents contain `term` (ASCII case folded), by plain substring test."""
    needle = term.encode().lower()
    return sum(1 for data in folded_documents if needle in data)


def _main() -> None:  # pragma: no cover - manual use: python -m benchmarks.corpus DIR
    import sys

    target = Path(sys.argv[1] if len(sys.argv) > 1 else "corpus-out")
    print(generate(target).to_dict())


if __name__ == "__main__":  # pragma: no cover
    _main()
