"""The secret guard: memory content that looks like a credential is refused (issue 7).

Memory is replayed into later sessions, so a token pasted into a note once would be
read by every agent afterwards. `scan` finds what looks like a credential; the store
runs it on every upsert and refuses with `secret_detected` (SPEC Appendix A: HTTP
422, exit 7), naming the 1-based line, the rule and a fingerprint, never the value.

Rules (`RULES` lists their ids):

- private key blocks: a `-----BEGIN … PRIVATE KEY-----` header (PEM, OpenSSH, PGP)
  followed by key material; a header alone, in prose, is not a key;
- well-known token shapes (AWS, GitHub, GitLab, Slack, Stripe, OpenAI, Anthropic,
  Google, JWT, npm, PyPI, Azure, Hugging Face, Vault, SendGrid, DigitalOcean, age,
  Telegram, Shopify, Databricks, amux's own `amux_` tokens);
- credentials in URLs (`scheme://user:password@host`) and `Authorization` values
  (`Bearer …`, `Basic …`);
- random-looking values assigned to credential names (`password`, `token`,
  `secret`, `api_key`, `auth`, `credential`, … and their Chinese names) as
  `key = value`, `key: value`, `KEY="…"`, `"key": "…"`.

Values that are obviously placeholders (`<your-token>`, `xxxx`, `***`,
`changeme`, `${VAR}`, `$VAR`, `…`, anything with `example`/`your`/`dummy`) are
never secrets. Names, paths, URLs without credentials, versions, numbers and
identifiers assigned to credential names are not secrets either (`token =
get_token()`, `secretName: prod-db`, `TOKEN_FILE=~/.config/x`).

False positives have a narrow override: a per-scope allow list of fingerprints
(`fingerprint`, `parse_allow_list`, `render_allow_list`), stored by the store in
the scope directory as `ALLOW_LIST_NAME`. A fingerprint is a domain-separated
SHA-256 of the matched value, so allowing it allows exactly that value in that
scope and nothing else. There is no switch that turns the guard off.

Cost: everything runs on the UTF-8 bytes with regexes compiled once. One pass of an
Aho-Corasick automaton over the text (and one over its lowered copy) finds every
literal needle the rules have (`Needles`); each regex is tried only where its needle
occurs, so prose costs no Python per word. Measured in docs/store.md.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from ahocorasick_rs import MATCHKIND_LEFTMOST_FIRST, BytesAhoCorasick

from amux.errors import SecretDetected

ALLOW_LIST_NAME = ".amux-allow-secrets"
"""The allow list's file name in a scope directory (a dot-file: no operation sees it)."""

FINGERPRINT = re.compile(r"[0-9a-f]{32}")
"""A fingerprint: 32 lowercase hex digits (128 bits of a SHA-256)."""

MAX_REPORTED = 20
"""At most this many findings are listed in one error (the first is the headline)."""

_FINGERPRINT_DOMAIN = b"amux-secret-guard-v1\x00"


@dataclass(frozen=True)
class Finding:
    """Something that looks like a credential. Holds where it is, never the value."""

    line: int
    """1-based line of the value (for a private key: its BEGIN line)."""
    rule: str
    fingerprint: str
    start: int
    """Byte offsets of the value in the UTF-8 content (for tests and tooling)."""
    end: int

    def to_wire(self) -> dict[str, object]:
        return {"line": self.line, "rule": self.rule, "fingerprint": self.fingerprint}


def fingerprint(value: str | bytes) -> str:
    """The allow-list fingerprint of a matched value (reveals nothing about it)."""
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(_FINGERPRINT_DOMAIN + value)
    return digest.hexdigest()[:32]


# -- what a value looks like ---------------------------------------------------------

_PLACEHOLDER_WORDS = (
    "example", "placeholder", "changeme", "change_me", "change-me", "redacted", "dummy",
    "your", "sample", "fake", "password", "passwd", "secret", "token", "xxxx", "****",
    "...", "…",
)
_PLACEHOLDER_VALUES = frozenset({"none", "null", "nil", "true", "false", "todo", "tbd", "n/a"})
_TEMPLATE = re.compile(
    r"\$\{|\{\{|\$\(|<[^<>]*>|%\([A-Za-z_]+\)[a-z]"     # ${VAR} {{ var }} $(cmd) <name> %(name)s
    r"|\{[A-Za-z_][^{}]*\}"                             # {name}, {rand(16)}: a format field
    r"|^\$[A-Za-z_][A-Za-z0-9_]*$|^%[A-Za-z_][A-Za-z0-9_]*%$"  # $VAR %VAR%
)
_REPEATED = re.compile(r"(.)\1{5,}")
"""Six of one character in a row: `xxxxxx`, `000000`, `******`, `......` (a mask)."""


