"""The agents' own memory stores, as each agent lays them out on disk (`amux memory import`).

One function per store, registered in `STORES`; each reads the store (never writes it)
and returns the notes it holds with the amux path each would get (docs/sync.md
"Where each agent keeps its memory" gives the evidence for every layout):

- Claude Code: `<CLAUDE_CONFIG_DIR or ~/.claude>/projects/<git root or cwd, every
  character but [A-Za-z0-9] as '-'>/memory/`: `MEMORY.md` and topic files with front matter.
- Gemini CLI: `<GEMINI_CLI_HOME or ~>/.gemini/tmp/<slug>/memory/` (the project's path in
  `<slug>/.project_root`), and the `## Gemini Added Memories` section of `.gemini/GEMINI.md`.
- Qwen Code: `<QWEN_CODE_MEMORY_BASE_DIR, QWEN_RUNTIME_DIR, QWEN_HOME or ~/.qwen>/projects/
  <sanitized git root>/memory/` and the user memory `…/memories/`, one folder per type.
- Codex: `<CODEX_HOME or ~/.codex>/memories/`: its consolidated `MEMORY.md`,
  `memory_summary.md` and `skills/`.
- Kilo Code CLI: `<XDG_DATA_HOME or ~/.local/share>/kilo/memory/<name>-<hash>/`: Kilo
  Memory's `project.md`, `environment.md`, `corrections.md` (the project in `manifest.json`).
- Cline: a repository's `memory-bank/` folder. Any other folder of Markdown (an
  amux export) is imported as it is.

A project store's notes go to `projects/<stable id>/`, the id formed as the protocol's
guide says (the repository's remote); what was chosen, and why, is in `Project.why`.
Standard library only, like the rest of `amux.client`.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import time

from amux.errors import InvalidArgument
from amux.typing_light import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping


class Note(NamedTuple):
    """One note to import: the file it comes from, the amux path and content it gets."""

    source: str
    path: str
    content: str


class Skipped(NamedTuple):
    """A file of the store that is not imported, and why."""

    source: str
    reason: str


class Project(NamedTuple):
    """A project folder of an agent's store and the amux project id it maps to."""

    key: str
    """The agent's own name for it (the encoded path, Gemini's slug)."""
    path: str | None
    """The project's directory, when it could be found on this machine."""
    id: str
    why: str


class Gathered(NamedTuple):
    """What one store holds: its notes, the files left out, the projects it maps."""

    store: str
    root: str
    notes: list[Note]
    skipped: list[Skipped]
    projects: list[Project]


class Options(NamedTuple):
    """What the command line says about a store: the folder (a folder import, Cline's
    repository), the prefix to import under (`--into`) and chosen project ids."""

    folder: str | None = None
    into: str = ""
    project_ids: dict[str, str] = {}  # noqa: RUF012 (a NamedTuple default, never mutated)


FILE_MAX_BYTES = 1024 * 1024
"""A larger file is skipped, not read (a topic document holds at most 64 KiB anyway: the
Hub refuses it by name)."""
DESCRIPTION_MAX_CHARS = 150
WALK_MAX_FILES = 20_000
"""A store folder is read up to this many entries (a mistyped `/` is refused, not walked)."""


def _home(env: Mapping[str, str]) -> str:
    from amux.client.home import _user_home

    return _user_home(env)


def _under(env: Mapping[str, str], variable: str, default: str) -> str:
    value = env.get(variable, "")
    return value if os.path.isabs(value) else os.path.join(_home(env), default)


# -- reading a store folder ------------------------------------------------------------


