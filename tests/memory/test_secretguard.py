"""The secret guard's detector (`amux.memory.secretguard`): rules, placeholders, cost.

Token-shaped test values are generated here at run time from a seeded RNG, so this
file holds no credential-shaped literal of its own (the corpora are under
fixtures/secrets, tested in test_secretguard_corpus.py).
"""

from __future__ import annotations

import base64
import json
import random
import statistics
import string
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amux.errors import ERROR_TABLE, SecretDetected
from amux.memory import secretguard
from amux.memory.secretguard import RULES, fingerprint, scan

RNG = random.Random(20261130)
B62 = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"


def rand(size: int, alphabet: str = B62) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(size))


def b64(size: int) -> str:
    return base64.b64encode(RNG.randbytes(size)).decode()


def pem(kind: str) -> str:
    body = "\n".join(b64(48) for _ in range(3))
    return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----\n"


def rules(text: str) -> list[str]:
    return [finding.rule for finding in scan(text)]


# -- every rule fires on its shape -----------------------------------------------------

POSITIVE = [
    ("private-key", "my key:\n" + pem("RSA PRIVATE KEY")),
    ("private-key", pem("PRIVATE KEY")),
    ("private-key", pem("EC PRIVATE KEY")),
    ("private-key", '{"private_key": "-----BEGIN PRIVATE KEY-----\\n' + b64(48) + '\\n"}'),
    ("openssh-private-key", pem("OPENSSH PRIVATE KEY")),
    ("pgp-private-key", "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG\n\n"
     + b64(60) + "\n-----END PGP PRIVATE KEY BLOCK-----"),
    ("aws-access-key-id", f"key id AKIA{rand(16, UPPER)} for CI"),
    ("aws-access-key-id", f"ASIA{rand(16, UPPER)}"),
    ("aws-secret-access-key", f"aws_secret_access_key = {rand(40, B62 + '/+')}"),
    ("github-token", f"ghp_{rand(36)}"),
    ("github-token", f"token gho_{rand(36)} here"),
    ("github-token", f"github_pat_{rand(22)}_{rand(59)}"),
    ("gitlab-token", f"glpat-{rand(20)}"),
    ("slack-token", f"xoxb-{rand(11, string.digits)}-{rand(13, string.digits)}-{rand(24)}"),
    ("slack-webhook", f"https://hooks.slack.com/services/T{rand(8, UPPER)}/B{rand(9, UPPER)}/"
     f"{rand(24)}"),
    ("stripe-key", f"sk_live_{rand(24)}"),
    ("stripe-key", f"rk_live_{rand(24)}"),
    ("openai-key", f"sk-proj-{rand(64, B62 + '_-')}"),
    ("openai-key", f"sk-{rand(48)}"),
    ("anthropic-key", f"sk-ant-api03-{rand(90, B62 + '_-')}"),
    ("google-api-key", f"AIza{rand(35, B62 + '_-')}"),
    ("google-oauth-secret", f"GOCSPX-{rand(28)}"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ" + rand(20) + "." + rand(43, B62 + "_-")),
    ("npm-token", f"npm_{rand(36)}"),
    ("pypi-token", f"pypi-AgEIcHlwaS5vcmc{rand(60, B62 + '_-')}"),
    ("azure-storage-key", f"AccountName=x;AccountKey={b64(64)};EndpointSuffix=core"),
    ("azure-sas-token", f"https://x.blob.core.windows.net/c?sv=2022&sig={rand(44)}%3D"),
    ("azure-client-secret", f"{rand(3)}8Q~{rand(34, B62 + '_~.-')}"),
    ("huggingface-token", f"hf_{rand(34, string.ascii_letters)}"),
    ("vault-token", f"hvs.{rand(90)}"),
    ("sendgrid-key", f"SG.{rand(22)}.{rand(43)}"),
    ("digitalocean-token", f"dop_v1_{rand(64, HEX)}"),
    ("age-secret-key", f"AGE-SECRET-KEY-1{rand(58, string.ascii_uppercase + '023456789')}"),
    ("telegram-bot-token", f"bot {rand(9, string.digits)}:AA{rand(33)}"),
    ("shopify-token", f"shpat_{rand(32, HEX)}"),
    ("databricks-token", f"dapi{rand(32, HEX)}"),
    ("amux-token", "amux_" + base64.urlsafe_b64encode(RNG.randbytes(32)).decode()[:43]),
    ("url-credentials", f"postgres://app:{rand(16)}@db.internal:5432/app"),
    ("authorization-header", f"Authorization: Bearer {rand(40)}"),
    ("credential-assignment", f"password = \"{rand(14, B62 + '#$%')}\""),
    ("credential-assignment", f"DB_PASSWORD={rand(16)}"),
    ("credential-assignment", f'{{"api_key": "{rand(32, HEX)}"}}'),
    ("credential-assignment", f"  client_secret: '{rand(30)}'"),
    ("credential-assignment", f"**Token:** {rand(24)}"),
    ("credential-assignment", f"数据库密码：{rand(14)}"),
    ("credential-assignment", f"X-Api-Key: {rand(32)}"),
    ("credential-assignment", f"https://api.example.com/v1?access_token={rand(32)}&x=1"),
]


@pytest.mark.parametrize(("rule", "text"), POSITIVE, ids=[f"{r}-{i}" for i, (r, _t)
                                                         in enumerate(POSITIVE)])
def test_each_rule_reports_its_shape(rule: str, text: str) -> None:
    assert rules(text) == [rule]


def test_the_positive_examples_cover_every_rule() -> None:
    assert {rule for rule, _text in POSITIVE} == set(RULES)


# -- ordinary engineering text is left alone -------------------------------------------

NEGATIVE = [
    # hashes, revisions, ids
    "commit 1ba3a14 fixed it; full SHA 11f6ad8ec52a2984abaafd7c3b516503785c2072",
    "revision: ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb",
    '{"path":"MEMORY.md","revision":"3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73e'
    'eaed59c009d","created":true}',
    "expected_revision=ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb",
    "token_id: 3fe79c84d528",
    "token_sha256: ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb",
    "request 0c623e34-1f72-4bd8-942f-a29e79958e6a failed",
    "binding: principal:ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb",
    # base64 that is not a secret
    "echo aGVsbG8gd29ybGQ= | base64 -d",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBqqqZt1x9kP0vY2mN8wR4tL6sE3uH7jD5cF1aG ci@build",
    "-----BEGIN CERTIFICATE-----\n" + "MIIB" + "a1B2c3D4" * 8 + "\n-----END CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----\n" + "MFkw" + "x9Y8z7W6" * 8 + "\n-----END PUBLIC KEY-----",
    # a key header in prose, or with an elided body
    "The key file starts with -----BEGIN OPENSSH PRIVATE KEY----- and never goes in memory.",
    "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----",
    # URLs and versions
    "https://github.com/acme/amux/issues?q=is%3Aopen&sort=updated",
    "git@github.com:acme/amux.git and ssh://git@git.internal:2222/acme/amux.git",
    "postgres://postgres:postgres@localhost:5432/test",
    "https://user:password@example.com/path",
    "amqp://guest:guest@localhost:5672/",
    "postgresql://app:${DB_PASSWORD}@db:5432/app",
    "Python 3.11.7, Node v20.11.1, semver ^1.4.0 || >=2.0.0-rc.1+build.5",
    # the word token in prose, placeholders, code
    "Rotate the GitHub token monthly; the token is in 1Password.",
    "The tokenizer counts prompt_tokens: 512 and max_tokens: 4096.",
    "OPENAI_API_KEY=<your-api-key>",
    "ANTHROPIC_API_KEY=sk-ant-...",
    "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
    "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "DB_PASSWORD=changeme",
    "password: '********'",
    "token: xxxx-xxxx-xxxx",
    "SECRET_KEY=${DJANGO_SECRET_KEY}",
    "API_TOKEN=$CI_API_TOKEN",
    "set PASSWORD=%DB_PASSWORD%",
    "GH_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
    "api_key = os.environ[\"OPENAI_API_KEY\"]",
    "token = get_token(scope=\"repo\")",
    "password: reader.readStringNT(),",
    "credentials: OAuthCredentials",
    "const apiKey = options?.apiKey",
    "secretName: api-tls-cert",
    "secret_name: prod/db/password",
    "auth_method = \"oauth2\"",
    "token_url: https://login.example.com/oauth2/v2.0/token",
    "TOKEN_FILE=~/.config/gh/hosts.yml",
    "secret_arn: arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbCdEf",
    "access_key: AWS_ACCESS_KEY_ID",
    "curl -H \"Authorization: Bearer $TOKEN\" https://api.github.com/user",
    "Basic authentication sends user:password in base64.",
    "password_hash: $2b$12$KIXQJb6Qd5u0N9o0l7yq2e",
    "token_expiry: 3600",
    "auth=HTTPBasicAuth",
    # Chinese
    "不要把令牌、密码或私钥写进记忆；写清楚它们存放在哪里即可。",
    "密码：见 1Password 的 prod 条目。令牌：每 90 天轮换一次。",
    "凭证管理器：Vault（vault.internal:8200），登录方式为 OIDC。",
]


@pytest.mark.parametrize("text", NEGATIVE)
def test_ordinary_notes_are_not_secrets(text: str) -> None:
    assert scan(text) == []


# -- where, which and how it is reported ------------------------------------------------

def test_lines_are_one_based_and_findings_in_text_order() -> None:
    github, slack = f"ghp_{rand(36)}", f"DB_PASSWORD={rand(16)}"
    text = f"# Notes\n\nfirst {github}\r\nsecond line\n{slack}\n"
    found = scan(text)
    assert [(f.line, f.rule) for f in found] == [(3, "github-token"),
                                                 (5, "credential-assignment")]
    data = text.encode()
    assert data[found[0].start:found[0].end].decode() == github


def test_offsets_are_utf8_byte_offsets() -> None:
    value = rand(16)
    text = f"数据库密码：{value}"
    (finding,) = scan(text)
    assert text.encode()[finding.start:finding.end] == value.encode()
    assert scan(text.encode()) == [finding]


def test_a_private_key_is_reported_on_its_begin_line() -> None:
    text = "a\nb\n" + pem("RSA PRIVATE KEY")
    (finding,) = scan(text)
    assert (finding.line, finding.rule) == (3, "private-key")


def test_the_more_specific_rule_wins_and_reports_once() -> None:
    assert rules(f"GITHUB_TOKEN=ghp_{rand(36)}") == ["github-token"]
    assert rules(f"password = pypi-AgEIcHlwaS5vcmc{rand(60)}") == ["pypi-token"]
    token = f"glpat-{rand(20)}"
    assert rules(f"https://oauth2:{token}@gitlab.example.org/x.git") == ["gitlab-token"]


def test_fingerprints_name_the_value_not_its_place() -> None:
    token = f"ghp_{rand(36)}"
    first = scan(f"a {token}")[0].fingerprint
    assert first == scan(f"line\nGH={token}\n")[0].fingerprint == fingerprint(token)
    assert first == fingerprint(token.encode())
    assert len(first) == 32 and set(first) <= set(HEX)
    assert first != scan(f"ghp_{rand(36)}")[0].fingerprint


def test_the_error_names_line_rule_fingerprint_and_never_the_secret() -> None:
    secrets = [f"ghp_{rand(36)}", rand(20)]
    text = f"intro\n{secrets[0]}\nPASSWORD={secrets[1]}\n"
    error = secretguard.refusal(scan(text))
    assert isinstance(error, SecretDetected)
    assert ERROR_TABLE[error.code] == (422, 7)
    wire = error.to_wire()["error"]
    assert (wire["code"], wire["line"], wire["rule"]) == ("secret_detected", 2, "github-token")
    assert wire["fingerprint"] == fingerprint(secrets[0])
    assert [f["line"] for f in wire["findings"]] == [2, 3]
    body = json.dumps(wire) + repr(error) + str(error) + repr(scan(text))
    for secret in secrets:
        assert secret not in body
        assert secret[4:20] not in body  # not even a part of it


def test_an_error_lists_at_most_twenty_findings() -> None:
    text = "\n".join(f"ghp_{rand(36)}" for _ in range(30))
    wire = secretguard.refusal(scan(text)).to_wire()["error"]
    assert len(wire["findings"]) == secretguard.MAX_REPORTED == 20
    assert "29 more findings (`findings` lists 20)" in wire["message"]


# -- the allow list file ------------------------------------------------------------------

def test_allow_list_parse_and_render_keep_what_people_wrote() -> None:
    one, two = fingerprint("a"), fingerprint("b")
    written = secretguard.render_allow_list(None, add=one)
    assert written.startswith(b"# amux secret guard")
    assert secretguard.parse_allow_list(written) == {one}
    hand = written + f"{two.upper()}  # a public test key\nnot a fingerprint\n".encode()
    assert secretguard.parse_allow_list(hand) == {one, two}
    again = secretguard.render_allow_list(hand, add=one)
    assert again.count(one.encode()) == 1  # no duplicate
    removed = secretguard.render_allow_list(hand, remove=two)
    assert secretguard.parse_allow_list(removed) == {one}
    assert b"not a fingerprint" in removed  # other lines kept


def test_refused_filters_allowed_fingerprints() -> None:
    found = scan(f"ghp_{rand(36)}\nghp_{rand(36)}\n")
    assert secretguard.refused(found, frozenset({found[0].fingerprint})) == [found[1]]


@pytest.mark.parametrize("bad", ["", "xyz", "0" * 31, "g" * 32, None, 7])
def test_fingerprint_arguments_are_checked(bad: object) -> None:
    with pytest.raises(ValueError, match="32 hex digits"):
        secretguard.check_fingerprint(bad)


# -- value heuristics ------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["<your-token>", "xxxx-xxxx", "********", "${VAR}", "$VAR",
                                   "%VAR%", "{{ secrets.X }}", "changeme", "…", "abc...",
                                   "YOUR_API_KEY_HERE", "my-dummy-value", "example123"])
