"""Each known agent as installed here: on PATH or not, its version, and whether every
integration point its adapter declares (`Adapter.requires`) is in that version.

Probed, never assumed. A flag must appear, as a word, in the output of the agent's own
help (`Requirement.help_args`, each asked once, bounded). A variable or a setting must be a
string in the agent's installed code: the executable's real path and, when it belongs to
an npm package (a `package.json` at most `PACKAGE_LEVELS` directories up), that package's
code files and those of the packages it depends on, found as Node finds them (npm's Codex
is a Node script that starts a native binary from an optional dependency). The files are
searched as bytes (a native binary holds its strings too), each file once (a hard link is
the same file), regular files only (a FIFO, socket or device among them is skipped, never
waited on), stopping when every name is found, within `SEARCH_SECONDS` and
`SEARCH_BYTES`; what could not be told is a note, never a problem. An agent whose
executable unpacks its code on first start (Copilot CLI's single executable holds it
compressed) names where with `unpacked_code(env, version)` (glob patterns of
directories); what the installed code lacks is then searched there too, and when no such
directory exists yet it could not be told.

What each agent is (its requirements, its npm package for the fixes) comes from its
adapter, and every fix installing one from `amux.adapters.install`; nothing here knows a
particular agent.
"""

from __future__ import annotations

import glob
import json
import mmap
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from amux.adapters import ADAPTERS
from amux.adapters.base import Adapter, Requirement
from amux.adapters.install import install_hint
from amux.doctor import Finding
from amux.envpatch import EnvPatch
from amux.launcher import readfile
from amux.launcher.probe import SystemProbe

HELP_TIMEOUT = 8.0
"""Seconds an agent gets to print its help or version (a Node CLI takes 1–3 s of CPU)."""
_PROCESSES = threading.BoundedSemaphore(max(2, os.cpu_count() or 2))
"""Agent processes run at once, across all agents: one per CPU. Every agent's version
and help at once (a dozen Node starts on two cores) made each slow enough to miss its
timeout."""
SEARCH_SECONDS = 6.0
SEARCH_BYTES = 4 << 30
"""At most this much installed code is searched for one agent (Claude's binary: ~400 MB)."""
PACKAGE_LEVELS = 3
"""How far up from the executable's real directory its package's `package.json` may be."""
PACKAGE_FILES = 20_000
"""At most this many files of one package are searched."""
CODE_SUFFIXES = (".js", ".cjs", ".mjs", ".node", ".wasm", ".exe")
"""A package's code files (also any executable file); not its docs, types or source maps,
which may name what the code no longer reads."""
MANIFEST_BYTES = 1 << 20
"""A package's `package.json` larger than this is not read (its dependencies are then not
searched)."""


