# SPDX-License-Identifier: Apache-2.0
"""gpusub's one render path as a submission takes it: Jinja2 with its bytecode cache in the user's cache
directory (slurm_gpu.submit.template_cache). For every golden scenario and release the text is the golden
file's, byte for byte, when the cache is filled (cold) and when it is read back by a fresh Environment
(warm, as the next gpusub process does), and the warm render compiles no template."""

from __future__ import annotations

import os

import jinja2
import pytest

from slurm_gpu.render import script
from slurm_gpu.submit import template_cache
from slurm_gpu.submit.gpusub import prepare, render_prepared
from tests.render.test_golden import GOLDEN_DIR, PARAMS, POLICY, SCENARIOS, VERSIONS, NoSlurm


def _prepared(name: str, version: str, tmp_path):
    argv, text = SCENARIOS[name]
    (tmp_path / next(a for a in argv if a.endswith(".sh"))).write_text(text)
    env = {"GPUSUB_SLURM_VERSION": VERSIONS[version], "GPUSUB_POLICY": POLICY, "XDG_CACHE_HOME": str(tmp_path),
           "HOME": str(tmp_path), "SBATCH_ACCOUNT": "ml"}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        return prepare(list(argv), env, NoSlurm()), env
    finally:
        os.chdir(cwd)


def _fresh_process_state() -> None:
    """What a new gpusub process starts with: no Environment, no cache object (the disk stays)."""
    script._environment.cache_clear()
    template_cache.bytecode_cache.cache_clear()


@pytest.mark.parametrize("name, version", PARAMS, ids=[f"{s}-{v}" for s, v in PARAMS])
def test_cold_and_warm_give_the_golden_text(name: str, version: str, tmp_path, monkeypatch) -> None:
    prep, env = _prepared(name, version, tmp_path)
    with open(os.path.join(GOLDEN_DIR, f"render-{name}-{version}.sh"), encoding="utf-8") as fh:
        golden = fh.read()

    def as_golden(rendered) -> str:
        return rendered.text + "".join(f"# sbatch argv: {a!r}\n" for a in rendered.sbatch_argv)

    _fresh_process_state()
    assert as_golden(render_prepared(prep, env)) == golden  # cold: compiled, and the entries written
    cache_dir = tmp_path / "slurm-gpu"
    written = [n for n in os.listdir(cache_dir) if n.startswith(template_cache.ENTRY_PREFIX)]
    assert len(written) == len([n for n in os.listdir(script.SOURCE_TEMPLATE_DIR) if n.endswith(".j2")])

    compiled = []
    real = jinja2.Environment.compile
    monkeypatch.setattr(jinja2.Environment, "compile",
                        lambda self, *a, **kw: compiled.append(a[1] if len(a) > 1 else kw.get("name")) or real(
                            self, *a, **kw))
    _fresh_process_state()
    assert as_golden(render_prepared(prep, env)) == golden  # warm: loaded from the entries
    assert compiled == []
    _fresh_process_state()