_PLACEHOLDER_WORD = re.compile("|".join(map(re.escape, _PLACEHOLDER_WORDS)))


def is_placeholder(value: str) -> bool:
    """Obviously not a real value: `<your-token>`, `xxxx`, `***`, `${VAR}`, `$VAR`, `…`."""
    low = value.lower()
    if not low or low in _PLACEHOLDER_VALUES or _TEMPLATE.search(value):
        return True
    for found in _PLACEHOLDER_WORD.finditer(low):
        # As people write it (`your`, `YOUR`, `Your`), not `yOuR` inside random text.
        written = value[found.start():found.end()]
        if written in (found.group(), found.group().upper(), found.group().capitalize()):
            return True
    return _REPEATED.search(value) is not None or (len(value) > 3 and len(set(value)) <= 3)


_SEGMENT_SEPARATORS = re.compile(r"[-_.:/@+$?]+")
_PIECES = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
WORDY = 0.75
"""Share of a value's letters and digits in words (see `wordiness`) above which it
is read as a name, not a generated value (tuned on fixtures/secrets)."""


_CONSONANTS = re.compile(r"[b-df-hj-np-tv-xz]{5}", re.IGNORECASE)
_VOWELS = frozenset("aeiouyAEIOUY")


def _strong(piece: str) -> bool:
    """A piece that reads as a word: 3+ letters, a vowel, no 5 consonants in a row."""
    return len(piece) >= 3 and piece.isalpha() and not _VOWELS.isdisjoint(piece) and (
        len(piece) < 5 or not _CONSONANTS.search(piece))


def _wordy_pieces(pieces: list[str], segment: str) -> int:
    """How many letters and digits of one separator-free segment sit in words."""
    if len(pieces) == 1 and pieces[0].isalpha() and len(pieces[0]) <= 3:
        return len(pieces[0])  # `db`, `tls`, `api`: an abbreviation on its own
    strong = [_strong(piece) for piece in pieces]
    last = len(pieces) - 1
    wordy = 0
    for index, piece in enumerate(pieces):
        if piece.isdigit():
            if len(piece) <= 4 and 0 < index == last:
                wordy += len(piece)  # `release2024`, `V1`
        elif piece.isupper() and index < last and pieces[index + 1][:1].isupper():
            if len(piece) <= 5 and strong[index + 1]:
                wordy += len(piece)  # an acronym before a Word: `HTTP`Client
        elif piece.isupper() and segment.rstrip("0123456789") != piece:
            pass  # capitals in the middle of a segment: noise, not a word
        elif strong[index] or (2 <= len(piece) <= 4 and (
            (index > 0 and strong[index - 1]) or (index < last and strong[index + 1])
        )):
            wordy += len(piece)  # an abbreviation next to a word: `Http`Body
    return wordy


def wordiness(value: str) -> float:
    """Share of `value`'s letters and digits that sit in word-like pieces.

    Pieces are the camel-case runs of separator-split segments. A piece with 3+
    letters, a vowel and no 5 consonants in a row is a word; so is a short
    abbreviation standing alone or next to a word (`db`, `Http`Body), an acronym
    before a word (`HTTP`Client) and a short number ending a segment
    (`release2024`). Identifiers score near 1 (`OAuthCredentials`,
    `reader.readStringNT`, `prod-db-credentials`); generated values score low.
    """
    total = wordy = 0
    for segment in _SEGMENT_SEPARATORS.split(value):
        pieces = _PIECES.findall(segment)
        total += sum(map(len, pieces))
        wordy += _wordy_pieces(pieces, segment)
    return wordy / total if total else 1.0


_CONSTANT = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_REFERENCE = re.compile(
    r"[a-z][a-z0-9+.-]*://\S*"          # a URL (credentials in URLs are their own rule)
    r"|arn:\S+"                          # an AWS resource name
    r"|v?\d+(?:\.\d+){1,3}(?:[-+.][0-9A-Za-z.]+)?"  # a version
    r"|\d+"                              # a number
    r"|[^@\s]+@[^@\s]+\.[a-z]{2,}",      # an e-mail address
    re.IGNORECASE,
)

ENTROPY_BITS_PER_CHAR = 3.0
"""Shannon entropy (bits per character) a value must reach to count as random.
Random base62 averages 3.4 bits at 12 characters, 3.8 at 16, 4.5 at 32; single
words and masks stay below 3 (`password`, `changeme`: 2.75). Identifiers can
score as high as secrets (`OAuthCredentials`: 3.75): `wordiness` tells those apart.
Tuned on fixtures/secrets and generated values (docs/store.md)."""

