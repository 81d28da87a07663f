"""An agent in any language, run as a process (DESIGN section 6, "Any agent, any language").

:class:`ProcessAgent` is a peer of the in-process agent: the campaign calls it as it calls
``agent(prompt, *, base_url, api_key)``, on the run's thread, and it runs the command instead.
Each run leads its own process group (``start_new_session``), so cancelling it at its time bound
kills the group, and with it whatever the agent started: a process agent is never left behind.

Two modes. ``process`` (the default): one process per conversation, argv split as a shell would
and run without one, in the current directory, with the contract's environment added (each
provider's base URL for this conversation, placeholder keys, ``HARNESS_PROMPT``) and the prompt on
stdin, which is then closed; exit 0 and the answer is the content of the file its
``HARNESS_ANSWER_FILE`` names when it wrote one (a framework that logs to stdout cannot make a log
line the answer), else its stdout, stripped; a non-zero exit is a raise, its stderr kept for the
report. ``lines``: one process for the whole campaign, so start-up (node's 50-300 ms, a Python
framework's seconds of imports) is paid once; it reads a JSON line per conversation on stdin,
``{"conversation": n, "prompt": ..., "env": {...}}`` (``env`` holds that conversation's base URLs
and its own ``HARNESS_ANSWER_FILE``), and answers with one on stdout, ``{"conversation": n,
"answer": ...}`` or ``{"conversation": n, "error": ...}``; when it wrote the conversation's answer
file before its line, the file is the answer. A run that outlives its bound there kills the group,
and the next conversation starts a fresh process. :func:`serve_lines` is that loop, for a Python
agent, in one call.
"""

from __future__ import annotations

import asyncio
import atexit
import inspect
import json
import os
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, TextIO

MODES = ("process", "lines")
KILL_GRACE = 0.5
"""Seconds a cancelled group has between SIGTERM and SIGKILL."""
PLACEHOLDER_KEY = "sk-emulated"
_PLACEHOLDERS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "AZURE_OPENAI_API_KEY")
"""Gemini's placeholder is ``GOOGLE_API_KEY`` alone: the official SDKs (google-genai, @google/genai)
read it first and warn on every client when ``GEMINI_API_KEY`` is set as well."""
ANSWER_FILE = "HARNESS_ANSWER_FILE"
_NOT_INHERITED = (
    "GEMINI_API_KEY",
    ANSWER_FILE,
    "HARNESS_BASE_URL",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    "AWS_ENDPOINT_URL",
    "AZURE_OPENAI_ENDPOINT",
    "OLLAMA_HOST",
    "ANTHROPIC_VERTEX_BASE_URL",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "HARNESS_PROMPT",
    "HARNESS_AGENT_MODE",
    "ANTHROPIC_AUTH_TOKEN",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "AZURE_OPENAI_AD_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "OLLAMA_API_KEY",
)
"""What the campaign's own environment must not hand the agent: a provider URL of the user's (in
``lines`` mode no base URL is set for the process, and an SDK would fall back to it) and the
credentials the placeholders do not replace."""


class AgentCommandError(ValueError):
    """A command no run could start (empty, unsplittable, not found, not executable): one line."""


class AgentProcessError(RuntimeError):
    """The agent's run raised: its process exited non-zero (or, in ``lines`` mode, answered with an
    error or died). ``stderr`` is what it wrote there, shown in the report as a traceback would be."""

    def __init__(self, summary: str, stderr: str = "") -> None:
        super().__init__(summary)
        self.summary, self.stderr = summary, stderr

    @property
    def wire_told(self) -> str:
        """How the report shows it, in place of a Python traceback (the process has none of ours)."""
        tail = self.stderr.rstrip()
        return self.summary + (f"\nits stderr:\n{tail}" if tail else " (nothing on stderr)")