def test_placeholders(value: str) -> None:
    assert secretguard.is_placeholder(value)


@pytest.mark.parametrize("value", ["Xk9mP2vL7qR4", "s3cr3tP4ss!x", "9f86d081884c7d65",
                                   "$2oV!@7JhveskV8r", "yOuRq8Zt1x9kP0vY"])
def test_real_looking_values_are_not_placeholders(value: str) -> None:
    assert not secretguard.is_placeholder(value)
    assert secretguard.looks_random(value)


@pytest.mark.parametrize("value", ["OAuthCredentials", "reader.readStringNT", "prod-db-credentials",
                                   "HTTPClientFactory", "release2024", "AWS_ACCESS_KEY_ID",
                                   "v2.3.1-rc.1", "123456789012", "hunter2hunter2", "my-app-tls"])
def test_names_and_numbers_do_not_look_random(value: str) -> None:
    assert not secretguard.looks_random(value)


def test_random_values_look_random_at_realistic_lengths() -> None:
    """At 16+ characters nearly every generated value counts (measured misses below 2%)."""
    rng = random.Random(5)
    for alphabet in (B62, B62 + "+/", HEX, B62 + "-_", B62 + "!@#$%^&*"):
        values = ["".join(rng.choice(alphabet) for _ in range(24)) for _ in range(300)]
        missed = sum(not secretguard.looks_random(value) for value in values)
        assert missed / len(values) < 0.03, alphabet


