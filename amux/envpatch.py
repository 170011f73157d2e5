"""One change to a process's environment, as data, and the one function that applies it.

Everything amux does to an environment is an `EnvPatch`: what an adapter's launch plan
sets (`LaunchPlan.env`) and its endpoint wiring adds to it, what an isolated run resets
(`Adapter.isolated_env`, `materializer.target.isolation`), what the launcher removes
of its own (`launcher.wiring.LAUNCHER_PATCH`), what a probe's command runs with
(`Probe.run`), and the agent's environment as `amux run` starts it (`Launch.env`).

`apply(env)` makes the new environment from `env` (never changed) in this order:

1. `unset`: each name removed;
2. `set`: each name given its value;
3. `copy`: each name given the value its source variable has in `env`, as it was before
   this patch (a credential the patch must not hold: an endpoint's key named by
   `--endpoint-key-env`); a source `env` lacks removes the name;
4. `path`: the directories put first on PATH, before PATH as steps 1-3 left it
   (`os.defpath` when there is none).

So a name both set and unset is set, and one both set and copied is copied.

`a.then(b)` is one patch doing `a`, then `b`: `a.then(b).apply(env) ==
b.apply(a.apply(env))` for every `env` (the one thing it cannot say, `b` copying PATH
from an `a` that puts directories on PATH, is a `ValueError`). `against(env)` is the
same patch as the changes it makes to `env`: `p.against(env).apply(env) == p.apply(env)`.

`secret` names the variables whose values are credentials: `shown()`, the patch as a
dry run prints it, never shows their values (nor a copy's: it shows `${SOURCE}`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from amux.typing_light import NamedTuple

_EMPTY: Mapping[str, str] = MappingProxyType({})
REDACTED = "<redacted>"
"""What `shown` shows for the value of a secret."""


class EnvPatch(NamedTuple):
    """A change to an environment (the module says how it applies); never changed."""

    set: Mapping[str, str] = _EMPTY
    """Variables given these values."""
    unset: tuple[str, ...] = ()
    """Variables removed."""
    copy: Mapping[str, str] = _EMPTY
    """Variables given the value of another variable (name → source) of the environment
    the patch is applied to."""
    path: tuple[str, ...] = ()
    """Directories put first on PATH."""
    secret: tuple[str, ...] = ()
    """Variables whose values are credentials: `shown` redacts them."""

    def apply(self, env: Mapping[str, str]) -> dict[str, str]:
        """The environment `env` becomes: unset, set, copy, PATH (the module's order)."""
        changed = {name: value for name, value in env.items() if name not in self.unset}
        changed.update(self.set)
        for name, source in self.copy.items():
            if source in env:
                changed[name] = env[source]
            else:
                changed.pop(name, None)
        if self.path:
            changed["PATH"] = os.pathsep.join([*self.path, changed.get("PATH", os.defpath)])
        return changed

    def then(self, other: EnvPatch) -> EnvPatch:
        """This patch, then `other`, as one: `a.then(b).apply(env) == b.apply(a.apply(env))`.
        `ValueError` when `other` copies PATH and this patch puts directories on it."""
        changed = frozenset((*other.unset, *other.set, *other.copy))
        unset = dict.fromkeys((*self.unset, *other.unset))
        values = {k: v for k, v in self.set.items() if k not in changed}
        values.update(other.set)
        copies = {k: v for k, v in self.copy.items() if k not in changed}
        secret = dict.fromkeys((*self.secret, *other.secret))
        for name, source in other.copy.items():  # read from what this patch made
            values.pop(name, None)
            if source == "PATH" and self.path:
                raise ValueError("a patch copying PATH cannot follow one putting "
                                 "directories on PATH")
            if source in self.copy:
                copies[name] = self.copy[source]
            elif source in self.set:
                values[name] = self.set[source]
            elif source in self.unset:
                unset[name] = None
            else:
                copies[name] = source
            if source in self.secret:
                secret[name] = None
        path = other.path if "PATH" in changed else (*other.path, *self.path)
        return EnvPatch(values, tuple(unset), copies, path, tuple(secret))

    def against(self, env: Mapping[str, str]) -> EnvPatch:
        """This patch as the changes it makes to `env`: without what sets a name to the
        value it has there (unless it is a secret: whether a credential equals the one
        there is not told), what removes a name not there, and what a later step
        overrides; `p.against(env).apply(env) == p.apply(env)`."""
        ours = frozenset(self.copy)
        values = {k: v for k, v in self.set.items()
                  if k not in ours and (env.get(k) != v or k in self.secret)}
        unset = tuple(dict.fromkeys(name for name in self.unset
                                    if name in env and name not in ours
                                    and name not in self.set))
        return self._replace(set=values, unset=unset)

    def shown(self) -> dict[str, str | None]:
        """The patch as a dry run shows it, by name (sorted): a set variable's value
        (`REDACTED` for a secret), a copied one's `${SOURCE}`, None for one removed. PATH's
        directories are the caller's to show (`path`)."""
        shown: dict[str, str | None] = dict.fromkeys(self.unset)
        shown.update({name: REDACTED if name in self.secret else value
                      for name, value in self.set.items()})
        shown.update({name: f"${{{source}}}" for name, source in self.copy.items()})
        return dict(sorted(shown.items()))

    def names(self) -> frozenset[str]:
        """Every variable the patch sets, removes or copies into (PATH if it prepends)."""
        return frozenset((*self.set, *self.unset, *self.copy,
                          *(("PATH",) if self.path else ())))


def changes(values: Mapping[str, str | None]) -> EnvPatch:
    """The patch setting each name to its value, or removing it where the value is None."""
    return EnvPatch({name: value for name, value in values.items() if value is not None},
                    tuple(name for name, value in values.items() if value is None))


def chain(patches: Iterable[EnvPatch]) -> EnvPatch:
    """The patches, in order, as one (`then`)."""
    joined = EnvPatch()
    for patch in patches:
        joined = joined.then(patch)
    return joined
