# SPDX-License-Identifier: Apache-2.0
"""The generated job_submit.lua never raises, whatever job_desc it is handed (issue 10, Fuzz).

100,000 random and hostile job_desc tables per example policy (10,000 without CI=true), built inside
Lua 5.1 by a seeded generator (FUZZ_LUA) in the plugin's own state: fields missing or of the wrong type,
NaN, infinities, sentinels, huge numbers, random bytes with NUL and high bytes, UTF-8, 100 KB strings,
Lua syntax and format strings, gres-looking strings assembled from random pieces, tables, userdata and
tables whose metamethods raise, and job_descs whose getter fails or draws a random value on a first read.
``slurm_job_submit`` must never raise, never log an internal error (``slurm.log_error``: a Lua error in
the engine, caught by the entry point) and return only SUCCESS, ERROR or ESLURM_INVALID_GRES;
``slurm_job_modify`` likewise on random job_desc / job_rec pairs. A Hypothesis test builds hostile
dicts in Python (it shrinks a failure to a small job_desc). Unit tests: on_internal_error (a setter
that fails in slurmctld) and no global or mutable state left behind by loading or by calls.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_gpu.emit.job_submit import compile_policy
from slurm_gpu.policy import load_policy
from slurm_gpu.policy.model import Policy
from slurm_gpu.slurm.job_desc import job_descs_for

pytest.importorskip("lupa.lua51")
from lupa import lua51  # noqa: E402

from tests.job_submit.lua_harness import SLURM_STUB, USER, Plugin  # noqa: E402
from tests.job_submit.test_differential import POLICIES, ROOT  # noqa: E402

CI = os.environ.get("CI") == "true"
TABLES = 100_000 if CI else 10_000  # job_desc tables per policy through slurm_job_submit
MODIFY_PAIRS = 20_000 if CI else 2_000  # (job_desc, job_rec) pairs per policy through slurm_job_modify
HYPOTHESIS_EXAMPLES = 300
SEED = 20260110
CODES = (0, -1, 2072)  # slurm.SUCCESS, slurm.ERROR, slurm.ESLURM_INVALID_GRES
FIELDS = ("tres_per_job", "tres_per_node", "gres", "tres_per_socket", "tres_per_task", "ntasks_per_tres",
          "ntasks_per_gpu", "min_nodes", "max_nodes", "num_tasks", "ntasks_per_node", "cpus_per_task",
          "time_limit", "partition", "qos", "account", "array_inx", "script", "user_name")

# The generator. Returns run(mode, seed, n, names) -> stats; every name is local (test (b) relies on it).
FUZZ_LUA = r"""
local random, floor, char, rep, concat = math.random, math.floor, string.char, string.rep, table.concat
local FIELDS = {
  "tres_per_job", "tres_per_node", "gres", "tres_per_socket", "tres_per_task", "ntasks_per_tres",
  "ntasks_per_gpu", "min_nodes", "max_nodes", "num_tasks", "ntasks_per_node", "cpus_per_task",
  "time_limit", "partition", "qos", "account", "array_inx", "script", "user_name" }
local UNKNOWN = { "tres_bind", "cpus_per_tres", "mem_per_tres", "min_mem_per_node", "gres_flags", "name",
  "comment", "", "__index", "__gc", "P", "slurm", 1, 0, -1, 2.5, true }
local NUMBERS = { 0, -1, 0 / 0, 1 / 0, -1 / 0, 2 ^ 53, 2 ^ 53 + 2, 2 ^ 64, 2 ^ 63, 4294967293, 4294967294,
  4294967295, 65533, 65534, 65535, 1e308, -1e308, 0.5, 1e-300, -0.0, 2 ^ 31, 2 ^ 32, 1, 2, 8, 16 }
local INJECT = { ']] os.exit(1) --', '"); os.exit(1) --', "%s%n%d%%", "%", "\\", "'", '"', "\n", "\0",
  "${HOME}", "$(reboot)", "{gpus}", "{0}", "{gpus!r}", "{", "}", "[[", "]]", "--[[", "\\ddd", "\255\254",
  "gpu:h100:1\0gpu:a100:9", "é", "ü:1", "日本語", "\240\159\152\128", "\237\160\128" }
local BIG = { rep("a", 100000), rep(",", 100000), rep("gres/gpu:h100:1,", 6250), rep("\0\255", 50000),
  rep("\195\169", 50000), rep("gpu:", 25000), rep("9", 100000), rep("gpu=1,", 16000) }
