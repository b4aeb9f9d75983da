-- SPDX-License-Identifier: Apache-2.0
--[[
job_submit/record.lua: a recording job_submit plugin (Lua 5.1, as slurmctld links it). It changes
nothing: slurm_job_submit and slurm_job_modify write what Slurm hands them as one JSON line each and
return slurm.SUCCESS. Used by tests/job_submit/capture.py in a private lab only; never in production.

Where it writes: slurmctld gives a job_submit.lua no environment of ours, so the path is derived from
this file's own location (debug.getinfo): <dir>/../log/job_desc.jsonl (the lab's log dir, writable by
SlurmUser), else <dir>/job_desc.jsonl. A line: {"hook":"submit"|"modify", "job_desc":{...},
"part_list":[names], "submit_uid":N, "job_id":N (modify only)}. Unset strings are JSON null, numbers
keep Slurm's sentinels (NO_VAL = 4294967294, NO_VAL16 = 65534, NO_VAL64 ~ 1.8446744073709552e19).
--]]

-- Every job_desc field of interest (22.05 and 24.11 names; a name a release lacks reads as nil).
local FIELDS = {
  "account", "acctg_freq", "admin_comment", "alloc_node", "argc", "array_inx", "batch_features",
  "begin_time", "bitflags", "boards_per_node", "burst_buffer", "clusters", "cluster_features",
  "comment", "container", "container_id", "contiguous", "core_spec", "cores_per_socket",
  "cpu_freq_gov", "cpu_freq_max", "cpu_freq_min", "cpus_per_task", "cpus_per_tres", "cron_job",
  "default_account", "default_qos", "delay_boot", "dependency", "end_time", "exc_nodes", "extra",
  "features", "group_id", "gres", "het_job_offset", "immediate", "job_id", "kill_on_node_fail",
  "licenses", "mail_type", "mail_user", "max_cpus", "max_nodes", "mcs_label", "mem_bind",
  "mem_per_tres", "min_cpus", "min_mem_per_cpu", "min_mem_per_node", "min_nodes", "name",
  "network", "nice", "ntasks_per_board", "ntasks_per_core", "ntasks_per_gpu", "ntasks_per_node",
  "ntasks_per_socket", "ntasks_per_tres", "num_tasks", "oom_kill_step", "open_mode", "overcommit",
  "pack_job_offset", "partition", "pn_min_cpus", "pn_min_memory", "pn_min_tmp_disk", "power_flags",
  "prefer", "priority", "profile", "qos", "reboot", "req_context", "req_nodes", "req_switch",
  "requeue", "reservation", "resv_port_cnt", "segment_size", "selinux_context", "shared",
  "site_factor", "sockets_per_board", "sockets_per_node", "spank_job_env_size", "std_err",
  "std_in", "std_out", "threads_per_core", "time_limit", "time_min", "tres_bind", "tres_freq",
  "tres_per_job", "tres_per_node", "tres_per_socket", "tres_per_task", "user_id", "user_name",
  "wait4switch", "warn_flags", "warn_signal", "warn_time", "wckey", "work_dir",
}

local function esc(s)
  s = string.gsub(s, '[%c"\\]', function(c)
    if c == '"' then return '\\"' elseif c == "\\" then return "\\\\" end
    return string.format("\\u%04x", string.byte(c))
  end)
  return '"' .. s .. '"'
end

local function num(n)
  if n ~= n then return '"nan"' end
  if n == math.huge or n == -math.huge then return '"inf"' end
  if n == math.floor(n) and math.abs(n) < 2^53 then return string.format("%.0f", n) end
  return string.format("%.17g", n)
end

local function enc(v, depth)
  local t = type(v)
  if t == "nil" then return "null"
  elseif t == "boolean" then return tostring(v)
  elseif t == "number" then return num(v)
  elseif t == "string" then return esc(v)
  elseif t == "table" and (depth or 0) < 3 then
    local n, parts = 0, {}
    for _ in pairs(v) do n = n + 1 end
    if n == #v then
      for i = 1, #v do parts[#parts + 1] = enc(v[i], (depth or 0) + 1) end
      return "[" .. table.concat(parts, ",") .. "]"
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    for _, k in ipairs(keys) do
      local val = v[k]
      if val == nil then val = v[tonumber(k)] end
      parts[#parts + 1] = esc(k) .. ":" .. enc(val, (depth or 0) + 1)
    end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  return esc("<" .. t .. ">")
end

local function get(obj, key)
  local ok, v = pcall(function() return obj[key] end)
  if ok then return v end
  return nil
end

local function out_path()
  local src = debug.getinfo(1, "S").source or ""
  local dir = string.match(string.sub(src, 2), "^(.*)/[^/]*$") or "."
  local log = string.match(dir, "^(.*)/[^/]*$")
  local candidates = {}
  if log then candidates[#candidates + 1] = log .. "/log/job_desc.jsonl" end
  candidates[#candidates + 1] = dir .. "/job_desc.jsonl"
  return candidates
end

local function write_line(line)
  for _, path in ipairs(out_path()) do
    local f = io.open(path, "a")
    if f then
      f:write(line, "\n")
      f:close()
      return true
    end
  end
  return false
end

local function desc_json(job_desc)
  local parts = {}
  for _, name in ipairs(FIELDS) do
    parts[#parts + 1] = esc(name) .. ":" .. enc(get(job_desc, name))
  end
  parts[#parts + 1] = esc("script_set") .. ":" .. tostring(get(job_desc, "script") ~= nil)
  local env = get(job_desc, "environment")
  parts[#parts + 1] = esc("environment_set") .. ":" .. tostring(env ~= nil)
  local argv = get(job_desc, "argv")
  parts[#parts + 1] = esc("argv") .. ":" .. enc(argv)
  return "{" .. table.concat(parts, ",") .. "}"
end

local function part_names(part_list)
  local names = {}
  if type(part_list) == "table" then
    for k, p in pairs(part_list) do
      local n = get(p, "name")
      names[#names + 1] = type(n) == "string" and n or tostring(k)
    end
  end
  table.sort(names)
  return names
end

local function record(hook, job_desc, job_rec, part_list, submit_uid)
  local line = "{" .. esc("hook") .. ":" .. esc(hook)
  if job_rec ~= nil then
    line = line .. "," .. esc("job_id") .. ":" .. enc(get(job_rec, "job_id"))
  end
  line = line .. "," .. esc("submit_uid") .. ":" .. enc(submit_uid)
  line = line .. "," .. esc("part_list") .. ":" .. enc(part_names(part_list))
  line = line .. "," .. esc("job_desc") .. ":" .. desc_json(job_desc) .. "}"
  write_line(line)
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  local ok, err = pcall(record, "submit", job_desc, nil, part_list, submit_uid)
  if not ok then
    pcall(write_line, "{\"hook\":\"submit\",\"error\":" .. esc(tostring(err)) .. "}")
  end
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  local ok, err = pcall(record, "modify", job_desc, job_rec, part_list, modify_uid)
  if not ok then
    pcall(write_line, "{\"hook\":\"modify\",\"error\":" .. esc(tostring(err)) .. "}")
  end
  return slurm.SUCCESS
end

return slurm.SUCCESS
