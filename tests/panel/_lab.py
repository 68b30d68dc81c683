"""A real ``jupyter lab`` for the panel's browser tests and benchmark, fully isolated from the user's machine.

Every Jupyter and XDG directory points into a temporary home, the lab extension is the repository's build
(``eca_notebook/server/labextension``, linked into the isolated data dir), the server extension is enabled by an
isolated config file, and every provider points at a :class:`ScriptedLLMServer`. Nothing reads or writes the real
``~/.config``, ``~/.cache`` or ``~/.jupyter``.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests._kernels import IPC_KERNELS, ipc_dir

ROOT = Path(__file__).resolve().parents[2]
LABEXTENSION = ROOT / "eca_notebook" / "server" / "labextension"
ARTIFACTS = ROOT / "test-artifacts" / "panel"
CHROMIUM = Path("/usr/bin/chromium")
#: The flags every browser run uses (no network besides 127.0.0.1, no background services, no GPU).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: The tests' browsers use V8's baseline compiler only (Sparkplug), no optimizing tiers: a test's page runs
#: JupyterLab's start-up code once and little else, and optimizing it cost more than it saved — measured on four panel
#: modules (26 tests, three workers): whole-machine CPU 148–151 s → 138–139 s, the renderers 54–57 s → 46–47 s, wall
#: 79–81 s → 75–76 s. Benchmarks leave it out (``quick=False``): they measure the browser a user has.
QUICK_ARGS = ["--js-flags=--max-opt=1"]
#: The host name the browser reaches every lab at (``Lab.page_url``, :func:`launch_context`): one origin, one cache.
#: ``localhost``, as Jupyter accepts it without ``allow_remote_access``.
PAGE_HOST = "localhost"
DEFAULT_MODEL = "openai/gpt-4.1"
#: ``python -m jupyterlab``, less one import: jupyter_server imports jsonschema (through jupyter_events), whose
#: format checkers build rfc3987_syntax's Lark grammar when it is installed — 0.8 s of CPU in every lab, for an IRI
#: format no event schema here uses (jsonschema then skips that one checker). tests/conftest.py does the same.
LAB_MAIN = ("import sys; sys.modules.setdefault('rfc3987_syntax', None); "
            "from jupyterlab.labapp import main; sys.exit(main())")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


INLINE_PROVIDER = "eca-notebook:inline"  # extension/src/inlineCompletion.ts


def lab_env(home: Path, llm_url: str, *, inline_completion: bool = False, **extra: str) -> dict[str, str]:
    """The environment of the lab process: isolated dirs, providers aimed at the scripted LLM server.

    Ghost text is off unless asked for (``inline_completion``): every pause while a test types in a cell would send
    ``completion/inline``, whose model call takes the next scripted reply meant for the chat."""
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and not k.endswith("_API_URL") and not k.startswith("JUPYTER")}
    env.pop("ECA_CONFIG", None)
    dirs = {
        "HOME": home,
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_RUNTIME_DIR": home / "runtime",
        "JUPYTER_CONFIG_DIR": home / ".jupyter",
        "JUPYTER_DATA_DIR": home / ".local" / "share" / "jupyter",
        "JUPYTERLAB_SETTINGS_DIR": home / ".jupyter" / "lab" / "user-settings",
        "JUPYTERLAB_WORKSPACES_DIR": home / ".jupyter" / "lab" / "workspaces",
        "IPYTHONDIR": home / ".ipython",
    }
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    os.chmod(dirs["XDG_RUNTIME_DIR"], 0o700)
    settings = dirs["JUPYTERLAB_SETTINGS_DIR"] / "@jupyterlab" / "completer-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "inline-completer.jupyterlab-settings").write_text(
        json.dumps({"providers": {INLINE_PROVIDER: {"enabled": inline_completion}}}))
    env.update({k: str(v) for k, v in dirs.items()})
    # the kernels' sockets and connection files: a short path, as Unix sockets need (tests/_kernels.py)
    runtime = ipc_dir()
    atexit.register(shutil.rmtree, runtime, True)
    env["JUPYTER_RUNTIME_DIR"] = runtime
    env.update(
        PYTHONUNBUFFERED="1",
        JUPYTER_PLATFORM_DIRS="0",
        # In a virtualenv jupyter_core searches the env's share/jupyter *before* the user dirs; an editable install
        # may have copied an older build there. The isolated user data dir (the repo's build) must win.
        JUPYTER_PREFER_ENV_PATH="0",
        OPENAI_API_URL=llm_url,
        OPENAI_API_KEY="sk-test-openai-SECRET-1234",
        ANTHROPIC_API_URL=llm_url,
        ANTHROPIC_API_KEY="sk-ant-test-SECRET-5678",
        OLLAMA_API_URL=llm_url,
        ECA_CONFIG=json.dumps({"defaultModel": DEFAULT_MODEL, "localModel": False}),
    )
    env.update(extra)
    return env


def install_isolated(env: dict[str, str]) -> None:
    """Enable the server extension and link the built lab extension, inside the isolated Jupyter dirs only."""
    config_dir = Path(env["JUPYTER_CONFIG_DIR"])
    (config_dir / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"eca_notebook": True}}, **IPC_KERNELS})
    )
    # No "get notified about Jupyter news?" toast over the panel.
    settings = Path(env["JUPYTERLAB_SETTINGS_DIR"]) / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    target = Path(env["JUPYTER_DATA_DIR"]) / "labextensions" / "eca-notebook"
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        target.symlink_to(LABEXTENSION, target_is_directory=True)


@dataclass
class Lab:
    root: Path
    env: dict[str, str]
    port: int = field(default_factory=free_port)
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    proc: subprocess.Popen | None = None
    log_path: Path | None = None
    starts: int = 0
    #: the host name a browser maps to this lab (:func:`launch_context`), if any
    page_host: str | None = None

    @property
    def base(self) -> str:
        """Where this process reaches the lab (its REST API, from Python)."""
        return f"http://127.0.0.1:{self.port}/"

    def url(self, path: str = "lab") -> str:
        return f"{self.base}{path}?token={self.token}"

    @property
    def page_base(self) -> str:
        """Where a browser page reaches the lab: for the lab a module's browser was launched for, one origin shared by
        every such lab of a worker (:func:`launch_context`), so a page load meets JupyterLab's scripts in the
        browser's cache, compiled; for another lab (one a test starts for itself), its own address."""
        return f"http://{self.page_host}/" if self.page_host else self.base

    def page_url(self, path: str = "lab") -> str:
        return f"{self.page_base}{path}?token={self.token}"

    def start(self, timeout: float = 90) -> Lab:
        install_isolated(self.env)
        self.starts += 1
        # Kept with the screenshots (git-ignored), so a failed run can be read after pytest's tmp dirs rotate.
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.log_path = ARTIFACTS / f"jupyter-lab-{self.port}-{self.starts}.log"
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [
                sys.executable, "-c", LAB_MAIN,
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={self.token}",
                f"--ServerApp.root_dir={self.root}",
                "--ServerApp.allow_root=True",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                "--LabApp.news_url=",
                "--LabApp.extension_manager=readonly",
            ],
            env=self.env,
            cwd=str(self.root),
            stdin=subprocess.DEVNULL,  # not the worker's: under xdist that is execnet's channel
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url("api/status"), timeout=10) as response:
                    if response.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"jupyter lab did not start within {timeout} s:\n{self.log_tail()}")

    def stop(self, timeout: float = 60) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        # SIGTERM, not SIGINT: a process started with SIGINT ignored keeps it ignored (an xdist worker, a shell's
        # background job), and such a lab sat out the whole 60 s wait below at every module's end. On SIGTERM
        # jupyter_server shuts its kernels and extensions down and exits.
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def log_tail(self, chars: int = 4000) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")[-chars:]