def conversation_env(base_url: str, prompt: str | None = None) -> dict[str, str]:
    """The contract's environment for one conversation rooted at ``base_url``."""
    root = base_url.rstrip("/")
    env = {
        "HARNESS_BASE_URL": root,
        "OPENAI_BASE_URL": f"{root}/v1",
        "ANTHROPIC_BASE_URL": root,
        "GOOGLE_GEMINI_BASE_URL": root,
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": root,
        # the other surfaces' clients (issue 36): AzureOpenAI appends /openai/..., ollama.Client
        # /api/chat, AnthropicVertex /projects/... to its base URL, AnthropicBedrock /model/...
        "AZURE_OPENAI_ENDPOINT": root,
        "OLLAMA_HOST": root,
        "ANTHROPIC_VERTEX_BASE_URL": f"{root}/v1",
        "ANTHROPIC_BEDROCK_BASE_URL": root,
    }
    if prompt is not None:
        env["HARNESS_PROMPT"] = prompt
    return env


def _placeholder_env() -> dict[str, str]:
    env = dict.fromkeys(_PLACEHOLDERS, PLACEHOLDER_KEY)
    env.update(AWS_ACCESS_KEY_ID="AKIAEMULATED", AWS_SECRET_ACCESS_KEY="emulated", AWS_REGION="us-east-1")
    # what AzureOpenAI and AnthropicVertex refuse to start without (a GA API version; a region and
    # project make Vertex's path, the base URL its host)
    env.update(OPENAI_API_VERSION="2024-10-21", CLOUD_ML_REGION="us-east5", ANTHROPIC_VERTEX_PROJECT_ID="emulated")
    return env


def split_command(command: str | Sequence[str]) -> list[str]:
    """The argv of ``command``, or :class:`AgentCommandError` saying in one line why no run could start it."""
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise AgentCommandError(f"cannot split {command!r} as a shell would: {exc}") from None
    else:
        argv = [str(part) for part in command]
    if not argv or not argv[0]:
        raise AgentCommandError("the command is empty: give the program and its arguments, e.g. 'node agent.mjs'")
    program = argv[0]
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program)
        if not path.exists():
            raise AgentCommandError(f"{program}: no such file (the command runs in {Path.cwd()})")
        if path.is_dir() or not os.access(path, os.X_OK):
            raise AgentCommandError(
                f"{program}: not executable (chmod +x it, or run it through its interpreter: 'node {program}')"
            )
    elif shutil.which(program) is None:
        raise AgentCommandError(f"{program}: command not found on PATH")
    return argv


_GROUPS: set[int] = set()
"""Every process group an agent command leads that has not been killed for good yet: what
:func:`end_every_group` kills when the harness itself is stopped (a signal, or the interpreter's
exit), since a group of its own is out of reach of the terminal's Ctrl-C and of the parent's death."""
_GROUPS_LOCK = threading.Lock()


def _started(process: subprocess.Popen[Any]) -> subprocess.Popen[Any]:
    with _GROUPS_LOCK:
        _GROUPS.add(process.pid)
    return process


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):  # the group is gone already
        pass
    if sig == signal.SIGKILL:
        with _GROUPS_LOCK:
            _GROUPS.discard(pgid)


def end_every_group() -> int:
    """Kill every agent process group still alive (SIGKILL: the harness is going away and cannot
    wait for a grace period); the number killed. Registered with :mod:`atexit`, and called by
    ``harness fuzz --agent-cmd`` when it is itself sent SIGTERM, SIGHUP or SIGINT."""
    with _GROUPS_LOCK:
        groups = sorted(_GROUPS)
    for pgid in groups:
        _kill_group(pgid, signal.SIGKILL)
    return len(groups)


atexit.register(end_every_group)


