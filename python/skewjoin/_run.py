"""Runs the `skewjoin` binary: finds it, turns Python keyword options into its flags, and reads
its JSON and text reports from one run.

The wheel installs the binary into the environment's scripts folder (beside `python`); the
environment variable SKEWJOIN_BIN points at another build (a developer's `target/debug`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from typing import Any, Iterable, Mapping, Optional, Sequence


class SkewjoinError(Exception):
    """A run of skewjoin that failed: `message` is its one-line error; `code` its stable code
    (`not_found`, `bad_file`, `no_column`, `usage`, `server`, `internal`, ...; docs/commands.md
    lists them) and `kind` whose fault it is (`usage`, `data`, `server`, `system`, `internal`);
    `exit_code` the process's exit code (2, or 3 for a bug in skewjoin); `argv` the command."""

    def __init__(self, message: str, exit_code: int, argv: Sequence[str] = (), code: str = "usage", kind: str = "usage"):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.argv = list(argv)
        self.code = code
        self.kind = kind


_binary_path: Optional[str] = None


def binary() -> str:
    """The skewjoin binary this package runs."""
    global _binary_path
    if _binary_path is None:
        _binary_path = _find_binary()
    return _binary_path


def _find_binary() -> str:
    env = os.environ.get("SKEWJOIN_BIN")
    if env:
        return env
    import sysconfig

    # The wheel's binary is in the scripts folder of the environment it was installed into
    # (a venv's bin/, or the user scheme's with `pip install --user`).
    schemes = [sysconfig.get_default_scheme()]
    user = f"{os.name}_user"
    if user in sysconfig.get_scheme_names():
        schemes.append(user)
    for scheme in schemes:
        path = os.path.join(sysconfig.get_path("scripts", scheme), "skewjoin")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which("skewjoin")
    if found:
        return found
    raise SkewjoinError("the skewjoin binary is not installed beside this package: reinstall the wheel, or set SKEWJOIN_BIN", 2)


def flags(options: Mapping[str, Any]) -> list[str]:
    """Keyword options as the command's flags: `min_gain=0.2` is `--min-gain 0.2`, `True` a
    bare flag, `False` or `None` nothing, a list the flag repeated, a dict (`conf`) KEY=VALUE
    pairs."""
    out: list[str] = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag)
        elif isinstance(value, Mapping):
            out += [x for k, v in value.items() for x in (flag, f"{k}={_text(v)}")]
        elif isinstance(value, (list, tuple)):
            out += [x for v in value for x in (flag, _text(v))]
        else:
            out += [flag, _text(value)]
    return out


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return os.fspath(v) if isinstance(v, os.PathLike) else str(v)


def as_list(x: Any) -> list:
    """One value or several, as a list."""
    if x is None:
        return []
    if isinstance(x, (str, bytes, os.PathLike)):
        return [x]
    return list(x)


class Run:
    """What one run gave: its JSON, its text report, its HTML page (if asked for), and its
    exit code (1: verify found a difference or a slower rewrite)."""

    def __init__(self, data: Any, text: str, html: Optional[str], exit_code: int):
        self.data = data
        self.text = text
        self.html = html
        self.exit_code = exit_code


def run(command: str, args: Iterable[str], stdin: Optional[str] = None, html: bool = False, timeout: Optional[float] = None) -> Run:
    """Runs `skewjoin COMMAND ARGS --format json`, with the text report kept from the same run.

    Raises SkewjoinError with the binary's one-line message when it exits with 2 (or any code
    but 0 and 1), or when `timeout` seconds pass.
    """
    with tempfile.TemporaryDirectory(prefix="skewjoin-") as tmp:
        text_path = os.path.join(tmp, "report.txt")
        html_path = os.path.join(tmp, "report.html")
        argv = [binary(), command, *args, "--format", "json", "--quiet", "--also-text", text_path]
        if html:
            argv += ["--html", html_path]
        try:
            p = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SkewjoinError(f"skewjoin {command} did not finish in {timeout} s", 2, argv, "timeout", "server") from None
        except OSError as e:
            raise SkewjoinError(f"{argv[0]}: cannot run: {e.strerror}", 2, argv, "cannot_run", "system") from None
        if p.returncode not in (0, 1):
            f = _failure(p.stderr, p.returncode)
            raise SkewjoinError(f["message"], p.returncode, argv, f["code"], f["kind"])
        try:
            data = json.loads(p.stdout)
        except ValueError:
            f = _failure(p.stderr, p.returncode)
            raise SkewjoinError(f"skewjoin {command} printed no JSON report: {f['message']}", p.returncode, argv, "internal", "internal") from None
        text = _read(text_path) or ""
        page = _read(html_path) if html else None
        return Run(data, text, page, p.returncode)


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _failure(stderr: str, exit_code: int) -> dict:
    """The binary's failure: the JSON line it prints with `--format json` (code, kind,
    message), or else its last line of text."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith('{"error"'):
            try:
                return json.loads(line)["error"]
            except (ValueError, KeyError):
                break
        if line.startswith("skewjoin: error: "):
            kind = "internal" if exit_code == 3 else "usage"
            return {"code": kind, "kind": kind, "message": line[len("skewjoin: error: ") :]}
    message = lines[-1] if lines else f"skewjoin exited with code {exit_code}"
    return {"code": "internal", "kind": "internal", "message": message}