HEX_BITS_PER_CHAR = 2.5
"""The same for hex values: 16 symbols cap them at 4 bits and 12 random hex digits
average 2.95, so hex is held to less (hashes are random too: a hex value assigned
to a credential name is reported whatever it is)."""
SHORT_VALUE_SLACK = 0.6
"""Below 12 characters no value can reach `ENTROPY_BITS_PER_CHAR` comfortably; a
short value needs `log2(length) - SHORT_VALUE_SLACK` bits per character instead."""


def entropy(value: str) -> float:
    """Shannon entropy of `value` in bits per character."""
    size = len(value)
    return -sum(count / size * math.log2(count / size) for count in Counter(value).values())


def looks_random(value: str) -> bool:
    """A value that reads as generated: long enough, mixed, high-entropy, not words.

    Cheapest tests first: this runs for every value assigned to a credential name.
    """
    size = len(value)
    if size < 8 or size > 4096 or not value.isascii() or not value.isprintable():
        return False
    classes = (
        any(c.islower() for c in value) + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value) + any(not c.isalnum() for c in value)
    )
    if classes < 2 or " " in value:
        return False
    bits = HEX_BITS_PER_CHAR if _HEX.fullmatch(value) else ENTROPY_BITS_PER_CHAR
    if entropy(value) < min(bits, math.log2(size) - SHORT_VALUE_SLACK):
        return False
    if _REFERENCE.fullmatch(value) or _CONSTANT.fullmatch(value) or is_placeholder(value):
        return False  # a URL, a version, `AWS_SECRET_ACCESS_KEY` (a variable's name), `xxxx`
    return wordiness(value[:256]) < WORDY  # else an identifier, a name: made of words


# -- rules ---------------------------------------------------------------------------

Check = Callable[[str], bool]
_WORD = frozenset((string.ascii_letters + string.digits + "_").encode())


def _not_placeholder(value: str) -> bool:
    return not is_placeholder(value)


def _random(value: str) -> bool:
    """For a shape whose prefix alone is common: the rest must look generated."""
    return not is_placeholder(value) and looks_random(value)


class Needles:
    """Where literal needles occur in a text, every occurrence (overlapping ones too), in
    one pass of a compiled Aho-Corasick automaton (`ahocorasick_rs`, with a SIMD
    prefilter) instead of one `bytes.find` pass per needle: the guard looks for ~80
    needles, and those passes were most of its time on a large note.

    The prefilter needs 3 bytes of a needle to be selective (one 2-byte needle made the
    pass 3× slower), so a shorter needle is found on its own, by its first byte
    (`memchr`): give one only when that byte is rare in text (`Q~`)."""

    def __init__(self, needles: Iterable[bytes]) -> None:
        self.needles = tuple(dict.fromkeys(needles))
        self._short = [needle for needle in self.needles if len(needle) < 3]
        patterns = [needle for needle in self.needles if len(needle) >= 3]
        self._patterns = patterns
        self._leftmost = BytesAhoCorasick(patterns, matchkind=MATCHKIND_LEFTMOST_FIRST)
        self._within = [[(cut, other) for other in patterns for cut in range(len(needle))
                         if other.startswith(needle[cut:]) or needle[cut:].startswith(other)
                         if (cut, other) != (0, needle)] for needle in patterns]
        """Per pattern: (offset, another) where another can start inside or at an
        occurrence of it (`xox` in `xoxox`, `AKIA` in `:AAKIA`, `sk-ant-` at `sk-`)."""

    def find(self, data: bytes) -> dict[bytes, list[int]]:
        """Each needle that occurs in `data` → its start offsets, ascending.

        The leftmost-first pass (the fast one) reports no match that starts inside or at
        another it reports, and every occurrence starts in one it reports or after it:
        what can start inside a reported one is checked where it would be."""
        found: dict[bytes, set[int]] = {}
        for index, start, _ in self._leftmost.find_matches_as_indexes(data):
            found.setdefault(self._patterns[index], set()).add(start)
            for cut, other in self._within[index]:
                if data.startswith(other, start + cut):
                    found.setdefault(other, set()).add(start + cut)
        for needle in self._short:
            at = data.find(needle[:1])
            while at >= 0:
                if data.startswith(needle, at):
                    found.setdefault(needle, set()).add(at)
                at = data.find(needle[:1], at + 1)
        return {needle: sorted(starts) for needle, starts in found.items()}


def _matches_at(pattern: re.Pattern[bytes], data: bytes, starts: Iterable[int],
               ) -> Iterator[re.Match[bytes]]:
    """What `pattern.finditer(data)` finds when a match can only begin at one of `starts`
    (ascending): the pattern is tried there alone, none inside the previous match."""
    end = 0
    for start in starts:
        if start >= end:
            match = pattern.match(data, start)
            if match is not None:
                end = match.end()
                yield match


