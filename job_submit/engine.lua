-- SPDX-License-Identifier: Apache-2.0
--[[ slurm-gpu job_submit engine (Lua 5.1): the fixed half of the generated job_submit.lua.

The steps below mirror slurm_gpu.policy.classifier.steps.STEPS, one local function per step with the
same name, in the same order: check_request, fit_vram, match_class, place, resolve_gpus, check_sharing,
check_nodes, set_time, apply_defaults. They read the policy table P (rendered from the site policy above this engine) and a
request read from job_desc (request_from_job_desc, the mirror of slurm_gpu.slurm.sbatch.to_request), and
decide exactly what the Python classifier decides for the same options: accept or reject, partition,
QOS, gres and message (tests/job_submit/test_differential.py runs both on the same cases).

Rules of this file: Lua 5.1 only (slurmctld links it; lupa.lua51 tests it); no global but the two
entry points; no mutable state outside a call (since 23.02 the plugin may run concurrently); every read
of job_desc is type-checked; no step raises (a rejection is a returned value); the entry points run the
engine under pcall and, for an internal error, log it and accept or reject as the policy's
on_internal_error says.
--]]

local NO_VAL, NO_VAL16, INFINITE = 4294967294, 65534, 4294967295
local floor, ceil, huge = math.floor, math.ceil, math.huge
local sfind, ssub, sgsub, sformat, slower, sbyte = string.find, string.sub, string.gsub, string.format,
  string.lower, string.byte
local MAX_COUNT = 2 ^ 53

-- ---- reading job_desc -------------------------------------------------------------------------

