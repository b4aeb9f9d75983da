# SPDX-License-Identifier: Apache-2.0
"""The shipped JSON Schema and the hand-written validator agree (a small draft 2020-12 subset evaluator)."""

from __future__ import annotations

import glob
import json
import os
import re

import pytest
import yaml

from slurm_gpu.policy import check_policy

HERE = os.path.dirname(__file__)
SCHEMA = os.path.join(HERE, "..", "..", "slurm_gpu", "schema", "policy.schema.json")
EXAMPLES = sorted(glob.glob(os.path.join(HERE, "..", "..", "examples", "policies", "*.yaml")))
BAD = sorted(glob.glob(os.path.join(HERE, "bad", "*.yaml")))
# structural problems the schema alone must catch (cross references and ranges are validator-only)
SCHEMA_CATCHES = {"bad_bool", "bad_class_option", "bad_cpus_per_gpu", "bad_duration_unit", "bad_fraction_mode",
                  "bad_match_min_gpus", "bad_mig_profile", "bad_preempt_mode", "message_unknown_key",
                  "missing_class_name", "negative_gpus", "section_not_list", "unknown_key_max_tme",
                  "unknown_match_key", "unknown_top_key", "version_missing", "version_wrong", "wrong_type_memory"}


def _type_ok(v: object, t: str) -> bool:
    return {"object": isinstance(v, dict), "array": isinstance(v, list), "string": isinstance(v, str),
            "boolean": isinstance(v, bool), "integer": isinstance(v, int) and not isinstance(v, bool),
            "number": isinstance(v, (int, float)) and not isinstance(v, bool)}[t]


def errors(v: object, s: dict, root: dict) -> int:
    if "$ref" in s:
        return errors(v, root["$defs"][s["$ref"].split("/")[-1]], root)
    n = 0
    if "type" in s and not _type_ok(v, s["type"]):
        return 1
    if "const" in s and (v != s["const"] or isinstance(v, bool)):
        n += 1
    if "enum" in s and v not in s["enum"]:
        n += 1
    if "oneOf" in s and sum(errors(v, sub, root) == 0 for sub in s["oneOf"]) != 1:
        n += 1
    if isinstance(v, str):
        if "pattern" in s:
            pat = s["pattern"]
            flags = re.I if pat.startswith("^(?i:") else 0
            n += not re.search(pat.replace("(?i:", "(?:"), v, flags)
        n += len(v) < s.get("minLength", 0)
    if _type_ok(v, "number"):
        n += "minimum" in s and v < s["minimum"]
        n += "maximum" in s and v > s["maximum"]
        n += "exclusiveMinimum" in s and v <= s["exclusiveMinimum"]
    if isinstance(v, list) and "items" in s:
        n += sum(errors(i, s["items"], root) for i in v)
    if isinstance(v, dict):
        props = s.get("properties", {})
        n += sum(1 for r in s.get("required", []) if r not in v)
        for k, val in v.items():
            if "propertyNames" in s:
                n += errors(k, s["propertyNames"], root)
            if k in props:
                n += errors(val, props[k], root)
            elif s.get("additionalProperties") is False:
                n += 1
            elif isinstance(s.get("additionalProperties"), dict):
                n += errors(val, s["additionalProperties"], root)
    return n


@pytest.fixture(scope="module")
def schema() -> dict:
    with open(SCHEMA, encoding="utf-8") as fh:
        return json.load(fh)


def _schema_errors(path: str, schema: dict) -> int:
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except yaml.YAMLError:
        return 1
    return 1 if not isinstance(data, dict) else errors(data, schema, schema)


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_examples_pass_schema_and_validator(path: str, schema: dict) -> None:
    assert _schema_errors(path, schema) == 0
    assert check_policy(path).ok


@pytest.mark.parametrize("path", BAD, ids=os.path.basename)
def test_schema_rejection_implies_validator_rejection(path: str, schema: dict) -> None:
    name = os.path.basename(path)[:-5]
    n = _schema_errors(path, schema)
    assert not check_policy(path).ok  # every bad file is invalid for the validator
    if name in SCHEMA_CATCHES:
        assert n > 0, f"schema accepts {name}"


def test_shipped_schema_is_generated_from_the_model() -> None:
    from slurm_gpu.policy.schema import render

    with open(SCHEMA, encoding="utf-8") as fh:
        assert fh.read() == render(), "stale: run python -m slurm_gpu.policy.schema --write"


def test_defaults_are_declared_once() -> None:
    """validate.py and build.py hold no default values: they come from the model's dataclasses."""
    import dataclasses

    from slurm_gpu.policy.model import Isolation
    from slurm_gpu.policy.validate import MAP_SECTIONS

    iso = {attr: default for _, attr, _, default in MAP_SECTIONS["isolation"]}
    assert iso == {f.name: f.default for f in dataclasses.fields(Isolation)}
    for name in ("validate.py", "build.py"):
        with open(os.path.join(HERE, "..", "..", "slurm_gpu", "policy", name), encoding="utf-8") as fh:
            src = fh.read()
        for default in ("mig-then-mps", '"resolve"', ", 10)", ", 50)", ", 120)"):
            assert default not in src, (name, default)


def test_every_key_is_documented() -> None:
    import dataclasses

    from slurm_gpu.policy import kinds
    from slurm_gpu.policy.model import Policy

    with open(os.path.join(HERE, "..", "..", "docs", "policy.md"), encoding="utf-8") as fh:
        doc = fh.read()

    def keys(cls):
        for f in dataclasses.fields(cls):
            if "yaml" in f.metadata:
                assert f.metadata["doc"], (cls.__name__, f.name)
                yield f.metadata["yaml"]
                kind = f.metadata["kind"]
                if isinstance(kind, (kinds.Nested, kinds.Section)):
                    yield from keys(kind.cls)

    missing = sorted({k for k in keys(Policy) if f"`{k}`" not in doc})
    assert not missing, missing


def test_classifier_steps_are_a_stable_table() -> None:
    from slurm_gpu.policy.classifier import STEPS, steps

    names = tuple(n for n, _ in STEPS)
    assert names == ("check_request", "fit_vram", "match_class", "place", "resolve_gpus", "check_sharing",
                     "check_nodes", "set_time", "apply_defaults")
    with open(os.path.join(HERE, "..", "..", "docs", "policy.md"), encoding="utf-8") as fh:
        doc = fh.read()
    for n, fn in STEPS:
        assert fn.__name__ == n and f"``{n}``" in steps.__doc__ and f"`{n}`" in doc


def test_policy_modules_import_no_cycle() -> None:
    """The import graph among slurm_gpu.policy modules (every import, lazy ones too) is acyclic."""
    import ast

    root = os.path.join(HERE, "..", "..", "slurm_gpu", "policy")
    graph: dict[str, set[str]] = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), root)[:-3].replace(os.sep, ".")
            mod = "slurm_gpu.policy" + ("" if rel == "__init__" else "." + rel.removesuffix(".__init__"))
            with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
            deps = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("slurm_gpu.policy"):
                    deps.add(node.module)
                    deps.update(f"{node.module}.{a.name}" for a in node.names)
                elif isinstance(node, ast.Import):
                    deps.update(a.name for a in node.names if a.name.startswith("slurm_gpu.policy"))
            graph[mod] = deps
    graph = {m: {d for d in deps if d in graph and d != m and d != "slurm_gpu.policy"} for m, deps in graph.items()}

    def visit(m: str, path: tuple[str, ...]) -> None:
        assert m not in path, " -> ".join((*path, m))
        for d in graph[m]:
            visit(d, (*path, m))

    for m in graph:
        visit(m, ())
