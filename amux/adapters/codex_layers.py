"""The `developer_instructions` Codex would use for a launch, from every config layer it
reads, in its own precedence (Codex 0.171), highest first:

    -c developer_instructions=…  (the user's own flag; `CodexAdapter.plan` takes it)
    trusted project layers       <dir>/.codex/config.toml, the one closest to the cwd first
    profile                      $CODEX_HOME/<NAME>.config.toml (`--profile NAME`)
    user                         $CODEX_HOME/config.toml
    system                       /etc/codex/config.toml

Codex itself is asked: `codex [the user's -c …] app-server`, `initialize`, then
`config/read {"cwd": …, "includeLayers": true}`, which answers offline with every layer
as Codex sees it from that directory (project root, trust, nested `.codex` folders,
managed layers) in ~0.1–0.3 s. The app-server never loads a profile, so the profile's
file is read here and put where Codex puts it: above the user layer, below the projects.

When Codex cannot answer (not Codex, too old, no answer within `APP_SERVER_TIMEOUT`) or
must not be started (a dry run), the files are read instead, with a warning unless it is
a dry run. That reading follows what Codex 0.171 was seen to do: the project root is the
git top level (else the cwd alone); each directory from there down to the cwd may hold a
`.codex/config.toml`, loaded when that directory is trusted — its own
`[projects."<dir>"] trust_level` in the user's config, else that of the repository (the
main worktree's top level for a linked worktree); `$CODEX_HOME/config.toml` is never a
project layer. Managed layers (MDM, `managed_config.toml`) are only seen through Codex.

`codex exec` flags that change the layers are honoured both ways (as `codex exec` was
seen to apply them): `--ignore-user-config` drops the user layer and the trust recorded
in it, so no project layer loads; `--trust` loads the project layers not yet trusted
(Codex refuses it for a directory marked untrusted, and with `--ignore-user-config`).
`--worktree` moves the session to a directory not known before the launch; its layers
are those of the launch directory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

from amux import __version__
from amux.adapters.base import Probe, take_option

APP_SERVER_TIMEOUT = 5.0
"""Seconds Codex's app-server gets to answer `config/read` (it takes ~0.1–0.3 s)."""
GIT_TIMEOUT = 5.0
SYSTEM_CONFIG = "/etc/codex/config.toml"
_CONFIG_READ_ID = 1


@dataclass(frozen=True)
class Layer:
    kind: str
    """Codex's layer type: sessionFlags, project, user, system, or a managed one."""
    value: str | None
    """Its `developer_instructions`, None when it sets none."""
    disabled: str | None = None
    """Why Codex does not load it (an untrusted project), None when it does."""
    profile: str | None = None
    """For a user layer: the profile it is (Codex 0.171 reports None)."""


def codex_home(env: Mapping[str, str]) -> str:
    """`$CODEX_HOME`, else `~/.codex`."""
    explicit = env.get("CODEX_HOME")
    return explicit or os.path.join(os.path.expanduser(env.get("HOME", "~")), ".codex")


def take_overrides(args: tuple[str, ...], key: str | None) -> tuple[list[str], list[str]]:
    """(args without the `-c KEY=…` overrides, those overrides' raw TOML values); with
    `key` None every override is taken and the values are whole `KEY=VALUE` pairs."""
    rest: list[str] = []
    values: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        pair = None
        if arg in ("-c", "--config") and index + 1 < len(args):
            pair = args[index + 1]
        elif arg.startswith("--config="):
            pair = arg.removeprefix("--config=")
        name, _, value = (pair or "").partition("=")
        if pair is not None and (key is None or name.strip() == key):
            values.append(pair if key is None else value)
            index += 1 if arg.startswith("--config=") else 2
            continue
        rest.append(arg)
        index += 1
    return rest, values


def profile_name(args: tuple[str, ...]) -> str | None:
    given = take_option(args, ("--profile", "-p"))[1]
    return given[-1] if given else None


def working_dir(args: tuple[str, ...], cwd: str) -> str:
    """The directory Codex works in: `-C/--cd DIR` (relative to `cwd`), else `cwd`."""
    given = take_option(args, ("-C", "--cd"))[1]
    return os.path.normpath(os.path.join(cwd, given[-1])) if given else cwd


def developer_instructions(args: tuple[str, ...], probe: Probe) -> str | None:
    """The effective `developer_instructions` below any `-c` of the user's (see module)."""
    cwd = working_dir(args, probe.cwd)
    layers = None
    if probe.executable is not None:
        layers, problem = _asked(probe, probe.executable, args, cwd)
        if layers is None:
            probe.warn(f"Codex's app-server could not report its config layers ({problem}); "
                       "developer_instructions were read from the config files instead, "
                       "which can miss a layer Codex applies (docs/launcher.md)")
    if layers is None:
        layers = _read(probe, cwd)
    return effective(_adjusted(layers, args, probe))


def effective(layers: list[Layer]) -> str | None:
    """The value of the highest loaded layer that sets one (layers highest first)."""
    return next((layer.value for layer in layers
                 if layer.disabled is None and layer.value is not None), None)


def _adjusted(layers: list[Layer], args: tuple[str, ...], probe: Probe) -> list[Layer]:
    """`layers` with the profile spliced in and the `exec` flags that change them applied."""
    if "--ignore-user-config" in args:  # and with it the trust recorded there
        layers = [replace(layer, disabled="the user's config is ignored")
                  if layer.kind == "project" else layer
                  for layer in layers if layer.kind != "user"]
    elif "--trust" in args:  # Codex refuses it for a directory marked untrusted
        layers = [replace(layer, disabled=None) if layer.kind == "project" else layer
                  for layer in layers]
    profile = profile_name(args)
    if profile and not any(layer.kind == "user" and layer.profile == profile
                           for layer in layers):
        path = os.path.join(codex_home(probe.env), f"{profile}.config.toml")
        at = next((i for i, layer in enumerate(layers) if layer.kind in ("user", "system")),
                  len(layers))
        value = _string(read_config(probe, path), "developer_instructions")
        layers = [*layers[:at], Layer("user", value, profile=profile), *layers[at:]]
    return layers