def _starts(found: Mapping[bytes, list[int]], needles: Iterable[bytes]) -> list[int]:
    """Where any of `needles` starts, ascending."""
    return sorted({start for needle in needles for start in found.get(needle, ())})


class _Shape:
    """A token with a recognisable shape: literal needles, a regex, a value check."""

    def __init__(self, rule: str, needles: tuple[str, ...], pattern: str, check: Check = (
        _not_placeholder), *, before: str = "word-", back: int = 0,
    ) -> None:
        self.rule = rule
        self.needles = needles
        self.literals = tuple(needle.encode() for needle in needles)
        self.pattern = re.compile(pattern.encode())
        """It can match only `back` bytes before one of the needles."""
        self.check = check
        self.before = {"word-": _WORD | {ord("-")}, "word": _WORD, "": frozenset()}.get(
            before, _WORD | frozenset(before.encode()))
        """Bytes that may not precede the match (a boundary `\\b` cannot express)."""
        self.back = back
        """How far before a needle the pattern starts (0: it starts with the needle)."""
        self._value = "v" in self.pattern.groupindex

    def find(self, data: bytes, starts: Iterable[int]) -> Iterator[tuple[int, int]]:
        """Spans of the values in `data`, given where its needles start (ascending): what
        `pattern.finditer(data)` finds, the pattern tried only where it can match."""
        ats = (start - self.back for start in starts if start >= self.back)
        for found in _matches_at(self.pattern, data, ats):
            yield from self._accept(data, found)

    def _accept(self, data: bytes, match: re.Match[bytes]) -> Iterator[tuple[int, int]]:
        if match.start() and data[match.start() - 1] in self.before:
            return
        start, end = match.span("v") if self._value else match.span()
        value = data[start:end].decode("utf-8", "replace")
        for needle in self.needles:  # `AGE-SECRET-KEY-` says nothing about the value
            if value.startswith(needle):
                value = value[len(needle):]
                break
        if self.check(value):
            yield start, end


_END = r"(?![A-Za-z0-9_-])"

_SHAPES: tuple[_Shape, ...] = (
    _Shape("aws-access-key-id", ("AKIA", "ASIA", "ABIA", "ACCA"),
           r"A(?:KI|SI|BI|CC)A[A-Z0-9]{16}(?![A-Za-z0-9])", before="word"),
    _Shape("github-token", ("ghp_", "gho_", "ghs_", "ghu_", "ghr_", "github_pat_"),
           r"g(?:h[pousr]_[A-Za-z0-9]{36,251}|ithub_pat_[A-Za-z0-9_]{40,251})" + _END),
    _Shape("gitlab-token", ("glpat-", "gldt-", "glrt-", "glptt-", "glsoat-", "glcbt-"),
           r"gl(?:pat|dt|rt|ptt|soat|cbt)-[A-Za-z0-9_.-]{20,512}+" + _END),
    _Shape("slack-token", ("xox",), r"xox[abposre]-(?:\d+-)?[A-Za-z0-9-]{10,512}+" + _END, _random),
    _Shape("slack-webhook", ("hooks.slack.com",),
           r"hooks\.slack\.com/(?:services|workflows)/(?P<v>[A-Za-z0-9/_-]{20,512}+)", before=""),
    _Shape("stripe-key", ("sk_live_", "rk_live_", "whsec_"),
           r"(?:[sr]k_live_[A-Za-z0-9]{20,512}+|whsec_[A-Za-z0-9+/=]{32,512}+)" + _END),
    _Shape("anthropic-key", ("sk-ant-",), r"sk-ant-[A-Za-z0-9_-]{32,512}+" + _END),
    _Shape("openai-key", ("sk-",),
           r"sk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{32,512}+" + _END, _random),
    _Shape("google-api-key", ("AIza",), r"AIza[0-9A-Za-z_-]{35}" + _END),
    _Shape("google-oauth-secret", ("GOCSPX-",), r"GOCSPX-[0-9A-Za-z_-]{28}" + _END),
    _Shape("jwt", ("eyJ",),
           r"eyJ[A-Za-z0-9_-]{10,512}+\.eyJ[A-Za-z0-9_-]{10,4096}+\.[A-Za-z0-9_-]{16,1024}+"
           r"(?![A-Za-z0-9_.-])"),
    _Shape("npm-token", ("npm_",), r"npm_[A-Za-z0-9]{36}" + _END),
    _Shape("pypi-token", ("pypi-Ag",), r"pypi-Ag[A-Za-z0-9_-]{50,512}+" + _END),
    _Shape("azure-storage-key", ("AccountKey=", "SharedAccessKey="),
           r"(?:AccountKey|SharedAccessKey)=(?P<v>[A-Za-z0-9+/]{40,512}+={0,2})", before=""),
    _Shape("azure-sas-token", ("sig=",), r"[?&]sig=(?P<v>[A-Za-z0-9%+/=]{40,512}+)", _random,
           before="", back=1),
    _Shape("azure-client-secret", ("Q~",),
           r"[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])", _random,
           before="~.-", back=4),
    _Shape("huggingface-token", ("hf_",), r"hf_[A-Za-z]{34,40}" + _END),
    _Shape("vault-token", ("hvs.", "hvb.", "hvr."), r"hv[sbr]\.[A-Za-z0-9_-]{24,512}+" + _END,
           _random),
    _Shape("sendgrid-key", ("SG.",), r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + _END),
    _Shape("digitalocean-token", ("dop_v1_", "doo_v1_", "dor_v1_"),
           r"do[por]_v1_[a-f0-9]{64}" + _END),
    _Shape("age-secret-key", ("AGE-SECRET-KEY-",), r"AGE-SECRET-KEY-1[0-9A-Z]{58}" + _END),
    _Shape("telegram-bot-token", (":AA",), r"(?<=[0-9]{8}):AA[A-Za-z0-9_-]{33}" + _END,
           before=""),
    _Shape("shopify-token", ("shpat_", "shpca_", "shppa_", "shpss_"),
           r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _END),
    _Shape("databricks-token", ("dapi",), r"dapi[a-f0-9]{32}(?:-\d)?" + _END, _random),
    _Shape("amux-token", ("amux_",), r"amux_[A-Za-z0-9_-]{43}" + _END),
)