def check(name: str, env: Mapping[str, str], home: Path) -> tuple[dict[str, Any], list[Finding]]:
    """Agent `name` (a key of `ADAPTERS`) as found on `env`'s PATH."""
    adapter = ADAPTERS[name]
    label = f"agent {name}"
    executable = shutil.which(name, path=env.get("PATH", os.defpath))
    if executable is None:
        return ({"name": name, "found": False, "path": None, "realpath": None, "version": None,
                 "requirements": []},
                [Finding(label, f"{name} is not on PATH, so `amux run {name}` cannot start it",
                         install_hint(name))])
    probe = SystemProbe(env, "/", executable=executable)
    flags = [r for r in adapter.requires if r.kind == "flag"]
    strings = [r.name for r in adapter.requires if r.kind != "flag"]
    with ThreadPoolExecutor(max_workers=4) as pool:
        asked_version = pool.submit(agent_version, home, adapter, executable, probe)
        helps = {args: pool.submit(_ask, probe, [executable, *args], adapter.probe_env)
                 for args in dict.fromkeys(r.help_args for r in flags)}
        searched = pool.submit(search, installed_code(executable), strings)
    version = asked_version.result()
    found = searched.result()
    unpacked = adapter.unpacked_code(env, version)
    if unpacked and not all(found.values()):
        found.update(search_unpacked(unpacked, [name for name, present in found.items()
                                                if not present]))
    node = node_check(executable, probe)
    requirements: list[dict[str, Any]] = []
    findings: list[Finding] = []
    if node["satisfied"] is False:
        needed = node["requires"]
        # An agent that answered runs here all the same, and may misbehave: a note. One that
        # cannot even say its version does not start (Pi 1.x on Node 20): a problem, and its
        # help cannot tell which flags it has, so they are not called missing.
        findings.append(Finding(
            label, f"{name}'s package declares node {needed}, and the node on PATH is "
            f"{node['found']}: " + ("it may fail to start or misbehave" if version else
                                    f"{name} does not start with it"),
            f"{node_fix(needed)}, then check again",
            "note" if version else "problem"))
    unstarted = node["satisfied"] is False and version is None
    for requirement in adapter.requires:
        older = requirement.since is not None and _older(version, requirement.since)
        if requirement.kind == "flag":
            where = "`" + " ".join((name, *requirement.help_args)) + "`"
            present = (None if unstarted or older else
                       in_help(helps[requirement.help_args].result(), requirement.name))
        else:
            where, present = "its installed code", None if older else found[requirement.name]
        requirements.append({**requirement._asdict(), "present": present, "where": where})
        finding = (None if (unstarted or older) and present is None else
                   _finding(label, name, version, requirement, present, where))
        if finding is not None:
            findings.append(finding)
    return ({"name": name, "found": True, "path": executable,
             "realpath": os.path.realpath(executable), "version": version,
             "requirements": requirements, "node": node}, findings)


def node_check(executable: str, probe: SystemProbe) -> dict[str, Any]:
    """The Node.js version the agent's package declares (`engines.node`), the one on PATH,
    and whether it satisfies the declaration (None when either is unknown, or the range
    has a form this check does not read)."""
    requires = None
    root = _package_root(os.path.dirname(os.path.realpath(executable)))
    if root is not None:
        try:
            text = readfile.read_bytes(os.path.join(root, "package.json"), MANIFEST_BYTES)
            manifest = None if text is None else json.loads(text)
        except (OSError, ValueError, RecursionError):
            manifest = None
        engines = manifest.get("engines") if isinstance(manifest, dict) else None
        node = engines.get("node") if isinstance(engines, dict) else None
        requires = node if isinstance(node, str) else None
    found = _node_version(probe)
    satisfied = None if requires is None or found is None else satisfies(found, requires)
    return {"requires": requires, "found": found, "satisfied": satisfied}


def node_fix(requires: str) -> str:
    """What to install for a package that declares node `requires`."""
    least = _least_major(requires)
    return (f"install Node.js {least or requires} or newer (e.g. `nvm install "
            f"{least or 'node'}`) and put it first on PATH")


def _node_version(probe: SystemProbe) -> str | None:
    with _NODE:
        path = probe.env.get("PATH", os.defpath)
        if path not in _NODE_VERSIONS:
            node = shutil.which("node", path=path)
            done = None if node is None else _ask(probe, [node, "--version"], EnvPatch())
            _NODE_VERSIONS[path] = (done[1].strip() or None) if done and done[0] == 0 else None
        return _NODE_VERSIONS[path]


_NODE = threading.Lock()
_NODE_VERSIONS: dict[str, str | None] = {}
"""`node --version` by PATH, asked once per doctor run (every agent needs it)."""
_VERSION = re.compile(r"v?(\d+)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?")


def satisfies(version: str, requires: str) -> bool | None:
    """Whether `version` (`v20.20.2`) satisfies the npm range `requires` (`>=22.0.0`,
    `^20.6.0 || >=22`, `20.x`, `>=18 <23`); None for a form this does not read."""
    have = _parts(version)
    if have is None:
        return None
    alternatives = []
    for alternative in requires.split("||"):
        results = [_compare(have, comparator) for comparator in alternative.split()]
        if any(result is None for result in results):
            return None
        alternatives.append(all(results))
    return any(alternatives)


