"""Static capability scan: code for forbidden operations rejects an environment unexecuted.

The sandbox detects forbidden operations when they run, but a probe only runs the paths it
happens to reach: socket code behind a trigger word, a seed the validator never tries, a
``__del__`` or ``atexit`` handler that runs after the worker is gone, a thread that waits
out the validation. So the source is also scanned, in the parent and without executing it,
for code that reaches a forbidden capability: network, processes, native code,
signals, files outside the sandbox's tmp, tampering with the interpreter or the sandbox,
and the launcher's environment. The rule is about what the code *contains*, not what a
probe saw: a training environment has no business containing network code, so dead or
unreachable code that names ``socket`` is rejected too.

What is flagged: imports of forbidden modules (also ``__import__``/``importlib`` with a
literal name and ``sys.modules['...']``); references to forbidden functions through any
alias (``os.system`` passed to ``atexit.register`` counts, not only calls); file functions
called with a literal absolute path outside ``/tmp`` (or ``~``, or ``..``); environment
variables; frame, ``gc`` and builtins tampering. Library imports of ordinary modules
(``random``, ``math``, ``numpy``, ``time``, ``json``, ``tempfile`` ...) are fine, as are
path-like strings that never reach a file function (a tool env may simulate a file system).
Names built at run time (``__import__('so' + 'cket')``) cannot be seen here; the sandbox's
run-time detection covers those on the paths the probes execute.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from spade.validate._failure import CheckFailed
from spade.validate._verdict import Stage

if TYPE_CHECKING:
    from spade.validate._source import _Aliases

#: Most serious first: the verdict names a finding of the highest-ranked category.
RANK = ("network", "process", "native", "signal", "filesystem", "tampering", "environment",
        "seccomp", "resource", "rng")  # fmt: skip
WORDS = {
    "network": "network access",
    "filesystem": "file access outside the sandbox",
    "process": "to start or control a process",
    "signal": "to send a signal",
    "environment": "to read the launcher's environment or secrets",
    "native": "to run native code",
    "tampering": "to tamper with the sandbox",
    "resource": "to exhaust resources",
    "rng": "to seed a global random generator",
}


def _words(text: str) -> list[str]:
    return text.split()


def _tag(names: str, category: str) -> dict[str, str]:
    return dict.fromkeys(names.split(), category)


#: Modules (and their submodules) whose import alone is forbidden.
_MODULES: dict[str, str] = {
    **_tag(
        (
            "socket _socket ssl _ssl http.client http.server http.cookiejar urllib.request "
            "urllib.robotparser urllib3 requests httpx aiohttp ftplib smtplib telnetlib "
            "poplib imaplib nntplib socketserver xmlrpc websocket websockets paramiko"
        ),
        "network",
    ),
    **_tag(
        "subprocess _posixsubprocess pty multiprocessing _multiprocessing webbrowser "
        "pexpect concurrent.futures.process",
        "process",
    ),
    **_tag("ctypes _ctypes cffi _cffi_backend numpy.ctypeslib", "native"),
    **_tag("spade.sandbox spade.validate _testcapi", "tampering"),
}
#: Functions and objects (fully qualified, ``posix.`` read as ``os.``) that are forbidden.
_NAMES: dict[str, str] = {
    **_tag(
        "asyncio.open_connection asyncio.start_server asyncio.open_unix_connection "
        "asyncio.start_unix_server",
        "network",
    ),
    **_tag(
        "os.system os.popen os.fork os.forkpty os.startfile os.posix_spawn os.posix_spawnp "
        "asyncio.create_subprocess_exec asyncio.create_subprocess_shell "
        "concurrent.futures.ProcessPoolExecutor",
        "process",
    ),
    **_tag(
        "os.kill os.killpg signal.pthread_kill",
        "signal",
    ),
    **_tag(
        "os.environ os.environb os.getenv os.getenvb os.putenv os.unsetenv os.path.expandvars",
        "environment",
    ),
    **_tag("os.path.expanduser pathlib.Path.home os.chroot", "filesystem"),
    **_tag(
        "gc.get_objects gc.get_referrers gc.get_referents sys._getframe sys._current_frames "
        "sys.settrace sys.setprofile sys.addaudithook threading.settrace threading.setprofile "
        "resource.setrlimit resource.prlimit inspect.currentframe inspect.stack inspect.trace "
        "inspect.getouterframes types.CodeType",
        "tampering",
    ),
}
_PREFIXES = (("os.exec", "process"), ("os.spawn", "process"))
#: Attribute names that reach native code or interpreter internals, on any object.
#: (Names that merely look dangerous -- an attribute called ``ctypes``, ``__subclasses__``
#: -- are left to the runtime layers, which see what the code really does.)
_ATTRIBUTES: dict[str, str] = {
    **_tag(
        "f_globals f_locals f_back f_builtins gi_frame cr_frame ag_frame tb_frame "
        "__globals__ __code__ __builtins__",
        "tampering",
    ),
}
#: Functions that touch the file system at the path they are given.
_FILE_FUNCTIONS = frozenset(
    _words(
        "builtins.open io.open codecs.open tarfile.open zipfile.ZipFile sqlite3.connect "
        "fileinput.input linecache.getline linecache.getlines shelve.open dbm.open "
        "glob.glob glob.iglob numpy.load numpy.loadtxt "
        "numpy.genfromtxt numpy.fromfile numpy.memmap numpy.save numpy.savez numpy.savetxt "
        "pandas.read_csv pandas.read_json pandas.read_table pandas.read_excel "
        "pandas.read_parquet pandas.read_pickle os.path.exists os.path.lexists os.path.isfile "
        "os.path.isdir os.path.islink os.path.ismount os.path.getsize os.path.getmtime "
        "os.path.getatime os.path.getctime os.path.realpath os.path.samefile"
    )
)
#: ``os`` functions taking paths (the pure string helpers of ``os.path`` are not here).
_OS_FILE_FUNCTIONS = frozenset(
    _words(
        "open listdir scandir walk fwalk stat lstat chdir remove unlink rmdir removedirs "
        "mkdir makedirs rename renames replace link symlink readlink chmod chown lchown "
        "truncate utime access mkfifo mknod statvfs listxattr getxattr setxattr removexattr"
    )
)
_SAFE_PATHS = ("/tmp", "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")


@dataclass(frozen=True)
class Capability:
    """One piece of code that reaches a forbidden capability."""

    category: str  # one of RANK
    what: str  # the code, e.g. "import socket" or "open('/etc/passwd')"
    line: int


def scan(aliases: _Aliases, nodes: list[ast.AST]) -> list[Capability]:
    """Every forbidden capability the module's code refers to, in source order
    (``nodes``: ``list(ast.walk(tree))``, parents before their children)."""
    return _Scanner(aliases).run(nodes)


def failure(found: list[Capability]) -> CheckFailed:
    """The SAFETY failure naming the most serious finding (then the earliest)."""
    first = min(found, key=lambda c: (RANK.index(c.category), c.line))
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return CheckFailed(
        Stage.SAFETY,
        f"the source contains code that attempts {WORDS[first.category]}: {first.what} "
        f"(line {first.line}){more}; such code is rejected even where no probe runs it",
        capabilities=[f"{c.category}: {c.what} (line {c.line})" for c in found[:10]],
    )


def _module_category(name: str) -> str | None:
    for module, category in _MODULES.items():
        if name == module or name.startswith(module + "."):
            return category
    return None


def _name_category(qualified: str) -> str | None:
    if qualified.startswith(("posix.", "nt.")):
        qualified = "os." + qualified.split(".", 1)[1]
    found = _module_category(qualified)
    if found:
        return found
    for name, category in _NAMES.items():
        if qualified == name or qualified.startswith(name + "."):
            return category
    for prefix, category in _PREFIXES:
        if qualified.startswith(prefix):
            return category
    return None


def _clip(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _literal_prefix(node: ast.expr, constants: dict[str, str]) -> str | None:
    """The text a path argument starts with, when it is known statically."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
        value = node.value
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    if isinstance(node, ast.JoinedStr) and node.values:
        return _literal_prefix(node.values[0], constants)
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _literal_prefix(node.left, constants)
    return None