MULTI_LINE_MARKER = b"PRIVATE KEY"
"""In every private key block's header, the one rule that spans lines; every other rule
matches within one line (names, operators and values exclude line breaks), which
`scan_change` relies on."""

_BREAK = rb"(?:\r?\n|\\r\\n|\\n)"
"""A line break, or its escape inside a JSON string (a key pasted from a credentials file)."""
_PRIVATE_KEY = re.compile(
    rb"-----BEGIN (?P<kind>(?:[A-Z0-9]{1,12} ){0,3})PRIVATE KEY(?: BLOCK)?-----"
    rb"(?:[ \t]{0,8}" + _BREAK + rb"(?:[ \t]{0,8}" + _BREAK + rb"){0,2}|[ \t]{1,8})"
    rb"(?:[A-Za-z][A-Za-z-]{0,30}:[^\r\n\\]{0,200}" + _BREAK
    + rb"(?:[ \t]{0,8}" + _BREAK + rb"){0,2}){0,4}"
    rb"[ \t]{0,8}(?P<v>[A-Za-z0-9+/=]{32,512})"
)
"""A key header, optional PEM/PGP headers (`Proc-Type:`, `Version:`), then key material.
Every repeat is bounded and no two adjacent parts can match the same text, so the
regex cannot backtrack badly whatever the content."""
_URL_CREDENTIALS = re.compile(rb"://(?P<user>[^\s:/@?#\[\]]{0,256}):(?P<v>[^\s/@?#]{1,256})@[^\s/@?#]")
_URL_DEFAULTS = frozenset({"postgres", "root", "admin", "guest", "pass", "user", "test", "mysql",
                           "redis", "rabbitmq", "minio", "minioadmin", "default"})
_AUTH_SCHEME = re.compile(rb"(?:bearer|basic)[ \t]{1,8}(?P<v>[a-z0-9._~+/-]{16,512}+={0,2})")
"""Run on the lowered text; the value is then read from the original."""

_CHINESE_WORDS = ("密码", "口令", "密钥", "令牌", "凭据", "凭证")
_OPERATOR = r"[*_`'\"\]]{0,3}[ \t]{0,8}(?::=|=>|==?|:(?!:)|：|＝)"
_NAME_HINT = re.compile(
    (r"(?:pass|pwd|pw\b|token|secret|key|auth|cred|" + "|".join(_CHINESE_WORDS)
     + r")(?P<tail>[\w.-]{0,80}+)" + _OPERATOR).encode()
)
"""A word credential names contain, the rest of the name, then an assignment operator;
run on the lowered text, so prose ("the token is") costs no Python at all."""
_HINT_WORDS = (b"pass", b"pwd", *(b"pw" + bytes([after]) for after in b".-*`'\"] \t:=\xef"),
               b"token", b"secret", b"key", b"auth", b"cred",
               *(word.encode() for word in _CHINESE_WORDS))
"""Where a `_NAME_HINT` match can start: its alternatives' first words, with `pw` as the
3 bytes it starts (`pw\\b`, then the name's tail or the operator) so that `Needles` can
find it in its one pass."""


_IN_LOWER = Needles((*_HINT_WORDS, b"bearer", b"basic"))
"""What the guard looks for in the lowered text: name hints and authorization schemes."""