def _parts(version: str) -> tuple[int, int, int] | None:
    found = _VERSION.fullmatch(version.strip())
    if found is None:
        return None
    minor, patch = (int(part) if part and part.isdigit() else 0 for part in found.group(2, 3))
    return int(found.group(1)), minor, patch


def _compare(have: tuple[int, int, int], comparator: str) -> bool | None:
    operator = next((op for op in (">=", "<=", ">", "<", "=", "^", "~")
                     if comparator.startswith(op)), "")
    text = comparator[len(operator):]
    want = _parts(text)
    if want is None:
        return None
    given = len([part for part in re.split(r"[.]", text.lstrip("v")) if part.isdigit()])
    if operator in ("", "=") and given < 3:  # `20`, `20.x`: that major (and minor)
        operator = "~" if given == 2 else "^"
    upper = ((want[0] + 1, 0, 0) if operator == "^" and want[0] > 0
             else (want[0], want[1] + 1, 0) if operator in ("^", "~") else None)
    checks = {">=": have >= want, ">": have > want, "<=": have <= want, "<": have < want,
              "": have == want, "=": have == want}
    if upper is not None:
        return want <= have < upper
    return checks[operator]


def _older(version: str | None, since: str) -> bool:
    """Whether the agent's `version` (as its adapter reads it) is before `since`: amux does
    not use what came in `since` with it. False when either has no `X.Y.Z` to compare."""
    found = None if version is None else re.search(r"(\d+)\.(\d+)\.(\d+)", version)
    first = re.search(r"(\d+)\.(\d+)\.(\d+)", since)
    if found is None or first is None:
        return False
    return tuple(map(int, found.groups())) < tuple(map(int, first.groups()))


def _least_major(requires: str) -> int | None:
    """The smallest major a `>=`/`^` range starts at (for the fix's command)."""
    found = re.search(r"(?:>=|\^|~)?\s*v?(\d+)", requires)
    return int(found.group(1)) if found else None


def _finding(label: str, name: str, version: str | None, requirement: Requirement,
             present: bool | None, where: str) -> Finding | None:
    what = f"{requirement.kind} {requirement.name}"
    if present is None:
        return Finding(label, f"could not tell whether {name} has {what} ({where} could "
                       "not be read in time)", None, "note")
    if present:
        return None
    return Finding(label, f"{name} {version or '(version unknown)'} has no {what} (not in "
                   f"{where}), which amux needs: {requirement.why}", install_hint(name))


def agent_version(home: Path, adapter: Adapter, executable: str,
                  probe: SystemProbe) -> str | None:
    """The agent's version, through the launcher's cache when there is a home (a doctor
    creates none)."""
    if adapter.version_args is None:
        return None
    if home.is_dir():
        from amux.launcher.versions import cached_version

        with _PROCESSES:
            return cached_version(home, adapter, executable)
    done = _ask(probe, [executable, *adapter.version_args], adapter.probe_env)
    return None if done is None else adapter.version(*done)


def _ask(probe: SystemProbe, argv: list[str], env: EnvPatch,
         ) -> tuple[int, str, str] | None:
    """The agent's answer to `argv` (its help, its version), its time bounded from when
    it starts."""
    with _PROCESSES:
        return probe.run(argv, timeout=HELP_TIMEOUT, env=env)


def in_help(answer: tuple[int, str, str] | None, flag: str) -> bool | None:
    """Whether `flag` is a word of the help's output (either stream: some agents print
    help on stderr); None when the agent gave no help."""
    if answer is None or not (answer[1] or answer[2]):
        return None
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", answer[1] + answer[2]) is not None