# -- asking Codex -----------------------------------------------------------------------------


def _asked(probe: Probe, executable: str, args: tuple[str, ...], cwd: str,
           ) -> tuple[list[Layer] | None, str]:
    """Codex's own layers as seen from `cwd` (None and why, when it cannot say)."""
    overrides = [part for pair in take_overrides(args, None)[1] for part in ("-c", pair)]
    requests = [
        {"id": 0, "method": "initialize",
         "params": {"clientInfo": {"name": "amux", "version": __version__}}},
        {"method": "initialized"},
        {"id": _CONFIG_READ_ID, "method": "config/read",
         "params": {"cwd": cwd, "includeLayers": True}},
    ]
    done = probe.run([executable, *overrides, "app-server"],
                     stdin="".join(json.dumps(r) + "\n" for r in requests),
                     timeout=APP_SERVER_TIMEOUT, until=_answers)
    if done is None:
        return None, f"it did not start, or gave no answer within {APP_SERVER_TIMEOUT:g} s"
    status, out, err = done
    reply = next((message for message in map(_message, out.splitlines())
                  if message.get("id") == _CONFIG_READ_ID), None)
    if reply is None:
        last = (err.strip().splitlines() or [""])[-1][-300:]
        return None, f"exit status {status}{': ' + last if last else ''}"
    result = reply.get("result")
    layers = result.get("layers") if isinstance(result, dict) else None
    if not isinstance(layers, list):
        error = reply.get("error")
        why = error.get("message") if isinstance(error, dict) else None
        return None, f"config/read answered {why or 'without layers'}"
    return [_layer(entry) for entry in layers if isinstance(entry, dict)], ""


def _answers(line: str) -> bool:
    return _message(line).get("id") == _CONFIG_READ_ID


def _message(line: str) -> dict[str, object]:
    try:
        message = json.loads(line)
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}


def _layer(entry: dict[str, object]) -> Layer:
    name = entry.get("name")
    name = name if isinstance(name, dict) else {}
    config = entry.get("config")
    reason = entry.get("disabledReason")
    profile = name.get("profile")
    return Layer(str(name.get("type")),
                 _string(config if isinstance(config, dict) else {}, "developer_instructions"),
                 disabled=reason if isinstance(reason, str) else None,
                 profile=profile if isinstance(profile, str) else None)


# -- reading the files ------------------------------------------------------------------------


def _read(probe: Probe, cwd: str) -> list[Layer]:
    home = codex_home(probe.env)
    user_file = os.path.join(home, "config.toml")
    user = read_config(probe, user_file)
    projects = user.get("projects")
    trust = projects if isinstance(projects, dict) else {}
    directories, trust_root = _project(probe, cwd)
    layers = []
    for directory in reversed(directories):  # closest to the cwd first
        path = os.path.join(directory, ".codex", "config.toml")
        if os.path.normpath(path) == os.path.normpath(user_file):
            continue
        config = read_config(probe, path, absent_if_not_a_directory=True)
        if not config:
            continue
        level = _trust_level(trust, directory) or _trust_level(trust, trust_root)
        disabled = None if level == "trusted" else (
            f"{directory} is marked as untrusted" if level == "untrusted"
            else f"{directory} is not a trusted project")
        layers.append(Layer("project", _string(config, "developer_instructions"), disabled))
    layers.append(Layer("user", _string(user, "developer_instructions")))
    layers.append(Layer("system", _string(read_config(probe, SYSTEM_CONFIG),
                                          "developer_instructions")))
    return layers


def _project(probe: Probe, cwd: str) -> tuple[list[str], str]:
    """(the directories from the project root down to `cwd`, the directory whose trust
    covers the project): from git's top level (the main worktree's for the trust), else
    `cwd` alone. Paths as git gives them, symbolic links resolved, as Codex keys trust."""
    done = probe.run(["git", "-C", cwd, "rev-parse", "--path-format=absolute",
                      "--show-toplevel", "--git-common-dir", "--show-prefix"],
                     timeout=GIT_TIMEOUT)
    lines = done[1].split("\n") if done is not None and done[0] == 0 else []
    if len(lines) < 3 or not lines[0]:
        return [cwd], cwd
    top, common, prefix = lines[0], lines[1], lines[2]
    parts = [part for part in prefix.split("/") if part]
    directories = [os.path.join(top, *parts[:n]) for n in range(len(parts) + 1)]
    return directories, os.path.dirname(common) if os.path.basename(common) == ".git" else top


def _trust_level(projects: dict[str, object], directory: str) -> str | None:
    entry = projects.get(directory)
    level = entry.get("trust_level") if isinstance(entry, dict) else None
    return level if isinstance(level, str) else None


def read_config(probe: Probe, path: str, *, absent_if_not_a_directory: bool = False,
                ) -> dict[str, object]:
    """A Codex config file as a dict ({} when absent); ValueError naming an unreadable one."""
    import tomlkit  # only for Codex launches

    try:
        text = probe.read_text(path)
        if text is None:
            return {}
        return dict(tomlkit.parse(text).unwrap())
    except NotADirectoryError:
        if absent_if_not_a_directory:
            return {}
        raise ValueError(f"cannot read Codex's {path}: not a directory on its path") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read Codex's {path}: {exc}") from None


def _string(config: Mapping[str, object], key: str) -> str | None:
    value = config.get(key)
    return value if isinstance(value, str) else None