def name_hints(lower: bytes, found: Mapping[bytes, list[int]] | None = None,
               ) -> Iterator[re.Match[bytes]]:
    """`_NAME_HINT.finditer(lower)`, found faster: the pattern is tried only where one of
    its first words starts (`found`: `_IN_LOWER.find(lower)`, computed when not given),
    not at every position. Same matches, same order."""
    if found is None:
        found = _IN_LOWER.find(lower)
    return _matches_at(_NAME_HINT, lower, _starts(found, _HINT_WORDS))


_AFTER_NAME = re.compile(
    (_OPERATOR + r"[ \t]{0,8}[*_]{0,2}[ \t]{0,8}"
     r"(?:\"(?P<dq>[^\"\n]{1,512})\"|'(?P<sq>[^'\n]{1,512})'|`(?P<bq>[^`\n]{1,512})`"
     r"|(?P<bare>[^\s\"'`,;<>(){}\[\]|]{1,512}))").encode()
)
_NAME_BYTES = _WORD | frozenset(b".-")
_NAME_PARTS = re.compile(r"[A-Z]+\d*(?![a-z])|[A-Z]?[a-z]+\d*|\d+|[^\W\d_A-Za-z]+")
_CREDENTIAL_WORDS = frozenset({
    "password", "passwords", "passwd", "passphrase", "pwd", "pw", "pass", "token", "tokens",
    "secret", "secrets", "credential", "credentials", "creds", "cred", "auth", "apikey",
    "accesskey", "secretkey", "privatekey", "authtoken", "accesstoken", "refreshtoken",
    "clientsecret", "sessiontoken", "bearer", "authkey",
})
_CREDENTIAL_PAIRS = frozenset({
    ("api", "key"), ("access", "key"), ("private", "key"), ("signing", "key"),
    ("encryption", "key"), ("master", "key"), ("account", "key"), ("app", "key"),
    ("client", "key"), ("license", "key"), ("session", "key"), ("subscription", "key"),
})
_QUALIFIERS = frozenset({
    "id", "ids", "name", "names", "type", "types", "url", "uri", "urls", "endpoint", "host",
    "file", "files", "path", "paths", "dir", "env", "var", "variable", "length", "len", "size",
    "count", "expiry", "expires", "expiration", "ttl", "timeout", "lifetime", "hash", "hashed",
    "digest", "sha", "sha1", "sha256", "md5", "fingerprint", "prefix", "suffix", "format",
    "header", "field", "policy", "method", "mode", "scope", "scopes", "kind", "version",
    "limit", "min", "max", "enabled", "required", "rotation", "hint", "label", "ref", "arn",
    "provider", "store", "manager", "source", "location", "used", "usage", "budget", "window",
    "rate", "cost", "strength", "regex", "pattern", "rule", "rules", "command", "cmd",
})
"""A last name part that says the value is about a credential, not one (`token_url`)."""

RULES: tuple[str, ...] = (
    "private-key", "openssh-private-key", "pgp-private-key",
    *(shape.rule for shape in _SHAPES), "aws-secret-access-key",
    "url-credentials", "authorization-header", "credential-assignment",
)
"""Every rule id a `secret_detected` error can name, the more specific first."""


@functools.lru_cache(maxsize=4096)
def _credential_name(name: str) -> bool:
    """Whether a key name says it holds a credential (`DB_PASSWORD`, `apiKey`, `x-auth-token`)."""
    if any(word in name for word in _CHINESE_WORDS):
        return True
    parts = [part.lower() for part in _NAME_PARTS.findall(name)]
    if not parts or parts[-1] in _QUALIFIERS:
        return False
    words = [part.rstrip("0123456789") for part in parts]
    if any(word in _CREDENTIAL_WORDS for word in words):
        return True
    return any(pair in _CREDENTIAL_PAIRS for pair in itertools.pairwise(words))


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _assignments(data: bytes, lower: bytes, found: Mapping[bytes, list[int]],
                 ) -> Iterator[tuple[int, int, str]]:
    """Values assigned to credential names: (start, end, rule)."""
    seen_end = -1
    values: dict[bytes, bool] = {}
    for hint in name_hints(lower, found):
        if hint.start() < seen_end:
            continue  # a credential word inside the previous value names nothing
        end = hint.end("tail")
        after = _AFTER_NAME.match(data, end)
        if after is None:
            continue  # `token: ` with no value on the line
        seen_end = after.end()
        start, floor = hint.start(), max(0, hint.start() - 80)
        while start > floor and data[start - 1] in _NAME_BYTES:
            start -= 1
        name = _text(data[start:end]).strip(".-")
        if not _credential_name(name):
            continue
        group = after.lastgroup or "bare"
        value_start, value_end = after.span(group)
        if group == "bare":
            if data[value_end:value_end + 1] in (b"(", b"[", b"{"):
                continue  # `password: reader.read()`, `x[i]`, `f"…{x}"`: code, not a value
            value_end = value_start + len(data[value_start:value_end].rstrip(b".:!?*_"))
        value = data[value_start:value_end]
        secret = values.get(value)
        if secret is None:
            secret = values[value] = looks_random(_text(value))
        if secret:
            squeezed = name.lower().replace("_", "").replace("-", "")
            aws = "secretaccesskey" in squeezed or ("aws" in squeezed and "secret" in squeezed)
            yield value_start, value_end, ("aws-secret-access-key" if aws
                                           else "credential-assignment")


