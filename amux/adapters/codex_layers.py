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
managed layers). The app-server never loads a profile, so the profile's file is read
here and put where Codex puts it: above the user layer, below the projects.

Asking costs ~50 ms (more through npm's Node wrapper), so the answer is remembered
(`Probe.remember`) under a key of everything it depends on, and a launch whose key is
known starts no Codex at all. The key holds the Codex binary (path, real path, and the
signature of each: device, inode, size, times), the `-c` overrides given to the
app-server, the probe's cwd and the working directory (both also with links resolved),
`CODEX_HOME`, `HOME` and every `CODEX_*` variable, and the `Probe.stat_signature` of
every path Codex 0.171 reads for its layers, project root and trust. Seen with `strace
-f -e trace=%file` of `codex app-server` answering `config/read` (Codex 0.171.0):

    /etc/codex/{requirements,managed_config,config}.toml   (signed: all of /etc/codex)
    $CODEX_HOME/config.toml, .env, environments.toml       (signed: .env, every *.toml)
    <dir>/.git for the cwd and every ancestor up to /, and the found repository's
      .git/HEAD                                             (signed: every <dir>/.git/HEAD)
    for a linked worktree, the `.git` file and its gitdir's commondir and gitdir
    <dir>/.codex and <dir>/.codex/config.toml from the project root down to the cwd
                                                            (signed: every ancestor's)
    readlink of each component of the cwd and of CODEX_HOME (the real paths are keyed)

It also opens `agents`/`rules` folders (`/etc/codex`, `$CODEX_HOME`, `<dir>/.codex`),
`auth.json`, skills and state databases, none of which changes a layer's
`developer_instructions` (checked: a role in `.codex/agents/` is no layer). A path that
cannot be signed (unreadable by the launcher, or a file changed in the last second)
means no cache for that launch. Only Codex's own answer is remembered, never the files'
reading below.

npm's `codex` is a Node script (`@openai/codex/bin/codex.js`) that starts the native
binary of the platform's package; for the probe that binary is started directly, as the
script would (`npm_native`), saving Node's start. The agent itself is launched as named.

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

import hashlib
import json
import os
import platform
import re
import sys
from collections.abc import Mapping

from amux import __version__
from amux.adapters.base import PlanRefused, Probe, take_option
from amux.envpatch import EnvPatch
from amux.typing_light import NamedTuple

APP_SERVER_TIMEOUT = 5.0
"""Seconds Codex's app-server gets to answer `config/read` (it takes ~0.05–0.3 s)."""
APP_SERVER_EXIT_GRACE = 0.0
"""Once it has answered, the app-server is killed at once: its graceful exit takes
7–11 ms and it has nothing left to do for us."""
GIT_TIMEOUT = 5.0
SYSTEM_DIR = "/etc/codex"
SYSTEM_CONFIG = "/etc/codex/config.toml"
CACHE_KEY_VERSION = "codex-layers/1"
"""Changed whenever what the cache key covers, or what is remembered, changes."""
_CONFIG_READ_ID = 1


class Layer(NamedTuple):
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
    def wanted(pair: str) -> bool:
        return key is None or pair.partition("=")[0].strip() == key

    rest, pairs = take_option(args, ("-c", "--config"), wanted)
    return rest, pairs if key is None else [pair.partition("=")[2] for pair in pairs]


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
        layers, problem = _remembered_or_asked(probe, probe.executable, args, cwd)
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
        layers = [layer._replace(disabled="the user's config is ignored")
                  if layer.kind == "project" else layer
                  for layer in layers if layer.kind != "user"]
    elif "--trust" in args:  # Codex refuses it for a directory marked untrusted
        layers = [layer._replace(disabled=None) if layer.kind == "project" else layer
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


def _remembered_or_asked(probe: Probe, executable: str, args: tuple[str, ...], cwd: str,
                         ) -> tuple[list[Layer] | None, str]:
    """Codex's own layers as seen from `cwd`, remembered or asked (None and why)."""
    overrides = [part for pair in take_overrides(args, None)[1] for part in ("-c", pair)]
    native = npm_native(probe, executable)
    key = cache_key(probe, executable, native, overrides, cwd)
    if key is not None:
        remembered = _decoded(probe.recall(key))
        if remembered is not None:
            return remembered, ""
    command, env = native or (executable, EnvPatch())
    layers, problem = _asked(probe, command, overrides, cwd, env)
    if layers is not None and key is not None:
        probe.remember(key, json.dumps([[layer.kind, layer.value, layer.disabled,
                                         layer.profile] for layer in layers]))
    return layers, problem


def _decoded(text: str | None) -> list[Layer] | None:
    try:
        entries = json.loads(text) if text is not None else None
    except ValueError:
        return None
    if not isinstance(entries, list) or not all(
            isinstance(entry, list) and len(entry) == 4 and isinstance(entry[0], str)
            and all(part is None or isinstance(part, str) for part in entry[1:])
            for entry in entries):
        return None
    return [Layer(*entry) for entry in entries]


def _asked(probe: Probe, executable: str, overrides: list[str], cwd: str,
           env: EnvPatch) -> tuple[list[Layer] | None, str]:
    """Codex's own layers as seen from `cwd` (None and why, when it cannot say)."""
    requests = [
        {"id": 0, "method": "initialize",
         "params": {"clientInfo": {"name": "amux", "version": __version__}}},
        {"method": "initialized"},
        {"id": _CONFIG_READ_ID, "method": "config/read",
         "params": {"cwd": cwd, "includeLayers": True}},
    ]
    done = probe.run([executable, *overrides, "app-server"],
                     stdin="".join(json.dumps(r) + "\n" for r in requests),
                     timeout=APP_SERVER_TIMEOUT, until=_answers, env=env,
                     exit_grace=APP_SERVER_EXIT_GRACE)
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


# -- what the answer depends on --------------------------------------------------------------


def cache_key(probe: Probe, executable: str, native: tuple[str, EnvPatch] | None,
              overrides: list[str], cwd: str) -> str | None:
    """The key Codex's answer is remembered under (see module); None when some path it
    depends on cannot be signed, so nothing is recalled or remembered."""
    if not os.path.isabs(executable):  # found on a PATH: which binary is not known here
        return None
    env = probe.env
    home = codex_home(env)
    parts: list[object] = [
        CACHE_KEY_VERSION, executable, probe.realpath(executable),
        probe.stat_signature(executable), native and [native[0], list(native[1].shown().items()),
                                                      probe.stat_signature(native[0])],
        overrides, probe.cwd, probe.realpath(probe.cwd), cwd, probe.realpath(cwd),
        probe.realpath(home),
        sorted((name, value) for name, value in env.items()
               if name in ("HOME", "CODEX_HOME") or name.startswith("CODEX_")),
    ]
    paths = [home, SYSTEM_DIR]
    names = probe.list_dir(home)
    system = probe.list_dir(SYSTEM_DIR)
    if names is None or system is None:
        return None
    parts += [[name for name in names if name.endswith(".toml") or name == ".env"], system]
    paths += [os.path.join(home, name) for name in names
              if name.endswith(".toml") or name == ".env"]
    paths += [os.path.join(SYSTEM_DIR, name) for name in system]
    starts = {probe.cwd, probe.realpath(probe.cwd), cwd, probe.realpath(cwd)}
    for directory in sorted({d for start in starts for d in _ancestors(start)}):
        git = os.path.join(directory, ".git")
        paths += [git, os.path.join(git, "HEAD"), os.path.join(directory, ".codex"),
                  os.path.join(directory, ".codex", "config.toml")]
        linked = _gitdir(probe, git)
        if linked is None:
            return None
        if linked:  # a linked worktree: Codex follows it to its repository
            paths += [linked, os.path.join(linked, "commondir"),
                      os.path.join(linked, "gitdir")]
    for path in paths:
        signature = probe.stat_signature(path)
        if signature is None:
            return None
        parts.append([path, signature])
    material = json.dumps(parts, separators=(",", ":"))
    return f"{CACHE_KEY_VERSION}:{hashlib.sha256(material.encode()).hexdigest()}"


def _ancestors(directory: str) -> list[str]:
    """`directory` and every directory above it, up to `/`."""
    found = [os.path.normpath(directory)]
    while os.path.dirname(found[-1]) != found[-1]:
        found.append(os.path.dirname(found[-1]))
    return found


def _gitdir(probe: Probe, git: str) -> str | None:
    """The directory a `.git` file names ("" when `git` is no such file); None when it
    cannot be read."""
    try:
        text = probe.read_text(git)
    except (IsADirectoryError, NotADirectoryError):
        return ""
    except (OSError, ValueError):
        return None
    if text is None or not text.startswith("gitdir:"):
        return ""
    return os.path.normpath(os.path.join(os.path.dirname(git),
                                         text.removeprefix("gitdir:").strip()))


# -- npm's wrapper ----------------------------------------------------------------------------

NPM_WRAPPER = os.path.join("@openai", "codex", "bin", "codex.js")
NPM_TARGETS = {
    ("linux", "x86_64"): "x86_64-unknown-linux-musl",
    ("linux", "aarch64"): "aarch64-unknown-linux-musl",
    ("darwin", "x86_64"): "x86_64-apple-darwin",
    ("darwin", "arm64"): "aarch64-apple-darwin",
}
"""(sys.platform, platform.machine()) → the target triple codex.js picks for Node's
platform and arch (Windows is not served: the wrapper is started there)."""
NPM_PACKAGES = {
    "x86_64-unknown-linux-musl": "@openai/codex-linux-x64",
    "aarch64-unknown-linux-musl": "@openai/codex-linux-arm64",
    "x86_64-apple-darwin": "@openai/codex-darwin-x64",
    "aarch64-apple-darwin": "@openai/codex-darwin-arm64",
}
MANAGED_BY = ("CODEX_MANAGED_BY_NPM", "CODEX_MANAGED_BY_BUN", "CODEX_MANAGED_BY_PNPM",
              "CODEX_MANAGED_BY_VITE_PLUS")
NODE_SETTINGS = ("NODE_OPTIONS", "NODE_PATH", "NODE_PRESERVE_SYMLINKS")
"""Any of these could make Node resolve the platform package elsewhere: then the wrapper
is started."""


def npm_target() -> str | None:
    return NPM_TARGETS.get((sys.platform, platform.machine()))


def npm_native(probe: Probe, executable: str,
               ) -> tuple[str, EnvPatch] | None:
    """(the native Codex binary, the environment changes) npm's `codex.js` (Codex 0.171)
    would start for `executable`; None when it is not that script, or anything the script
    would decide is uncertain (then the script itself is started). Its resolution: the
    target triple of the platform and arch, the platform package
    `@openai/codex-<platform>-<arch>` found as Node finds `<package>/package.json` from
    the script's real directory (else the script's own `../vendor`), and
    `vendor/<triple>/bin/codex` in it; its environment: `CODEX_MANAGED_PACKAGE_ROOT`
    and the one `CODEX_MANAGED_BY_*` of the package manager it detects. The native
    binary puts its own `codex-path` folder on PATH."""
    if not os.path.isabs(executable):
        return None
    script = probe.realpath(executable)
    target = npm_target()
    if not script.endswith(os.sep + NPM_WRAPPER) or target is None or any(
            name in probe.env for name in NODE_SETTINGS):
        return None
    bin_dir = os.path.dirname(script)
    root = probe.realpath(os.path.dirname(bin_dir))
    vendor = os.path.join(root, "vendor")
    for modules in _node_module_paths(bin_dir):
        manifest = os.path.join(modules, *NPM_PACKAGES[target].split("/"), "package.json")
        try:
            text = probe.read_text(manifest)
            found = None if text is None else json.loads(text)
        except (OSError, ValueError):
            return None
        if found is not None:
            if not isinstance(found, dict) or "exports" in found:  # Node may refuse it
                return None
            vendor = os.path.join(os.path.dirname(probe.realpath(manifest)), "vendor")
            break
    else:
        return None  # Node would look in its global folders next: not followed here
    native = os.path.join(vendor, target, "bin", "codex")
    manager = _package_manager(probe, root, os.path.dirname(os.path.normpath(executable)),
                               bin_dir)
    if manager is None or not _exists(probe, native):
        return None
    return native, EnvPatch({"CODEX_MANAGED_PACKAGE_ROOT": root,
                             f"CODEX_MANAGED_BY_{manager}": "1"}, MANAGED_BY)


def _node_module_paths(directory: str) -> list[str]:
    """Node's `node_modules` lookup folders from `directory` (`Module._nodeModulePaths`)."""
    return [os.path.join(d, "node_modules") for d in _ancestors(directory)
            if os.path.basename(d) != "node_modules"]


def _package_manager(probe: Probe, root: str, entry_dir: str, script_dir: str) -> str | None:
    """codex.js's `detectPackageManager` as the suffix of its `CODEX_MANAGED_BY_*`; None
    where it would read Vite+'s metadata (not followed here) or a path cannot be told."""
    for start in dict.fromkeys((root, entry_dir)):
        top = _ancestors(start)[-1]
        for directory in _ancestors(start)[:-1]:
            if os.path.basename(directory) == "packages" and _exists(
                    probe, os.path.join(directory, "@openai", "codex.json")) is not False:
                return None
            pnpm = _pnpm_owned(probe, os.path.join(directory, "node_modules"), root)
            if pnpm is not False:
                return None if pnpm is None else "PNPM"
        pnpm = _pnpm_owned(probe, os.path.join(top, "node_modules"), root)
        if pnpm is not False:
            return None if pnpm is None else "PNPM"
    agent = probe.env.get("npm_config_user_agent", "")
    if (re.search(r"\bbun/", agent) or "bun" in probe.env.get("npm_execpath", "")
            or ".bun/install/global" in script_dir):
        return "BUN"
    return "NPM"  # also when no package manager is detected


def _pnpm_owned(probe: Probe, modules: str, root: str) -> bool | None:
    marker = _exists(probe, os.path.join(modules, ".modules.yaml"))
    if marker is None:
        return None
    return marker and probe.realpath(os.path.join(modules, "@openai", "codex")) == root


def _exists(probe: Probe, path: str) -> bool | None:
    """Whether `path` is in its directory (None: that cannot be read)."""
    names = probe.list_dir(os.path.dirname(path))
    return None if names is None else os.path.basename(path) in names


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
    found = _git(probe, cwd)
    if found is None:
        return [cwd], cwd
    top, common, prefix = found
    parts = [part for part in prefix.split("/") if part]
    directories = [os.path.join(top, *parts[:n]) for n in range(len(parts) + 1)]
    return directories, os.path.dirname(common) if os.path.basename(common) == ".git" else top


def _git(probe: Probe, cwd: str) -> tuple[str, str, str] | None:
    """(top level, common git dir, prefix) of the repository `cwd` is in; None outside one."""
    done = probe.run(["git", "-C", cwd, "rev-parse", "--path-format=absolute",
                      "--show-toplevel", "--git-common-dir", "--show-prefix"],
                     timeout=GIT_TIMEOUT)
    lines = done[1].split("\n") if done is not None and done[0] == 0 else []
    if len(lines) < 3 or not lines[0]:
        return None
    return lines[0], lines[1], lines[2]


def exec_refused(probe: Probe, cwd: str) -> bool:
    """Whether Codex refuses `exec` in `cwd` unless given --skip-git-repo-check: outside
    a git repository, in a folder its user config does not trust (an unreadable config
    tells nothing: False)."""
    if _git(probe, cwd) is not None:
        return False
    try:
        user = read_config(probe, os.path.join(codex_home(probe.env), "config.toml"))
    except ValueError:
        return False
    projects = user.get("projects")
    trust = projects if isinstance(projects, dict) else {}
    return all(_trust_level(trust, path) != "trusted" for path in (cwd, probe.realpath(cwd)))


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
        raise PlanRefused(f"cannot read Codex's {path}: not a directory on its path") from None
    except (OSError, ValueError) as exc:
        raise PlanRefused(f"cannot read Codex's {path}: {exc}") from None


def _string(config: Mapping[str, object], key: str) -> str | None:
    value = config.get(key)
    return value if isinstance(value, str) else None