def _walk(root: str, skipped: list[Skipped]) -> Iterator[tuple[str, str]]:
    """Every `*.md` regular file under `root` as (absolute path, `/`-separated relative
    path), in path order; dot-entries, symlinks and other files are left out (the first
    two said in `skipped`: an amux path cannot start a segment with `.`, and a link
    leads out of the store)."""
    count = 0
    stack = [("", root)]
    while stack:
        relative, folder = stack.pop()
        try:
            names = sorted(os.listdir(folder), reverse=True)
        except OSError as error:
            skipped.append(Skipped(folder, f"cannot be read: {error.strerror}"))
            continue
        for name in names:
            count += 1
            if count > WALK_MAX_FILES:
                raise InvalidArgument(f"{root} holds more than {WALK_MAX_FILES} entries: "
                                      "not a memory store; name the folder that holds the notes")
            full = os.path.join(folder, name)
            rel = f"{relative}{name}"
            try:
                name.encode("utf-8")
                info = os.lstat(full)
            except UnicodeEncodeError:
                skipped.append(Skipped(full.encode("utf-8", "surrogateescape").decode(
                    "utf-8", "replace"), "a name that is not UTF-8 (an amux path is)"))
                continue
            except OSError as error:  # gone since the listing
                skipped.append(Skipped(full, f"cannot be read: {error.strerror}"))
                continue
            if stat.S_ISLNK(info.st_mode):
                skipped.append(Skipped(full, "a symbolic link (not followed)"))
            elif name.startswith("."):
                if stat.S_ISDIR(info.st_mode) or name.endswith(".md"):
                    skipped.append(Skipped(full, "a hidden entry (amux paths never start a "
                                                 "folder or file name with '.')"))
            elif stat.S_ISDIR(info.st_mode):
                stack.append((rel + "/", full))
            elif stat.S_ISREG(info.st_mode) and name.endswith(".md"):
                yield full, rel


def _walk_sorted(root: str, skipped: list[Skipped]) -> list[tuple[str, str]]:
    return sorted(_walk(root, skipped), key=lambda pair: pair[1])


def read_text(path: str, skipped: list[Skipped]) -> tuple[str, float] | None:
    """A file's text and modification time, or None (said in `skipped`) when it is too
    large or not UTF-8. Opened read-only, without following a final symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        skipped.append(Skipped(path, f"cannot be read: {error.strerror}"))
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if info.st_size > FILE_MAX_BYTES:
            skipped.append(Skipped(path, f"{info.st_size} bytes: larger than any note"))
            return None
        data = handle.read(FILE_MAX_BYTES + 1)
    try:
        return data.decode("utf-8"), info.st_mtime
    except UnicodeDecodeError as error:
        skipped.append(Skipped(path, f"not UTF-8 at byte {error.start}"))
        return None


def has_front_matter(text: str) -> bool:
    """Whether `text` opens with a closed `---` block."""
    lines = text.split("\n")
    return lines[0].rstrip() == "---" and any(
        line.rstrip() in ("---", "...") for line in lines[1:])


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "note"


def _description(text: str, fallback: str) -> str:
    for line in text.split("\n"):
        line = line.strip().lstrip("#").strip().lstrip("-*").strip()
        if line:
            return line[:DESCRIPTION_MAX_CHARS]
    return fallback


def with_front_matter(text: str, name: str, kind: str, modified: float,
                      description: str | None = None) -> str:
    """`text` as it is when it has front matter; else with the protocol's front matter
    put before it: `name`, a `description` (its first line), `metadata.type` and, so the
    note keeps its date, `metadata.updated` (the source file's day, UTC)."""
    if has_front_matter(text):
        return text
    import json

    day = time.strftime("%Y-%m-%d", time.gmtime(modified))
    said = json.dumps(description or _description(text, name), ensure_ascii=False)
    return (f"---\nname: {name}\ndescription: {said}\nmetadata:\n  type: {kind}\n"
            f"  updated: {day}\n---\n{text}")


# -- projects --------------------------------------------------------------------------


def sanitized(path: str) -> str:
    """A path as Claude Code and Qwen Code name its project folder: every character but
    A-Z, a-z, 0-9 as '-' (`/home/u/shop` is `-home-u-shop`)."""
    return re.sub(r"[^a-zA-Z0-9]", "-", path)


def find_sanitized(key: str, top: str = "/", budget: int = 4096) -> str | None:
    """The existing directory whose `sanitized` path is `key`, or None: the encoding
    loses characters, so the directories are searched from `top`, segment by segment,
    listing at most `budget` entries in all."""
    left = [budget]

    def search(folder: str, rest: str) -> str | None:
        if not rest:
            return folder
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return None
        for name in names:
            left[0] -= 1
            if left[0] < 0:
                return None
            piece = "-" + sanitized(name)
            if rest.startswith(piece) and (len(rest) == len(piece) or rest[len(piece)] == "-"):
                child = os.path.join(folder, name)
                if os.path.isdir(child) and not os.path.islink(child):
                    found = search(child, rest[len(piece):])
                    if found is not None:
                        return found
        return None

    return search(top, key) if key.startswith("-") else None


def remote_id(url: str) -> str:
    """The protocol's stable id of a remote: no scheme, user or `.git`, `/` and `:` as
    `-` (`git@github.com:acme/shop.git` and `https://github.com/acme/shop` are both
    `github.com-acme-shop`)."""
    rest = url.strip()
    rest = re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*://", "", rest)
    rest = re.sub(r"^[^@/]*@", "", rest)
    rest = rest.rstrip("/")
    if rest.endswith(".git"):
        rest = rest[:-4]
    return re.sub(r"[/:]+", "-", rest).strip("-")


def git_remote(path: str, env: Mapping[str, str]) -> str | None:
    """The URL of the repository at `path`'s `origin` remote (else its first remote), or
    None when it is no repository or has none (or git refuses it: another user's, unless
    `safe.directory` says otherwise); git reads its config, runs no hook or monitor."""
    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", "-c", "core.fsmonitor=false", "-C", path, *args],
                                  capture_output=True, text=True,
                                  timeout=10, env=dict(env), check=False)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    names = git("remote").split()
    if not names:
        return None
    name = "origin" if "origin" in names else names[0]
    return git("remote", "get-url", name) or None


