-- SPDX-License-Identifier: Apache-2.0
--[[
tests/job_submit/probe.lua: a probing job_submit plugin (Lua 5.1) for tests/job_submit/probe.py, in a
private lab only; never in production. For each call it
  1. writes one JSON line to <dir>/../log/probe.jsonl (else <dir>/probe.jsonl): the hook, the slurm.*
     constants, the job_desc fields of interest, script ~= nil, and in slurm_job_modify every job_rec
     name of JOB_REC (nil or value);
  2. then runs the action of the current case, <dir>/probe_action.lua (written by probe.py): a chunk
     returning {submit = function(job_desc, part_list, uid) ... end, modify = function(job_desc,
     job_rec, part_list, uid) ... end}. The action is called UNPROTECTED, so that a case can measure
     what a raised Lua error does; its return value is the plugin's return value (default SUCCESS).
  3. after the action returns, writes job_desc again (hook "submit-after" / "modify-after").
--]]

local DESC = {
  "account", "comment", "gres", "max_nodes", "min_cpus", "min_nodes", "name", "num_tasks", "partition",
  "priority", "qos", "requeue", "time_limit", "tres_per_job", "tres_per_node", "tres_per_socket",
  "tres_per_task", "user_id", "user_name", "group_id", "array_inx", "ntasks_per_node", "features",
}

local JOB_REC = {
  "account", "admin_comment", "array_inx", "array_job_id", "array_task_cnt", "array_task_id",
  "array_task_str", "assoc_id", "batch_features", "bitflags", "burst_buffer", "comment", "container",
  "cpus_per_task", "cpus_per_tres", "delay_boot", "derived_ec", "details", "direct_set_prio",
  "end_time", "exit_code", "extra", "features", "gres", "gres_detail_str", "group_id",
  "het_job_id", "het_job_offset", "job_id", "job_state", "licenses", "max_cpus", "max_nodes",
  "mcs_label", "mem_per_tres", "min_cpus", "min_mem_per_cpu", "min_mem_per_node", "min_nodes",
  "name", "network", "nice", "ntasks_per_gpu", "ntasks_per_node", "ntasks_per_tres", "num_tasks",
  "origin_cluster", "partition", "pn_min_cpus", "pn_min_memory", "pn_min_tmp_disk", "prefer",
  "priority", "qos", "qos_id", "reboot", "req_switch", "requeue", "reservation", "resv_name",
  "restart_cnt", "script", "selinux_context", "shared", "site_factor", "spank_job_env",
  "spank_job_env_size", "start_time", "state_reason", "submit_time", "time_limit", "time_min",
  "tres_alloc_str", "tres_fmt_alloc_str", "tres_fmt_req_str", "tres_per_job", "tres_per_node",
  "tres_per_socket", "tres_per_task", "tres_req_str", "user_id", "user_name", "wait4switch",
  "wait4switch_start", "wckey", "work_dir",
}

local CONSTS = {
  "SUCCESS", "ERROR", "FAILURE", "ESLURM_INVALID_GRES", "ESLURM_INVALID_QOS",
  "ESLURM_INVALID_PARTITION_NAME", "ESLURM_INVALID_ACCOUNT", "ESLURM_INVALID_TIME_LIMIT",
  "ESLURM_INVALID_LICENSES", "ESLURM_ACCESS_DENIED", "ESLURM_JOB_MISSING_REQUIRED_PARTITION_GROUP",
  "NO_VAL", "NO_VAL16", "NO_VAL64", "INFINITE", "INFINITE16", "INFINITE64",
}

local function enc(v, depth)
  local t = type(v)
  if t == "nil" then return "null" end
  if t == "boolean" then return tostring(v) end
  if t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then return '"' .. tostring(v) .. '"' end
    if v == math.floor(v) and math.abs(v) < 2^53 then return string.format("%.0f", v) end
    return string.format("%.17g", v)
  end
  if t == "string" then
    return '"' .. string.gsub(v, '[%c"\\]', function(c)
      if c == '"' or c == "\\" then return "\\" .. c end
      return string.format("\\u%04x", string.byte(c))
    end) .. '"'
  end
  if t == "table" and (depth or 0) < 2 then
    local parts = {}
    for k, x in pairs(v) do parts[#parts + 1] = enc(tostring(k)) .. ":" .. enc(x, (depth or 0) + 1) end
    table.sort(parts)
    return "{" .. table.concat(parts, ",") .. "}"
  end
  return enc("<" .. t .. ">")
end

local function get(obj, key)
  local ok, v = pcall(function() return obj[key] end)
  if ok then return v end
  return "<error: " .. tostring(v) .. ">"
end

local function fields(obj, names)
  local parts = {}
  for _, n in ipairs(names) do parts[#parts + 1] = enc(n) .. ":" .. enc(get(obj, n)) end
  return "{" .. table.concat(parts, ",") .. "}"
end

local function here()
  local src = debug.getinfo(1, "S").source or ""
  return string.match(string.sub(src, 2), "^(.*)/[^/]*$") or "."
end

local function write_line(line)
  local dir = here()
  local up = string.match(dir, "^(.*)/[^/]*$")
  for _, path in ipairs({ (up or dir) .. "/log/probe.jsonl", dir .. "/probe.jsonl" }) do
    local f = io.open(path, "a")
    if f then f:write(line, "\n"); f:close(); return end
  end
end

local function record(hook, job_desc, job_rec, uid)
  local line = '{"hook":' .. enc(hook) .. ',"uid":' .. enc(uid) .. ',"consts":' .. fields(slurm, CONSTS)
    .. ',"script_set":' .. tostring(get(job_desc, "script") ~= nil)
    .. ',"job_desc":' .. fields(job_desc, DESC)
  if job_rec ~= nil then line = line .. ',"job_rec":' .. fields(job_rec, JOB_REC) end
  write_line(line .. "}")
end

local function action(hook)
  local chunk = loadfile(here() .. "/probe_action.lua")
  if not chunk then return nil end
  local ok, t = pcall(chunk)
  if ok and type(t) == "table" then return t[hook] end
  return nil
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  pcall(record, "submit", job_desc, nil, submit_uid)
  local f = action("submit")
  if not f then return slurm.SUCCESS end
  local rc = f(job_desc, part_list, submit_uid)
  pcall(record, "submit-after", job_desc, nil, submit_uid)
  return rc
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  pcall(record, "modify", job_desc, job_rec, modify_uid)
  local f = action("modify")
  if not f then return slurm.SUCCESS end
  local rc = f(job_desc, job_rec, part_list, modify_uid)
  pcall(record, "modify-after", job_desc, nil, modify_uid)
  return rc
end

return slurm.SUCCESS