local PIECES = { "gres:", "gres/", "gpu", "gpu", ":", ":", "=", ",", ",", "k", "K", "m", "G", "mps", "shard",
  "cpu", "0", "1", "2", "8", "16", "999999999999999", "9999999999999999", "-1", "1.5", " ", "" }
local function boom() error("hostile metamethod") end
local HOSTILE = { __index = boom, __newindex = boom, __tostring = boom, __eq = boom, __lt = boom, __le = boom,
  __concat = boom, __call = boom, __unm = boom, __add = boom, __sub = boom, __mul = boom, __div = boom,
  __mod = boom, __pow = boom, __len = boom }
local GETTER_FAILS = { __index = function(t, k) error("getter failed for " .. tostring(k)) end }

local names, value = nil, nil
local function pick(list) return list[random(1, #list)] end

local function bytes(n)
  local out = {}
  for i = 1, n do out[i] = char(random(0, 255)) end
  return concat(out)
end

local function gres_like()
  local out = {}
  for i = 1, random(1, 10) do
    local r = random(1, 4)
    out[i] = (r == 1 and pick(names.types)) or (r == 2 and tostring(random(0, 20))) or pick(PIECES)
  end
  return concat(out)
end

local function a_string()
  local r = random(1, 1000) / 10
  if r <= 35 then return gres_like()
  elseif r <= 50 then return bytes(random(0, 40))
  elseif r <= 65 then return pick(INJECT)
  elseif r <= 72 then return pick(INJECT) .. gres_like() .. pick(INJECT)
  elseif r <= 86.5 then return pick(names.words)
  elseif r <= 87 then return pick(BIG)  -- 0.5%: they cost 10 times the rest
  elseif r <= 95 then return "gres/gpu:" .. pick(names.types) .. ":" .. tostring(pick(NUMBERS))
  else return "" end
end

local function a_table(depth)
  local r = random(1, 6)
  if r == 1 then return {} end
  if r == 2 then return setmetatable({}, HOSTILE) end
  if r == 3 and newproxy then
    local u = newproxy(true)
    for k, f in pairs(HOSTILE) do getmetatable(u)[k] = f end
    return u
  end
  if r == 4 then return function() error("a function value was called") end end
  local t = {}
  for i = 1, random(0, 4) do
    local k = depth < 2 and value(depth + 1) or i
    if k == nil or k ~= k then k = i end  -- nil and NaN cannot be keys
    t[k] = value(depth + 1)
  end
  for i = 1, random(0, 3) do t[i] = value(depth + 1) end
  return t
end

value = function(depth)  -- one field's value (nil: the field is absent)
  depth = depth or 0
  local r = random(1, 100)
  if r <= 5 then return nil
  elseif r <= 10 then return random(1, 2) == 1
  elseif r <= 30 then return pick(NUMBERS)
  elseif r <= 40 then
    local s = random(1, 4)
    return (s == 1 and random(0, 100)) or (s == 2 and random(0, 2000000000)) or (s == 3 and -random(1, 1000))
      or random() * 1e20
  elseif r <= 92 then return a_string()
  elseif depth < 3 then return a_table(depth)
  else return "deep" end
end

local function lazy_getter()  -- a random value for each field, drawn when first read (as a userdata's getter)
  local drawn = {}
  return { kind = "getter-lazy", __index = function(t, k)
    if drawn[k] == nil then drawn[k] = { value() } end
    return drawn[k][1]
  end }
end

local function plausible()  -- a job_desc near a real one, then a few fields made hostile
  local t = pick(names.types)
  local jd = { script = "#!/bin/sh\ntrue\n", user_name = pick(names.words),
    time_limit = pick({ 10, 60, 240, 4294967294 }), num_tasks = 4294967294, min_nodes = 4294967294,
    max_nodes = 4294967294, ntasks_per_node = 65534, cpus_per_task = 65534 }
  local form = pick({ "tres_per_job", "tres_per_node", "gres", "tres_per_task", "tres_per_socket" })
  local n = tostring(random(1, 9))
  jd[form] = pick({ "gres:gpu:", "gres/gpu:", "gpu:" }) .. pick({ t .. ":" .. n, n, t .. "=" .. n, "" })
  if random(1, 3) == 1 then jd.partition = pick(names.partitions) end
  if random(1, 3) == 1 then jd.qos = pick(names.qos) end
  for _ = 1, random(0, 3) do jd[pick(FIELDS)] = value() end
  return jd
end

local function job_desc()
  local jd
  if random(1, 2) == 1 then jd = plausible()
  else
    jd = {}
    for _, f in ipairs(FIELDS) do if random(1, 2) == 1 then jd[f] = value() end end
  end
  for _ = 1, random(0, 2) do jd[pick(UNKNOWN)] = value() end
  local m = random(1, 12)
  if m == 1 then setmetatable(jd, GETTER_FAILS) elseif m == 2 then setmetatable(jd, lazy_getter()) end
  return jd
end

local function show(v, depth)  -- a failing input, readable (raw reads only)
  local tv = type(v)
  if tv == "string" then
    local q = string.format("%q", v:sub(1, 120)):gsub("[%z\1-\9\11-\31\127-\255]", function(c)
      return "\\" .. string.byte(c) end)
    return #v > 120 and string.format("%s..(%d bytes)", q, #v) or q
  elseif tv == "number" then return string.format("%.17g", v)
  elseif tv == "table" then
    local mt = getmetatable(v)
    local tag = (mt == HOSTILE and "hostile ") or (mt == GETTER_FAILS and "getter-fails ")
      or (mt and rawget(mt, "kind") == "getter-lazy" and "getter-lazy ") or ""
    if depth > 2 then return tag .. "{...}" end
    local out = {}
    for k, x in next, v do out[#out + 1] = "[" .. show(k, depth + 1) .. "]=" .. show(x, depth + 1) end
    return tag .. "{" .. concat(out, ", ") .. "}"
  end
  return tv
end

local function log_errors()
  for _, e in ipairs(SLURM_GPU_LOG) do if e[1] == "error" then return e[2] end end
  return nil
end

return function(mode, seed, n, the_names)
  names = the_names
  math.randomseed(seed)
  local s = { calls = 0, escaped = 0, internal = 0, bad_rc = 0, [0] = 0, [-1] = 0, [2072] = 0, failures = {} }
  for _ = 1, n do
    local jd, rec, uid = job_desc(), nil, pick({ 1001, 1001, 0, -1, "0", 0 / 0 })
    local copy = show(jd, 0)
    if mode == "modify" then
      rec = job_desc()  -- and what only a job_rec has
      for _, f in ipairs({ "batch_flag", "array_task_cnt", "array_job_id" }) do
        local v = random(1, 2) == 1 and pick({ 0, 1, 2, 65534, 4294967294 }) or value()
        if random(1, 2) == 1 then rawset(rec, f, v) end
      end
    end
    SLURM_GPU_LOG = {}
    local ok, rc
    if mode == "modify" then ok, rc = pcall(slurm_job_modify, jd, rec, {}, uid)
    else ok, rc = pcall(slurm_job_submit, jd, {}, uid) end
    s.calls = s.calls + 1
    local failure
    if not ok then s.escaped = s.escaped + 1; failure = "raised: " .. tostring(rc)
    else
      local err = log_errors()
      if err then s.internal = s.internal + 1; failure = "log_error: " .. err end
      if s[rc] then s[rc] = s[rc] + 1
      else s.bad_rc = s.bad_rc + 1; failure = (failure or "") .. " return code " .. tostring(rc) end
    end
    if failure and #s.failures < 5 then
      failure = failure:gsub("[\128-\255]", "?") .. "\n  job_desc " .. copy
      s.failures[#s.failures + 1] = failure .. (rec and "\n  job_rec " .. show(rec, 0) or "")
    end
  end
  return s
end
"""


def load(name: str) -> Policy:
    return load_policy(str(ROOT / "examples" / "policies" / f"{name}.yaml"))


def fuzz(plugin: Plugin, mode: str, seed: int, n: int) -> dict[str, Any]:
    """Run the Lua generator in the plugin's state: the stats, with the first failures as text."""
    p = plugin.policy
    words = [*(g.name for g in p.gpu_types), *(x.name for x in p.partitions), *(q.name for q in p.qos),
             USER, "root", "nope"]
    names = plugin.lua.table_from({
        "types": plugin.lua.table_from([g.name for g in p.gpu_types] + ["gpu", "H100", "mig"]),
        "partitions": plugin.lua.table_from([x.name for x in p.partitions] + ["nope", ""]),
        "qos": plugin.lua.table_from([q.name for q in p.qos] + ["bogus"]),
        "words": plugin.lua.table_from(words),
    })
    s = plugin.lua.execute(FUZZ_LUA)(mode, seed, n, names)
    out = {k: s[k] for k in ("calls", "escaped", "internal", "bad_rc")}
    out.update({"SUCCESS": s[0], "ERROR": s[-1], "ESLURM_INVALID_GRES": s[2072]})
    out["failures"] = list(s.failures.values())
    return out


@pytest.mark.parametrize("policy_name", POLICIES)
def test_hostile_job_descs_never_raise(policy_name: str) -> None:
    s = fuzz(Plugin(load(policy_name)), "submit", SEED, TABLES)
    failures = "\n".join(s.pop("failures"))
    assert (s["escaped"], s["internal"], s["bad_rc"]) == (0, 0, 0), f"{s}\n{failures}"
    assert s["calls"] == TABLES == s["SUCCESS"] + s["ERROR"] + s["ESLURM_INVALID_GRES"], s
    assert min(s["SUCCESS"], s["ERROR"], s["ESLURM_INVALID_GRES"]) > 0, s  # every outcome was reached


@pytest.mark.parametrize("unchecked", [
    ('if type(v) ~= "number" or v ~= v', "if v ~= v"),  # count() without its type check
    ("local ok, v = pcall(function() return t[k] end)", "local ok, v = true, t[k]"),  # get() without pcall
])
def test_the_fuzz_finds_an_unchecked_read(unchecked: tuple[str, str]) -> None:
    """Not vacuous: the same generator on an engine with one check taken out finds internal errors."""
    policy = load("university")
    text = compile_policy(policy)
    assert text.count(unchecked[0]) == 1
    s = fuzz(Plugin(policy, text.replace(*unchecked)), "submit", SEED, 2_000)
    assert s["internal"] > 0 and s["escaped"] == 0, s


@pytest.mark.parametrize("policy_name", POLICIES)
def test_hostile_modifications_never_raise(policy_name: str) -> None:
    s = fuzz(Plugin(load(policy_name)), "modify", SEED + 1, MODIFY_PAIRS)
    failures = "\n".join(s.pop("failures"))
    assert (s["escaped"], s["internal"], s["bad_rc"]) == (0, 0, 0), f"{s}\n{failures}"
    assert s["SUCCESS"] > 0 and s["ERROR"] + s["ESLURM_INVALID_GRES"] > 0, s


FICKLE_REC = """
return function()  -- a job_rec whose getter answers a number on the first read of a field, a string after
  local reads = {}
  return setmetatable({}, { __index = function(t, k)
    reads[k] = (reads[k] or 0) + 1
    if reads[k] == 1 then return 7 end
    return "7"
  end })
end
"""


def test_modify_reads_each_job_rec_field_once() -> None:
    """Every read of job_desc/job_rec is type-checked: a value is read once, then checked, then used."""
    policy = load("university")
    plugin = Plugin(policy)
    plugin.g.SLURM_GPU_LOG = plugin.lua.table()
    rec = plugin.lua.execute(FICKLE_REC)()
    rc = plugin.modify_fn(plugin.table({"partition": policy.partitions[0].name}), rec, plugin.lua.table(), 1001)
    log = [(e[1], e[2]) for e in plugin.g.SLURM_GPU_LOG.values()]
    assert rc in CODES and not [e for e in log if e[0] == "error"], log


# ---- the same, from Python, shrinkable -----------------------------------------------------------

PIECES = ["gres:", "gres/", "gpu", ":", "=", ",", "k", "mps", "shard", "cpu", "0", "1", "8", "h100", "a100",
          "1g.10gb", "9999999999999999"]
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([0, -1, 2**53, 4294967294, 4294967295, 65534, 65535, 2.0**64, 1e308, 0.5, -0.0,
                     math.nan, math.inf, -math.inf]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=40),
    st.binary(max_size=40),
    st.lists(st.sampled_from(PIECES), max_size=10).map("".join),
    st.sampled_from([']] os.exit(1) --', '%s%n%d', "{gpus!r}", "\0", "é" * 40, "x" * 100_000, "," * 100_000]),
)
HOSTILE = st.one_of(SCALARS, st.lists(SCALARS, max_size=4),
                    st.dictionaries(st.text(max_size=8), SCALARS, max_size=4))
KEYS = st.one_of(st.sampled_from(FIELDS), st.sampled_from(["tres_bind", "cpus_per_tres", "", "__index"]))


CALL_LUA = r"""
return function(jd)  -- slurm_job_submit(jd): the return code (nil when it raised) and the log, as text
  SLURM_GPU_LOG = {}
  local ok, rc = pcall(slurm_job_submit, jd, {}, 1001)
  local out = {}
  for _, e in ipairs(SLURM_GPU_LOG) do out[#out + 1] = e[1] .. "\t" .. e[2] end
  if not ok then out[#out + 1] = "raised\t" .. tostring(rc); rc = nil end
  return rc, (table.concat(out, "\n"):gsub("[\128-\255]", "?"))
end
"""


def submit_text(plugin: Plugin, call: Any, fields: dict[str, Any]) -> tuple[Any, list[tuple[str, str]]]:
    """slurm_job_submit on ``fields`` (any bytes: nothing is decoded but the log, made ASCII)."""
    rc, text = call(plugin.table(fields))
    return rc, [(kind, rest) for kind, _, rest in (line.partition("\t") for line in text.split("\n") if line)]


@pytest.mark.parametrize("policy_name", POLICIES)
def test_hostile_job_desc_dicts(policy_name: str) -> None:
    plugin = Plugin(load(policy_name))
    call = plugin.lua.execute(CALL_LUA)

    @settings(max_examples=HYPOTHESIS_EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(job_desc=st.dictionaries(KEYS, HOSTILE, max_size=12))
    def check(job_desc: dict[str, Any]) -> None:
        rc, log = submit_text(plugin, call, job_desc)
        assert rc in CODES, (rc, log)
        assert not [e for e in log if e[0] == "error"], log
        if rc != 0:  # a rejection reaches the user, with the policy's name
            users = [text for kind, text in log if kind == "user"]
            assert len(users) == 1 and users[0].startswith(f"slurm-gpu policy {plugin.policy.name}: "), log

    check()


# ---- on_internal_error ----------------------------------------------------------------------------

SETTER_FAILS = """
return function(fields, fail_on)
  return setmetatable(fields, { __newindex = function(t, k, v)
    if fail_on == nil or k == fail_on then error("slurmctld: cannot set job_desc." .. tostring(k)) end
    rawset(t, k, v)
  end })
end
"""


def written_job(plugin: Plugin) -> tuple[dict[str, Any], dict[str, Any]]:
    """A 24.11 job_desc the policy accepts and adds fields to: (before, after plain slurm_job_submit)."""
    for argv in (["sbatch", "--gpus=1", "job.sh"], ["sbatch", "--gpus=1", "-t30", "job.sh"], ["sbatch", "job.sh"]):
        jd = job_descs_for(argv, (24, 11, 5))[0]
        jd.update(user_name=USER, script="#!/bin/sh\ntrue\n")
        jd = {k: v for k, v in jd.items() if v is not None}
        rc, after, log = plugin.submit(jd)
        if rc == 0 and len(set(after) - set(jd)) >= 2:
            return jd, after
    raise AssertionError(f"no accepted job with two fields added under {plugin.policy.name}")


def submit_with_failing_setter(plugin: Plugin, fields: dict[str, Any], fail_on: str | None
                               ) -> tuple[int, dict[str, Any], list[tuple[str, str]]]:
    plugin.g.SLURM_GPU_LOG = plugin.lua.table()
    jd = plugin.lua.execute(SETTER_FAILS)(plugin.table(fields), fail_on)
    rc = plugin.submit_fn(jd, plugin.lua.table(), 1001)
    return rc, {k: jd[k] for k in jd}, [(e[1], e[2]) for e in plugin.g.SLURM_GPU_LOG.values()]


@pytest.mark.parametrize("policy_name", POLICIES)
def test_failing_setter_is_accepted_and_logged(policy_name: str) -> None:
    plugin = Plugin(load(policy_name))
    fields, _ = written_job(plugin)
    rc, after, log = submit_with_failing_setter(plugin, fields, None)
    assert rc == 0, log
    assert after == fields  # accepted unchanged
    assert [kind for kind, _ in log] == ["error"], log
    assert "internal error in slurm_job_submit" in log[0][1] and "cannot set job_desc." in log[0][1], log


@pytest.mark.parametrize("policy_name", POLICIES)
def test_failing_setter_rejects_when_the_policy_says_so(policy_name: str) -> None:
    policy = load(policy_name)
    policy = dataclasses.replace(policy, defaults=dataclasses.replace(policy.defaults, on_internal_error="reject"))
    plugin = Plugin(policy)
    fields, _ = written_job(plugin)
    rc, _after, log = submit_with_failing_setter(plugin, fields, None)
    assert rc == -1, log
    assert [kind for kind, _ in log] == ["error", "user"], log
    assert "rejected (on_internal_error)" in log[0][1], log
    assert log[1][1].startswith(f"slurm-gpu policy {policy.name}: ") and "submit filter failed" in log[1][1], log


@pytest.mark.parametrize("policy_name", POLICIES)
def test_setter_failing_late_leaves_the_job_unchanged(policy_name: str) -> None:
    """"Accepted unchanged": a setter that fails on the last field the engine writes must not leave the
    fields written before it."""
    plugin = Plugin(load(policy_name))
    fields, after = written_job(plugin)
    added = [k for k in after if k not in fields]
    for last in added:
        rc, got, log = submit_with_failing_setter(plugin, fields, last)
        assert [kind for kind, _ in log] == ["error"] and rc == 0, log
        assert got == fields, f"setter failing on {last}: the job was changed to {got}; {log}"


# ---- no global, no mutable state ----------------------------------------------------------------

STATE_LUA = r"""
local function dump(roots)  -- everything reachable from the entry points' upvalues, as text
  local seen, out, n = {}, {}, 0
  local function key(k) return type(k) .. ":" .. (type(k) == "string" and string.format("%q", k) or tostring(k)) end
  local function walk(v, path)
    local tv = type(v)
    if string.match(path, "%^HET%d+$") then  -- the one mutable state: a hetjob's earlier components
      out[#out + 1] = path .. " = (hetjob state)"; return
    end
    if tv == "table" or tv == "function" then
      if seen[v] then out[#out + 1] = path .. " = @" .. seen[v]; return end
      n = n + 1; seen[v] = n
      out[#out + 1] = path .. " = " .. tv .. "#" .. n
      if tv == "table" then
        local keys = {}
        for k in next, v do keys[#keys + 1] = k end
        table.sort(keys, function(a, b) return key(a) < key(b) end)
        for _, k in ipairs(keys) do walk(rawget(v, k), path .. "[" .. key(k) .. "]") end
        if getmetatable(v) then walk(getmetatable(v), path .. "<mt>") end
      else
        local i = 1
        while true do
          local name, up = debug.getupvalue(v, i)
          if name == nil then break end
          walk(up, path .. "^" .. name .. i)
          i = i + 1
        end
      end
    else
      out[#out + 1] = path .. " = " .. key(v)
    end
  end
  for _, name in ipairs(roots) do walk(rawget(_G, name), name) end
  return table.concat(out, "\n")
end
local function watch()  -- record every new global written, and every undefined global read, from now on
  local log = {}
  setmetatable(_G, {
    __newindex = function(t, k, v) log[#log + 1] = "wrote " .. tostring(k); rawset(t, k, v) end,
    __index = function(t, k) log[#log + 1] = "read undefined " .. tostring(k) end })
  return log
end
return dump, watch
"""


def global_names(lua: Any) -> set[str]:
    return {str(k) for k in lua.eval("_G")}


@pytest.mark.parametrize("policy_name", POLICIES)
def test_no_global_and_no_mutable_state(policy_name: str) -> None:
    policy = load(policy_name)
    lua = lua51.LuaRuntime(unpack_returned_tuples=True, register_eval=False)
    lua.execute(SLURM_STUB)
    before = global_names(lua)
    lua.execute(compile_policy(policy))
    assert global_names(lua) - before == {"slurm_job_submit", "slurm_job_modify"}
    assert "SLURM_GPU_TEST" in before  # defined by the stub, not by the script

    plugin = Plugin(policy)  # the harness' state, loaded the same way
    dump, watch = plugin.lua.execute(STATE_LUA)
    roots = plugin.lua.table_from(["slurm_job_submit", "slurm_job_modify"])
    loaded, state = global_names(plugin.lua), dump(roots)
    assert f'string:"{policy.name}"' in state and "^P" in state  # the walk reaches the policy table
    assert "(hetjob state)" in state  # the one table that changes (test_hetjob.py checks what it keeps)
    log = watch()
    for mode, seed in (("submit", 1), ("modify", 2)):
        s = fuzz(plugin, mode, seed, 500)
        assert s["escaped"] == s["internal"] == 0, s
    for argv in (["sbatch", "--gpus=1", "job.sh"], ["sbatch", "--gpus=99", "job.sh"], ["srun", "--gpus=1", "true"]):
        jd = job_descs_for(argv, (24, 11, 5))[0]
        jd.update(user_name=USER)
        plugin.submit(jd)
    plugin.lua.execute("setmetatable(_G, nil)")
    assert list(log.values()) == []  # no global written or read that is not there
    assert global_names(plugin.lua) == loaded
    assert dump(roots) == state  # the policy table, the engine's tables and closures: as loaded