def project(key: str, path: str | None, env: Mapping[str, str],
            chosen: Mapping[str, str], recorded: str) -> Project:
    """The amux project id of an agent's project folder `key` whose directory is `path`
    (None: not found on this machine); `recorded` says how the agent named it."""
    if key in chosen:
        return Project(key, path, chosen[key], f"--project-id={key}={chosen[key]}")
    url = git_remote(path, env) if path is not None else None
    if url is not None and remote_id(url):
        shown = re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^@/]*@", r"\1", url)  # no user:token
        return Project(key, path, remote_id(url), f"the repository's remote {shown}")
    fallback = _slug(key)
    if path is None:
        why = (f"{recorded} names no directory on this machine, so no remote can be read: "
               f"named after it; give --project-id={key}=ID for the repository's id "
               "(github.com-org-repo)")
    else:
        why = (f"{path} has no git remote: named after {recorded}, a local name; give "
               f"--project-id={key}=ID to choose a stable one")
    return Project(key, path, fallback, why)


# -- the stores ------------------------------------------------------------------------


def _import_folder(root: str, prefix: str, skipped: list[Skipped], kind: str | None,
                   notes: list[Note]) -> None:
    """Every note of `root` under `prefix`; `kind` set: front matter added where it is
    missing (an agent's note), None: the file as it is (a folder of Markdown)."""
    for full, rel in _walk_sorted(root, skipped):
        read = read_text(full, skipped)
        if read is None:
            continue
        text, modified = read
        if kind is not None and rel != "MEMORY.md":
            text = with_front_matter(text, _slug(rel[:-3].rsplit("/", 1)[-1]), kind, modified)
        notes.append(Note(full, f"{prefix}{rel}", text))


def _project_keys(base: str, *inner: str) -> list[str]:
    """The names in `base`, sorted, of the projects whose `<base>/<name>/<inner…>` is a
    folder and not a link; none when `base` does not exist."""
    try:
        keys = sorted(os.listdir(base))
    except FileNotFoundError:
        return []
    return [key for key in keys if os.path.isdir(os.path.join(base, key, *inner))
            and not os.path.islink(os.path.join(base, key, *inner))]


def _project_stores(store: str, base: str, env: Mapping[str, str], options: Options,
                    locate: Callable[[str, str], tuple[str | None, str]]) -> Gathered:
    """A store of `<base>/<project key>/memory/` folders (Claude Code, Qwen Code's
    projects, Gemini CLI's tmp)."""
    notes: list[Note] = []
    skipped: list[Skipped] = []
    projects: list[Project] = []
    for key in _project_keys(base, "memory"):
        memory = os.path.join(base, key, "memory")
        path, recorded = locate(key, os.path.join(base, key))
        found = project(key, path, env, options.project_ids, recorded)
        projects.append(found)
        _import_folder(memory, f"{options.into}projects/{found.id}/", skipped, "project",
                       notes)
    return Gathered(store, base, notes, skipped, projects)


def _by_encoded_path(key: str, folder: str) -> tuple[str | None, str]:
    return find_sanitized(key), f"the folder name {key} (the project's path, encoded)"


def claude(env: Mapping[str, str], options: Options) -> Gathered:
    base = os.path.join(_under(env, "CLAUDE_CONFIG_DIR", ".claude"), "projects")
    return _project_stores("claude", base, env, options, _by_encoded_path)