# -- cost --------------------------------------------------------------------------------------

NOTES = Path(__file__).parents[2] / "fixtures" / "secrets" / "notes"


def _median_ms(data: bytes, rounds: int) -> float:
    scan(data)
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        scan(data)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def test_cost_on_typical_and_largest_documents() -> None:
    """Prints the measured cost (docs/store.md); bounds are loose, for slow CI machines."""
    notes = b"".join(path.read_bytes() for path in sorted(NOTES.glob("*.md")))
    typical = notes[:3072]
    largest = (notes * 40)[:64 * 1024]
    typical_ms, largest_ms = _median_ms(typical, 200), _median_ms(largest, 20)
    print(f"\nsecret guard: 3 KiB note {typical_ms:.3f} ms, 64 KiB {largest_ms:.2f} ms (median)")
    assert typical_ms < 2
    assert largest_ms < 30


ADVERSARIAL = {
    "hint words": b"key" * 21845,
    "long token runs": b"xoxb-" * 13107 + b"_",
    "key header then blanks": b"-----BEGIN PRIVATE KEY-----" + b" " * 65000,
    "many jwt starts": b"eyJ" * 21845,
    "many sk- starts": b"sk-" * 21845,
    "url without host": b"://a:" + b"b" * 65000,
    "assignments": b"token=" * 10922,
    "many Q~ starts (a needle found by its first byte)": b"Q~" * 32768,
    "a run of Q": b"Q" * 65536,
    "self-overlapping needles": b"xo" * 32768,
    "chained needles": b":AAKIA" * 10922,
}