def _private_keys(data: bytes) -> Iterator[tuple[int, int, str, int]]:
    """Private key blocks: (value start, value end, rule, header start)."""
    for match in _PRIVATE_KEY.finditer(data):
        if len(set(match.group("v"))) < 10:
            continue  # a mask (`AAAA…`, `xxxx…`), not key material
        kind = match.group("kind").strip()
        rule = {b"OPENSSH": "openssh-private-key", b"PGP": "pgp-private-key"}.get(
            kind, "private-key")
        yield match.start("v"), match.end("v"), rule, match.start()


def _url_credentials(data: bytes, starts: list[int]) -> Iterator[tuple[int, int]]:
    """`scheme://user:password@host`, tried where `://` starts."""
    if not starts or b"@" not in data:
        return
    for match in _matches_at(_URL_CREDENTIALS, data, starts):
        password, user = _text(match.group("v")), _text(match.group("user"))
        low = password.lower()
        if is_placeholder(password) or low in _URL_DEFAULTS or low == user.lower() or (
            user and is_placeholder(user)
        ):
            continue
        if len(password) >= 6 or looks_random(password):
            yield match.span("v")


def _auth_headers(data: bytes, lower: bytes, starts: list[int]) -> Iterator[tuple[int, int]]:
    """`Bearer …` and `Basic …` values, tried where a scheme's name starts."""
    for match in _matches_at(_AUTH_SCHEME, lower, starts):
        if match.start() and lower[match.start() - 1] in _WORD:
            continue
        value_start, value_end = match.span("v")
        if looks_random(_text(data[value_start:value_end])):
            yield value_start, value_end


_IN_DATA = Needles((*(literal for shape in _SHAPES for literal in shape.literals), b"://",
                    MULTI_LINE_MARKER))
"""What the guard looks for in the text as written: token shapes' literal parts, URLs'
`://` and the private key header's words."""


def scan(content: str | bytes) -> list[Finding]:
    """Everything in `content` that looks like a credential, in text order.

    Works on the UTF-8 bytes (the store has them already; bytes regexes and finds are
    cheaper than `str` ones once a text holds one non-Latin-1 character). Where two
    rules match overlapping text the more specific one (earlier in `RULES`) wins, so
    a GitHub token in `TOKEN=ghp_…` is reported as `github-token`.
    """
    data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
    found = _IN_DATA.find(data)
    spans: list[tuple[int, int, str, int]] = (
        list(_private_keys(data)) if MULTI_LINE_MARKER in found else [])
    for shape in _SHAPES:  # the more specific first
        if not found.keys().isdisjoint(shape.literals):
            spans.extend((start, end, shape.rule, start)
                         for start, end in shape.find(data, _starts(found, shape.literals)))
    spans.extend((start, end, "url-credentials", start)
                  for start, end in _url_credentials(data, found.get(b"://", [])))
    lower = data.lower()  # ASCII letters only: same length, same offsets
    in_lower = _IN_LOWER.find(lower)
    spans.extend((start, end, "authorization-header", start) for start, end
                 in _auth_headers(data, lower, _starts(in_lower, (b"bearer", b"basic"))))
    spans.extend((start, end, rule, start)
                 for start, end, rule in _assignments(data, lower, in_lower))
    taken = _Taken()
    kept = [span for span in spans if taken.add(span[0], span[1])]  # the more specific first
    kept.sort(key=lambda span: (span[3], span[0]))
    findings, line, counted = [], 1, 0
    for start, end, rule, anchor in kept:
        line += data.count(b"\n", counted, anchor)
        counted = anchor
        findings.append(Finding(line, rule, fingerprint(data[start:end]), start, end))
    return findings


_CHUNK = 4096


