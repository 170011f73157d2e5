"""The per-user settings of `amux run`: `$XDG_CONFIG_HOME/amux/settings.toml`, by default
`~/.config/amux/settings.toml` (where `platformdirs.user_config_dir("amux")` puts it).

`[run]` holds defaults for every agent and `[agents.NAME]` for one (over `[run]`); each key
is the `amux run` option of the same name: `memory` (false: as `--no-memory`), `endpoint`
(`""`: none, e.g. for one agent when `[run]` has one), `model`, `endpoint-api`,
`endpoint-key-env`. The command line wins over both. An endpoint comes with the
`endpoint-api` and `endpoint-key-env` of its own table; a `model` applies to whichever
endpoint the launch has. Settings shape new sessions only: a resume reuses what its
session froze. A launch reads the file (tomllib) only when it exists; `amux settings
set|unset` writes it with tomlkit, so comments and layout survive.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from amux.adapters.base import ENDPOINT_APIS, without_userinfo
from amux.errors import InvalidArgument
from amux.typing_light import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

Value = bool | str

KEYS: dict[str, tuple[type, str]] = {
    "memory": (bool, "false: launch without memory, as --no-memory"),
    "endpoint": (str, "the model endpoint's URL, as --endpoint (\"\": none)"),
    "model": (str, "the model it serves, as --model"),
    "endpoint-api": (str, f"what it speaks, as --endpoint-api: {', '.join(ENDPOINT_APIS)}"),
    "endpoint-key-env": (str, "the variable holding its key, as --endpoint-key-env"),
}
"""Every key a table may hold: its type and what it does."""
ENDPOINT_UNIT = ("endpoint", "endpoint-api", "endpoint-key-env")
"""What an endpoint takes from its own table only."""


def settings_path(env: Mapping[str, str] = os.environ) -> Path:
    """The settings file for this environment (the file need not exist)."""
    xdg = env.get("XDG_CONFIG_HOME", "")
    home = env.get("HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(
        home if os.path.isabs(home) else os.path.expanduser("~"), ".config")
    return Path(base, "amux", "settings.toml")


class Setting(NamedTuple):
    value: Value
    key: str
    """Its dotted name in the file: `agents.codex.endpoint`."""


class Settings(NamedTuple):
    """The settings file, checked: each table (`run`, `agents.NAME`) with its keys."""

    path: Path
    tables: dict[str, dict[str, Value]]

    def where(self, key: str) -> str:
        return f"{key} in {self.path}"

    def of(self, agent: str) -> dict[str, Setting]:
        """Agent `agent`'s settings: its table over `[run]`, the endpoint as one unit."""
        general = self.tables.get("run", {})
        own = self.tables.get(f"agents.{agent}", {})
        unit, prefix = (own, f"agents.{agent}") if "endpoint" in own else (general, "run")
        found = {key: Setting(value, f"run.{key}") for key, value in general.items()
                 if key not in ENDPOINT_UNIT}
        found.update({key: Setting(value, f"agents.{agent}.{key}") for key, value in own.items()
                      if key not in ENDPOINT_UNIT})
        found.update({key: Setting(value, f"{prefix}.{key}") for key, value in unit.items()
                      if key in ENDPOINT_UNIT})
        return found


def load() -> Settings:
    """The user's settings, checked; none when the file is missing. A file amux cannot use
    is refused, naming it and what is wrong."""
    path = settings_path()
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return Settings(path, {})
    except OSError as error:
        raise InvalidArgument(f"{path}: cannot read it: {error.strerror or error}") from None
    import tomllib

    try:
        document = tomllib.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise InvalidArgument(f"{path} is not valid TOML: {error}") from None
    return Settings(path, _tables(path, document))


def _tables(path: Path, document: dict[str, Any]) -> dict[str, dict[str, Value]]:
    from amux.adapters import ADAPTERS

    tables: dict[str, dict[str, Value]] = {}
    for name, table in document.items():
        if name == "run":
            tables["run"] = _checked(path, "run", table)
        elif name == "agents" and isinstance(table, dict):
            for agent, own in table.items():
                if agent not in ADAPTERS:
                    raise InvalidArgument(f"{path}: [agents.{agent}]: no such agent"
                                          f"{_closest(agent, ADAPTERS)} (agents: "
                                          f"{', '.join(ADAPTERS)})")
                tables[f"agents.{agent}"] = _checked(path, f"agents.{agent}", own)
        else:
            raise InvalidArgument(f"{path}: unknown setting {name!r}{_closest(name, ('run',))}; "
                                  "the tables are [run] and [agents.NAME]")
    return tables


def _checked(path: Path, prefix: str, table: Any) -> dict[str, Value]:
    if not isinstance(table, dict):
        raise InvalidArgument(f"{path}: {prefix} must be a table ([{prefix}])")
    for key, value in table.items():
        problem = check(key, value)
        if problem:
            raise InvalidArgument(f"{path}: {prefix}.{key}: {problem}")
    return dict(table)


