# SPDX-License-Identifier: Apache-2.0
"""gpusub's templates compiled once per user to Python code that :mod:`slurm_gpu.render.fast` runs
without importing Jinja2 (filesystem adapter).

On the first run (or after a template, this runtime or Python changed) Jinja2 compiles the templates
with the renderer's own settings (:func:`slurm_gpu.render.script._environment`), and the code objects
are kept in one private cache entry together with the template sources they came from. Later runs read
the sources (four small files), compare them with the entry's byte for byte, and run the cached code.
Loading marshalled code runs it, so the entry is read only when it is the user's own private file
(:mod:`slurm_gpu.submit.private_files`); anything else is ignored and rebuilt. When the compiled code needs
a runtime name the fast renderer does not offer, there is no entry and Jinja2 renders as before.
"""

from __future__ import annotations

import marshal
import os
import sys
from typing import Any

from slurm_gpu.render.fast import RUNTIME_VERSION, Environment, runtime_names_supported
from slurm_gpu.submit.private_files import private_dir, read_private, write_private

ENTRY = f"fast-templates-v{RUNTIME_VERSION}-{sys.implementation.cache_tag}.bin"
MAX_TEMPLATE = 256 * 1024


def _sources(template_dir: str) -> dict[str, str] | None:
    try:
        names = sorted(n for n in os.listdir(template_dir) if n.endswith(".j2"))
        out = {}
        for name in names:
            with open(os.path.join(template_dir, name), encoding="utf-8") as fh:
                out[name] = fh.read(MAX_TEMPLATE + 1)
        return out
    except (OSError, UnicodeDecodeError):
        return None


def _compile(template_dir: str, sources: dict[str, str]) -> dict[str, Any] | None:
    from slurm_gpu.render.script import _environment

    jenv = _environment(template_dir, None)
    codes = {}
    for name, source in sources.items():
        text = runtime_names_supported(jenv.compile(source, name, os.path.join(template_dir, name), raw=True))
        if text is None:
            return None
        codes[name] = compile(text, os.path.join(template_dir, name), "exec")
    return codes


def load(template_dir: str, cache_dir: str) -> Environment | None:
    """The compiled templates of ``template_dir``, from the private entry in ``cache_dir`` (built when
    missing or stale); None when they cannot be served without Jinja2 (the caller renders with Jinja2)."""
    from slurm_gpu.render.script import shquote

    sources = _sources(template_dir)
    if not sources:
        return None
    entry = os.path.join(cache_dir, ENTRY)
    usable = private_dir(cache_dir)
    data = read_private(entry, 4 * 1024 * 1024) if usable else None
    if data:
        try:
            version, cached_sources, codes = marshal.loads(data)
            if version == RUNTIME_VERSION and cached_sources == sources:
                return Environment(codes, {"shquote": shquote})
        except (ValueError, TypeError, EOFError):
            pass  # an entry of another format: rebuilt below
    codes = _compile(template_dir, sources)
    if codes is None:
        return None
    if usable:
        write_private(entry, marshal.dumps((RUNTIME_VERSION, sources, codes)))
    return Environment(codes, {"shquote": shquote})


__all__ = ["load", "ENTRY"]