local function get(t, k)  -- a field, or nil (a userdata's getter may fail: never let it raise)
  local ok, v = pcall(function() return t[k] end)
  if ok then return v end
  return nil
end

local function str(t, k)  -- a string field (nil when unset or not a string)
  local v = get(t, k)
  if type(v) == "string" and v ~= "" then return v end
  return nil
end

local function count(t, k, unset)  -- a whole number below Slurm's sentinel ``unset``, or nil
  local v = get(t, k)
  if type(v) ~= "number" or v ~= v or v < 0 or v >= unset or v ~= floor(v) then return nil end
  return v
end

local function split(text, sep)  -- text split on the one-character ``sep`` (empty items kept)
  local out, i = {}, 1
  while true do
    local j = sfind(text, sep, i, true)
    if not j then out[#out + 1] = ssub(text, i); return out end
    out[#out + 1] = ssub(text, i, j - 1)
    i = j + 1
  end
end

local function gres_count(text)  -- "2", "1k" (x1024); nil when not a count
  if type(text) ~= "string" then return nil end
  local digits, unit = string.match(text, "^(%d+)([kKmMgG]?)$")
  if not digits or #digits > 15 then return nil end
  local n = tonumber(digits)
  local f = ({ [""] = 1, k = 1024, m = 1024 ^ 2, g = 1024 ^ 3 })[slower(unit)]
  n = n * f
  if n >= MAX_COUNT then return nil end
  return n
end

local function strip_gres(item)  -- "gres:gpu:2" / "gres/gpu:2" -> "gpu:2"
  if ssub(item, 1, 5) == "gres:" or ssub(item, 1, 5) == "gres/" then return ssub(item, 6) end
  return item
end

-- One TRES field's GPU items as {type or false, count}, merged per type (largest count wins, first
-- appearance keeps its place), plus the sharing GRES (mps, shard). ``task``: 24.11's "gpu:h100=1".
local function gpu_items(text, task)
  local items, where, sharing = {}, {}, {}
  if not text then return items, sharing end
  for _, raw in ipairs(split(text, ",")) do
    local body = strip_gres(raw)
    local name, gtype, n
    if task and sfind(body, "=", 1, true) then  -- 24.11 per task: gpu=1, gpu:h100=1, cpu=4
      local lhs, rhs = string.match(body, "^([^=]*)=(.*)$")
      local bits = split(lhs, ":")
      name, gtype, n = bits[1], bits[2], gres_count(rhs)
      if #bits > 2 then n = nil end
    else
      local bits = split(body, ":")
      if bits[1] == "gpu" and bits[2] == "gpu" and #bits == 4 then
        table.remove(bits, 2)  -- 24.11 keeps --gpus=gpu:h100:1 as "gres/gpu:gpu:h100:1"
      end
      name = bits[1]
      if #bits == 1 then n = 1
      elseif #bits == 2 then
        n = gres_count(bits[2])
        if not n and bits[2] ~= "" then gtype, n = bits[2], 1 end
      elseif #bits == 3 and bits[2] ~= "" then gtype, n = bits[2], gres_count(bits[3])
      end
    end
    if n and (name == "mps" or name == "shard") then
      sharing[name] = (sharing[name] and sharing[name] > n) and sharing[name] or n
    elseif n and name == "gpu" then
      local key = gtype or false
      local at = where[key]
      if at then
        if n > items[at][2] then items[at][2] = n end
      else
        items[#items + 1] = { key, n }
        where[key] = #items
      end
    end
  end
  return items, sharing
end

local function total_of(items)  -- the sum of a form's counts, or nil for an empty form
  if #items == 0 then return nil end
  local n = 0
  for _, it in ipairs(items) do n = n + it[2] end
  return n
end

-- A TRES field longer than any real request is refused before it is parsed: the per-type totals
-- are quadratic in the number of items, and the plugin runs inside slurmctld.
local MAX_TRES_TEXT, MAX_TRES_ITEMS = 4096, 64

local function oversized(jd)
  for _, f in ipairs({ "tres_per_job", "tres_per_node", "gres", "tres_per_task", "tres_per_socket" }) do
    local text = str(jd, f)
    if text and (#text > MAX_TRES_TEXT or select(2, sgsub(text, ",", ",")) >= MAX_TRES_ITEMS) then return f end
  end
  return nil
end

-- The request (mirror of JobRequest) from job_desc. ``interactive``: no batch script.
local function request_from_job_desc(jd, user_name)
  local r = { oversized = oversized(jd) }
  if r.oversized then return r end
  r.by_job = gpu_items(str(jd, "tres_per_job"))
  local node_items, sharing = gpu_items(str(jd, "tres_per_node") or str(jd, "gres"))
  r.by_node = node_items
  r.by_task = gpu_items(str(jd, "tres_per_task"), true)
  r.by_socket = gpu_items(str(jd, "tres_per_socket"))
  r.mps, r.shards = sharing.mps, sharing.shard
  r.gpus, r.gpus_per_node = total_of(r.by_job), total_of(r.by_node)
  r.gpus_per_task, r.gpus_per_socket = total_of(r.by_task), total_of(r.by_socket)
  local types, seen = {}, {}
  for _, form in ipairs({ r.by_job, r.by_node, r.by_task, r.by_socket }) do
    for _, it in ipairs(form) do
      if it[1] and not seen[it[1]] then seen[it[1]] = true; types[#types + 1] = it[1] end
    end
  end
  r.gpu_types, r.gpu_type = types, types[1]
  r.ntasks_per_gpu = count(jd, "ntasks_per_tres", NO_VAL16) or count(jd, "ntasks_per_gpu", NO_VAL16)
  if r.ntasks_per_gpu == 0 then r.ntasks_per_gpu = nil end
  local min_nodes = count(jd, "min_nodes", NO_VAL)
  if count(jd, "max_nodes", NO_VAL) then r.nodes = min_nodes end  -- -N sets both
  r.nodes_max = count(jd, "max_nodes", NO_VAL)
  if r.nodes_max == 0 then r.nodes_max = nil end
  r.req_switch = count(jd, "req_switch", NO_VAL)  -- --switches (sbatch leaves NO_VAL without it)
  if r.req_switch == 0 then r.req_switch = nil end
  r.ntasks = count(jd, "num_tasks", NO_VAL)
  r.ntasks_per_node = count(jd, "ntasks_per_node", NO_VAL16)
  if r.ntasks_per_node == 0 then r.ntasks_per_node = nil end
  r.node_min = r.nodes or min_nodes  -- -N, -w's host count, 24.11's ceil(-n / --ntasks-per-node)
  if (not r.node_min or r.node_min == 0) and r.ntasks and r.ntasks > 0 and r.ntasks_per_node then
    r.node_min = ceil(r.ntasks / r.ntasks_per_node)
  end
  if r.node_min == 0 then r.node_min = nil end
  r.cpus_per_task = count(jd, "cpus_per_task", NO_VAL16)
  local t = get(jd, "time_limit")
  if t == INFINITE then r.time_unlimited = true
  else r.time_limit_min = count(jd, "time_limit", NO_VAL) end
  if r.time_limit_min == 0 then r.time_limit_min, r.time_unlimited = nil, true end
  local part = str(jd, "partition")
  r.partitions = part and split(part, ",") or {}
  r.partition = r.partitions[1]
  if r.partition == "" then r.partition = nil end
  r.qos, r.account, r.array = str(jd, "qos"), str(jd, "account"), str(jd, "array_inx")
  r.user = user_name
  r.interactive = get(jd, "script") == nil
  r.comment = str(jd, "comment")  -- may carry the slurm-gpu MIG/MPS token (check_sharing)
  r.constraint = str(jd, "features")  -- --constraint, as written
  r.req_nodes, r.exc_nodes = str(jd, "req_nodes"), str(jd, "exc_nodes")
  return r
end

-- The job's GPUs, combining every form the way slurmctld does (mirror of JobRequest.total_gpus).
local function tasks_of(r, nodes)
  return r.ntasks or (r.ntasks_per_node and r.ntasks_per_node * nodes) or nil
end

local function of_type(form, gtype)
  for _, it in ipairs(form) do if it[1] == gtype then return it[2] end end
  return nil
end

local function total_of_type(r, gtype)
  local job, node = of_type(r.by_job, gtype), of_type(r.by_node, gtype)
  local task, sock = of_type(r.by_task, gtype), of_type(r.by_socket, gtype)
  local nodes = r.node_min or ((job and job > 0 and node and node > 0) and ceil(job / node)) or 1
  local best = job or 0
  if node and node * nodes > best then best = node * nodes end
  if task then
    local n = task * (tasks_of(r, nodes) or nodes)
    if n > best then best = n end
  end
  if sock and sock * nodes > best then best = sock * nodes end
  return best
end

local function total_gpus(r)
  local any, types = false, {}
  for _, form in ipairs({ r.by_job, r.by_node, r.by_task, r.by_socket }) do
    for _, it in ipairs(form) do any = true; types[it[1]] = true end
  end
  if any then
    local n = 0
    for gtype in pairs(types) do n = n + total_of_type(r, gtype) end
    return n
  end
  local nodes = r.node_min or 1
  local tasks = tasks_of(r, nodes)
  if r.ntasks_per_gpu and tasks and tasks > 0 then return ceil(tasks / r.ntasks_per_gpu) end
  return 0
end

-- ---- messages (Python's str.format, as the compiler split the site's texts) --------------------

local function py_float(v)  -- Python's repr of a float: the shortest text that reads back the same
  if v ~= v then return "nan" end
  if v == huge then return "inf" elseif v == -huge then return "-inf" end
  if v == floor(v) and v > -1e16 and v < 1e16 then return sformat("%d.0", v) end
  for digits = 1, 17 do
    local text = sformat("%." .. digits .. "g", v)
    if tonumber(text) == v then return text end
  end
  return sformat("%.17g", v)
end

local function py_str(v)
  if type(v) == "number" then
    if v == floor(v) and v > -1e15 and v < 1e15 then return sformat("%d", v) end
    return tostring(v)
  end
  if v == nil then return "None" end
  return tostring(v)
end

local REPR_ESC = { ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

local function py_repr(v)  -- repr() of a str (bytes >= 0x80 pass through, as printable text)
  if type(v) ~= "string" then return py_str(v) end
  local q = "'"
  if sfind(v, "'", 1, true) and not sfind(v, '"', 1, true) then q = '"' end
  local body = sgsub(v, "[%z\1-\31\\'\"\127]", function(c)
    if REPR_ESC[c] then return REPR_ESC[c] end
    if c == q then return "\\" .. c end
    if c == "'" or c == '"' then return c end
    return sformat("\\x%02x", sbyte(c))
  end)
  return q .. body .. q
end

local function message(P, key, values)
  local out = {}
  for _, piece in ipairs(P.messages[key] or {}) do
    if type(piece) == "string" then out[#out + 1] = piece
    else
      local v = values[piece[1]]
      if v == nil then v = "" end
      if type(v) == "number" and piece[1] == "fraction" then out[#out + 1] = py_float(v)
      else out[#out + 1] = (piece[2] == "r") and py_repr(v) or py_str(v) end
    end
  end
  return table.concat(out)
end

local function reject(st, key, fix, values)
  return { key = key, message = message(st.P, key, values or {}), fix = fix }
end

local function fmt_time(minutes)  -- mirror of units.format_time_minutes
  if minutes == nil then return "UNLIMITED" end
  local d = floor(minutes / 1440)
  local rem = minutes - d * 1440
  local h, m = floor(rem / 60), rem % 60
  if d > 0 then return sformat("%d-%02d:%02d:00", d, h, m) end
  return sformat("%02d:%02d:00", h, m)
end

local function join(list, sep)
  local out = {}
  for i, v in ipairs(list) do out[i] = tostring(v) end
  return table.concat(out, sep)
end

local function contains(list, v)
  for _, x in ipairs(list or {}) do if x == v then return true end end
  return false
end

local function add(st, opt, value)  -- an option to set on job_desc, each once
  for _, o in ipairs(st.options) do if o[1] == opt then return end end
  st.options[#st.options + 1] = { opt, value }
end

-- ---- the steps ----------------------------------------------------------------------------------

local function check_request(st)
  local r, P = st.r, st.P
  if r.oversized then
    return reject(st, "bad_request", "ask for at most " .. MAX_TRES_ITEMS .. " GRES items",
      { why = r.oversized .. " holds more than " .. MAX_TRES_ITEMS .. " items or " .. MAX_TRES_TEXT .. " characters" })
  end
  if r.nodes == 0 or r.ntasks == 0 then
    return reject(st, "bad_request", "ask for at least one node and one task", { why = "zero nodes or tasks" })
  end
  st.gpus = total_gpus(r)
  st.gpu_type = r.gpu_type
  local mig = st.gpu_type and P.mig_types[st.gpu_type]
  if mig then  -- --gres=gpu:a100_1g.10gb:1: a MIG slice asked for by its gres type
    if st.gpus ~= 1 or #r.gpu_types ~= 1 then
      return reject(st, "bad_request", "ask for one MIG slice alone: --gres=gpu:" .. st.gpu_type .. ":1",
        { why = py_str(st.gpus) .. " GPU(s) of " .. #r.gpu_types .. " type(s) with the MIG slice " .. st.gpu_type })
    end
    st.gpu_type, st.mig_profile, st.gpus, st.fraction = mig[1], mig[2], 0, mig[3] / 7
  elseif st.gpu_type and not P.gpu_type_set[st.gpu_type] then
    return reject(st, "unknown_gpu_type", "GPU types: " .. join(P.gpu_type_names, ", "), { gpu_type = st.gpu_type })
  end
  return nil
end

local function fit_vram(st)  -- --model-params is a gpusub option: job_desc never carries one
  return nil
end

local function mismatch(st, c)
  local r, m, P = st.r, c.match, st.P
  if m.gpu_fraction == true and not st.fraction then return "needs a GPU fraction" end
  if m.gpu_fraction == false and st.fraction then return "does not take GPU fractions" end
  if m.min_gpus and st.gpus < m.min_gpus then return "min_gpus" end
  if m.max_gpus and st.gpus > m.max_gpus then return "max_gpus" end
  if m.max_time then
    local part = P.partitions[P.partition_index[c.partition]]
    local t = r.time_limit_min
    if not t or t == 0 then t = part and (part.default_time or part.max_time) or nil end
    if t == nil or t > m.max_time then return "max_time" end
  end
  if m.array ~= nil and (r.array ~= nil) ~= m.array then return "array" end
  if m.interactive ~= nil and r.interactive ~= m.interactive then return "interactive" end
  if m.gpu_types and st.gpu_type and not contains(m.gpu_types, st.gpu_type) then return "gpu_types" end
  if m.accounts and not contains(m.accounts, r.account) then return "accounts" end
  if m.users and not contains(m.users, r.user) then return "users" end
  if m.groups then return "groups" end  -- Unix groups are gpusub's: never matched server-side
  if st.gpus > 0 and st.gpu_type and not contains(P.partitions[P.partition_index[c.partition]].offered, st.gpu_type) then
    return "partition"
  end
  return nil
end

local function match_class(st)
  local r, P = st.r, st.P
  local matching = {}
  for _, c in ipairs(P.classes) do
    if not (c.match.explicit and not (r.partition and r.partition == c.partition)) and not mismatch(st, c) then
      matching[#matching + 1] = c
      if not r.partition then break end
    end
  end
  if #matching == 0 then
    return reject(st, "no_class", "change the request to fit a class", {})
  end
  local chosen = matching[1]
  for _, c in ipairs(matching) do
    if c.partition == r.partition then chosen = c; break end
  end
  st.class = chosen
  return nil
end

local function place(st)
  local r, P, c = st.r, st.P, st.class
  local part = P.partitions[P.partition_index[c.partition]]
  local class_qos = c.qos
  if r.partition and r.partition ~= part.name then
    local i = P.partition_index[r.partition]
    if not i then
      return reject(st, "unknown_partition", "drop --partition or use one of " .. join(P.partition_names, ", "),
        { partition = r.partition })
    end
    part = P.partitions[i]
    if class_qos and #part.allowed_qos > 0 and not contains(part.allowed_qos, class_qos) then class_qos = nil end
  end
  st.partition = part
  local qname = r.qos or class_qos or part.default_qos
  if r.qos then
    if not P.qos_index[r.qos] then
      return reject(st, "unknown_qos", "drop --qos", { qos = r.qos })
    end
    if #part.allowed_qos > 0 and not contains(part.allowed_qos, r.qos) then
      return reject(st, "qos_not_allowed", "drop --qos or use one of " .. join(part.allowed_qos, ", "),
        { qos = r.qos, partition = part.name })
    end
  end
  st.qos = qname
  if not r.partition or r.partition ~= part.name then add(st, "partition", part.name) end
  if qname and r.qos ~= qname then add(st, "qos", qname) end
  return nil
end

-- ---- the nodes: --constraint, -w/-x and what the policy's nodes offer (mirror of policy/constraint.py,
-- policy/nodes.py and policy/classifier/fit.py) ----

local C_OPS = { ["&"] = true, ["|"] = true, [","] = true, ["("] = true, [")"] = true, ["["] = true,
  ["]"] = true, ["*"] = true }

local function c_tokens(text)  -- nil when the text has a space (Python: ValueError)
  local out, word = {}, ""
  for i = 1, #text do
    local ch = ssub(text, i, i)
    if C_OPS[ch] then
      if word ~= "" then out[#out + 1] = word; word = "" end
      out[#out + 1] = (ch == ",") and "&" or ch
    elseif sfind(ch, "^%s$") then return nil
    else word = word .. ch end
  end
  if word ~= "" then out[#out + 1] = word end
  return out
end

-- The constraint as a term {name=, items=, ops=, times=}, or nil when it cannot be read.
local function parse_constraint(text)
  if not text or #text == 0 or #text > 1024 then return nil end
  local toks = c_tokens(text)
  if not toks then return nil end
  local pos = 1
  local function group(close, depth)
    if depth > 64 then return nil end
    local items, ops = {}, {}
    while true do
      local tok = toks[pos]
      if tok == nil then return nil end
      pos = pos + 1
      local item
      if tok == "(" or tok == "[" then
        item = group(tok == "(" and ")" or "]", depth + 1)
        if not item then return nil end
      elseif C_OPS[tok] then return nil
      else item = { name = tok, items = {}, ops = {}, times = 0 } end
      if toks[pos] == "*" then
        local n = toks[pos + 1]
        if not n or not sfind(n, "^%d+$") then return nil end
        item.times = tonumber(n)
        pos = pos + 2
      end
      items[#items + 1] = item
      if pos > #toks then
        if close then return nil end
        break
      end
      tok = toks[pos]
      if tok == close then pos = pos + 1; break end
      if tok ~= "&" and tok ~= "|" then return nil end
      ops[#ops + 1] = tok
      pos = pos + 1
    end
    return { items = items, ops = ops, times = 0 }
  end
  return group(nil, 0)
end

local function c_features(term, out, seen)
  if term.name then
    if not seen[term.name] then seen[term.name] = true; out[#out + 1] = term.name end
  else
    for _, it in ipairs(term.items) do c_features(it, out, seen) end
  end
  return out
end

local function c_has_count(term)
  if term.times > 0 then return true end
  for _, it in ipairs(term.items) do if c_has_count(it) then return true end end
  return false
end

local function c_fold(term, value)
  local result = value(term.items[1])
  for i, op in ipairs(term.ops) do
    local v = value(term.items[i + 1])
    if op == "&" then result = result and v else result = result or v end
  end
  return result
end

local function c_holds(term, features)
  if term.name then return features[term.name] == true end
  return c_fold(term, function(it) return c_holds(it, features) end)
end

local function c_fits(term, nodes)  -- nodes: a list of feature sets
  if #nodes == 0 then return false end
  if not c_has_count(term) or term.name or term.times > 0 then
    for _, f in ipairs(nodes) do if c_holds(term, f) then return true end end
    return false
  end
  return c_fold(term, function(it) return c_fits(it, nodes) end)
end

-- "h100n[1-2,5],a100n1" -> a set and a list of names; nil for what this reader does not expand (two
-- bracket groups in one name, a file name): then -w/-x are left to slurmctld, as gpusub reads them
local function expand_hosts(text)
  if not text then return {}, {} end
  if sfind(text, "/", 1, true) then return nil end
  local items, depth, start = {}, 0, 1
  for i = 1, #text do
    local ch = ssub(text, i, i)
    if ch == "[" then depth = depth + 1 elseif ch == "]" then depth = depth - 1
    elseif ch == "," and depth == 0 then items[#items + 1] = ssub(text, start, i - 1); start = i + 1 end
  end
  items[#items + 1] = ssub(text, start)
  local list, set = {}, {}
  local function put(n) if not set[n] then set[n] = true end; list[#list + 1] = n end
  for _, item in ipairs(items) do
    local pre, body, post = string.match(item, "^([^%[%]]*)%[([^%[%]]*)%]([^%[%]]*)$")
    if pre then
      if sfind(post, "[", 1, true) then return nil end
      for _, r in ipairs(split(body, ",")) do
        local lo, hi = string.match(r, "^(%d+)%-(%d+)$")
        if not lo then lo = string.match(r, "^(%d+)$"); hi = lo end
        if not lo or tonumber(hi) < tonumber(lo) or tonumber(hi) - tonumber(lo) > 4096 then return nil end
        for k = tonumber(lo), tonumber(hi) do put(pre .. sformat("%0" .. #lo .. "d", k) .. post) end
      end
    elseif sfind(item, "[", 1, true) or sfind(item, "]", 1, true) or item == "" then return nil
    else put(item) end
  end
  return set, list
end

local function node_count(n, name, gtype)  -- mirror of NodeOffer.count
  if name == "gpu" and gtype and n.mig_unknown and ssub(gtype, 1, #n.mig_unknown + 1) == n.mig_unknown .. "_" then
    return 7 * node_count(n, "gpu", n.mig_unknown)
  end
  if n.unknown and n.unknown[name] then return 1073741824 end
  local c = 0
  for _, g in ipairs(n.gres) do
    if g[1] == name and (gtype == nil or g[2] == gtype) then c = c + g[3] end
  end
  return c
end

local function candidates(st, part)  -- mirror of fit.candidates
  local r, out = st.r, {}
  for _, n in ipairs(st.P.nodes or {}) do
    if n.partitions[part.name] and not r.exclude_set[n.name] and (#r.nodelist == 0 or r.nodelist_set[n.name]) then
      out[#out + 1] = n
    end
  end
  return out
end

local function distinct(list)
  local seen, c = {}, 0
  for _, v in ipairs(list) do if not seen[v] then seen[v] = true; c = c + 1 end end
  return c
end

local function feature_sets(nodes)
  local out = {}
  for i, n in ipairs(nodes) do out[i] = n.features end
  return out
end

local function type_fits(st, part, t)  -- mirror of fit.type_fits: on as many nodes as the job needs
  local r, nodes = st.r, {}
  local per_node = math.max(r.gpus_per_node or 1, 1)
  for _, n in ipairs(candidates(st, part)) do
    if node_count(n, "gpu", t) >= per_node then nodes[#nodes + 1] = n end
  end
  if #nodes < math.max(distinct(r.nodelist), r.node_min or 1) then return false end
  local term = r.constraint_term
  if not term then return #nodes > 0 end
  if #r.nodelist > 0 then
    if #nodes == 0 then return false end
    for _, n in ipairs(nodes) do if not c_holds(term, n.features) then return false end end
    return true
  end
  return c_fits(term, feature_sets(nodes))
end

local function sorted_keys(set)
  local out = {}
  for k in pairs(set) do out[#out + 1] = k end
  table.sort(out)
  return out
end

local function gres_text(g, t, c)
  return g .. ":" .. (t and (t .. ":") or "") .. py_str(c)
end

local function describe(nodes)  -- mirror of nodes.describe (by name)
  local parts, byname = {}, {}
  for i, n in ipairs(nodes) do byname[i] = n end
  table.sort(byname, function(a, b) return a.name < b.name end)
  nodes = byname
  for i = 1, math.min(#nodes, 4) do
    local n, gres = nodes[i], {}
    for _, g in ipairs(n.gres) do gres[#gres + 1] = gres_text(g[1], g[2], g[3]) end
    local feats = sorted_keys(n.features)
    parts[#parts + 1] = n.name .. " (" .. (#gres > 0 and table.concat(gres, ",") or "no gres") ..
      "; features " .. (#feats > 0 and table.concat(feats, ",") or "none") .. ")"
  end
  if #parts == 0 then return "no node" end
  return table.concat(parts, ", ") .. (#nodes > 4 and (" and " .. (#nodes - 4) .. " more") or "")
end

local function several_types(st, part, types)
  local r, P = st.r, st.P
  local form = (#r.by_job > 0 and r.by_job) or (#r.by_node > 0 and r.by_node) or r.by_task
  for _, t in ipairs(types) do
    if not P.gpu_type_set[t] then
      return reject(st, "unknown_gpu_type", "GPU types: " .. join(P.gpu_type_names, ", "), { gpu_type = t })
    end
    if not contains(part.offered, t) then
      return reject(st, "gpu_type_not_in_partition", "use a partition with " .. t,
        { gpu_type = t, partition = part.name })
    end
  end
  local q = st.qos and P.qos[P.qos_index[st.qos]]
  if q and q.max_gpus_per_job and st.gpus > q.max_gpus_per_job then
    return reject(st, "too_many_gpus", "ask for at most " .. q.max_gpus_per_job .. " GPUs",
      { gpus = st.gpus, qos = q.name, limit = q.max_gpus_per_job })
  end
  st.gpu_type = nil
  local items = {}
  for _, t in ipairs(types) do
    local n = of_type(form, t)
    items[#items + 1] = "gpu:" .. t .. ":" .. (n and py_str(n) or "?")
  end
  st.gres = table.concat(items, ",")
  return nil
end

local function resolve_type(st, part)
  local P = st.P
  local offered = part.offered
  if st.gpu_type then
    if not P.gpu_type_set[st.gpu_type] then
      return nil, reject(st, "unknown_gpu_type", "GPU types: " .. join(P.gpu_type_names, ", "), { gpu_type = st.gpu_type })
    end
    if not contains(offered, st.gpu_type) then
      return nil, reject(st, "gpu_type_not_in_partition", "use a partition with " .. st.gpu_type,
        { gpu_type = st.gpu_type, partition = part.name })
    end
    return st.gpu_type, nil
  end
  local fix = "name the type: --gpus=" .. (#offered > 0 and join(offered, "|") or "<type>") .. ":" .. py_str(st.gpus)
  if P.untyped_gpus == "reject" then
    return nil, reject(st, "untyped_gpu", fix, { gpus = st.gpus, partition = part.name })
  end
  -- the type must respect the request (-C, -w, -x): mirror of gpus._resolve_type
  local r = st.r
  local fitting, fitset = {}, {}
  for _, t in ipairs(offered) do
    if #(P.nodes or {}) == 0 or type_fits(st, part, t) then fitting[#fitting + 1] = t; fitset[t] = true end
  end
  local preferred = {}
  for _, t in ipairs({ part.default_gpu_type or false, P.default_gpu_type or false }) do
    if t and contains(offered, t) then preferred[#preferred + 1] = t end
  end
  local narrowed = r.constraint ~= nil or #r.nodelist > 0 or next(r.exclude_set) ~= nil
  local order = {}
  for i, t in ipairs(preferred) do order[i] = t end
  if #offered == 1 then order[#order + 1] = offered[1] end
  for _, t in ipairs(order) do if fitset[t] then return t, nil end end
  if #fitting > 0 and (#preferred > 0 or #fitting == 1) then return fitting[1], nil end
  if #fitting == 0 and (#preferred > 0 or #offered == 1) then
    if narrowed or #(P.nodes or {}) > 0 then return false, nil end  -- no type's nodes meet the request: untyped
    return preferred[1] or offered[1], nil
  end
  return nil, reject(st, "untyped_gpu", fix, { gpus = st.gpus, partition = part.name })
end

local function whole_gpus(st, part)
  local r, P = st.r, st.P
  if #r.gpu_types > 1 then return several_types(st, part, r.gpu_types) end
  local t, rej = resolve_type(st, part)
  if rej then return rej end
  st.gpu_type = t or nil
  local q = st.qos and P.qos[P.qos_index[st.qos]]
  if q and q.max_gpus_per_job and st.gpus > q.max_gpus_per_job then
    return reject(st, "too_many_gpus", "ask for at most " .. q.max_gpus_per_job .. " GPUs",
      { gpus = st.gpus, qos = q.name, limit = q.max_gpus_per_job })
  end
  if q and q.max_gpus_per_user and st.gpus > q.max_gpus_per_user then
    return reject(st, "over_user_cap", "ask for at most " .. q.max_gpus_per_user .. " GPUs",
      { gpus = st.gpus, qos = q.name, limit = q.max_gpus_per_user })
  end
  local per_node_max, capacity = 0, 0
  if t then
    local cap = part.capacity[t] or { 0, 0 }
    per_node_max, capacity = cap[1], cap[2]
  else  -- left untyped: every GPU of the partition counts
    for _, x in ipairs(part.offered) do
      local cap = part.capacity[x] or { 0, 0 }
      if cap[1] > per_node_max then per_node_max = cap[1] end
      capacity = capacity + cap[2]
    end
  end
  if st.gpus > capacity then
    return reject(st, "too_big", "ask for at most " .. capacity .. " " .. (t or "") .. " GPUs",
      { gpus = st.gpus, gpu_type = t or "", partition = part.name, capacity = capacity })
  end
  local nodes = r.nodes
  if not nodes or nodes == 0 then
    nodes = ceil(st.gpus / math.max(per_node_max, 1))
    if (r.node_min or 1) > nodes then nodes = r.node_min or 1 end
    if nodes < 1 then nodes = 1 end
  end
  local per
  if r.gpus_per_node and not r.gpus then per = r.gpus_per_node
  elseif st.gpus % nodes ~= 0 then per = ceil(st.gpus / nodes)
  else per = st.gpus / nodes end
  if per > per_node_max then
    return reject(st, "too_big", "use at most " .. per_node_max .. " GPUs per node (add nodes)",
      { gpus = per, gpu_type = t or "", partition = part.name, capacity = per_node_max })
  end
  st.gres = "gpu:" .. (t and (t .. ":") or "") .. py_str(per)
  st.nodes_needed = nodes
  st.type_untyped = r.gpu_type == nil and t ~= false  -- the request's own forms get the type (as gpusub writes them)
  return nil
end

-- A fraction reaches the server only as a MIG slice named by its gres type (check_request): the MIG
-- half of the classifier's fraction step (no MPS: the request named its slice).
local function fraction(st, part)
  local f = st.fraction
  if st.P.fraction_mode == "reject" then
    return reject(st, "fraction", "ask for a whole GPU (--gpus=<type>:1)",
      { fraction = f, why = "this site does not share GPUs" })
  end
  local any = false
  for _, c in ipairs(part.mig) do
    if (not st.gpu_type or c[3] == st.gpu_type) and c[4] == st.mig_profile then
      any = true
      if c[1] / 7 >= f - 1e-9 then
        st.gpu_type, st.gpus = c[3], 1
        st.gres = "gpu:" .. c[3] .. "_" .. c[4] .. ":1"
        return nil
      end
    end
  end
  return reject(st, "fraction", "use one of the MIG profiles " .. (any and st.mig_profile or "(none)") ..
    " in partition " .. part.name, { fraction = f, why = "no allowed MIG profile in partition " .. part.name .. " covers it" })
end

local function resolve_gpus(st)
  if st.fraction then return fraction(st, st.partition) end
  if st.gpus > 0 then return whole_gpus(st, st.partition) end
  return nil
end

-- ---- check_sharing: the slurm-gpu token in the comment (mirror of policy/classifier/sharing.py) ----

local TOKEN_PREFIX, MAX_TOKEN, MAX_COMMENT, MAX_MIG_ITEMS = "slurm-gpu:", 128, 4096, 7
local BAD_TOKEN = "bad slurm-gpu token in the job comment"
local TOKEN_FIX = "write slurm-gpu:mig=PROFILE[:COUNT][,PROFILE[:COUNT]...] (e.g. slurm-gpu:mig=3g.40gb:2) " ..
  "or slurm-gpu:mps=PERCENT (e.g. slurm-gpu:mps=25), once, in --comment"
local WHOLE_GPUS = "a slurm-gpu MIG layout or MPS share needs whole GPUs of one type"
local WHOLE_FIX = "ask for whole GPUs of one type (e.g. --gpus=a100:1), without a GPU fraction or MIG slice"
local MIG_FIX = "use gpusub --mig with GPUs of a type whose nodes are in dynamic MIG mode, or a MIG slice (--gpu-fraction)"

local function mig_slices(p)  -- compute slices of a canonical profile without a GPU type (3g.40gb, 1g.10gb+me)
  local s, mem, me = string.match(p, "^([1-7])g%.(%d+)gb(.*)$")
  if not s or (me ~= "" and me ~= "+me") or #mem > 4 or (#mem > 1 and ssub(mem, 1, 1) == "0") then return nil end
  return tonumber(s)
end

-- The token of a comment (mirror of slurm_gpu.sharing.token.decode): nil when there is none, false
-- when it is bad, else {mps = pct} or {mig = {{profile, count, slices}, ...}}. Words are split on
-- ASCII whitespace, as Python's str.split() splits ASCII text.
local function read_token(comment)
  if not comment or not sfind(comment, TOKEN_PREFIX, 1, true) then return nil end
  if #comment > MAX_COMMENT then return false end
  local token
  for w in string.gmatch(comment, "[^ \t\n\v\f\r\028\029\030\031]+") do
    if ssub(w, 1, #TOKEN_PREFIX) == TOKEN_PREFIX then
      if token then return false end
      token = w
    end
  end
  if not token then return nil end
  if #token > MAX_TOKEN then return false end
  local body = ssub(token, #TOKEN_PREFIX + 1)
  local eq = sfind(body, "=", 1, true)
  if not eq then return false end
  local key, value = ssub(body, 1, eq - 1), ssub(body, eq + 1)
  if key == "mps" then
    if not string.match(value, "^%d%d?%d?$") then return false end
    local pct = tonumber(value)
    if pct < 1 or pct > 100 then return false end
    return { mps = pct }
  end
  if key ~= "mig" or value == "" then return false end
  local items = split(value, ",")
  if #items > MAX_MIG_ITEMS then return false end
  local spec, seen = {}, {}
  for _, item in ipairs(items) do
    local prof, n = item, 1
    local c = sfind(item, ":", 1, true)
    if c then
      prof = ssub(item, 1, c - 1)
      local ct = ssub(item, c + 1)
      if not string.match(ct, "^[1-7]$") then return false end
      n = tonumber(ct)
    end
    local slices = mig_slices(prof)
    if not slices or seen[prof] then return false end
    seen[prof] = true
    spec[#spec + 1] = { prof, n, slices }
  end
  return { mig = spec }
end

local function check_sharing(st)
  local tok = read_token(st.r.comment)
  if tok == nil then return nil end
  if tok == false then return reject(st, "bad_request", TOKEN_FIX, { why = BAD_TOKEN }) end
  if st.fraction or st.gpus <= 0 or not st.gpu_type then
    return reject(st, "bad_request", WHOLE_FIX, { why = WHOLE_GPUS })
  end
  local P = st.P
  if tok.mps then
    local lo, hi = P.mps_share[1], P.mps_share[2]
    if tok.mps < lo or tok.mps > hi then
      return reject(st, "bad_request", "ask for a share of " .. py_str(lo) .. "-" .. py_str(hi) .. "%",
        { why = "MPS share " .. py_str(tok.mps) .. "% is outside the allowed " .. py_str(lo) .. "-" .. py_str(hi) .. "%" })
    end
    return nil
  end
  for _, nm in ipairs(st.partition.node_modes or {}) do
    if nm[2] == st.gpu_type then  -- mirror of slurm_gpu.sharing.mig.check_request, node type by node type
      if nm[3] ~= "dynamic" then
        return reject(st, "bad_request", MIG_FIX, { why = "node type " .. nm[1] ..
          " does not serve per-job MIG layouts (mig_mode " .. nm[3] .. "); ask for a MIG slice as a gres type instead" })
      end
      local ok, used, text = P.mig_offer[nm[2]] or {}, 0, {}
      for _, it in ipairs(tok.mig) do
        if not contains(ok, it[1]) then
          return reject(st, "bad_request", MIG_FIX, { why = "MIG profile " .. it[1] .. " is not offered on " ..
            nm[2] .. " GPUs; allowed: " .. (#ok > 0 and join(ok, ", ") or "none") })
        end
        used = used + it[2] * it[3]
        text[#text + 1] = it[1] .. ":" .. py_str(it[2])
      end
      if used > 7 then
        return reject(st, "bad_request", MIG_FIX, { why = "MIG layout " .. table.concat(text, ",") .. " needs " ..
          py_str(used) .. " compute slices; a GPU has 7" })
      end
    end
  end
  return nil
end

local function set_time(st)
  local r, P, part = st.r, st.P, st.partition
  local q = st.qos and P.qos[P.qos_index[st.qos]]
  local limits = {}
  if part.max_time then limits[#limits + 1] = { part.max_time, "partition " .. part.name } end
  if q and q.max_wall then limits[#limits + 1] = { q.max_wall, "QOS " .. st.qos } end
  if r.time_unlimited then
    for _, l in ipairs(limits) do
      return reject(st, "too_long", "ask for --time=" .. fmt_time(l[1]) .. " or less",
        { time = "UNLIMITED", limit = fmt_time(l[1]), limit_name = l[2] })
    end
    return nil
  end
  local t = r.time_limit_min
  if not t then
    t = part.default_time
    for _, l in ipairs(limits) do
      if t == nil or t > l[1] then t = l[1] end
    end
    if t then add(st, "time_limit", t) end
    return nil
  end
  for _, l in ipairs(limits) do
    if t > l[1] then
      return reject(st, "too_long", "ask for --time=" .. fmt_time(l[1]) .. " or less",
        { time = fmt_time(t), limit = fmt_time(l[1]), limit_name = l[2] })
    end
  end
  return nil
end

-- The class's --switches for a multi-node job (mirror of classifier/limits.locality, topology/tree only):
-- -N N fixed (no range), N >= 2, no -w, no --switches of the job's own, and a leaf switch holding N of the
-- partition's nodes (not -x'ed) when the count is 1. --segment is not mirrored (docs/topology.md).
local function locality(st)
  local r, sw, part = st.r, st.class.switches, st.partition
  if not sw or not r.nodes or r.nodes < 2 or (r.nodes_max and r.nodes_max ~= r.nodes) then return end
  if #r.nodelist > 0 or r.req_switch then return end  -- --spread-job (a job_desc bit flag) is not read
  local best = 0
  for _, leaf in ipairs(st.P.leaves or {}) do
    local held = 0
    for _, n in ipairs(st.P.nodes or {}) do
      if leaf[2][n.name] and n.partitions[part.name] and not r.exclude_set[n.name] then held = held + 1 end
    end
    if held > best then best = held end
  end
  if #(st.P.leaves or {}) == 0 or (sw[1] == 1 and best < r.nodes) then return end
  add(st, "req_switch", sw[1])
  if sw[2] then add(st, "wait4switch", sw[2]) end
end

local function apply_defaults(st)
  -- memory and CPUs per GPU are the partitions' DefMemPerGPU/DefCpuPerGPU (slurm.conf): nothing here
  if st.class.requeue then add(st, "requeue", 1) end
  locality(st)
  return nil
end

-- ---- check_nodes: the one verdict, over the policy's nodes (mirror of policy/classifier/fit.py) ----

local function check_nodes(st)
  local r, P, part = st.r, st.P, st.partition
  if not P.nodes or #P.nodes == 0 then return nil end
  local needs, has = {}, {}
  for _, item in ipairs(split(st.gres or "", ",")) do
    local bits = split(item, ":")
    if #bits == 3 and sfind(bits[3], "^%d+$") then needs[#needs + 1] = { bits[1], bits[2], tonumber(bits[3]) }
    elseif #bits == 2 and sfind(bits[2], "^%d+$") then needs[#needs + 1] = { bits[1], nil, tonumber(bits[2]) } end
  end
  for _, nd in ipairs(needs) do has[nd[1]] = true end
  if r.shards and r.shards > 0 and not has.shard then needs[#needs + 1] = { "shard", nil, r.shards } end
  if r.mps and r.mps > 0 and not has.mps then needs[#needs + 1] = { "mps", nil, r.mps } end
  local term = r.constraint_term
  if r.constraint and term then
    local known = {}
    for _, n in ipairs(P.nodes) do for f in pairs(n.features) do known[f] = true end end
    local missing = {}
    for _, f in ipairs(c_features(term, {}, {})) do if not known[f] then missing[#missing + 1] = f end end
    local inpart = {}
    for _, n in ipairs(P.nodes) do if n.partitions[part.name] then inpart[#inpart + 1] = n.features end end
    if #missing > 0 and not c_fits(term, inpart) then
      local k = sorted_keys(known)
      return reject(st, "unservable", "drop --constraint=" .. r.constraint .. " or use features the nodes have: " ..
        (#k > 0 and table.concat(k, ", ") or "(none)"),
        { partition = part.name, why = "no node has the feature(s) " .. table.concat(missing, ", ") })
    end
  end
  if #needs == 0 and #r.nodelist == 0 and not next(r.exclude_set) and not term then return nil end
  local cands = candidates(st, part)
  if #r.nodelist > 0 then
    local inset, absent = {}, {}
    for _, n in ipairs(cands) do inset[n.name] = true end
    for _, h in ipairs(r.nodelist) do if not inset[h] then absent[#absent + 1] = h end end
    if #absent > 0 then
      local shown = {}
      for i = 1, math.min(#absent, 4) do shown[i] = absent[i] end
      return reject(st, "unservable", "name nodes of partition " .. part.name .. " with -w", { partition = part.name,
        why = "-w names " .. table.concat(shown, ", ") .. ", not in partition " .. part.name ..
          (next(r.exclude_set) and " (or excluded)" or "") })
    end
  end
  local serving = {}
  for _, n in ipairs(cands) do
    local ok = true
    for _, nd in ipairs(needs) do
      if node_count(n, nd[1], nd[2]) < nd[3] then ok = false; break end
    end
    if ok then serving[#serving + 1] = n end
  end
  if term then
    if #r.nodelist > 0 or not c_has_count(term) then
      local kept = {}
      for _, n in ipairs(serving) do if c_holds(term, n.features) then kept[#kept + 1] = n end end
      serving = kept
    elseif not c_fits(term, feature_sets(serving)) then
      serving = {}
    end
  end
  local want = math.max(distinct(r.nodelist), st.nodes_needed or 1, r.node_min or 1)
  if #serving >= want then return nil end
  local texts, what = {}, {}
  for _, nd in ipairs(needs) do texts[#texts + 1] = gres_text(nd[1], nd[2], nd[3]) end
  if #needs > 0 then what[#what + 1] = table.concat(texts, ",") .. " per node" end
  if r.constraint then what[#what + 1] = "--constraint=" .. r.constraint end
  local why = py_str(want) .. " node(s) with " .. (#what > 0 and table.concat(what, " and ") or "the request") ..
    " needed, " .. #serving .. " found; its nodes offer " .. describe(cands)
  local fix, gpu_items, slice, sharing = "ask for what these nodes offer", 0, false, {}
  for _, nd in ipairs(needs) do
    if nd[1] == "gpu" then gpu_items = gpu_items + 1 end
    if nd[2] and sfind(nd[2], "_", 1, true) then slice = true end
    if nd[1] == "shard" or nd[1] == "mps" then sharing[nd[1]] = true end
  end
  if st.mig_profile or slice then fix = "ask for a MIG slice the nodes offer, or a whole GPU (--gpus=<type>:1)"
  elseif gpu_items > 1 then fix = "ask for one GPU type per node, or one type per hetjob component"
  elseif next(sharing) then fix = "ask for whole GPUs: this partition's nodes have no " .. table.concat(sorted_keys(sharing), "/") end
  return reject(st, "unservable", fix, { partition = part.name, why = why })
end

local STEPS = {
  { "check_request", check_request },
  { "fit_vram", fit_vram },
  { "match_class", match_class },
  { "place", place },
  { "resolve_gpus", resolve_gpus },
  { "check_sharing", check_sharing },
  { "check_nodes", check_nodes },
  { "set_time", set_time },
  { "apply_defaults", apply_defaults },
}

-- Classify a request: the decision {accepted, class, partition, qos, gres, gpus, gpu_type, message,
-- fix, key, options, type_untyped}. Pure: reads r and P only.
local function classify(P, r)
  local st = { P = P, r = r, gpus = 0, options = {}, nodes_needed = 1 }
  r.constraint_term = parse_constraint(r.constraint)
  local wset, wlist = expand_hosts(r.req_nodes)
  local xset = expand_hosts(r.exc_nodes)
  r.nodelist_set, r.nodelist, r.exclude_set = wset or {}, wlist or {}, xset or {}
  for _, step in ipairs(STEPS) do
    local rej = step[2](st)
    if rej then
      return { accepted = false, class = st.class and st.class.name, qos = st.qos,
               partition = st.partition and st.partition.name, message = rej.message, fix = rej.fix,
               key = rej.key, step = step[1] }
    end
  end
  return { accepted = true, class = st.class.name, partition = st.partition.name, qos = st.qos,
           gres = st.gres, gpus = st.gpus, gpu_type = st.gpu_type, options = st.options,
           type_untyped = st.type_untyped }
end

-- ---- writing the decision back ----------------------------------------------------------------

-- "gres:gpu:2" -> "gres:gpu:h100:2"; "gres/gpu=1" -> "gres/gpu:h100=1"; "gpu" -> "gpu:h100";
-- typed items and other GRES unchanged (mirror of render.script._type_gres, in Slurm's spelling).
local function type_items(text, gtype)
  if not text then return nil end
  local out = {}
  for _, item in ipairs(split(text, ",")) do
    local prefix = ""
    if ssub(item, 1, 5) == "gres:" or ssub(item, 1, 5) == "gres/" then prefix, item = ssub(item, 1, 5), ssub(item, 6) end
    local bits = split(item, ":")
    if bits[1] == "gpu" and #bits == 1 then item = "gpu:" .. gtype
    elseif bits[1] == "gpu" and #bits == 2 and string.match(bits[2], "^%d+$") then item = "gpu:" .. gtype .. ":" .. bits[2]
    elseif string.match(item, "^gpu=%d+$") then item = "gpu:" .. gtype .. ssub(item, 4)
    end
    out[#out + 1] = prefix .. item
  end
  return table.concat(out, ",")
end

local function set(jd, f, v, done)  -- write a field, remembering the old value (for undo)
  done[#done + 1] = { f, get(jd, f) }
  jd[f] = v
end

local function type_forms(jd, d, done)  -- the GPU type resolved for an untyped request, into its own forms
  if not (d.type_untyped and d.gpu_type) then return end
  for _, f in ipairs({ "tres_per_job", "tres_per_node", "tres_per_socket", "tres_per_task" }) do
    local v = str(jd, f)
    local typed = v and type_items(v, d.gpu_type)
    if typed and typed ~= v then set(jd, f, typed, done) end
  end
end

-- Write the decision into job_desc, all or nothing: when a setter fails, the fields already written
-- get their old values back (nil is written as "", which clears a field in slurmctld) and the error
-- goes on to the entry point, so "accepted unchanged" holds.
local function apply(jd, d)
  local done = {}
  local ok, err = pcall(function()
    for _, o in ipairs(d.options) do set(jd, o[1], o[2], done) end
    type_forms(jd, d, done)
  end)
  if ok then return end
  for i = #done, 1, -1 do
    local f, old = done[i][1], done[i][2]
    if not pcall(function() jd[f] = old end) and old == nil then pcall(function() jd[f] = "" end) end
  end
  error(err, 0)
end

-- ---- entry points ----------------------------------------------------------------------------

-- slurm.ESLURM_* are nil on 22.05 (measured; returning nil accepts the job): Slurm's numbers then.
local function codes()
  local s = slurm or {}
  return s.SUCCESS or 0, s.ERROR or -1, s.ESLURM_INVALID_GRES or 2072
end

local GRES_KEYS = { untyped_gpu = true, unknown_gpu_type = true, gpu_type_not_in_partition = true }

local function say(fn, text)
  local s = slurm or {}
  if type(s[fn]) == "function" then pcall(s[fn], "%s", text) end
end

local function rejected(P, d)
  local SUCCESS, ERROR, GRES = codes()
  local text = "slurm-gpu policy " .. P.name .. ": " .. d.message
  if d.fix then text = text .. " (" .. d.fix .. ")" end
  say("log_user", text)
  say("log_info", "job_submit/slurm-gpu: rejected (" .. d.key .. "): " .. sgsub(d.message, "%c", "?"))
  if GRES_KEYS[d.key] then return GRES end
  return ERROR
end

local function internal(P, where, err)
  local SUCCESS, ERROR = codes()
  say("log_error", "job_submit/slurm-gpu: internal error in " .. where .. ": " .. tostring(err) ..
    "; job " .. (P.on_internal_error == "reject" and "rejected" or "accepted unchanged") .. " (on_internal_error)")
  if P.on_internal_error == "reject" then
    say("log_user", "slurm-gpu policy " .. P.name .. ": the site's submit filter failed; try again or tell the admins")
    return ERROR
  end
  return SUCCESS
end

-- ---- heterogeneous jobs (mirror of slurm_gpu.policy.classifier.hetjob) ---------------------------
-- slurmctld hands a hetjob's components to slurm_job_submit one at a time, in order (het_job_offset 0,
-- 1, ...), all before it creates any of them, and never says how many follow (proc_req.c,
-- _slurm_rpc_submit_batch_het_job). HET keeps what the job's earlier components asked: the kind of job
-- (components 1+ carry no script, so only component 0 tells a batch job from a session), the first
-- component that asks for GPUs, a CPU-only first component that fits no class (decided by the second),
-- and the GPUs per QOS so far (the per-user cap counts every component). One entry per submitting uid:
-- slurmctld serialises the calls (one Lua state under lua_lock, 22.05 to 24.11) but another RPC's call
-- may come between two components; an entry that does not continue (another offset, a reloaded script)
-- is dropped and the component is classified alone.
local HET = {}

local function asks_for_gpus(r)
  if r.oversized then return true end
  return total_gpus(r) > 0 or (r.mps ~= nil and r.mps > 0) or (r.shards ~= nil and r.shards > 0)
end

local function cpu_part()  -- the CPU part of a GPU job: accepted, no class, nothing added
  return { accepted = true, gpus = 0, options = {}, cpu_part = true }
end

local function het_state(job_desc, uid, r)
  local k = count(job_desc, "het_job_offset", NO_VAL)
  if k == nil then return nil end
  local key = tostring(uid)  -- a string: any uid slurmctld (or a fuzzer) hands over is a valid key
  if k == 0 then HET[key] = { next = 0, interactive = r.interactive, gpus_at = nil, qos_gpus = {} } end
  local het = HET[key]
  if not (het and het.next == k) then HET[key] = nil; return nil end
  het.next = k + 1
  r.interactive = het.interactive
  return het, k, key
end

-- The job-level rules on component k's decision d: nil to go on with d, or the decision to take.
local function het_rules(P, het, k, r, d)
  local gpus = asks_for_gpus(r)
  local pending = het.pending
  het.pending = nil
  if pending and not gpus then return pending end  -- neither of the first two components asks for GPUs
  if not d.accepted and d.key == "no_class" and not gpus then
    if het.gpus_at then d = cpu_part()
    elseif k == 0 then het.pending, d = d, cpu_part()
    end
  end
  if gpus and not het.gpus_at then het.gpus_at = k end
  local q = d.accepted and d.gpus > 0 and d.qos and P.qos[P.qos_index[d.qos]]
  if q then
    het.qos_gpus[d.qos] = (het.qos_gpus[d.qos] or 0) + d.gpus
    local total = het.qos_gpus[d.qos]
    if q.max_gpus_per_user and total > q.max_gpus_per_user then
      return { accepted = false, key = "over_user_cap", qos = d.qos,
               message = message(P, "over_user_cap", { gpus = total, qos = d.qos, limit = q.max_gpus_per_user }),
               fix = "ask for at most " .. q.max_gpus_per_user .. " GPUs over the job's components in QOS " .. d.qos }
    end
  end
  return d
end

local function submit(P, job_desc, uid)
  local SUCCESS = codes()
  local r = request_from_job_desc(job_desc, str(job_desc, "user_name"))
  local het, k, key = het_state(job_desc, uid, r)
  local d = classify(P, r)
  if het then d = het_rules(P, het, k, r, d) end
  if not d.accepted then
    if het then HET[key] = nil end
    return rejected(P, d)
  end
  if not d.cpu_part then apply(job_desc, d) end
  return SUCCESS
end

-- A modification is checked as the job it would make: the job's record (job_rec) with the changed
-- fields (job_desc) on top, and refused when the policy would refuse that job. Measured (22.05.8 and
-- 24.11.5, docs/job_submit.md): job_desc holds only the changed fields; job_rec has partition, qos,
-- account, time_limit, the tres_per_* fields, min_nodes, max_nodes (0 without -N), array_task_cnt and
-- script (nil for salloc/srun sessions), but no num_tasks, ntasks_per_*, array_inx or user_name. Only
-- a GPU form the update names is typed (24.11 takes an untyped TresPerJob over a typed request).
local MODIFY_FIELDS = { "tres_per_job", "tres_per_node", "tres_per_socket", "tres_per_task", "partition",
  "qos", "account", "time_limit", "min_nodes", "max_nodes", "num_tasks", "ntasks_per_node",
  "ntasks_per_tres", "ntasks_per_gpu" }

local function changed(v)
  return v ~= nil and v ~= NO_VAL and v ~= NO_VAL16 and v ~= ""
end

local function modify(P, job_desc, job_rec, uid)
  local SUCCESS = codes()
  -- root, SlurmUser, operators, coordinators: slurmctld has authorised an update of someone else's job
  local owner = get(job_rec, "user_id")
  if uid == 0 or (type(owner) == "number" and owner ~= uid) then return SUCCESS end
  local merged, any = {}, false
  for _, f in ipairs(MODIFY_FIELDS) do
    local new = get(job_desc, f)
    if f == "tres_per_node" and not changed(new) then new = get(job_desc, "gres") end
    if changed(new) then merged[f], any = new, true else merged[f] = get(job_rec, f) end
  end
  if not any then return SUCCESS end  -- a name, a comment, a hold: nothing the policy decides
  if merged.max_nodes == 0 then merged.max_nodes = nil end
  local cnt, array_id = get(job_rec, "array_task_cnt"), get(job_rec, "array_job_id")
  if (type(array_id) == "number" and array_id > 0) or (type(cnt) == "number" and cnt > 1) then
    merged.array_inx = "(array)"
  end
  merged.script = get(job_rec, "script")
  local r = request_from_job_desc(merged, str(job_desc, "user_name"))
  local d = classify(P, r)
  if not d.accepted then return rejected(P, d) end
  type_forms(job_desc, d, {})
  return SUCCESS
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  local ok, rc = pcall(submit, P, job_desc, submit_uid)
  if ok then return rc end
  return internal(P, "slurm_job_submit", rc)
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  local ok, rc = pcall(modify, P, job_desc, job_rec, modify_uid)
  if ok then return rc end
  return internal(P, "slurm_job_modify", rc)
end

-- The pure parts, for the tests only (lupa sets SLURM_GPU_TEST to a table; slurmctld never does).
if type(SLURM_GPU_TEST) == "table" then
  SLURM_GPU_TEST.engine = { submit = submit, request_from_job_desc = request_from_job_desc, classify = classify,
    total_gpus = total_gpus, apply = apply, type_items = type_items, py_repr = py_repr, read_token = read_token,
    P = P }
end
