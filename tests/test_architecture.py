"""The folders are the architecture: which component may import which, read from the source with `ast`.

Every import counts, at any depth (inside functions too), and so does a module named by a string literal
to ``importlib.import_module`` or ``importlib.util.find_spec`` (finding a submodule imports its parents).
A bare folder name (``import protocol``) is the same component as ``osbp.protocol``. The rule, as the code
has it today:

- ``backend`` imports nothing of ours but itself: it is a foreign system;
- ``protocol`` imports only ``protocol``;
- ``adapter`` imports ``protocol`` and ``adapter``;
- ``server`` imports ``protocol`` and ``server``, and ``adapter`` only in its composition root and in its
  settings object (which nests the adapter's settings model);
- ``demo`` imports ``protocol``, ``adapter``, ``server`` and ``demo``, and the platform's start-up API
  (``backend.serving``, ``backend.settings``, ``backend.listening``) only in the module that starts the
  platform in-process;
- ``conformance`` imports only ``conformance``: it knows OSBP from the wire alone, like any outside grader;
  only its ``--self`` target starts this project's platform (the same start-up API), checks that this
  project's server is installed before launching it as a subprocess, and names the variables it gives
  that server by the server's settings object.

``osbp.version`` (the version constants) may be imported by ``adapter``, ``server`` and ``demo``;
``osbp.cli``, ``osbp.bench`` and ``tests`` sit outside the components and none of them imports those.

A component's modules live in ``<component>/osbp/<component>/``; paths here are written from the component
folder's package down (``server/compose.py`` is ``server/osbp/server/compose.py``). The same rule is also
import-linter's contracts (``[tool.importlinter]`` in pyproject.toml, run by ``lint-imports``), which see the
imports the interpreter resolves; this test also sees imports named by string literals.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
COMPONENTS = ("backend", "protocol", "adapter", "server", "demo", "conformance")
#: The namespace package every component lives in.
ROOT = "osbp"
#: The root-level module of version constants (`osbp/version.py`).
VERSION = "osbp.version"
#: The root-level start-up helper the server and the demo share with the ``osbp`` command.
COLLECTOR = "osbp.collector"
#: The one server module that builds the adapter (the server's composition root).
COMPOSITION_ROOT = "server/compose.py"
#: The server's one settings object, which nests the adapter's settings model (and its remote parts,
#: which describe their fields with the adapter's ``Setting``).
SERVER_SETTINGS = "server/settings.py"
REMOTE_SETTINGS = "server/remote_settings.py"
#: The modules that start this project's platform for their users.
PLATFORM_STARTERS = ("demo/stack.py", "demo/platform_process.py", "conformance/self_target.py")
#: What starting the platform may import of it.
PLATFORM_STARTUP_API = ("backend.serving", "backend.settings", "backend.listening", "backend.process")
#: ``--self`` checks that this project's MCP server is installed (``find_spec``), then launches it.
SELF_TARGET = "conformance/self_target.py"
SERVER_ENTRY = "server.cli"
#: The settings models ``--self`` builds its server's environment from (``environment``).
SERVER_SETTINGS_API = ("server.settings", "server.remote_settings", "adapter.settings")

#: Component -> the components it may import anywhere in it.
ALLOWED: dict[str, set[str]] = {
    "backend": {"backend"},
    "protocol": {"protocol"},
    "adapter": {"protocol", "adapter", VERSION},
    "server": {"protocol", "server", VERSION, COLLECTOR},
    "demo": {"protocol", "adapter", "server", "demo", VERSION, COLLECTOR},
    "conformance": {"conformance"},
}
#: File -> the modules (and their submodules) it may import beyond its component's rule.
EXCEPTIONS: dict[str, set[str]] = {
    COMPOSITION_ROOT: {"adapter"},
    SERVER_SETTINGS: {"adapter"},
    REMOTE_SETTINGS: {"adapter.settings"},
}
for _starter in PLATFORM_STARTERS:
    EXCEPTIONS[_starter] = set(PLATFORM_STARTUP_API)
EXCEPTIONS[SELF_TARGET].add(SERVER_ENTRY)
#: ``--self`` names the variables it gives this project's server by the server's settings object.
EXCEPTIONS[SELF_TARGET].update(SERVER_SETTINGS_API)


@dataclass(frozen=True)
class Import:
    """A module of ours that a file imports: ``protocol.models``, ``osbp.bench``, ``osbp``, ``tests.x``."""

    path: str
    line: int
    module: str


def _ours(module: str) -> str | None:
    """``module`` named as in our tree (``osbp.protocol.models`` → ``protocol.models``); None if foreign."""
    parts = module.split(".")
    if parts[0] == ROOT and len(parts) > 1 and parts[1] in COMPONENTS:
        return ".".join(parts[1:])
    if parts[0] in {ROOT, "tests", *COMPONENTS}:
        return module
    return None


def source_file(root: Path, path: str) -> Path:
    """The file ``path`` (``component/module.py``, or ``osbp/...``) names under ``root``."""
    component = path.partition("/")[0]
    return root / component / ROOT / path if component in COMPONENTS else root / path


def _is_module(root: Path, module: str) -> bool:
    """True when ``module`` (named as in our tree) is a module or package file under ``root``."""
    target = source_file(root, "/".join(module.split(".")))
    return target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()


def _string_argument(call: ast.Call) -> str | None:
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        return call.args[0].value
    return None


def imports_of(root: Path, path: str) -> Iterator[Import]:
    """Every module of ours that the file at ``path`` (relative to ``root``) imports."""
    tree = ast.parse(source_file(root, path).read_text(encoding="utf-8"), filename=path)
    # The file's package as the interpreter sees it (`osbp.adapter` for adapter/booking.py), for `from .`.
    package = [ROOT, *Path(path).parts[:-1]]
    for node in ast.walk(tree):
        named: list[str] = []
        if isinstance(node, ast.Import):
            named = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            anchor = package[: len(package) - node.level + 1] if node.level else []
            base = ".".join([*anchor, *([node.module] if node.module else [])])
            named = [base]
            for alias in node.names:  # `from osbp import bench` imports the module osbp.bench
                submodule = _ours(f"{base}.{alias.name}")
                if submodule is not None and _is_module(root, submodule):
                    named.append(submodule)
            if base == ROOT and len(named) > 1:  # the namespace package itself holds nothing to import
                named = named[1:]
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith(
            ("import_module", "find_spec", "__import__")
        ):
            literal = _string_argument(node)
            named = [] if literal is None else [literal]
        for module in named:
            ours = _ours(module)
            if ours is not None:
                yield Import(path, getattr(node, "lineno", 0), ours)


def _component(module: str) -> str:
    """The component (or root-level module) an import lands in: ``protocol``, ``osbp``, ``osbp.bench``."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == ROOT and len(parts) > 1 else parts[0]


