"""The target user of an isolated run as an adversary (issue 21).

The target owns its home and may plant anything there before the launch, or change it
while root works: links to root's files, `..` names in its agents' settings, FIFOs, huge
sparse files, renames raced against root's mkdir. Root (the launcher, as CI runs it) must
never read, write, create or chown anything there on the target's say-so: every test
here plants as the real throwaway user A and checks what root did. Each failed on the
launcher before the helper acting as the target (amux.materializer.helper), but those of
a stopped helper (issue 33), which test the helper itself.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from amux.materializer.helper import CALL_SECONDS
from tests.isolation.world import World, user_a, user_b
from tests.wait import wait_until


@pytest.fixture
def vault(world: World) -> Iterator[Path]:
    """A root-only directory holding a secret file, as /root or /etc/shadow would be."""
    directory = Path(tempfile.mkdtemp(prefix="amux-vault-"))
    directory.chmod(0o700)
    secret = directory / "secret.txt"
    secret.write_text(f"root-only-{secrets.token_hex(8)}\n")
    secret.chmod(0o600)
    yield directory
    subprocess.run(["rm", "-rf", str(directory)], check=False)


def secret_of(vault: Path) -> str:
    return (vault / "secret.txt").read_text().strip()


def plant(world: World, user: str, script: str) -> None:
    """Run a shell `script` as `user` in its home (HOME set), as it would plant things."""
    entry = world.users[user]
    done = subprocess.run(["/bin/sh", "-ec", script], user=entry.pw_uid, group=entry.pw_gid,
                          extra_groups=[], capture_output=True, text=True, timeout=60,
                          cwd=entry.pw_dir, env={"HOME": entry.pw_dir, "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr


def everything_the_target_holds(world: World, user: str) -> str:
    """All text in the target's home and in what its agents recorded."""
    texts = [world.log.read_text() if world.log.exists() else ""]
    for top, _, names in os.walk(world.users[user].pw_dir):
        for name in names:
            path = os.path.join(top, name)
            if stat.S_ISREG(os.lstat(path).st_mode) and os.path.getsize(path) < 1 << 20:
                texts.append(Path(path).read_text(errors="replace"))
    return "\n".join(texts)


def assert_untouched(vault: Path, before: str) -> None:
    info = (vault / "secret.txt").stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (0, 0, 0o600)
    assert (vault / "secret.txt").read_text().strip() == before
    assert sorted(os.listdir(vault)) == ["secret.txt"]


# -- 1. `..` in an agent's settings ------------------------------------------------------------


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_context_file_name_outside_gemini_home_is_refused(world: World, vault: Path,
                                                           dry_run: bool) -> None:
    """`context.fileName` of `../../…/vault/secret.txt`: Gemini would look there, but the
    launch's mirror cannot hold it, so the launch is refused naming the setting; root
    neither reads the secret into the instructions nor writes them back over it."""
    a = user_a(world)
    secret = secret_of(vault)
    name = "../" * 16 + str(vault / "secret.txt").lstrip("/")
    settings = json.dumps({"context": {"fileName": name}})
    plant(world, a, f"mkdir -p .gemini && printf '%s' '{settings}' > .gemini/settings.json")
    done = world.run(a, str(world.agents / "gemini"), "-p", "hi",
                     options=("--dry-run",) if dry_run else ())
    assert done.returncode == 2, done.stderr
    assert "context.fileName" in done.stderr and "not a plain file name" in done.stderr
    assert secret not in done.stdout + done.stderr
    assert world.records() == []  # the agent never started
    assert_untouched(vault, secret)


# -- 2. links to what only root may read -------------------------------------------------------


LINKED = {"gemini": ".gemini/GEMINI.md", "pi": ".pi/agent/APPEND_SYSTEM.md",
          "codex": ".codex/config.toml"}