def _qwen_base(env: Mapping[str, str]) -> str:
    for variable in ("QWEN_CODE_MEMORY_BASE_DIR", "QWEN_RUNTIME_DIR", "QWEN_HOME"):
        if os.path.isabs(env.get(variable, "")):
            return env[variable]
    return os.path.join(_home(env), ".qwen")


def qwen(env: Mapping[str, str], options: Options) -> Gathered:
    base = _qwen_base(env)
    found = _project_stores("qwen", os.path.join(base, "projects"), env, options,
                            _by_encoded_path)
    user = os.path.join(base, "memories")
    if os.path.isdir(user) and not os.path.islink(user):
        # The user memory is cross-project: its type folders (user/, feedback/…) go to the
        # top level, as the guide says; its index stays out (amux's MEMORY.md is yours).
        notes: list[Note] = []
        _import_folder(user, options.into, found.skipped, "user", notes)
        for note in notes:
            if note.path == f"{options.into}MEMORY.md":
                found.skipped.append(Skipped(note.source, "the user memory's index: amux's "
                                             "MEMORY.md is your own entry point (add a line "
                                             "there for what you want every session to see)"))
            else:
                found.notes.append(note)
    return found._replace(root=base)


def _gemini_dir(env: Mapping[str, str]) -> str:
    home = env.get("GEMINI_CLI_HOME", "")
    return os.path.join(home if os.path.isabs(home) else _home(env), ".gemini")


def _gemini_project(key: str, folder: str) -> tuple[str | None, str]:
    marker = os.path.join(folder, ".project_root")
    try:
        with open(marker, encoding="utf-8") as handle:
            recorded = handle.read().strip()
    except (OSError, UnicodeDecodeError):
        return None, f"the slug {key} (no .project_root beside it)"
    exists = os.path.isdir(recorded)
    return (recorded if exists else None), f"{recorded} (its .project_root)"


GEMINI_SECTION = "## Gemini Added Memories"


def gemini_added(text: str) -> str | None:
    """The `## Gemini Added Memories` section's lines (what the old `save_memory` tool
    appended, one `- fact` a line, up to the next `## ` heading), or None."""
    at = text.find(GEMINI_SECTION)
    if at < 0:
        return None
    body = text[at + len(GEMINI_SECTION):].split("\n")[1:]
    kept: list[str] = []
    for line in body:
        if line.startswith("## ") or line.startswith("# "):
            break
        kept.append(line)
    section = "\n".join(kept).strip("\n")
    return section + "\n" if section.strip() else None


def gemini(env: Mapping[str, str], options: Options) -> Gathered:
    root = _gemini_dir(env)
    found = _project_stores("gemini", os.path.join(root, "tmp"), env, options, _gemini_project)
    context = os.path.join(root, "GEMINI.md")
    if os.path.isfile(context) and not os.path.islink(context):
        read = read_text(context, found.skipped)
        section = None if read is None else gemini_added(read[0])
        if read is not None and section is not None:
            found.notes.append(Note(context, f"{options.into}user/gemini-added-memories.md",
                                    with_front_matter(
                                        section, "gemini-added-memories", "user", read[1],
                                        "facts Gemini CLI saved with save_memory in "
                                        "~/.gemini/GEMINI.md")))
    return found._replace(root=root)


CODEX_IMPORTED = ("MEMORY.md", "memory_summary.md")
"""What Codex consolidated; `raw_memories.md` and `rollout_summaries/` are its input."""


def codex(env: Mapping[str, str], options: Options) -> Gathered:
    root = os.path.join(_under(env, "CODEX_HOME", ".codex"), "memories")
    notes: list[Note] = []
    skipped: list[Skipped] = []
    if os.path.isdir(root):
        everything: list[Note] = []
        _import_folder(root, f"{options.into}imported/codex/", skipped, "reference", everything)
        for note in everything:
            rel = note.path.removeprefix(f"{options.into}imported/codex/")
            if rel in CODEX_IMPORTED or rel.startswith("skills/"):
                notes.append(note)
            else:
                skipped.append(Skipped(note.source, "Codex's raw input to its own "
                                       "consolidation (in MEMORY.md once consolidated)"))
    return Gathered("codex", root, notes, skipped, [])