@pytest.mark.parametrize("data", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_no_input_makes_the_scan_blow_up(data: bytes) -> None:
    """Every repeat is bounded or possessive: 64 KiB never costs more than a fraction
    of a second (measured: at most ~80 ms for 2,000 real findings)."""
    start = time.perf_counter()
    scan(data)
    assert time.perf_counter() - start < 1.0


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([
    "pass", "password", "pw", "pwd", "token", "secret", "key", "auth", "cred", "密码", "令牌",
    "=", ": ", ":=", "=>", "：", "＝", " ", "\n", "_", "-", ".", "x9Qz", "value", "`", "'",
    "\"", "**", "api", "keyword", "::",
]), max_size=40))
def test_name_hints_finds_what_finditer_finds(parts: list[str]) -> None:
    lower = "".join(parts).lower().encode()
    assert [m.span() for m in secretguard.name_hints(lower)] == [
        m.span() for m in secretguard._NAME_HINT.finditer(lower)]


# -- one automaton pass instead of a find per needle -----------------------------------


def chains(needles: tuple[bytes, ...]) -> list[bytes]:
    """Each needle run into another that begins with its end (`:AA` + `AKIA`: `:AAKIA`),
    or holding another: where a single leftmost pass cannot report both."""
    found = []
    for first in needles:
        for second in needles:
            for cut in range(1, len(first)):
                if second.startswith(first[cut:]) or first[cut:].startswith(second):
                    found.append(first + second[len(first) - cut:])
    return found


