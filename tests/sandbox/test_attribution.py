"""What ``import`` loads is fine; the same operations from environment code are not.

Libraries read environment variables, import ``ctypes`` and load shared libraries while
they are imported; the sandbox must not blame the environment for that, and must still
name every attempt the environment makes itself (directly or by forging a library's name).
"""

from __future__ import annotations

import pytest
from _sandbox_envs import assert_violation, env_source, outcome

from spade.sandbox import Sandbox

#: (library, what its import does that environment code may not do itself)
LIBRARIES = [
    ("pandas", "imports ctypes, reads _PYTHON_* variables"),
    ("sympy", "imports ctypes, reads MPMATH_*/SYMPY_* variables"),
    ("networkx", "reads NETWORKX_* variables, lists every sys.path entry"),
    ("scipy.optimize", "imports ctypes and numpy.ctypeslib from generated code"),
]


@pytest.mark.parametrize(("library", "why"), LIBRARIES, ids=[n for n, _ in LIBRARIES])
def test_library_imports_are_not_blamed_on_the_environment(
    sandbox: Sandbox, library: str, why: str
) -> None:
    pytest.importorskip(library)
    with sandbox.load(env_source(module=f"import {library}")) as env:
        env.reset(seed=0)
        assert env.violations == (), why


def test_namedtuple_and_undocumented_dataclass_are_not_tampering(sandbox: Sandbox) -> None:
    # Ids of classes freed in the fork server used to be reused by the env's own classes.
    module = (
        "import dataclasses, enum, typing\n"
        + "".join(
            f"@dataclasses.dataclass\nclass D{i}:\n    x: int = 0\n"
            f"class N{i}(typing.NamedTuple):\n    a: int\n"
            f"class C{i}(enum.Enum):\n    A = 1\n"
            for i in range(30)
        )
    )
    for _ in range(3):
        with sandbox.load(env_source(module=module)) as env:
            env.reset(seed=0)
            assert env.violations == ()


@pytest.mark.parametrize(
    "code",
    [
        "import ctypes",
        "__import__('ctypes')",
        "import importlib\nimportlib.import_module('ctypes')",
        "import numpy.ctypeslib",
        "import numpy as np\nnp.ctypeslib.load_library('libc.so.6', '/lib/x86_64-linux-gnu')",
        "import cffi",
        # a library's name forged with compile(): the leniency is off from then on
        "import json\nexec(compile('import ctypes', json.__file__, 'exec'), {'__name__': 'json'})",
        # a module written to the private tmp is the environment's own code
        "import os, sys\nopen('evil_mod.py', 'w').write('import ctypes')\n"
        "sys.path.insert(0, os.getcwd())\nimport evil_mod",
    ],
    ids=[
        "import", "dunder-import", "import-module", "numpy-ctypeslib", "load-library", "cffi",
        "forged-filename", "module-in-tmp",
    ],
)
def test_native_access_from_environment_code_is_a_violation(sandbox: Sandbox, code: str) -> None:
    assert_violation(outcome(sandbox, env_source(reset=code)), "native")


def test_ctypes_loaded_by_a_library_is_still_off_limits(sandbox: Sandbox) -> None:
    pytest.importorskip("pandas")
    src = env_source(module="import pandas", reset="import ctypes\nctypes.CDLL(None).getpid()")
    assert_violation(outcome(sandbox, src), "native", "ctypes")


@pytest.mark.parametrize(
    "code",
    [
        "import os\nos.environ.get('SECRET_TOKEN')",
        "import os\nos.getenv('SECRET_TOKEN')",
        "import os\n'SECRET_TOKEN' in os.environ",
        "import os, threading\nt = threading.Thread(target=os.environ.get, args=('SECRET_TOKEN',))"
        "\nt.start()\nt.join()",
        "exec(\"import os\\nos.environ.get('SECRET_TOKEN')\")",
    ],
    ids=["get", "getenv", "contains", "thread-target", "exec"],
)
def test_environment_reads_by_environment_code_are_violations(
    sandbox: Sandbox, code: str
) -> None:
    assert_violation(outcome(sandbox, env_source(reset=code)), "environment", "SECRET_TOKEN")


def test_a_library_reading_the_environment_on_its_own_is_fine(sandbox: Sandbox) -> None:
    src = env_source(reset="import urllib.request\nurllib.request.getproxies()")
    with sandbox.load(src) as env:
        env.reset(seed=0)
        assert env.violations == ()