def changed_lines(old: bytes, new: bytes) -> tuple[int, int] | None:
    """The byte span of `new` an incremental scan reads: every line that differs from
    `old`, with one line of context on each side; None when all of `new` must be read
    (it holds a multi-line marker)."""
    if MULTI_LINE_MARKER in new:
        return None
    limit = min(len(old), len(new))
    prefix = _common(limit, lambda i, j: old[i:j] == new[i:j])
    suffix = _common(limit - prefix, lambda i, j: old[len(old) - j:len(old) - i]
                     == new[len(new) - j:len(new) - i])
    start = new.rfind(b"\n", 0, max(0, new.rfind(b"\n", 0, prefix))) + 1
    end = len(new) - suffix
    for _ in range(2):  # to the end of the changed line, then of the next one
        found = new.find(b"\n", end)
        end = len(new) if found < 0 else found + 1
    return start, end


def _common(limit: int, same: Callable[[int, int], bool]) -> int:
    """The length of the common run (at most `limit`), where `same(i, j)` says whether
    the two texts agree on positions i..j: whole chunks first, then a binary search in
    the first that differs; slice comparisons (memcmp) copying little, never a byte
    loop."""
    low = 0
    while low + _CHUNK <= limit and same(low, low + _CHUNK):
        low += _CHUNK
    high = min(limit, low + _CHUNK)
    while low < high:
        middle = (low + high + 1) // 2
        if same(low, middle):
            low = middle
        else:
            high = middle - 1
    return low


CHANGE_SCAN_FROM = 4096
"""The size from which `scan_change` reads only what changed: below it a full scan
costs no more than finding the changed lines (3 KiB: ~60 µs either way for a one-line
edit on a slow host, and a full scan is cheaper when most lines changed)."""


def scan_change(old: bytes, new: bytes, *, from_size: int = CHANGE_SCAN_FROM,
                ) -> list[Finding]:
    """`scan(new)` for content `new` replacing `old` that had no finding at all: from
    `from_size` bytes only the lines that changed are read (a typical edit of a large
    note costs a small scan), with the findings' lines and offsets those of `new`."""
    span = changed_lines(old, new) if len(new) >= from_size else None
    if span is None:
        return scan(new)
    start, end = span
    findings = scan(new[start:end])
    before = new.count(b"\n", 0, start) if findings else 0
    return [Finding(found.line + before, found.rule, found.fingerprint, found.start + start,
                    found.end + start) for found in findings]


class _Taken:
    """Disjoint spans already reported, sorted, for O(log n) overlap checks."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, start: int, end: int) -> bool:
        """Take [start, end) unless it overlaps a span already taken."""
        index = bisect.bisect_left(self.starts, start)
        if index and self.ends[index - 1] > start:
            return False
        if index < len(self.starts) and self.starts[index] < end:
            return False
        self.starts.insert(index, start)
        self.ends.insert(index, end)
        return True


def refused(findings: Iterable[Finding], allowed: frozenset[str]) -> list[Finding]:
    """The findings whose value the scope's allow list does not allow."""
    return [finding for finding in findings if finding.fingerprint not in allowed]


# -- the allow list file -------------------------------------------------------------

ALLOW_LIST_HEADER = """\
# amux secret guard: values allowed in this memory scope although they look like
# credentials. One fingerprint per line (from a secret_detected error); text after
# '#' is a comment. Managed with `amux system secrets allow|remove|list`; the Hub
# re-reads this file on every refused write, so hand edits apply at once.
"""


def parse_allow_list(data: bytes) -> frozenset[str]:
    """The fingerprints of an allow-list file (other lines are ignored)."""
    allowed = set()
    for raw in data.decode("utf-8", "replace").splitlines():
        word = raw.split("#", 1)[0].strip().lower()
        if FINGERPRINT.fullmatch(word):
            allowed.add(word)
    return frozenset(allowed)


def render_allow_list(data: bytes | None, add: str | None = None,
                      remove: str | None = None) -> bytes:
    """The allow-list file with `add` appended or `remove` dropped; other lines kept."""
    lines = (data or ALLOW_LIST_HEADER.encode()).decode("utf-8", "replace").splitlines()
    if remove is not None:
        lines = [line for line in lines
                 if line.split("#", 1)[0].strip().lower() != remove]
    if add is not None and add not in parse_allow_list("\n".join(lines).encode()):
        lines.append(add)
    return ("\n".join(lines) + "\n").encode("utf-8")


def check_fingerprint(value: object) -> str:
    """A fingerprint argument, validated (raises ValueError)."""
    if not isinstance(value, str) or not FINGERPRINT.fullmatch(value.strip().lower()):
        raise ValueError("a fingerprint is the 32 hex digits a secret_detected error names")
    return value.strip().lower()


def refusal(findings: list[Finding]) -> SecretDetected:
    """The `secret_detected` error for refused findings (the first is the headline)."""
    first = findings[0]
    listed = [finding.to_wire() for finding in findings[:MAX_REPORTED]]
    return SecretDetected(first.line, first.rule, first.fingerprint, listed, len(findings))