NEEDLE_PARTS = st.sampled_from([
    *secretguard._IN_DATA.needles, *secretguard._IN_LOWER.needles,
    *chains(secretguard._IN_DATA.needles), *chains(secretguard._IN_LOWER.needles),
    *(part.encode() for part in ("A", "a", "K", "I", "S", "Q", "~", "g", "h", "p", "w", "_",
                                 "-", ".", "=", ":", "?", "&", " ", "\n", "@", "/", "0123",
                                 "x9Qz", "q1W2e3R4t5Y6u7I8", "sk", "令", "密", "：")),
])


@settings(max_examples=500, deadline=None)
@given(st.lists(NEEDLE_PARTS, max_size=60))
def test_needles_finds_every_occurrence_of_every_needle(parts: list[bytes]) -> None:
    """What one leftmost pass and its windows find is what `bytes.find` finds needle by
    needle, overlapping and nested occurrences included (`:AAKIA…`, `sk-ant-`)."""
    data = b"".join(parts)
    for needles in (secretguard._IN_DATA, secretguard._IN_LOWER):
        expected = {}
        for needle in needles.needles:
            starts = [index for index in range(len(data)) if data.startswith(needle, index)]
            if starts:
                expected[needle] = starts
        assert needles.find(data) == expected


TOKEN_PARTS = st.sampled_from([
    *(literal.decode() for shape in secretguard._SHAPES for literal in shape.literals),
    "1234", "12345678", "AA", "ant-", "proj-", "v1_", "_v1_", "eyJ", ".", "-", "_", "~",
    "?", "&", "=", " ", "\n", "x9Qz", "q1W2e3R4t5Y6u7I8", "Zk3", "abcdef0123456789",
    "ABCDEFGHIJKLMNOP", "0f" * 8, "+/", "%2F",
    *(text for _rule, text in POSITIVE), *(text[:len(text) // 2] for _rule, text in POSITIVE),
])


@settings(max_examples=500, deadline=None)
@given(st.lists(TOKEN_PARTS, max_size=50))
def test_each_shape_finds_what_its_finditer_finds(parts: list[str]) -> None:
    """A shape's regex tried only at its needles finds what `finditer` over the whole
    text finds: each pattern can only match `back` bytes before one of its needles."""
    data = "".join(parts).encode()
    found = secretguard._IN_DATA.find(data)
    for shape in secretguard._SHAPES:
        expected = [span for match in shape.pattern.finditer(data)
                    for span in shape._accept(data, match)]
        got = list(shape.find(data, secretguard._starts(found, shape.literals)))
        assert got == expected, shape.rule
