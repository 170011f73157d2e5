"""The agent supervisor with small Python agents: exit status, forwarded signals, the terminal.

Signals are sent to a supervisor running in its own process (and own session, so it has no
controlling terminal); terminal behaviour is driven through a real pty with pexpect.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pexpect
import psutil
import pytest

from amux.launcher.supervise import FORWARDED, STOP_GRACE, AgentNotStarted, supervise
from tests.job import as_job
from tests.wait import wait_until

REPO = Path(__file__).resolve().parents[2]

# Records the signals it gets; exits 40 once it got one named on its command line and the
# test created the `go` file (so the test can see the supervisor still running meanwhile).
RECORDER = """
import os, signal, sys, time
record, go, *last = sys.argv[1:]
def on_signal(signum, frame):
    with open(record, "a") as out:
        out.write(signal.Signals(signum).name + "\\n")
    if signal.Signals(signum).name in last:
        while not os.path.exists(go):
            time.sleep(0.01)
        sys.exit(40)
for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM,
            signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH):
    signal.signal(sig, on_signal)
print("ready", flush=True)
while True:
    time.sleep(1)
"""

SUPERVISOR = """
import os, signal, sys
from amux.launcher.supervise import FORWARDED, supervise
for sig in FORWARDED:  # as a shell starts a job, whatever the test run ignores (nohup)
    signal.signal(sig, signal.SIG_DFL)
sys.exit(supervise(sys.argv[1:], dict(os.environ)))
"""

# A caller in the shape of `amux run`: records the pid, cleans up in `finally`.
CALLER = """
import os, sys
from amux.launcher.supervise import supervise
marker, *agent = sys.argv[1:]
try:
    code = supervise(agent, dict(os.environ), on_start=lambda pid: print(pid, flush=True))
finally:
    with open(marker, "w") as out:
        out.write("cleaned up")
sys.exit(code)
"""

# Interactive: prompts, answers, reports resizes; in run "1" a SIGINT is noted, then exit 42;
# in run "2" Ctrl-C kills it as it kills any Python program; in run "3" a second prompt.
AGENT = """
import os, signal, sys, time
record, run = sys.argv[1:]
def on_int(signum, frame):
    with open(record, "a") as out:
        out.write("SIGINT\\n")
    time.sleep(0.3)
    sys.exit(42)
def on_winch(signum, frame):
    print("size %dx%d" % tuple(os.get_terminal_size()), flush=True)
signal.signal(signal.SIGWINCH, on_winch)
if run == "1":
    signal.signal(signal.SIGINT, on_int)
name = input(f"[{run}] name? ")
print(f"hello {name}, terminal mine: {os.tcgetpgrp(0) == os.getpgrp()}", flush=True)
if run == "3":
    print(f"bye {input('again? ')}", flush=True)
    sys.exit(5)
while True:
    time.sleep(1)
"""

# Agents in a row under one pty: each only works if the one before gave the terminal back.
HOST = """
import os, sys
from amux.launcher.supervise import supervise
agent = sys.argv[1:]
for run in "122":
    code = supervise([sys.executable, *agent, run], dict(os.environ))
    print(f"run {run} exited {code}, foreground {os.tcgetpgrp(0) == os.getpgrp()}", flush=True)
