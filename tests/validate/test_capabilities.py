"""Static capability scan: forbidden code is rejected unexecuted, ordinary code is not."""

from __future__ import annotations

import pytest

from spade.sandbox._types import Violation
from spade.validate._calls import safety_reason
from spade.validate._failure import CheckFailed
from spade.validate._source import check_source
from spade.validate._verdict import Stage

HEAD = "from spade.envs import TextEnv\n"
ENV = """
class GuessEnv(TextEnv):
    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return "hi", {}

    def step(self, action):
        return "done", 0.0, True, False, {}
"""


def scan(snippet: str) -> str | None:
    """The SAFETY reason for a module with ``snippet`` on top, or None when it passes."""
    try:
        check_source(HEAD + snippet + "\n" + ENV, max_chars=100_000)
    except CheckFailed as failed:
        assert failed.stage == Stage.SAFETY, failed.reason
        return failed.reason
    return None


@pytest.mark.parametrize(
    ("snippet", "words"),
    [
        ("import socket", ["network access", "import socket (line 2)"]),
        ("from socket import create_connection", ["network", "create_connection"]),
        ("import urllib.request as u", ["network", "urllib.request"]),
        ("import requests", ["network"]),
        ("import http.client", ["network"]),
        ("s = __import__('socket')", ["network", "__import__('socket')"]),
        ("import importlib\nm = importlib.import_module('ssl')", ["network", "ssl"]),
        ("import subprocess", ["process"]),
        ("import os\natexit_target = os.system", ["process", "os.system"]),
        ("from os import popen", ["process", "popen"]),
        ("import os\ndef f():\n    os.execv('/bin/sh', [])", ["process", "os.execv"]),
        ("import posix\nposix.system('id')", ["process"]),
        ("import multiprocessing.pool", ["process"]),
        ("import ctypes", ["native code"]),
        ("import numpy as np\nlib = np.ctypeslib", ["native code"]),
        ("import sys\nx = sys.modules['ctypes']", ["native code"]),
        ("import os, signal\ndef f():\n    os.kill(1, signal.SIGKILL)", ["send a signal"]),
        ("data = open('/etc/passwd').read", ["file access", "open('/etc/passwd')"]),
        ("import os\nx = os.listdir('/')", ["file access", "os.listdir('/')"]),
        ("from pathlib import Path\nh = Path.home()", ["file access", "Path.home()"]),
        ("import os\np = os.path.expanduser('~/.ssh/id_rsa')", ["file access", "~/.ssh"]),
        ("import shutil\nshutil.rmtree('/usr/share/doc')", ["file access", "rmtree"]),
        ("SECRET = '/etc/shadow'\nx = open(SECRET)", ["file access", "open(SECRET)"]),
        ("import os\nx = open(f'/proc/{os.getpid()}/environ')", ["file access", "environ"]),
        ("x = open('../../etc/hosts')", ["file access"]),
        ("x = open('/var/tmp/x', 'w')", ["file access", "writing with open"]),
        ("import os\nk = os.environ['OPENAI_API_KEY']", ["environment", "OPENAI_API_KEY"]),
        ("import os\nk = os.getenv('HF_TOKEN')", ["environment", "HF_TOKEN"]),
        ("import os\nhas = 'X' in os.environ", ["environment", "'X' in os.environ"]),
        ("from os import environ", ["environment"]),
        ("import posix\ne = dict(posix.environ)", ["environment", "posix.environ"]),
        ("import builtins\nbuiltins.len = lambda o: 0", ["tamper", "builtins.len"]),
        ("import builtins\nbuiltins.__dict__['len'] = None", ["tamper"]),
        ("import builtins\nsetattr(builtins, 'print', None)", ["tamper"]),
        ("x = __builtins__", ["tamper"]),
        ("import gc\nn = len(gc.get_objects())", ["tamper", "gc.get_objects()"]),
        ("import sys\nf = sys._getframe(1)", ["tamper", "sys._getframe(1)"]),
        ("def f(g):\n    return g.f_back.f_globals", ["tamper"]),
        ("c = (lambda: 0).__code__", ["tamper", "__code__"]),
        ("import sys\nsys.settrace(None)", ["tamper"]),
        ("import resource\nresource.setrlimit(0, (1, 1))", ["tamper"]),
        ("import spade.sandbox._guard as g", ["tamper", "spade.sandbox._guard"]),
    ],
)
def test_forbidden_capabilities_are_named(snippet: str, words: list[str]) -> None:
    reason = scan(snippet)
    assert reason is not None, snippet
    for word in words:
        assert word.lower() in reason.lower(), (word, reason)


def test_dead_code_is_rejected_too() -> None:
    reason = scan("import socket\nif False:\n    socket.create_connection(('10.0.0.1', 80))")
    assert reason is not None and "even where no probe runs it" in reason


def test_the_most_serious_finding_is_named() -> None:
    reason = scan("import os\nk = os.environ.get('X')\nd = os.listdir('/etc')\nimport socket")
    assert reason is not None
    assert reason.startswith("the source contains code that attempts network access")
    assert "(line 5)" in reason and "(and 2 more)" in reason


@pytest.mark.parametrize(
    "snippet",
    [
        "import random, math, itertools, collections, dataclasses, typing, enum, re, string",
        "import json, functools, heapq, fractions, decimal, statistics, datetime, time, copy",
        "import textwrap, hashlib, uuid, calendar, bisect, operator, logging, warnings",
        "import numpy as np\nrng = np.random.default_rng(0)\nx = np.zeros(3).sum()",
        "import time\ndef pause():\n    time.sleep(0.01)",
        "import os, tempfile\np = os.path.join(tempfile.gettempdir(), 'ledger.json')",
        "with open('notes.txt', 'w') as fh:\n    fh.write('x')",
        "x = open('/tmp/scratch.txt', 'w')",
        "import os\nx = os.open('/dev/null', os.O_WRONLY)",
        "FILES = {'/etc/passwd': 'root:x:0:0', '/home/ann/notes.txt': 'hi'}",
        "import os\np = os.path.join('/home/ann', 'notes.txt')\nq = os.path.basename(p)",
        "parts = 'a/b'.split('/')\nroot = '/'.join(parts)",
        "from pathlib import PurePosixPath\np = PurePosixPath('/srv/data') / 'x'",
        "import sys\nsys.setrecursionlimit(10000)\nn = sys.maxsize",
        "from http import HTTPStatus\nOK = HTTPStatus.OK",
        "from urllib.parse import quote\nq = quote('a b')",
        "import threading\nlock = threading.Lock()",
        "import builtins\np = builtins.print",
        "import spade.envs as se",
    ],
)
def test_ordinary_code_passes(snippet: str) -> None:
    assert scan(snippet) is None


def test_runtime_reason_names_the_most_serious_attempt() -> None:
    violations = [
        Violation("environment", "enumeration of os.environ"),
        Violation("filesystem", "open /etc/hosts"),
        Violation("network", "socket.connect ('93.184.216.34', 80)"),
        Violation("network", "socket.connect ('10.0.0.1', 80)"),
    ]
    reason = safety_reason(violations)
    assert reason == "attempted network access: socket.connect ('93.184.216.34', 80) (and 3 more)"
    assert safety_reason([Violation("unlisted", "x")]).startswith("attempted unlisted: x")