@pytest.mark.parametrize("agent", sorted(LINKED))
@pytest.mark.parametrize("what", ["root-only file", "owner's login token"])
def test_a_link_to_what_only_root_may_read_is_read_as_the_target(
        world: World, vault: Path, agent: str, what: str) -> None:
    """The target links its agent's instruction file (Codex: its config) to a root-only
    file or to the Hub owner's credentials: the launch reads it as the target, who may
    not, so nothing of it reaches the target's agent, its home, or the dry run."""
    a = user_a(world)
    if agent == "codex":  # a config whose instructions would go into the agent's argv
        (vault / "config.toml").write_text(f'developer_instructions = "{secret_of(vault)}"\n')
        (vault / "config.toml").chmod(0o600)
    source = (world.hub.home / "credentials" / "owner.json" if what != "root-only file"
              else vault / ("config.toml" if agent == "codex" else "secret.txt"))
    leaked = (json.loads(source.read_text())["token"] if what != "root-only file"
              else secret_of(vault))
    link = LINKED[agent]
    plant(world, a, f"mkdir -p {os.path.dirname(link)} && ln -s {source} {link}")
    for options in (("--dry-run",), ()):
        done = world.run(a, str(world.agents / agent), "-p", "hi", options=options)
        assert leaked not in done.stdout + done.stderr
        if done.returncode != 0:  # refused: naming the file it could not read
            assert done.returncode == 2 and "cannot read" in done.stderr, done.stderr
            assert "Permission denied" in done.stderr
    assert leaked not in everything_the_target_holds(world, a)
    assert all(leaked not in json.dumps(record) for record in world.records())


def test_a_link_to_another_users_running_config_leaks_nothing_of_it(world: World) -> None:
    """While B's agent runs, A links its `GEMINI.md` to B's connection config in the runs
    root: root would read it; as A the read is refused, and B's token stays B's."""
    a, b = user_a(world), user_b(world)
    running = world.launch(b, str(world.agents / "pi"), env={"ISO_ACTION": "wait"},
                           wait=False)
    assert isinstance(running, subprocess.Popen)
    try:
        [config] = wait_until(
            lambda: list(world.runs.glob("*/agent-config/memory/memory.json")), 60,
            "B's running agent's connection config")
        token = json.loads(config.read_text())["token"]
        plant(world, a, f"mkdir -p .gemini && ln -s {config} .gemini/GEMINI.md")
        for options in (("--dry-run",), ()):
            done = world.run(a, str(world.agents / "gemini"), "-p", "hi", options=options)
            assert token not in done.stdout + done.stderr
            assert done.returncode == 2 and "Permission denied" in done.stderr, done.stderr
        assert token not in everything_the_target_holds(world, a)
    finally:
        running.send_signal(signal.SIGTERM)
        running.communicate(timeout=60)


def test_a_gemini_home_linked_to_a_root_only_directory_shows_nothing_of_it(
        world: World, vault: Path) -> None:
    """`~/.gemini` → a root-only directory: its names are never listed into the mirror."""
    a = user_a(world)
    (vault / "root-only-name.json").write_text("{}")
    plant(world, a, f"ln -s {vault} .gemini")
    done = world.run(a, str(world.agents / "gemini"), "-p", "hi",
                     env={"ISO_ACTION": "mirror"})
    assert "root-only-name" not in done.stdout + done.stderr
    assert "root-only-name" not in json.dumps(world.records())
    assert done.returncode == 2 and "Permission denied" in done.stderr, done.stderr


# -- 3. directories made and chowned in the target's home --------------------------------------


def test_an_amux_directory_linked_elsewhere_gets_nothing_made_there(world: World,
                                                                   vault: Path) -> None:
    """`~/.amux` → a root-only directory: the session directory is made as the target,
    who cannot write there, so nothing appears in it and the launch says why: a file
    system that refuses is `storage_unavailable` naming EACCES (exit 8), not a usage
    error (issue 34)."""
    a = user_a(world)
    secret = secret_of(vault)
    plant(world, a, f"ln -s {vault} .amux")
    done = world.run(a, str(world.agents / "pi"), "-p", "hi")
    assert done.returncode == 8 and "cannot prepare" in done.stderr, done.stderr
    assert "storage_unavailable" in done.stderr and "EACCES" in done.stderr
    assert world.records() == []
    assert_untouched(vault, secret)
    assert world.live_tokens() == []  # revoked however the launch ended


RACER = r'''
import ctypes, os, struct, sys
sessions, target = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL("libc.so.6", use_errno=True)
fd = libc.inotify_init()
assert libc.inotify_add_watch(fd, sessions.encode(), 0x100 | 0x80) >= 0  # CREATE, MOVED_TO
print("ready", flush=True)
while True:
    events = os.read(fd, 65536)
    at = 0
    while at < len(events):
        _, mask, _, size = struct.unpack_from("iIII", events, at)
        name = events[at + 16:at + 16 + size].rstrip(b"\0").decode()
        at += 16 + size
        path = os.path.join(sessions, name)
        if name.endswith(".aside") or os.path.islink(path):
            continue
        try:  # swap the new directory for a link to root's file, and under it too
            os.rename(path, path + ".aside")
            os.symlink(target, path)
        except OSError:
            pass
'''