def check(key: str, value: Any) -> str | None:
    """Why `value` cannot be setting `key`; None when it can."""
    if key not in KEYS:
        return (f"unknown key{_closest(key, KEYS)} (keys: {', '.join(KEYS)})")
    kind, what = KEYS[key]
    if type(value) is not kind:
        return f"must be {'true or false' if kind is bool else 'a string'}: {what}"
    if key == "endpoint" and value and not str(value).startswith(("http://", "https://")):
        return f"{without_userinfo(str(value))!r} is not an http:// or https:// URL"
    if key == "endpoint-api" and value not in ENDPOINT_APIS:
        return f"{value!r} is none of {', '.join(ENDPOINT_APIS)}"
    return None


def _closest(word: str, choices: Any) -> str:
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


class Options(NamedTuple):
    """`amux run`'s choices for a new session, with the settings applied."""

    endpoint: str | None
    model: str | None
    endpoint_api: str | None
    endpoint_key_env: str | None
    no_memory: str | None
    """Why it has no memory as the user asked (`--no-memory`, or the setting), else None."""
    sources: dict[str, str]
    """Each option the settings gave: where (`agents.codex.endpoint in PATH`)."""


def apply(settings: Settings, agent: str, given: Options, no_endpoint: bool) -> Options:
    """`given` (the command line's options, None where left out) with the settings of
    `agent` (an adapter's name) filling what it left out; `no_endpoint`: none at all."""
    mine = settings.of(agent)
    sources: dict[str, str] = {}
    taken: dict[str, Any] = {}
    memory = mine.get("memory")
    no_memory = given.no_memory
    if no_memory is None and memory is not None and memory.value is False:
        no_memory = f"{memory.key} = false in {settings.path}"
        sources["memory"] = settings.where(memory.key)
    endpoint = mine.get("endpoint")
    if given.endpoint is None and not no_endpoint and endpoint is not None and endpoint.value:
        for key in ENDPOINT_UNIT:
            if key in mine and getattr(given, key.replace("-", "_")) is None:
                taken[key] = mine[key]
    if (given.endpoint or "endpoint" in taken) and given.model is None and "model" in mine:
        taken["model"] = mine["model"]
    if "endpoint" in taken and given.model is None and "model" not in taken:
        table = taken["endpoint"].key.rpartition(".")[0]
        raise InvalidArgument(f"{settings.where(taken['endpoint'].key)} has no model beside "
                              f"it: set one (`amux settings set {table}.model NAME`) or give "
                              "--model NAME")
    for key, setting in taken.items():
        sources[key] = settings.where(setting.key)
    values = {key.replace("-", "_"): setting.value for key, setting in taken.items()}
    return given._replace(no_memory=no_memory, sources=sources, **values)


def _split(key: str) -> tuple[str, str]:
    """`agents.codex.memory` → (`agents.codex`, `memory`), checked."""
    from amux.adapters import ADAPTERS

    table, _, name = key.rpartition(".")
    agent = table.removeprefix("agents.")
    if table != "run" and (not table.startswith("agents.") or agent not in ADAPTERS):
        raise InvalidArgument(f"setting {key!r}: the keys are run.KEY (every agent) and "
                              f"agents.NAME.KEY (one agent: {', '.join(ADAPTERS)})")
    if name not in KEYS:
        raise InvalidArgument(f"setting {key!r}: {check(name, None)}")
    return table, name


def change(key: str, text: str | None) -> Value | None:
    """Set `key` (`run.model`, `agents.claude.memory`) from its text, or remove it
    (`text` None), keeping every comment of the file; the value set."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    from amux.durable import write_file_atomic

    path = settings_path()
    table_name, name = _split(key)
    value: Value | None = None
    if text is not None:
        lowered = text.strip().lower()
        value = ({"true": True, "false": False}.get(lowered, text)
                 if KEYS[name][0] is bool else text)
        problem = check(name, value)
        if problem:
            raise InvalidArgument(f"{key}: {problem}")
    try:
        document = tomlkit.parse(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        document = tomlkit.parse(_HEADER)
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidArgument(f"{path}: cannot read it: {error}") from None
    except TOMLKitError as error:
        raise InvalidArgument(f"{path} is not valid TOML: {error}") from None
    table: Any = document
    for part in table_name.split("."):
        if part not in table:
            if value is None:
                return None
            table[part] = tomlkit.table(is_super_table=part == "agents")
        table = table[part]
    if value is None:
        table.pop(name, None)
    else:
        table[name] = value
    _tables(path, document.unwrap())  # the whole file still holds only what amux reads
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_file_atomic(path, tomlkit.dumps(document).encode("utf-8"))
    return value


_HEADER = """\
# amux run's defaults for new sessions (`amux run --help`). [run]: every agent;
# [agents.NAME]: one agent, over [run]. Keys: memory, endpoint, model, endpoint-api,
# endpoint-key-env. Change them with `amux settings set KEY VALUE`, or edit this file.
"""