"""


def _script(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return str(path)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _wait_for_record(record: Path, names: list[str]) -> None:
    wait_until(lambda: record.exists() and record.read_text().split() == names, 10,
               f"the agent to record {names}")


def _handlers() -> dict[int, object]:
    return {sig: signal.getsignal(sig) for sig in (*FORWARDED, signal.SIGCHLD, signal.SIGCONT)}


@pytest.mark.parametrize("code", [0, 3, 255])
def test_exit_code_passes_through(tmp_path: Path, code: int) -> None:
    agent = _script(tmp_path, "agent", "import os, sys\n"
                    "with open('seen', 'w') as out:\n"
                    "    print(os.getpid(), os.getcwd(), os.environ['AGENT_VAR'], file=out)\n"
                    "sys.exit(int(sys.argv[1]))\n")
    before = _handlers()
    started: list[int] = []
    status = supervise([sys.executable, agent, str(code)], {**os.environ, "AGENT_VAR": "x"},
                       str(tmp_path), on_start=started.append)
    assert status == code
    assert (tmp_path / "seen").read_text().split() == [str(started[0]), str(tmp_path), "x"]
    assert _handlers() == before


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGUSR1, signal.SIGKILL])
def test_death_by_signal_is_128_plus_n(tmp_path: Path, sig: signal.Signals) -> None:
    agent = _script(tmp_path, "agent", f"import os\nos.kill(os.getpid(), {int(sig)})\n")
    assert supervise([sys.executable, agent], dict(os.environ)) == 128 + sig


@contextmanager
def _start(tmp_path: Path, *last: str) -> Iterator[subprocess.Popen[str]]:
    """A supervisor (own session: no terminal) running RECORDER, once that is ready; it
    and its agent are killed after, however the test ended."""
    agent = [sys.executable, _script(tmp_path, "recorder", RECORDER), str(tmp_path / "record"),
             str(tmp_path / "go"), *last]
    supervisor = subprocess.Popen([sys.executable, "-c", SUPERVISOR, *agent], env=_env(),
                                  stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert supervisor.stdout is not None
        assert supervisor.stdout.readline() == "ready\n"
        yield supervisor
    finally:
        with suppress(ProcessLookupError):
            os.killpg(supervisor.pid, signal.SIGKILL)
        supervisor.communicate()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_to_the_supervisor_is_forwarded_and_it_waits(
    tmp_path: Path, sig: signal.Signals
) -> None:
    record = tmp_path / "record"
    with _start(tmp_path, sig.name) as supervisor:
        supervisor.send_signal(sig)
        _wait_for_record(record, [sig.name])
        time.sleep(0.1)  # the test: a while after the signal, the agent still runs...
        assert supervisor.poll() is None  # ...and so does its supervisor
        (tmp_path / "go").touch()
        assert supervisor.wait(timeout=10) == 40


def test_other_signals_are_forwarded(tmp_path: Path) -> None:
    record = tmp_path / "record"
    sent = [signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH, signal.SIGTERM]
    (tmp_path / "go").touch()
    with _start(tmp_path, "SIGTERM") as supervisor:
        for count, sig in enumerate(sent, 1):
            supervisor.send_signal(sig)
            _wait_for_record(record, [sig.name for sig in sent[:count]])
        assert supervisor.wait(timeout=10) == 40


def test_killed_agent_gives_137_and_the_callers_cleanup_runs(tmp_path: Path) -> None:
    agent = _script(tmp_path, "agent", "import time\ntime.sleep(60)\n")
    marker = tmp_path / "marker"
    with subprocess.Popen(
        [sys.executable, "-c", CALLER, str(marker), sys.executable, agent], env=_env(),
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    ) as caller:
        assert caller.stdout is not None
        os.kill(int(caller.stdout.readline()), signal.SIGKILL)
        assert caller.wait(timeout=10) == 137
    assert marker.read_text() == "cleaned up"


def test_agent_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    before = _handlers()
    missing = str(tmp_path / "no-such-agent")
    with pytest.raises(AgentNotStarted, match=r"no-such-agent.*No such file or directory"):
        supervise([missing, "--flag"], dict(os.environ))
    (tmp_path / "plain").write_text("#!/bin/sh\n")
    with pytest.raises(AgentNotStarted, match="Permission denied"):
        supervise([str(tmp_path / "plain")], dict(os.environ))
    with pytest.raises(AgentNotStarted, match=r"No such file or directory.*no-such-dir"):
        supervise([sys.executable, "-c", "pass"], dict(os.environ), str(tmp_path / "no-such-dir"))
    with pytest.raises(AgentNotStarted, match="no-such-agent-on-path"):
        supervise(["no-such-agent-on-path"], {"PATH": str(tmp_path)})
    assert _handlers() == before


def test_failing_on_start_kills_the_agent(tmp_path: Path) -> None:
    agent = _script(tmp_path, "agent", "import time\ntime.sleep(60)\n")
    started: list[int] = []

    def fail(pid: int) -> None:
        started.append(pid)
        raise RuntimeError("cannot record the session")

    with pytest.raises(RuntimeError, match="cannot record"):
        supervise([sys.executable, agent], dict(os.environ), on_start=fail)
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(started[0], 0)


def test_interactive_agent_owns_the_terminal(tmp_path: Path) -> None:
    record = tmp_path / "record"
    agent = [_script(tmp_path, "agent", AGENT), str(record)]
    host = pexpect.spawn(sys.executable, as_job(sys.executable, "-c", HOST, *agent)[1:],
                         env=_env(), encoding="utf-8",
                         timeout=10, dimensions=(24, 80))
    try:
        host.expect_exact("[1] name? ")
        host.sendline("alice")
        host.expect_exact("alice")  # the terminal's echo
        host.expect_exact("hello alice, terminal mine: True")
        host.setwinsize(30, 100)
        host.expect_exact("size 100x30")
        host.sendintr()
        host.expect_exact("run 1 exited 42, foreground True")
        assert record.read_text() == "SIGINT\n"  # once: the supervisor did not forward it too
        host.expect_exact("[2] name? ")
        host.sendline("bob")
        host.expect_exact("hello bob, terminal mine: True")
        host.sendintr()
        host.expect_exact("KeyboardInterrupt")
        host.expect_exact("run 2 exited 130, foreground True")
        host.expect_exact("[2] name? ")
        host.kill(signal.SIGTERM)  # forwarded; the agent dies of it, the terminal comes back
        host.expect_exact("run 2 exited 143, foreground True")
        host.expect(pexpect.EOF)
    finally:
        host.close()
    assert (host.exitstatus, host.signalstatus) == (0, None)


def test_ctrl_z_stops_and_fg_resumes_the_job(tmp_path: Path) -> None:
    agent = [sys.executable, _script(tmp_path, "agent", AGENT), str(tmp_path / "record"), "3"]
    command = " ".join([sys.executable, "-c", "'" + SUPERVISOR + "'", *agent])
    shell = pexpect.spawn("bash", ["--norc", "--noprofile", "-i"],
                          env={**_env(), "PS1": "shell$ "}, encoding="utf-8", timeout=10)
    try:
        shell.expect_exact("shell$ ")
        shell.sendline(command)
        shell.expect_exact("[3] name? ")
        shell.sendcontrol("z")
        shell.expect("Stopped")
        shell.expect_exact("shell$ ")  # the shell has its terminal back
        shell.sendline("fg")
        shell.sendline("carol")
        shell.expect_exact("hello carol, terminal mine: True")
        shell.expect_exact("again? ")
        shell.sendline("dave")
        shell.expect_exact("bye dave")
        shell.expect_exact("shell$ ")
        shell.sendline("echo status=$?")
        shell.expect_exact("status=5")
        shell.sendline("exit")
        shell.expect(pexpect.EOF)
    finally:
        shell.close()


# Ignores requests to stop, as an interactive Gemini CLI does, and starts a process of its
# own in another session (out of reach of a process-group kill); prints that one's pid.
STUBBORN = """
import signal, subprocess, sys, time
for sig in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import signal, time\\n"
                          "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\ntime.sleep(600)"],
                         start_new_session=True, stdout=subprocess.DEVNULL)
print(child.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_an_agent_that_ignores_a_request_to_stop_is_killed_after_the_grace(
        tmp_path: Path, sig: signal.Signals) -> None:
    agent = [sys.executable, _script(tmp_path, "stubborn", STUBBORN)]
    supervisor = subprocess.Popen([sys.executable, "-c", SUPERVISOR, *agent], env=_env(),
                                  stdout=subprocess.PIPE, text=True, start_new_session=True)
    child = None
    try:
        assert supervisor.stdout is not None
        child = psutil.Process(int(supervisor.stdout.readline()))
        asked = time.monotonic()
        supervisor.send_signal(sig)
        assert supervisor.wait(timeout=STOP_GRACE + 10) == 128 + signal.SIGKILL
        assert time.monotonic() - asked >= STOP_GRACE - 0.2  # it had its grace
        wait_until(lambda: not _alive(child), 5,  # killed too (a zombie until init reaps it)
                   "the agent's own process to be killed")
    finally:
        if child is not None:
            with suppress(psutil.NoSuchProcess):
                child.kill()
        with suppress(ProcessLookupError):
            os.killpg(supervisor.pid, signal.SIGKILL)
        supervisor.communicate(timeout=10)


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
