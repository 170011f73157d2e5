"""`EnvPatch`: the one change to an environment, and its laws (`amux/envpatch.py`)."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amux.envpatch import REDACTED, EnvPatch, chain

NAMES = st.sampled_from(["A", "B", "C", "KEY", "PATH", "HOME"])
VALUES = st.text(alphabet="ab:/", max_size=4)
ENVS = st.dictionaries(NAMES, VALUES, max_size=6)


@st.composite
def patches(draw: st.DrawFn, copy_path: bool = True) -> EnvPatch:
    sources = NAMES if copy_path else NAMES.filter(lambda name: name != "PATH")
    return EnvPatch(draw(st.dictionaries(NAMES, VALUES, max_size=3)),
                    tuple(draw(st.lists(NAMES, max_size=3))),
                    draw(st.dictionaries(NAMES, sources, max_size=2)),
                    tuple(draw(st.lists(st.sampled_from(["/p", "/q", ""]), max_size=2))),
                    tuple(draw(st.lists(NAMES, max_size=2))))


def in_order(patch: EnvPatch, env: dict[str, str]) -> dict[str, str]:
    """The module's documented order, step by step."""
    step = {name: value for name, value in env.items() if name not in patch.unset}
    for name, value in patch.set.items():
        step[name] = value
    for name, source in patch.copy.items():
        if source in env:
            step[name] = env[source]
        else:
            step.pop(name, None)
    if patch.path:
        step["PATH"] = os.pathsep.join([*patch.path, step.get("PATH", os.defpath)])
    return step


@given(patches(), ENVS)
def test_apply_is_unset_set_copy_then_path(patch: EnvPatch, env: dict[str, str]) -> None:
    before = dict(env)
    assert patch.apply(env) == in_order(patch, env)
    assert env == before  # never changed


@given(patches(), patches(), ENVS)
def test_then_is_one_patch_after_the_other(a: EnvPatch, b: EnvPatch,
                                           env: dict[str, str]) -> None:
    if a.path and "PATH" in b.copy.values():
        with pytest.raises(ValueError, match="PATH"):
            a.then(b)
        return
    assert a.then(b).apply(env) == b.apply(a.apply(env))


@given(patches(copy_path=False), patches(copy_path=False), patches(copy_path=False), ENVS)
def test_then_is_associative(a: EnvPatch, b: EnvPatch, c: EnvPatch,
                             env: dict[str, str]) -> None:
    assert a.then(b).then(c).apply(env) == a.then(b.then(c)).apply(env)
    assert chain([a, b, c]).apply(env) == c.apply(b.apply(a.apply(env)))
    assert EnvPatch().then(a).apply(env) == a.then(EnvPatch()).apply(env) == a.apply(env)


@given(patches(), ENVS)
def test_against_an_env_changes_it_the_same(patch: EnvPatch, env: dict[str, str]) -> None:
    fewest = patch.against(env)
    assert fewest.apply(env) == patch.apply(env)
    assert all(env.get(name) != value or name in patch.secret
               for name, value in fewest.set.items())
    assert set(fewest.unset) <= set(env)


@given(patches(), patches())
def test_a_secret_value_is_never_shown(a: EnvPatch, b: EnvPatch) -> None:
    for patch in (a, b, a.then(b) if not (a.path and "PATH" in b.copy.values()) else a):
        shown = patch.shown()
        assert list(shown) == sorted(shown)
        for name in patch.secret:
            assert shown.get(name) in (None, REDACTED) or name in patch.copy
        for name, value in patch.set.items():
            if name in patch.secret and name not in patch.copy:
                assert shown[name] == REDACTED
            elif name not in patch.copy:
                assert shown[name] == value
        for name, source in patch.copy.items():
            assert shown[name] == f"${{{source}}}"


def test_a_copy_of_a_secret_is_a_secret() -> None:
    """A value taken from a secret stays one under its new name when patches compose."""
    first = EnvPatch({"TOKEN": "s3cr3t"}, secret=("TOKEN",))
    joined = first.then(EnvPatch(copy={"OTHER": "TOKEN"}))
    assert joined.apply({}) == {"TOKEN": "s3cr3t", "OTHER": "s3cr3t"}
    assert "s3cr3t" not in joined.shown().values()


def test_a_copy_reads_the_environment_the_patch_is_applied_to() -> None:
    """Claude's endpoint key: the user's ANTHROPIC_API_KEY given as the bearer token, and
    removed under its own name, in one patch."""
    patch = EnvPatch(unset=("ANTHROPIC_API_KEY",),
                     copy={"ANTHROPIC_AUTH_TOKEN": "ANTHROPIC_API_KEY"})
    assert patch.apply({"ANTHROPIC_API_KEY": "k"}) == {"ANTHROPIC_AUTH_TOKEN": "k"}
    assert patch.apply({}) == {}
    assert patch.shown() == {"ANTHROPIC_API_KEY": None,
                             "ANTHROPIC_AUTH_TOKEN": "${ANTHROPIC_API_KEY}"}


def test_path_goes_first_on_path_or_the_default() -> None:
    patch = EnvPatch(path=("/bin/amux",))
    assert patch.apply({"PATH": "/usr/bin"})["PATH"] == f"/bin/amux{os.pathsep}/usr/bin"
    assert patch.apply({})["PATH"] == f"/bin/amux{os.pathsep}{os.defpath}"
    assert patch.names() == {"PATH"}