def cline(env: Mapping[str, str], options: Options) -> Gathered:
    repository = os.path.abspath(options.folder or os.getcwd())
    bank = os.path.join(repository, "memory-bank")
    if not os.path.isdir(bank):
        raise InvalidArgument(f"{bank} does not exist: give the repository that holds "
                              "Cline's memory-bank/ folder with --path REPO")
    found = project(os.path.basename(repository) or "repository", repository, env,
                    options.project_ids, f"the directory name {repository}")
    notes: list[Note] = []
    skipped: list[Skipped] = []
    _import_folder(bank, f"{options.into}projects/{found.id}/memory-bank/", skipped,
                   "project", notes)
    return Gathered("cline", bank, notes, skipped, [found])


KILO_NOTES = {"project.md": "project", "environment.md": "reference",
              "corrections.md": "feedback"}
"""Kilo Memory's Markdown files of a project and the note type each gets; its other files
(`index.kmem`, `manifest.json`, `state.json`) are Kilo's own bookkeeping, derived."""


def kilo(env: Mapping[str, str], options: Options) -> Gathered:
    base = os.path.join(_under(env, "XDG_DATA_HOME", os.path.join(".local", "share")),
                        "kilo", "memory")
    notes: list[Note] = []
    skipped: list[Skipped] = []
    projects: list[Project] = []
    for key in _project_keys(base):
        folder_path = os.path.join(base, key)
        path, recorded = _kilo_project(folder_path, key, skipped)
        found = project(key, path, env, options.project_ids, recorded)
        projects.append(found)
        for name, kind in KILO_NOTES.items():
            full = os.path.join(folder_path, name)
            read = read_text(full, skipped) if os.path.isfile(full) else None
            if read is None:
                continue
            text, modified = read
            if not any(line.strip() and not line.startswith("#") for line in text.splitlines()):
                skipped.append(Skipped(full, "Kilo's empty template (headings only)"))
                continue
            notes.append(Note(full, f"{options.into}projects/{found.id}/kilo-{name}",
                              with_front_matter(text, f"kilo-{name[:-3]}", kind, modified)))
    return Gathered("kilo", base, notes, skipped, projects)


def _kilo_project(folder_path: str, key: str, skipped: list[Skipped],
                  ) -> tuple[str | None, str]:
    """The project directory Kilo recorded for one memory folder (`manifest.json`'s
    `canonical`), when it is still there."""
    manifest = os.path.join(folder_path, "manifest.json")
    read = read_text(manifest, skipped) if os.path.isfile(manifest) else None
    try:
        canonical = json.loads(read[0]).get("canonical") if read else None
    except (ValueError, AttributeError):
        canonical = None
    if not isinstance(canonical, str):
        return None, f"the folder name {key} (its manifest.json names no project)"
    where = canonical if os.path.isdir(canonical) else None
    return where, f"its manifest.json's project {canonical}"


def folder(env: Mapping[str, str], options: Options) -> Gathered:
    root = os.path.abspath(options.folder or "")
    if not os.path.isdir(root):
        raise InvalidArgument(f"{options.folder} is neither a folder nor a store amux knows "
                              f"({', '.join(STORES)})")
    notes: list[Note] = []
    skipped: list[Skipped] = []
    _import_folder(root, options.into, skipped, None, notes)
    return Gathered("folder", root, notes, skipped, [])


STORES: dict[str, Callable[[Mapping[str, str], Options], Gathered]] = {
    "claude": claude,
    "gemini": gemini,
    "qwen": qwen,
    "codex": codex,
    "cline": cline,
    "kilo": kilo,
}
"""Every agent store `amux memory import` reads by name; any other SOURCE is a folder."""


def gather(source: str, env: Mapping[str, str], options: Options) -> Gathered:
    """What `source` (a store's name, or a folder) holds."""
    reader = STORES.get(source)
    if reader is None:
        return folder(env, options._replace(folder=source))
    return reader(env, options)


def found_stores(env: Mapping[str, str], options: Options) -> list[dict[str, object]]:
    """Which agents' stores this machine has (`amux memory import` without SOURCE): each
    store's folder, whether it exists, and its notes and projects; Cline's live in
    repositories (`import cline --path REPO`)."""
    found: list[dict[str, object]] = []
    for name, reader in STORES.items():
        if name == "cline":
            continue
        gathered = reader(env, options)
        found.append({"source": name, "root": gathered.root,
                      "exists": os.path.isdir(gathered.root), "notes": len(gathered.notes),
                      "projects": [project.id for project in gathered.projects]})
    return found