def _end_group(process: subprocess.Popen[Any], grace: float = KILL_GRACE) -> None:
    """SIGTERM the process's group, SIGKILL what is left after ``grace``: nothing of it survives."""
    _kill_group(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    _kill_group(process.pid, signal.SIGKILL)


def _exit_summary(shown: str, code: int | None) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"{shown} was killed by {name}"
    return f"{shown} exited with status {code}"


class ProcessAgent:
    """``ProcessAgent("node agent.mjs")``: the agent a wire campaign runs as a command.

    ``mode``: ``process`` (a process per conversation, the default) or ``lines`` (one long-lived
    process, a JSON line per conversation). ``env``: more variables for its environment."""

    def __init__(
        self, command: str | Sequence[str], *, mode: str = "process", env: Mapping[str, str] | None = None
    ) -> None:
        if mode not in MODES:
            raise AgentCommandError(f"mode {mode!r}: give one of {', '.join(MODES)}")
        self.argv = split_command(command)
        self.mode = mode
        self.command = command if isinstance(command, str) else shlex.join(self.argv)
        self.env = dict(env or {})
        self.wire_name = self.command
        """What saved scenarios name this agent by (``meta.agent``)."""
        self.wire_target = f"--agent-cmd {shlex.quote(self.command)}" + (
            " --agent-cmd-mode lines" if mode == "lines" else ""
        )
        """The options of ``harness fuzz`` that run it again."""
        self.__name__ = Path(self.argv[-1]).stem or "agent"
        self._running: dict[str, subprocess.Popen[Any]] = {}
        self._cancelled: set[str] = set()
        """Runs cancelled before their process was started: it is killed as soon as it is."""
        self._lock = threading.Lock()
        self._server: _LongLived | None = None

    def __repr__(self) -> str:
        return f"ProcessAgent({self.command!r}, mode={self.mode!r})"

    def __call__(self, prompt: str, *, base_url: str, api_key: str) -> str:
        if self.mode == "lines":
            return self._serve_line(prompt, base_url)
        return self._run_process(prompt, base_url)

    def _environment(self) -> dict[str, str]:
        inherited = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
        return {**inherited, **_placeholder_env(), **self.env}

    def _run_process(self, prompt: str, base_url: str) -> str:
        with tempfile.TemporaryDirectory(prefix="harness-answer-") as folder:
            answer = Path(folder) / "answer.txt"
            env = {**self._environment(), **conversation_env(base_url, prompt), ANSWER_FILE: str(answer)}
            code, stdout, stderr = self._wait_for(prompt, base_url, env)
            written = _answer_written(answer)
        if code != 0:  # its stderr goes with the error, shown once
            raise AgentProcessError(_exit_summary(self.command, code), stderr)
        if written is not None:  # the answer is the file's: what it printed is output, kept in its log
            stderr = stdout + stderr
        if stderr:
            sys.stderr.write(stderr)  # the run's own thread: kept in its log, shown with a failure
        return written if written is not None else stdout.strip()

    def _wait_for(self, prompt: str, base_url: str, env: Mapping[str, str]) -> tuple[int | None, str, str]:
        """Run the process to its end (or its cancelling): its exit code, stdout and stderr."""
        with tempfile.TemporaryFile() as given, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            given.write(prompt.encode("utf-8"))
            given.seek(0)  # a file, not a pipe: a prompt longer than a pipe's buffer cannot block the start
            process = _started(
                subprocess.Popen(self.argv, stdin=given, stdout=out, stderr=err, env=env, start_new_session=True)
            )
            with self._lock:
                self._running[base_url] = process
                cancelled = base_url in self._cancelled
            if cancelled:  # its bound passed while it was being started
                _end_group(process)
            try:
                code = process.wait()
            finally:
                with self._lock:
                    self._running.pop(base_url, None)
                _kill_group(process.pid, signal.SIGKILL)  # what the run started and left running goes with it
            return code, _read(out), _read(err)

    def _serve_line(self, prompt: str, base_url: str) -> str:
        with self._lock:
            if self._server is None or not self._server.alive():
                self._server = _LongLived(self.argv, self._environment(), self.command)
            server = self._server
        return server.converse(prompt, base_url)

    def wire_cancel(self, base_url: str) -> None:
        """The run at ``base_url`` outlived its bound: its process group is killed (in ``lines`` mode,
        the long-lived process, replaced at the next conversation)."""
        with self._lock:
            process = self._running.get(base_url)
            if process is None:
                self._cancelled.add(base_url)
            server = self._server if self.mode == "lines" else None
        if process is not None:
            _end_group(process)
        if server is not None:
            server.stop()

    def wire_close(self) -> None:
        """The campaign is over: the long-lived process, if any, goes."""
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.stop()


def _read(file: IO[bytes]) -> str:
    file.seek(0)
    return file.read().decode("utf-8", errors="replace")


def _answer_written(path: Path) -> str | None:
    """The answer the agent wrote to its ``HARNESS_ANSWER_FILE``, stripped as stdout is (``None``: it wrote none)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except FileNotFoundError:
        return None


class _LongLived:
    """The ``lines`` mode's process: a conversation a line, answered in order; what it writes
    beside its answers (stdout lines that are not one, stderr) is kept for the conversation running."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], command: str) -> None:
        self.argv, self.command = list(argv), command
        self.process = _started(
            subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**env, "HARNESS_AGENT_MODE": "lines"},
                start_new_session=True,
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
            )
        )
        self.answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.folder = tempfile.TemporaryDirectory(prefix="harness-answers-")
        """Where each conversation's ``HARNESS_ANSWER_FILE`` is (removed with the process)."""
        self.said: list[str] = []
        self.errors: list[str] = []
        self.wrote_at = time.monotonic()
        """When stderr last said something: a run that raised is given a moment for its traceback."""
        self._lock = threading.Lock()
        threading.Thread(target=self._read_answers, daemon=True, name="agent-cmd-stdout").start()
        threading.Thread(target=self._read_errors, daemon=True, name="agent-cmd-stderr").start()

    def alive(self) -> bool:
        return self.process.poll() is None

    def _read_answers(self) -> None:
        assert self.process.stdout is not None  # opened as a pipe above
        for line in self.process.stdout:
            answer = _answer_line(line)
            if answer is None:
                with self._lock:
                    self.said.append(line)
            else:
                self.answers.put(answer)
        self.answers.put(None)  # it ended: whoever waits learns it

    def _read_errors(self) -> None:
        assert self.process.stderr is not None  # opened as a pipe above
        for line in self.process.stderr:
            with self._lock:
                self.errors.append(line)
                self.wrote_at = time.monotonic()

    def _output(self) -> tuple[str, str]:
        with self._lock:
            said, errors = "".join(self.said), "".join(self.errors)
            self.said.clear()
            self.errors.clear()
        return said, errors

    def converse(self, prompt: str, base_url: str) -> str:
        number = _conversation_number(base_url)
        answer_file = Path(self.folder.name) / f"answer-{number}.txt"
        env = {**conversation_env(base_url, prompt), ANSWER_FILE: str(answer_file)}
        line = json.dumps({"conversation": number, "prompt": prompt, "env": env})
        try:
            assert self.process.stdin is not None  # opened as a pipe above
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # it died: the reader says so below
        answer = self._next_answer(number)
        if answer is None or "error" in answer:  # its traceback may still be on its way (stderr is read apart)
            self._quiet_stderr()
        said, errors = self._output()
        failed = answer is None or "error" in answer  # then its stderr goes with the error, shown once
        if said or (errors and not failed):
            sys.stderr.write(said + ("" if failed else errors))  # the run's own thread: kept in its log
        if answer is None:
            self.process.wait()
            raise AgentProcessError(
                _exit_summary(self.command, self.process.returncode) + f" during conversation {number}", errors
            )
        if "error" in answer:
            raise AgentProcessError(f"conversation {number} answered with an error: {answer['error']}", errors)
        written = _answer_written(answer_file)
        answer_file.unlink(missing_ok=True)
        if written is not None:
            return written
        given = answer.get("answer")
        return "" if given is None else str(given)

    def _quiet_stderr(self, quiet: float = 0.05, at_most: float = 0.5) -> None:
        """Wait until stderr has been quiet for ``quiet`` seconds (``at_most`` in all)."""
        started = time.monotonic()
        while time.monotonic() - started < at_most:
            with self._lock:
                since = time.monotonic() - max(self.wrote_at, started)
            if since >= quiet:
                return
            time.sleep(quiet - since)

    def _next_answer(self, number: int) -> dict[str, Any] | None:
        """This conversation's answer (one left by a conversation abandoned earlier is passed over)."""
        while True:
            answer = self.answers.get()
            if answer is None or answer.get("conversation") == number:
                return answer

    def stop(self) -> None:
        """Kill its group; the readers end at the pipes' end of file (closing those under them would not)."""
        _end_group(self.process)
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
        except OSError:  # a pipe the dead process left half-written
            pass
        self.folder.cleanup()


