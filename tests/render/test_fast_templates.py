# SPDX-License-Identifier: Apache-2.0
"""The fast renderer (slurm_gpu.render.fast + slurm_gpu.submit.fast_templates): Jinja2's compiled code run
without importing Jinja2 gives the same text as Jinja2 for every golden scenario and release, a warm
gpusub never imports Jinja2, and the cache entry (marshalled code: loading it runs it) is used only when
it is the user's own private file and its sources are the templates on disk."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from slurm_gpu.render import fast
from slurm_gpu.render.script import SOURCE_TEMPLATE_DIR
from slurm_gpu.submit import fast_templates
from slurm_gpu.submit.gpusub import prepare, render_prepared
from tests.render.test_golden import POLICY, SCENARIOS, VERSIONS, NoSlurm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _prep(name: str, version: str, tmp_path):
    argv, script = SCENARIOS[name]
    script_name = next(a for a in argv if a.endswith(".sh"))
    (tmp_path / script_name).write_text(script)
    env = {"GPUSUB_SLURM_VERSION": VERSIONS[version], "GPUSUB_POLICY": POLICY, "XDG_CACHE_HOME": str(tmp_path),
           "HOME": str(tmp_path), "SBATCH_ACCOUNT": "ml"}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        return prepare(list(argv), env, NoSlurm()), env
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("version", sorted(VERSIONS))
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_text_as_jinja2(name: str, version: str, tmp_path) -> None:
    prep, env = _prep(name, version, tmp_path)
    by_jinja2 = render_prepared(prep)  # no env: Jinja2 renders
    cold = render_prepared(prep, env)  # builds the cache entry
    warm = render_prepared(prep, env)  # loads it
    assert os.path.exists(tmp_path / "slurm-gpu" / "templates" / fast_templates.ENTRY)
    assert cold == by_jinja2 and warm == by_jinja2


def test_a_warm_gpusub_does_not_import_jinja2(tmp_path) -> None:
    code = (f"import os, sys; sys.path.insert(0, {ROOT!r})\n"
            "from tests.render.test_fast_templates import _prep\n"
            "from slurm_gpu.submit.gpusub import render_prepared\n"
            "import pathlib\n"
            f"prep, env = _prep('srun-inside', '24.11', pathlib.Path({str(tmp_path)!r}))\n"
            "render_prepared(prep, env)\n"
            "print('jinja2' in sys.modules)\n")
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert first.stdout.strip() == "True", first.stderr  # the cold run compiles with Jinja2
    assert second.stdout.strip() == "False", second.stderr


def _copy_templates(tmp_path):
    tdir = tmp_path / "templates"
    shutil.copytree(SOURCE_TEMPLATE_DIR, tdir)
    return str(tdir)


def test_a_changed_template_is_compiled_again(tmp_path) -> None:
    tdir, cache = _copy_templates(tmp_path), str(tmp_path / "cache")
    before = fast_templates.load(tdir, cache)
    assert before is not None
    with open(os.path.join(tdir, "_hook_checkpoint.sh.j2"), "a") as fh:
        fh.write("# changed\n")
    after = fast_templates.load(tdir, cache)
    assert after is not None and after._codes != before._codes


@pytest.mark.parametrize("spoil", ["symlink", "group-writable", "garbage"])
def test_an_entry_that_is_not_private_or_not_ours_is_never_loaded(spoil: str, tmp_path, monkeypatch) -> None:
    tdir, cache = _copy_templates(tmp_path), tmp_path / "cache"
    assert fast_templates.load(tdir, str(cache)) is not None
    entry = cache / fast_templates.ENTRY
    if spoil == "symlink":
        target = tmp_path / "elsewhere.bin"
        entry.rename(target)
        entry.symlink_to(target)
    elif spoil == "group-writable":
        entry.chmod(0o620)
    else:
        entry.write_bytes(b"\x00not marshal")
        entry.chmod(0o600)
    loaded = []
    real = fast_templates.marshal.loads
    monkeypatch.setattr(fast_templates.marshal, "loads", lambda data: loaded.append(1) or real(data))
    env = fast_templates.load(tdir, str(cache))
    assert env is not None  # rebuilt, and it still renders
    if spoil != "garbage":
        assert not loaded  # never even unmarshalled


def test_runtime_refuses_what_it_does_not_offer() -> None:
    assert fast.runtime_names_supported("from jinja2.runtime import missing, Macro\nx = 1\n") == "\nx = 1\n"
    assert fast.runtime_names_supported("from jinja2.runtime import missing, Frobnicate\nx = 1\n") is None
    assert fast.runtime_names_supported("import os\n") is None


def test_strict_undefined_fails_loudly() -> None:
    env = fast.Environment({}, {})
    with pytest.raises(fast.RenderError):
        str(env.undefined(name="nope"))
    with pytest.raises(fast.RenderError):
        env.get_template("missing.j2")
    assert isinstance(env.getattr({"a": 1}, "b"), fast.StrictUndefined)
    assert env.getattr({"a": 1}, "a") == 1