def built_remote_entry() -> str:
    """The file name of the built extension's entry chunk (changes with every build's content)."""
    build = json.loads((LABEXTENSION / "package.json").read_text())["jupyterlab"]["_build"]
    return Path(build["load"]).name


def loaded_remote_entries(page) -> list[str]:
    return page.evaluate(
        "() => performance.getEntriesByType('resource').map(e => e.name)"
        ".filter(n => n.includes('/lab/extensions/eca-notebook/static/remoteEntry.'))"
    )


def chromium_available() -> bool:
    return CHROMIUM.exists() and os.access(CHROMIUM, os.X_OK)


def launch_browser(playwright, lab: Lab | None = None, *, quick: bool = True):
    """A browser with a fresh profile; given `lab`, its pages reach that lab at ``Lab.page_url`` too. ``quick``:
    with :data:`QUICK_ARGS` (the tests'; a benchmark passes False)."""
    args = [*(page_args(lab) if lab is not None else CHROMIUM_ARGS), *(QUICK_ARGS if quick else ())]
    return playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=args)


def page_args(lab: Lab) -> list[str]:
    """The browser flags that send :data:`PAGE_HOST` to `lab` (``Lab.page_url``)."""
    return [*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {PAGE_HOST} 127.0.0.1:{lab.port}"]


def launch_context(playwright, lab: Lab, profile: Path):
    """A browser whose pages reach `lab` at ``Lab.page_url``, on a persistent `profile`.

    Why: a JupyterLab page load costs the machine ~3.8 s of CPU in a fresh browser context (an incognito one: no
    cache), most of it loading and compiling JupyterLab's scripts; a browser that keeps its cache and compiled
    scripts, per origin, loads the next page for ~2.3 s. So every lab of a worker is reached at one origin
    (``http://localhost``, mapped to this lab's port) and every module of the worker reuses the worker's profile.
    A test's page still starts clean: the ``page`` fixture clears the origin's cookies and storage first (the panel
    keeps its last open chat in local storage)."""
    context = playwright.chromium.launch_persistent_context(
        str(profile), executable_path=str(CHROMIUM), headless=True, args=[*page_args(lab), *QUICK_ARGS],
        viewport={"width": 1400, "height": 900})
    lab.page_host = PAGE_HOST
    return context


def open_panel(page, lab: Lab, workspace: str | None = None, timeout: float = 60_000) -> None:
    """Load JupyterLab (in a fresh JupyterLab workspace layout when `workspace` is given) and reveal the ECA panel;
    waits until its socket has finished the ECA handshake.

    JupyterLab restores the sidebar state of the previous page asynchronously, so a click may race with that
    restoration: click the tab until the panel stays visible."""
    if workspace is not None:
        page.goto(lab.page_url(f"lab/workspaces/{workspace}") + "&reset", wait_until="domcontentloaded")
    elif not page.url.startswith(lab.page_base + "lab"):
        page.goto(lab.page_url("lab"), wait_until="domcontentloaded")
    tab = page.locator('.lm-TabBar-tab[data-id="eca-chat-panel"]')
    tab.wait_for(state="visible", timeout=timeout)
    page.locator(".jp-LabShell").wait_for(timeout=timeout)
    deadline = time.monotonic() + timeout / 1000
    while not page.locator("#eca-chat-panel").is_visible():
        if time.monotonic() > deadline:
            raise AssertionError("the ECA panel did not open")
        if "lm-mod-current" not in (tab.get_attribute("class") or ""):
            tab.click()
        page.wait_for_timeout(300)
    page.locator('.eca-ChatApp[data-connection="open"]').wait_for(state="visible", timeout=timeout)
    # JupyterLab focuses the main area once its layout is restored; typing before that loses keystrokes.
    page.wait_for_function("() => window.__ecaPanel && window.__ecaPanel.restored", timeout=timeout)
    page.evaluate("() => window.__ecaPanel.restored.then(() => new Promise(r => setTimeout(r, 500)))")


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path