def installed_code(executable: str) -> Iterator[str]:
    """The files holding the agent's code, its real path first (listed lazily: a search
    that finds everything in the executable lists nothing more)."""
    real = os.path.realpath(executable)
    yield real
    root = _package_root(os.path.dirname(real))
    if root is None:
        return
    for package in (root, *_dependencies(root)):
        yield from _code_files(package)


def _package_root(directory: str) -> str | None:
    for _ in range(PACKAGE_LEVELS):
        if os.path.isfile(os.path.join(directory, "package.json")):
            return directory
        directory = os.path.dirname(directory)
    return None


def _dependencies(root: str) -> list[str]:
    """The installed packages `root`'s `package.json` depends on, as Node resolves them
    from `root`: its own `node_modules`, then each ancestor's."""
    try:  # a FIFO or a device there is refused, never waited on
        text = readfile.read_bytes(os.path.join(root, "package.json"), MANIFEST_BYTES)
        manifest = None if text is None else json.loads(text)
    except (OSError, ValueError, RecursionError):  # unreadable, too large, or no JSON
        return []
    names: list[str] = []
    for field in ("dependencies", "optionalDependencies"):
        declared = manifest.get(field) if isinstance(manifest, dict) else None
        names += list(declared) if isinstance(declared, dict) else []
    found = []
    for name in names:
        for modules in _node_modules(root):
            package = os.path.join(modules, *name.split("/"))
            if os.path.isfile(os.path.join(package, "package.json")):
                found.append(os.path.realpath(package))
                break
    return found


def _node_modules(directory: str) -> Iterator[str]:
    while True:
        if os.path.basename(directory) != "node_modules":
            yield os.path.join(directory, "node_modules")
        parent = os.path.dirname(directory)
        if parent == directory:
            return
        directory = parent


def _code_files(package: str) -> Iterator[str]:
    """A package's code files, without the packages it has inside (`node_modules`)."""
    count = 0
    for directory, subdirectories, files in os.walk(package):
        subdirectories[:] = sorted(d for d in subdirectories
                                   if d != "node_modules" and not d.startswith("."))
        for file in sorted(files):
            path = os.path.join(directory, file)
            if file.endswith(CODE_SUFFIXES) or os.access(path, os.X_OK):
                count += 1
                if count > PACKAGE_FILES:
                    return
                yield path


def search(files: Iterator[str], names: Sequence[str], seconds: float = SEARCH_SECONDS,
           budget: int = SEARCH_BYTES) -> dict[str, bool | None]:
    """Which of `names` occur in `files`: True, False, or None when the budget ran out
    before every file was searched."""
    missing = {name: name.encode() for name in names}
    seen: set[tuple[int, int]] = set()
    deadline = time.monotonic() + seconds
    complete = True
    for path in files if missing else ():
        if time.monotonic() > deadline or budget <= 0:
            complete = False
            break
        try:  # never blocks: a FIFO planted among them is refused
            descriptor = readfile.open_regular(path)
        except OSError:
            continue  # unreadable, gone, or no regular file: the others may still tell
        try:
            info = os.fstat(descriptor)
            if not info.st_size or (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            budget -= info.st_size
            with mmap.mmap(descriptor, 0, access=mmap.ACCESS_READ) as data:
                for name in [n for n, needle in missing.items() if data.find(needle) >= 0]:
                    del missing[name]
        except (OSError, ValueError):
            continue
        finally:
            os.close(descriptor)
        if not missing:
            break
    return {name: name not in missing or (False if complete else None) for name in names}


def search_unpacked(patterns: Sequence[str], names: Sequence[str]) -> dict[str, bool | None]:
    """Which of `names` occur in the code files of the first existing directory matching
    `patterns`; None for each when there is none (the agent has not unpacked it yet)."""
    for pattern in patterns:
        for directory in sorted(glob.glob(pattern)):
            if os.path.isdir(directory):
                return search(_code_files(directory), names)
    return dict.fromkeys(names)
