"""Dormant attempts at teardown, reports that race a reply, HOME, and ``reset(seed=...)``."""

from __future__ import annotations

import time

import pytest
from _sandbox_envs import assert_violation, env_source, outcome

from spade.sandbox import EnvFault, Sandbox

DORMANT = {
    "del": "    def __del__(self):\n        import socket\n        try:\n"
    "            socket.create_connection(('127.0.0.1', 7), timeout=0.1)\n"
    "        except Exception:\n            pass\n",
    "atexit": "    def __init__(self):\n        super().__init__()\n        import atexit, os\n"
    "        atexit.register(os.system, 'id')\n",
    "thread": "    def __init__(self):\n        super().__init__()\n        import threading\n"
    "        threading.Thread(target=self.later, daemon=True).start()\n"
    "    def later(self):\n        import time, socket\n        time.sleep(0.2)\n"
    "        try:\n            socket.create_connection(('10.0.0.1', 80), timeout=0.1)\n"
    "        except Exception:\n            pass\n",
}
CATEGORY = {"del": "network", "atexit": "process", "thread": "network"}


@pytest.mark.parametrize("kind", [k for k in DORMANT if k != "thread"])
def test_finalize_surfaces_dormant_attempts(sandbox: Sandbox, kind: str) -> None:
    with sandbox.load(env_source() + DORMANT[kind]) as env:
        env.reset(seed=0)
        env.step("x")
        assert env.violations == ()  # nothing yet: the attempt waits for teardown
        found = env.finalize(timeout_s=1.0)
        assert CATEGORY[kind] in {v.category for v in found}, found
        with pytest.raises(EnvFault):  # the environment is gone after finalize
            env.reset(seed=0)


def test_a_dormant_thread_outliving_load_is_an_attempt_at_once(sandbox: Sandbox) -> None:
    with pytest.raises(EnvFault) as fault:
        sandbox.load(env_source() + DORMANT["thread"])
    assert "resource" in {v.category for v in fault.value.violations}, fault.value
    assert "still running after load" in str(fault.value)


def test_finalize_of_a_clean_environment_reports_nothing(sandbox: Sandbox) -> None:
    with sandbox.load(env_source()) as env:
        env.reset(seed=0)
        assert env.finalize() == ()
    with sandbox.load(env_source()) as env:  # also right after load, without a call
        assert env.finalize() == ()


def test_finalize_survives_a_hanging_atexit_callback(sandbox: Sandbox) -> None:
    src = env_source(module="import atexit, time\natexit.register(time.sleep, 60)")
    with sandbox.load(src) as env:
        env.reset(seed=0)
        assert env.finalize(timeout_s=0.1) == ()  # timed out and killed; nothing recorded
        assert not env.alive


def test_a_thread_attempt_is_named_not_just_counted(roomy: Sandbox) -> None:
    # The report frame and the reply used to race: the count arrived first, unnamed. On a
    # roomy sandbox: a call timeout on a loaded machine is not what this is about, and the
    # wait for the record below only guards against a hang.
    src = env_source(reset="import socket, threading\ndef go():\n    try:\n"
                     "        socket.create_connection(('10.0.0.1', 80), timeout=0.1)\n"
                     "    except Exception:\n        pass\n"
                     "t = threading.Thread(target=go, daemon=True)\nt.start()\n"
                     "t.join()")  # fmt: skip  (joined: a thread left running is a violation too)
    for _ in range(25):
        with roomy.load(src) as env:
            try:
                env.reset(seed=0)
                env.step("x")
            except EnvFault as fault:
                assert "network" in str(fault), fault
            deadline = time.monotonic() + 60.0
            while not (found := env.violations) and time.monotonic() < deadline:
                time.sleep(0.01)
        assert {v.category for v in found} == {"network"}, found


@pytest.mark.parametrize(
    "code",
    [
        "import os\nopen(os.path.expanduser('~/.ssh/id_rsa')).read()",
        "import pathlib\nlist(pathlib.Path.home().iterdir())",
    ],
    ids=["expanduser", "path-home"],
)
def test_home_is_not_a_readable_directory(sandbox: Sandbox, code: str) -> None:
    assert_violation(outcome(sandbox, env_source(reset=code)), "filesystem")


def test_reset_is_called_with_seed_only_unless_options_are_given(sandbox: Sandbox) -> None:
    src = (
        "from spade.envs import TextEnv\n\nclass SeedOnlyEnv(TextEnv):\n"
        "    def reset(self, seed=None, **kw):\n        super().reset(seed=seed)\n"
        "        return repr(sorted(kw)), {}\n\n"
        "    def step(self, action):\n        return 'done', 1.0, True, False, {}\n"
    )
    with sandbox.load(src) as env:
        assert env.reset(seed=1)[0] == "[]"
        assert env.reset(seed=1, options={"a": 1})[0] == "['options']"