def _answer_line(line: str) -> dict[str, Any] | None:
    """A line that is an answer (a JSON object naming its conversation), else ``None``."""
    if not line.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    if isinstance(value, dict) and "conversation" in value and ("answer" in value or "error" in value):
        return value
    return None


def _conversation_number(base_url: str) -> int:
    tail = base_url.rstrip("/").rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _restore(before: dict[str, str | None]) -> None:
    """Put the environment back as it was before a conversation set its variables."""
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def serve_lines(agent: Callable[..., Any], *, given: TextIO | None = None, answers: TextIO | None = None) -> None:
    """Serve ``agent(prompt, *, base_url, api_key)`` (or a coroutine function) over the ``lines``
    protocol: the whole long-lived mode of a Python agent in one call. End the agent's module with::

        if __name__ == "__main__":
            serve_lines(agent)

    and run ``harness fuzz --agent-cmd "python -m my_agent" --agent-cmd-mode lines``: the framework
    is imported once per campaign, not once per conversation. Each conversation's environment (its
    base URLs) is set in ``os.environ`` while it runs, for SDKs that read it; ``base_url`` is its
    root, as ``--agent`` gives it. What the agent prints goes to stderr, so no print or stdout
    logger can be taken for an answer; a run that raised answers with an error and its traceback
    (the agent's frames) goes to stderr, which the campaign shows. Build the model client inside
    the agent, from the ``base_url`` it is given: a client cached across conversations keeps
    talking to the first one's URL, and the campaign says so (inconclusive, exit 3).
    ``given``/``answers``: the streams to read and write (default: stdin and stdout)."""
    from harness.agents._first_failure import agent_traceback

    source = given or sys.stdin
    out = answers or sys.stdout
    loop = asyncio.new_event_loop()  # one for every conversation: clients bound to a loop stay usable
    try:
        for line in source:
            if not line.strip():
                continue
            asked = json.loads(line)
            said: dict[str, Any] = {"conversation": asked.get("conversation")}
            env = {str(k): str(v) for k, v in (asked.get("env") or {}).items()}
            before = {name: os.environ.get(name) for name in env}  # put back after: no conversation's URL outlives it
            os.environ.update(env)
            printed, sys.stdout = sys.stdout, sys.stderr  # the agent's prints are output, never an answer
            try:
                value = agent(
                    asked.get("prompt", ""), base_url=env.get("HARNESS_BASE_URL", ""), api_key=PLACEHOLDER_KEY
                )
                if inspect.isawaitable(value):
                    value = loop.run_until_complete(value)
                said["answer"] = value if isinstance(value, str) else str(value)
            except Exception as exc:  # the run raised: an error line, its traceback on stderr
                sys.stderr.write(agent_traceback(exc) + "\n")
                said["error"] = f"{type(exc).__name__}: {exc}"
            finally:
                sys.stdout = printed
                _restore(before)
            out.write(json.dumps(said) + "\n")
            out.flush()
    except KeyboardInterrupt:  # stopped with the campaign
        pass
    finally:
        loop.close()
