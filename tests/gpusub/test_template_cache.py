# SPDX-License-Identifier: Apache-2.0
"""gpusub's per-user cache of compiled templates (slurm_gpu.submit.template_cache): the same text as a
fresh compile, no compile once cached, a changed template, other settings or another Jinja2 compiled
afresh, and an entry that is not the user's own private file never loaded (loading marshalled code
runs it)."""

import os
import shutil

import jinja2
import pytest

from slurm_gpu.adapters.cache import Cache
from slurm_gpu.placement.plan import BindingPlan
from slurm_gpu.render.script import Payload, render_script
from slurm_gpu.request import Decision
from slurm_gpu.slurm.release import spelling_for
from slurm_gpu.slurm.sbatch.parse import parse_submission
from slurm_gpu.submit.template_cache import ENTRY_PREFIX, MAX_ENTRY, PrivateBytecodeCache
from slurm_gpu.submit.templates import default_template_dir

SUB = parse_submission(["--gres=gpu:h100:2", "-J", "t", "train.sh", "a b"], {}, None)
DECISION = Decision(accepted=True, job_class="batch", partition="batch", qos="normal", gres="gpu:h100:2",
                    gpu_type="h100", gpus=2)
PLAN = BindingPlan(sbatch_options=("--cpus-per-gpu=4",), srun_options=("--cpu-bind=cores",),
                   env=(("OMP_NUM_THREADS", "4"),), tasks=1, cpus_per_task=8, gpus_per_task=None,
                   isolation="shared", launch="batch", explanation=())
PAYLOAD = Payload("#!/bin/bash\necho hi\n", "train.sh")
SPELLING = spelling_for((22, 5, 8))


@pytest.fixture
def templates(tmp_path):
    """A private copy of the templates (a test may change one)."""
    return shutil.copytree(default_template_dir(), tmp_path / "templates")


def render(template_dir, cache=None):
    return render_script(SUB, DECISION, PLAN, SPELLING, PAYLOAD, template_dir=str(template_dir),
                         bytecode_cache=cache).text


def compiles(monkeypatch):
    """Count jinja2's compiles of template source from here on."""
    calls = []
    real = jinja2.Environment.compile

    def counting(self, *args, **kwargs):
        calls.append(args[1] if len(args) > 1 else kwargs.get("name"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(jinja2.Environment, "compile", counting)
    return calls


def entries(directory):
    return sorted(p for p in os.listdir(directory) if p.startswith(ENTRY_PREFIX))


def test_cached_templates_render_the_same_text_without_compiling(templates, tmp_path, monkeypatch):
    expected = render(templates)  # no cache: compiled from the source
    cache_dir = tmp_path / "cache"
    assert render(templates, PrivateBytecodeCache(str(cache_dir))) == expected
    assert len(entries(cache_dir)) == len([n for n in os.listdir(templates) if n.endswith(".j2")])
    assert os.stat(cache_dir).st_mode & 0o777 == 0o700
    assert {os.stat(cache_dir / e).st_mode & 0o777 for e in entries(cache_dir)} == {0o600}
    calls = compiles(monkeypatch)
    assert render(templates, PrivateBytecodeCache(str(cache_dir))) == expected  # a new process's cache
    assert calls == []


def test_entries_are_keyed_by_the_jinja2_that_compiled_them(templates, tmp_path, monkeypatch):
    cache_dir = tmp_path / "cache"
    expected = render(templates, PrivateBytecodeCache(str(cache_dir)))
    first = entries(cache_dir)
    assert first and all(f"jinja2={jinja2.__version__} ".encode() in (cache_dir / n).read_bytes().split(b"\n")[0]
                         for n in first)
    monkeypatch.setattr(jinja2, "__version__", "3.9.0")  # as if another Jinja2 were installed
    calls = compiles(monkeypatch)
    assert render(templates, PrivateBytecodeCache(str(cache_dir))) == expected
    assert len(calls) == len(first)  # the other version's entries were not loaded
    assert entries(cache_dir) == first  # rewritten in place, for the Jinja2 now installed
    assert all(b"jinja2=3.9.0 " in (cache_dir / n).read_bytes().split(b"\n")[0] for n in first)


def test_a_changed_template_is_compiled_afresh(templates, tmp_path, monkeypatch):
    cache_dir = str(tmp_path / "cache")
    before = render(templates, PrivateBytecodeCache(cache_dir))
    with open(templates / "_hook_checkpoint.sh.j2", "a", encoding="utf-8") as fh:
        fh.write("# a line added after the cache was filled\n")
    calls = compiles(monkeypatch)
    after = render(templates, PrivateBytecodeCache(cache_dir))
    assert "# a line added after the cache was filled\n" in after and after != before
    assert calls == ["_hook_checkpoint.sh.j2"]


@pytest.mark.parametrize("spoil", ["group-writable", "symlink", "hard-link"])
def test_an_entry_that_is_not_private_is_never_loaded(templates, tmp_path, monkeypatch, spoil):
    cache_dir = tmp_path / "cache"
    expected = render(templates, PrivateBytecodeCache(str(cache_dir)))
    store = Cache(str(cache_dir), MAX_ENTRY)
    for name in entries(cache_dir):
        entry = cache_dir / name
        line = entry.read_bytes().split(b"\n", 1)[0]
        key = line.split(b" ", 3)[3].decode()  # slurm-gpu-cache FORMAT VERSION KEY
        assert store.get(name, key) is not None  # a good entry, before it is spoiled
        if spoil == "group-writable":
            entry.write_bytes(line + b"\nnot jinja2 bytecode")  # would fail to load if it were read
            os.chmod(entry, 0o620)
        elif spoil == "symlink":
            os.rename(entry, tmp_path / name)
            os.symlink(tmp_path / name, entry)
        else:
            os.link(entry, tmp_path / name)
        assert store.get(name, key) is None
    calls = compiles(monkeypatch)
    assert render(templates, PrivateBytecodeCache(str(cache_dir))) == expected
    assert len(calls) == len(entries(cache_dir))  # every template compiled again, none loaded


def test_a_cache_directory_others_can_write_is_not_used(templates, tmp_path, monkeypatch):
    cache_dir = tmp_path / "shared"
    cache_dir.mkdir()
    os.chmod(cache_dir, 0o777)
    cache = PrivateBytecodeCache(str(cache_dir))
    assert render(templates, cache) == render(templates)
    assert entries(cache_dir) == []


def test_an_unwritable_cache_changes_nothing(templates, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cache = PrivateBytecodeCache(str(blocker / "cache"))  # under a regular file: cannot be created
    assert render(templates, cache) == render(templates)


def test_code_compiled_with_other_settings_is_not_reused(tmp_path):
    (tmp_path / "t.j2").write_text("{% if true %}\n  x\n{% endif %}\n")
    cache = PrivateBytecodeCache(str(tmp_path / "cache"))
    texts = {}
    for trim in (True, False, True):
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(tmp_path)), bytecode_cache=cache,
                                 trim_blocks=trim, lstrip_blocks=trim)
        texts.setdefault(trim, []).append(env.get_template("t.j2").render())
    assert texts == {True: ["  x\n", "  x\n"], False: ["\n  x\n"]}
    assert len(entries(tmp_path / "cache")) == 2
