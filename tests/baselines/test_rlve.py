"""The RLVE adapter on the paper's 16 environments, inside the real bubblewrap sandbox."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import pytest

from spade.baselines import (
    PAPER_ENVS,
    parse_rlve_env_id,
    rlve_catalog,
    rlve_env_id,
    rlve_source,
    rlve_spec,
)
from spade.errors import UserError
from spade.sandbox import EnvHandle, Sandbox, SandboxLimits

SEEDS = (11, 12)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox("bwrap", SandboxLimits(call_timeout_s=20.0)) as box:
        yield box


def _convex_polygon_answer(prompt: str) -> str:
    """A largest convex polygon by brute force (the environment keeps only its size)."""
    points = [tuple(map(int, m)) for m in re.findall(r"Point \d+: \((-?\d+), (-?\d+)\)", prompt)]

    def cross(o: tuple[int, ...], a: tuple[int, ...], b: tuple[int, ...]) -> int:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    def convex(pts: list[tuple[int, ...]]) -> bool:
        pts = sorted(pts)
        hull: list[tuple[int, ...]] = []
        for seq in (pts, pts[::-1]):
            part: list[tuple[int, ...]] = []
            for p in seq:
                while len(part) >= 2 and cross(part[-2], part[-1], p) <= 0:
                    part.pop()
                part.append(p)
            hull += part[:-1]
        return len(hull) == len(pts)

    for k in range(len(points), 2, -1):
        for combo in itertools.combinations(range(len(points)), k):
            if convex([points[i] for i in combo]):
                return " ".join(str(i + 1) for i in combo)
    raise AssertionError("no convex polygon")


def _reference(handle: EnvHandle, env: str, prompt: str) -> str:
    solution = handle.solution()
    if solution is not None:
        return str(solution[0])
    assert env == "LargestConvexPolygon", f"{env} has no reference answer"
    return _convex_polygon_answer(prompt)


@pytest.mark.bwrap
@pytest.mark.parametrize("env", PAPER_ENVS)
def test_paper_env_in_sandbox(sandbox: Sandbox, env: str) -> None:
    first = {}
    for difficulty in (0, 2):
        source = rlve_source(env, difficulty)
        with sandbox.load(source, filename=f"{rlve_env_id(env, difficulty)}.py") as handle:
            assert handle.info.kind == "game" and handle.info.max_turns == 1
            for seed in SEEDS:
                prompt, info = handle.reset(seed=seed)
                assert info["rlve_id"] == env and info["difficulty"] == difficulty
                assert "<answer>" in prompt and len(prompt) > 40
                answer = _reference(handle, env, prompt)
                _, reward, terminated, _, step_info = handle.step(answer)
                assert terminated and reward == pytest.approx(1.0) and step_info["accuracy"] == 1
                # a boxed action reaches the environment as its content; tags also work
                handle.reset(seed=seed)
                assert handle.step(f"<answer>{answer}</answer>")[1] == pytest.approx(1.0)
                handle.reset(seed=seed)
                wrong = handle.step("no answer here")[1]
                assert wrong < 1.0
                first[(difficulty, seed)] = prompt
            assert handle.violations == ()
        # determinism: a fresh worker gives the same problem for the same seed
        with sandbox.load(source, filename="again.py") as again:
            assert again.reset(seed=SEEDS[0])[0] == first[(difficulty, SEEDS[0])]
    assert first[(0, SEEDS[0])] != first[(0, SEEDS[1])] or env == "EuclidGame"


@pytest.mark.bwrap
def test_difficulty_applies_the_controller(sandbox: Sandbox) -> None:
    sizes = []
    for difficulty in (0, 3, 6):
        with sandbox.load(rlve_source("Sorting", difficulty)) as handle:
            prompt = handle.reset(seed=5)[0]
            sizes.append(len(handle.solution()[0].split()))
            assert prompt
    # Sorting's controller: N = 3, then N = int(1.1 N + 1) per update
    n, expected = 3, []
    for d in range(7):
        if d in (0, 3, 6):
            expected.append(n)
        n = int(n * 1.1 + 1)
    assert sizes == expected


def test_catalog_and_ids() -> None:
    catalog = rlve_catalog()
    assert set(PAPER_ENVS) <= set(catalog) and len(catalog) > 300
    spec = rlve_spec("Division")
    assert spec.env_class == "Division_Environment"
    assert spec.controller_module == "parameter_controllers/division/parameter_controller.py"
    assert parse_rlve_env_id(rlve_env_id("Path_NoGoingBack_Counting", 7)) == (
        "Path_NoGoingBack_Counting", 7)
    with pytest.raises(UserError, match="unknown RLVE environment 'Divison'"):
        rlve_spec("Divison")
    with pytest.raises(UserError, match="not an RLVE environment id"):
        parse_rlve_env_id("rlve-Division")
    with pytest.raises(ValueError):
        rlve_source("Division", -1)


def test_rlve_sources_never_import_torch_elsewhere() -> None:
    """The stand-in is safe only while no RLVE module but the base uses torch."""
    from spade.baselines._catalog import package_root

    root = package_root()
    users = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                   if "torch" in p.read_text(encoding="utf-8"))
    assert users == ["environment.py"]