def _outside(path: str) -> bool:
    """Is a literal path outside the sandbox's reach (absolute, home-relative, or ``..``)?"""
    path = path.strip()
    if path.startswith("~"):
        return True
    if ".." in path.replace("\\", "/").split("/"):
        return True
    if not path.startswith("/"):
        return False
    return not any(path == safe or path.startswith(safe + "/") for safe in _SAFE_PATHS)


def _writes(call: ast.Call) -> bool:
    """Does an ``open``-style call ask for a writable mode?"""
    modes = [k.value for k in call.keywords if k.arg == "mode"]
    modes += call.args[1:2]
    return any(
        isinstance(m, ast.Constant)
        and isinstance(m.value, str)
        and any(c in m.value for c in "wax+")
        for m in modes
    )


_VISITED = frozenset(
    (
        ast.Import,
        ast.ImportFrom,
        ast.Name,
        ast.Attribute,
        ast.Call,
        ast.Subscript,
        ast.Assign,
        ast.AugAssign,
        ast.AnnAssign,
        ast.Delete,
    )
)


class _Scanner:
    def __init__(self, aliases: _Aliases) -> None:
        self.aliases = aliases
        self.found: list[Capability] = []
        self.seen: set[tuple[str, int, str]] = set()
        self.parents: dict[int, ast.AST] = {}
        self.constants: dict[str, str] = {}

    def run(self, nodes: list[ast.AST]) -> list[Capability]:
        assigned: dict[str, list[str | None]] = {}
        parents = self.parents
        for node in nodes:
            if isinstance(node, ast.Attribute | ast.Subscript):
                parents[id(node.value)] = node
            elif isinstance(node, ast.Call):
                for child in (node.func, *node.args):
                    parents[id(child)] = node
            elif isinstance(node, ast.Compare):
                for operand in (node.left, *node.comparators):
                    parents[id(operand)] = node
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
                if isinstance(target, ast.Name):
                    text = value.value if isinstance(value, ast.Constant) else None
                    assigned.setdefault(target.id, []).append(
                        text if isinstance(text, str) else None
                    )
        # a name bound once to a string literal stands for that literal
        self.constants = {k: v[0] for k, v in assigned.items() if len(v) == 1 and v[0] is not None}
        for node in nodes:
            if type(node) in _VISITED:
                self._visit(node)
        self.found.sort(key=lambda c: c.line)
        return self.found

    def _add(self, category: str, node: ast.AST, what: str | None = None) -> None:
        line = getattr(node, "lineno", 0)
        if what is None:
            what = _clip(ast.unparse(self._context(node)))
        key = (category, line, what)
        if key not in self.seen:
            self.seen.add(key)
            self.found.append(Capability(category, what, line))

    def _context(self, node: ast.AST) -> ast.AST:
        """The expression that shows a reference best: its call, subscript or test."""
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Call | ast.Subscript | ast.Compare):
            return parent
        return node

    def _visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for item in node.names:
                category = _module_category(item.name)
                if category:
                    self._add(category, node, f"import {item.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            category = _module_category(node.module)
            if category:
                self._add(category, node, _clip(ast.unparse(node)))
            for item in node.names:
                category = _name_category(f"{node.module}.{item.name}")
                if category:
                    self._add(category, node, f"from {node.module} import {item.name}")
        elif isinstance(node, ast.Name):
            if node.id == "__builtins__":
                self._add("tampering", node)
            else:
                self._reference(node)
        elif isinstance(node, ast.Attribute):
            category = _ATTRIBUTES.get(node.attr)
            if category:
                self._add(category, node)
            self._reference(node)
        elif isinstance(node, ast.Call):
            self._call(node)
        elif isinstance(node, ast.Subscript):
            self._sys_modules(node)
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            for target in targets:
                self._builtins_write(target)

    def _reference(self, node: ast.Name | ast.Attribute) -> None:
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return  # judged on the longest chain (os.path.expanduser, not os.path)
        qualified = self.aliases.resolve(node)
        if qualified:
            category = _name_category(qualified)
            if category:
                self._add(category, node)

    def _call(self, node: ast.Call) -> None:
        func = node.func
        resolved = self.aliases.resolve(node)  # __import__('x'), import_module, getattr
        if resolved:
            category = _name_category(resolved)
            if category:
                self._add(category, node)
        if isinstance(func, ast.Name) and func.id == "open" and "open" not in self.aliases.names:
            qualified: str | None = "builtins.open"
        else:
            qualified = self.aliases.resolve(func)
        if qualified and qualified.startswith(("posix.", "nt.")):
            qualified = "os." + qualified.split(".", 1)[1]
        if qualified and (
            qualified in _FILE_FUNCTIONS
            or qualified.startswith("shutil.")
            or (qualified.startswith("os.") and qualified[3:] in _OS_FILE_FUNCTIONS)
        ):
            arguments = [*node.args, *(k.value for k in node.keywords)]
            for argument in arguments:
                prefix = _literal_prefix(argument, self.constants)
                if prefix is not None and _outside(prefix):
                    code = _clip(ast.unparse(node))
                    self._add("filesystem", node, f"writing with {code}" if _writes(node) else code)
                    break
        if (
            isinstance(func, ast.Name)
            and func.id in ("setattr", "delattr")
            and node.args
            and self._is_builtins(node.args[0])
        ):
            self._add("tampering", node)

    def _sys_modules(self, node: ast.Subscript) -> None:
        if self.aliases.resolve(node.value) != "sys.modules":
            return
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            category = _module_category(key.value)
            if category:
                self._add(category, node)
        if isinstance(node.ctx, ast.Store | ast.Del):
            self._add("tampering", node)
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Attribute) and isinstance(parent.ctx, ast.Store | ast.Del):
            self._add("tampering", parent)

    def _is_builtins(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name) and node.id == "__builtins__":
            return True
        return self.aliases.resolve(node) in ("builtins", "builtins.__dict__")

    def _builtins_write(self, target: ast.expr) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for item in target.elts:
                self._builtins_write(item)
        elif isinstance(target, ast.Attribute | ast.Subscript) and self._is_builtins(target.value):
            self._add("tampering", target)