def _within(module: str, allowed: set[str]) -> bool:
    return any(module == name or module.startswith(name + ".") for name in allowed)


def violations(root: Path) -> list[str]:
    """Every import under ``root``'s component folders that breaks the rule, as ``path:line: message``."""
    found = []
    for component in COMPONENTS:
        source = root / component / ROOT
        for file in sorted(source.rglob("*.py")):
            path = file.relative_to(source).as_posix()
            for imported in imports_of(root, path):
                allowed = _component(imported.module) in ALLOWED[component]
                if not (allowed or _within(imported.module, EXCEPTIONS.get(path, set()))):
                    found.append(f"{path}:{imported.line}: {component} imports {imported.module}")
    return found


def test_every_component_imports_only_what_the_architecture_allows():
    """Platform choice (STYLE.md, Shape): backend · protocol ← adapter ← server ← demo, conformance."""
    assert violations(REPO) == []


def test_the_named_exception_files_exist():
    """Platform choice: each exception names a real file, so a rename cannot silently widen the rule."""
    for path in EXCEPTIONS:
        assert source_file(REPO, path).is_file(), path


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    """A copy of the layout (components, the root folder's bench package) with the given files."""
    for package in (*COMPONENTS, f"{ROOT}/bench"):
        source_file(tmp_path, package).mkdir(parents=True, exist_ok=True)
        source_file(tmp_path, f"{package}/__init__.py").write_text("", encoding="utf-8")
    for path, source in files.items():
        source_file(tmp_path, path).write_text(source, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        ("protocol/models.py", "import osbp.adapter\n", "protocol/models.py:1: protocol imports adapter"),
        (
            "protocol/money.py",
            "def later():\n    from osbp.adapter.reference import build_adapter\n",
            "protocol/money.py:2: protocol imports adapter.reference",
        ),
        (
            "backend/app.py",
            "import importlib\nimportlib.import_module('osbp.protocol.models')\n",
            "backend/app.py:2: backend imports protocol.models",
        ),
        (
            "adapter/booking.py",
            "from osbp import bench\n",
            "adapter/booking.py:1: adapter imports osbp.bench",
        ),
        ("backend/db.py", "from osbp import __version__\n", "backend/db.py:1: backend imports osbp"),
        ("protocol/clock.py", "from .. import OSBP_VERSION\n", "protocol/clock.py:1: protocol imports osbp"),
        (
            "adapter/translate.py",
            "from ..server import tools\n",
            "adapter/translate.py:1: adapter imports server",
        ),
        ("adapter/native.py", "from server import tools\n", "adapter/native.py:1: adapter imports server"),
        (
            "adapter/bench.py",
            "from osbp.backend import process\n",
            "adapter/bench.py:1: adapter imports backend",
        ),
        (
            "server/app.py",
            "from osbp.adapter import build_adapter\n",
            "server/app.py:1: server imports adapter",
        ),
        (
            "server/tools.py",
            "import tests.server.conftest\n",
            "server/tools.py:1: server imports tests.server.conftest",
        ),
        (
            "demo/cli.py",
            "from osbp.backend.serving import PlatformServer\n",
            "demo/cli.py:1: demo imports backend.serving",
        ),
        (
            "demo/stack.py",
            "from osbp.backend.models import Appointment\n",
            "demo/stack.py:1: demo imports backend.models",
        ),
        (
            "conformance/wire.py",
            "from osbp.protocol.models import Problem\n",
            "conformance/wire.py:1: conformance imports protocol.models",
        ),
    ],
    ids=[
        "protocol-to-adapter",
        "inside-a-function",
        "import-module-literal",
        "from-root-import-submodule",
        "backend-to-root",
        "relative-to-root",
        "relative-to-sibling",
        "bare-folder-name",
        "adapter-to-backend",
        "server-outside-composition-root",
        "component-to-tests",
        "demo-backend-outside-starter",
        "demo-backend-beyond-startup-api",
        "conformance-to-protocol",
    ],
)
def test_the_check_catches_a_forbidden_import(tmp_path: Path, path: str, source: str, expected: str):
    """Platform choice: the rule can fail: a planted forbidden import is reported with its file and line."""
    assert violations(_tree(tmp_path, {path: source})) == [expected]


def test_the_check_lets_the_composition_root_and_the_platform_starters_through(tmp_path: Path):
    """Platform choice: the named exceptions are the only ones, and only for what they need."""
    files = {
        COMPOSITION_ROOT: "import importlib\nimportlib.import_module('osbp.adapter')\n",
        "demo/stack.py": "from osbp.backend.serving import PlatformServer\n",
        SELF_TARGET: "import importlib.util\nimportlib.util.find_spec('osbp.server.cli')\n",
        "adapter/upstream.py": "from osbp.version import OSBP_VERSION\n",
    }
    assert violations(_tree(tmp_path, files)) == []
