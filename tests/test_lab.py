"""``./run_all.sh lab``: the real JupyterLab server opens a notebook and runs its first cells.

Started as a user starts it (``run_all.sh``, with ``--current-python`` so that it is this Python and no
set-up happens), headless on a free port with a known token. The test then does what the browser does:
reads ``cnn_mnist.ipynb`` over the REST API, starts a session with the kernel the notebook's metadata
names, and runs the parameters cell and the ``begin(globals())`` cell through the kernel's websocket
(Jupyter messaging protocol v5, JSON), then asks the kernel which Python and which ``helpers`` it runs.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import websocket  # websocket-client, a jupyter_server dependency

from helpers.paths import PROJECT_ROOT

NOTEBOOK = "cnn_mnist.ipynb"
START_TIMEOUT_S = 45
CELL_TIMEOUT_S = 40


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Server:
    def __init__(self, port: int, token: str):
        self.base, self.token = f"http://127.0.0.1:{port}", token

    def api(self, method: str, path: str, body: dict | None = None) -> dict | None:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Authorization": f"token {self.token}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=20) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def wait_ready(self, proc: subprocess.Popen, log: Path) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"the lab exited ({proc.returncode}):\n{log.read_text()[-4000:]}"
            try:
                self.api("GET", "/api/status")
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.3)
        raise AssertionError(f"the lab did not answer in {START_TIMEOUT_S} s:\n{log.read_text()[-4000:]}")


def _execute(ws, session: str, code: str) -> tuple[dict, str]:
    """Run ``code`` in the kernel; return its execute_reply content and what it printed on stdout."""
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({
        "channel": "shell",
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": session, "username": "test",
                   "version": "5.3", "date": dt.datetime.now(dt.UTC).isoformat()},
        "parent_header": {}, "metadata": {}, "buffers": [],
        "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True},
    }))
    reply, idle, out = None, False, []
    deadline = time.monotonic() + CELL_TIMEOUT_S
    while reply is None or not idle:  # the reply (shell) and the last output (iopub) come in either order
        ws.settimeout(max(0.1, deadline - time.monotonic()))
        msg = json.loads(ws.recv())
        assert time.monotonic() < deadline, f"no reply in {CELL_TIMEOUT_S} s to {code!r}"
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "execute_reply":
            reply = content
        elif kind == "status" and content.get("execution_state") == "idle":
            idle = True
        elif kind == "stream" and content.get("name") == "stdout":
            out.append(content["text"])
        elif kind == "error":
            out.append("\n".join(content.get("traceback", [])))
    return reply, "".join(out)


def test_lab_runs_a_notebooks_first_cells(tmp_path):
    t0 = time.monotonic()
    port, token = _free_port(), uuid.uuid4().hex
    # run_all.sh --current-python takes `python3` from PATH: make that this Python (a wrapper, not a
    # symlink, so that a venv's Python still finds its venv)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    (bindir / "python3").chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
           # Jupyter's own files (cookie secret, settings, notebook signatures) out of the user's home
           **{v: str(tmp_path / v.lower()) for v in ("JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR",
                                                     "JUPYTER_CONFIG_DIR")}}
    log = tmp_path / "lab.log"
    with open(log, "w") as logf:
        proc = subprocess.Popen(
            ["bash", str(PROJECT_ROOT / "run_all.sh"), "--current-python", "lab", "--no-browser", f"--port={port}",
             "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", "--ServerApp.open_browser=False"],
            cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT)
    server, session_id = _Server(port, token), None
    try:
        server.wait_ready(proc, log)
        # the kernelspec is under the outputs folder ($CGB_OUTPUTS) and runs this Python
        assert (Path(os.environ["CGB_OUTPUTS"]) / ".jupyter-lab" / "kernels" / "python3" / "kernel.json").is_file()

        model = server.api("GET", f"/api/contents/{NOTEBOOK}?content=1")
        nb = model["content"]
        wanted = nb["metadata"]["kernelspec"]["name"]
        spec = server.api("GET", "/api/kernelspecs")["kernelspecs"][wanted]["spec"]
        assert spec["argv"][:3] == [sys.executable, "-m", "helpers.runner.kernel"], spec

        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        first = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in code[:2]]
        assert "parameters" in code[0]["metadata"].get("tags", []), code[0]
        assert "begin(globals())" in first[1], first[1]

        sess = server.api("POST", "/api/sessions", {"path": NOTEBOOK, "name": NOTEBOOK, "type": "notebook",
                                                    "kernel": {"name": wanted}})
        session_id, kernel = sess["id"], sess["kernel"]
        assert kernel["name"] == wanted
        ws = websocket.create_connection(
            f"ws://127.0.0.1:{port}/api/kernels/{kernel['id']}/channels?token={token}&session_id={session_id}",
            timeout=CELL_TIMEOUT_S)
        try:
            for cell in first:
                reply, out = _execute(ws, session_id, cell)
                assert reply["status"] == "ok", (cell, reply, out)
            reply, out = _execute(ws, session_id, "print(pt.params['workload'], __import__('sys').executable, "
                                                  "__import__('helpers').__file__)")
            assert reply["status"] == "ok", (reply, out)
        finally:
            ws.close()
        workload, exe, helpers_file = out.split()
        assert (workload, exe) == ("cnn_mnist", sys.executable)
        assert Path(helpers_file).resolve() == PROJECT_ROOT / "helpers" / "__init__.py"
        # JupyterLab printed its URL with the port, as it always does (a token given to it is shown as `...`)
        assert f"http://127.0.0.1:{port}/lab?token=" in log.read_text()
    finally:
        if session_id is not None:  # the kernel goes with its session
            try:
                server.api("DELETE", f"/api/sessions/{session_id}")
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert time.monotonic() - t0 < 60