def test_a_racer_swapping_new_directories_for_links_never_gets_a_file_chowned(
        world: World, vault: Path) -> None:
    """An unprivileged inotify racer renames each new session directory aside and plants
    a link to root's secret in its place, at once: across launches, the secret stays
    root's (nothing in the target's home is chowned by root), and each launch either
    runs or is refused."""
    a = user_a(world)
    entry = world.users[a]
    secret = secret_of(vault)
    sessions = Path(entry.pw_dir) / ".amux" / "sessions"
    plant(world, a, "mkdir -p .amux/sessions")
    racer = subprocess.Popen(["/usr/bin/python3", "-c", RACER, str(sessions),
                              str(vault / "secret.txt")], user=entry.pw_uid,
                             group=entry.pw_gid, extra_groups=[], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert racer.stdout is not None and racer.stdout.readline().strip() == "ready"
        for _ in range(6):
            done = world.run(a, str(world.agents / "gemini"), "-p", "hi")
            assert done.returncode in (0, 1, 2), done.stderr  # run, or refused
            assert_untouched(vault, secret)
    finally:
        racer.kill()
        racer.communicate()
    assert world.live_tokens() == []


# -- 4. FIFOs and huge files -------------------------------------------------------------------


@pytest.mark.timeout(200)
@pytest.mark.parametrize("dry_run", [True, False])
def test_a_fifo_for_a_settings_file_is_refused_at_once(world: World, dry_run: bool) -> None:
    a = user_a(world)
    plant(world, a, "mkdir -p .gemini && mkfifo .gemini/settings.json")
    started = time.monotonic()
    done = world.run(a, str(world.agents / "gemini"), "-p", "hi",
                     options=("--dry-run",) if dry_run else (), timeout=60)
    assert done.returncode == 2, done.stderr
    assert "settings.json is a FIFO, not a regular file" in done.stderr
    assert time.monotonic() - started < 30


@pytest.mark.timeout(200)
def test_a_fifo_the_agent_leaves_in_its_mirror_neither_hangs_nor_keeps_its_token(
        world: World) -> None:
    """The agent replaces the settings amux wrote into its mirror with a FIFO and exits:
    the launcher restores the mirror without waiting on it and revokes the token."""
    a = user_a(world)
    done = world.run(a, str(world.agents / "gemini"), "-p", "hi",
                     env={"ISO_ACTION": "fifo"}, timeout=60)
    assert done.returncode == 0, done.stderr
    assert world.live_tokens() == []
    assert list(world.runs.iterdir()) == []
    assert not list((Path(world.users[a].pw_dir) / ".amux" / "sessions").glob("*/gemini-home"))


@pytest.mark.timeout(200)
def test_a_huge_sparse_instruction_file_is_refused_without_reading_it(world: World) -> None:
    a = user_a(world)
    plant(world, a, "mkdir -p .gemini && truncate -s 400M .gemini/GEMINI.md")
    done = world.run(a, str(world.agents / "gemini"), "-p", "hi", options=("--dry-run",),
                     timeout=60)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "GEMINI.md is larger than 4 MiB" in done.stderr
    assert len(done.stdout) < 1 << 20


# -- the token goes before anything in the target's files --------------------------------------


@pytest.mark.timeout(200)
def test_the_token_is_revoked_before_the_targets_files_are_touched(world: World) -> None:
    """The agent stops (SIGSTOP) the helper that acts as it, then exits: the launcher's
    restore waits on the helper, yet the agent's token is already revoked. The helper is
    not the target's to trace (non-dumpable: its /proc entries are root's)."""
    a = user_a(world)
    running = world.launch(a, str(world.agents / "gemini"), "-p", "hi",
                           env={"ISO_ACTION": "stop-helper"}, wait=False)
    assert isinstance(running, subprocess.Popen)
    try:
        [record] = wait_until(world.records, 60, "the agent's record")
        [helper] = record["stopped"]
        assert helper["signalled"] == 0  # the target can signal it...
        assert helper["proc_uid"] == 0 and helper["environ"] != 0  # ...but not read it
        wait_until(lambda: world.live_tokens() == [], 60, "the agent's token to be revoked")
        assert running.poll() is None  # still waiting on the stopped helper
        os.kill(helper["pid"], signal.SIGKILL)
        _, err = running.communicate(timeout=60)
        assert running.returncode == 0, err
        assert "mirrors were not restored" in err
    finally:
        if running.poll() is None:
            running.kill()
            running.communicate()
    again = world.run(a, str(world.agents / "gemini"), "-p", "hi")  # restores the leftover
    assert again.returncode == 0, again.stderr


BIG_APPEND_SYSTEM = "mkdir -p .pi/agent && head -c 2097152 /dev/zero | tr '\\0' x > " \
                    ".pi/agent/APPEND_SYSTEM.md"
"""A's 2 MiB Pi instructions: the plan's file that carries them is larger than the helper's
socket buffer, so a stopped helper never reads the request that sends it."""


@pytest.mark.timeout(150)
@pytest.mark.parametrize("args", [("--no-session",), ()], ids=["restore", "kept"])
def test_a_stopped_helper_ends_the_launch_at_the_call_deadline(world: World,
                                                               args: tuple[str, ...]) -> None:
    """The agent stops (SIGSTOP) the helper that acts as it, then exits. The launcher's
    next call to it (`--no-session`: the restore, sending A's 2 MiB instructions, which
    waited for ever in `sendall`; a new session: the check that Pi kept its session
    file, then the restore) is given up at the call's deadline: the launch ends, the
    helper killed, the token revoked, the run directory removed, and one line says why."""
    a = user_a(world)
    plant(world, a, BIG_APPEND_SYSTEM)
    started = time.monotonic()
    running = world.launch(a, str(world.agents / "pi"), *args, "-p", "hi",
                           env={"ISO_ACTION": "stop-helper"}, wait=False)
    assert isinstance(running, subprocess.Popen)
    try:
        _, err = running.communicate(timeout=CALL_SECONDS + 60)
    finally:
        if running.poll() is None:
            running.kill()
            running.communicate()
    assert time.monotonic() - started < CALL_SECONDS + 30
    assert running.returncode == 0, err
    [record] = world.records()
    [helper] = record["stopped"]
    assert helper["signalled"] == 0
    assert not os.path.exists(f"/proc/{helper['pid']}")  # killed and reaped
    assert world.live_tokens() == []
    assert list(world.runs.iterdir()) == []
    [line] = [line for line in err.splitlines() if "mirrors were not restored" in line]
    assert f"took longer than {CALL_SECONDS:.0f} s, so it was stopped" in line


STOPPER = r'''
import ctypes, os, signal, sys, time
sessions, uid = sys.argv[1], os.getuid()
libc = ctypes.CDLL("libc.so.6", use_errno=True)
fd = libc.inotify_init()
assert libc.inotify_add_watch(fd, sessions.encode(), 0x100) >= 0  # IN_CREATE
print("ready", flush=True)
def helper():  # running as us, yet its /proc entries are root's: non-dumpable
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/status") as status:
                real = next(line for line in status if line.startswith("Uid:")).split()[1]
            if int(real) == uid and os.stat(f"/proc/{name}/environ").st_uid == 0:
                return int(name)
        except (OSError, ValueError, StopIteration):
            continue
    return None
pid = None
while pid is None:
    pid = helper()
    time.sleep(0.005)
os.read(fd, 4096)  # the session directory, made by the helper: the launch's first call
os.kill(pid, signal.SIGSTOP)
print(pid, flush=True)
'''


@pytest.mark.timeout(150)
def test_a_helper_stopped_at_launch_start_ends_the_launch_at_the_call_deadline(
        world: World) -> None:
    """A process of A's stops the helper as soon as it makes the session directory, with
    the token minted and the run directory in place. The stop mostly lands before the
    helper's next reply (a wait bounded before issue 33 too), seldom while the request
    carrying A's 2 MiB instructions is sent, and on a busy machine maybe only after the
    agent started: wherever it lands, the launch ends at the call's deadline, its token
    revoked, its run directory removed, and one line says why."""
    a = user_a(world)
    entry = world.users[a]
    plant(world, a, f"{BIG_APPEND_SYSTEM} && mkdir -p .amux/sessions")
    stopper = subprocess.Popen(["/usr/bin/python3", "-c", STOPPER,
                                f"{entry.pw_dir}/.amux/sessions"], user=entry.pw_uid,
                               group=entry.pw_gid, extra_groups=[], stdout=subprocess.PIPE,
                               text=True)
    running = None
    try:
        assert stopper.stdout is not None and stopper.stdout.readline().strip() == "ready"
        started = time.monotonic()
        running = world.launch(a, str(world.agents / "pi"), "--no-session", "-p", "hi",
                               wait=False)
        assert isinstance(running, subprocess.Popen)
        _, err = running.communicate(timeout=CALL_SECONDS + 60)
        assert time.monotonic() - started < CALL_SECONDS + 30
        helper = int(stopper.communicate(timeout=10)[0])
    finally:
        stopper.kill()
        stopper.communicate()
        if running is not None and running.poll() is None:
            running.kill()
            running.communicate()
    assert not os.path.exists(f"/proc/{helper}")
    assert world.live_tokens() == []
    assert list(world.runs.iterdir()) == []
    if world.records() == []:  # stopped before the agent started: no usage error (issue 34)
        assert running.returncode == 1, err
        [line] = [line for line in err.splitlines() if "cannot prepare" in line]
        assert line.startswith("amux run: internal: "), line
    else:
        assert running.returncode == 0, err
        [line] = [line for line in err.splitlines() if "mirrors were not restored" in line]
    assert f"took longer than {CALL_SECONDS:.0f} s, so it was stopped" in line


# -- 5. a runs root that is not root's alone ---------------------------------------------------


def test_a_runs_root_another_user_made_is_refused_and_left_as_it_is(world: World) -> None:
    """B made the runs root first (under sticky /tmp) and planted a token record naming a
    live token of A's: the launch refuses the root, naming the fix, chmods nothing, and
    revokes nothing on B's say-so."""
    a, b = user_a(world), user_b(world)
    running = world.launch(a, str(world.agents / "pi"), env={"ISO_ACTION": "wait"},
                           wait=False)
    assert isinstance(running, subprocess.Popen)
    theirs = Path(tempfile.mkdtemp(prefix="amux-theirs-"))
    try:
        [token] = wait_until(world.live_tokens, 60, "A's running agent's token")
        token_id = token["token_id"]
        theirs.chmod(0o1777)
        runs = theirs / "runs"
        plant(world, b, f"mkdir -m 777 {runs} && mkdir {runs}/x && printf '%s' "
                        f"'{json.dumps({'principal': a, 'token_id': token_id})}'"
                        f" > {runs}/x/token.json")
        done = world.run(a, str(world.agents / "pi"), env={"AMUX_RUNS_DIR": str(runs)})
        assert done.returncode == 2, done.stderr
        assert f"unsafe runs directory {runs}: it is owned by uid" in done.stderr
        assert "set AMUX_RUNS_DIR" in done.stderr
        assert stat.S_IMODE(runs.stat().st_mode) == 0o777
        assert [t["token_id"] for t in world.live_tokens()] == [token_id]
    finally:
        running.send_signal(signal.SIGTERM)
        running.communicate(timeout=60)
        subprocess.run(["rm", "-rf", str(theirs)], check=False)


def test_a_runs_root_writable_by_others_is_refused_not_chmodded(world: World) -> None:
    a = user_a(world)
    runs = world.runs.parent / "open-runs"
    runs.mkdir()
    runs.chmod(0o777)
    done = world.run(a, str(world.agents / "pi"), env={"AMUX_RUNS_DIR": str(runs)})
    assert done.returncode == 2, done.stderr
    assert f"unsafe runs directory {runs}: it is writable by others" in done.stderr
    assert stat.S_IMODE(runs.stat().st_mode) == 0o777
    assert world.live_tokens() == []


# -- 6. malformed settings ---------------------------------------------------------------------


def test_deeply_nested_settings_are_a_clear_error(world: World) -> None:
    a = user_a(world)
    plant(world, a, "mkdir -p .gemini && python3 -c \"import sys; "
                    "sys.stdout.write('{\\\"a\\\": ' + '[' * 100000 + ']' * 100000 + '}')\""
                    " > .gemini/settings.json")
    done = world.run(a, str(world.agents / "gemini"), "-p", "hi", options=("--dry-run",))
    assert done.returncode == 2, done.stderr
    assert "settings.json" in done.stderr and "a bug" not in done.stderr
