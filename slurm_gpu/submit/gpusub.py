# SPDX-License-Identifier: Apache-2.0
"""gpusub's orchestration: parse -> request -> classify -> topology -> plan -> render -> write -> backend.

This is the one place that joins the pure core (sbatch_options, policy, topology, binding, render)
to the edges (files, the Slurm backend, the terminal). Heavy modules are imported only on the
paths that need them, so a plain submission starts fast.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any

from slurm_gpu.digits import is_digits
from slurm_gpu.errors import (
    PolicyError,
    Rejected,
    SlurmRefused,
    SubmitError,
    TopologyError,
    UsageError,
    exit_code_for,
)
from slurm_gpu.plain import NamedTuple
from slurm_gpu.policy.reader import policy_path
from slurm_gpu.slurm.sbatch.table import GpusubOptions

if TYPE_CHECKING:  # the types only: nothing is imported at run time for them
    from slurm_gpu.adapters.slurm import SbatchCli
    from slurm_gpu.placement.plan import BindingPlan, NodeLayout
    from slurm_gpu.policy.model import Policy
    from slurm_gpu.policy.nodes import Inventory
    from slurm_gpu.ports import SlurmClient
    from slurm_gpu.render.checkpoint import CheckpointSettings
    from slurm_gpu.render.script import RenderedScript
    from slurm_gpu.request import Decision, JobRequest
    from slurm_gpu.slurm.records import SubmitResult, TestOnlyResult
    from slurm_gpu.slurm.release import SlurmSpelling
    from slurm_gpu.slurm.sbatch.parse import Submission



class InfoRequested(Exception):
    """``--help``/``--usage``/``--version`` among the options: print it, submit nothing."""


class Prepared(NamedTuple):
    """Everything decided before anything is written or sent. (The submit path's records are
    NamedTuples: a frozen dataclass costs about 1 ms to create at import, a NamedTuple a tenth.)"""

    submission: Submission
    request: JobRequest
    decision: Decision
    plan: BindingPlan | None
    spelling: SlurmSpelling
    policy: Policy | None
    script_text: str | None
    component_decisions: tuple[Decision, ...] = ()  # one Decision per heterogeneous-job component
    nodes: NodeView | None = None  # the node data the verdict read, and whether it came from the cache


class NodeView(NamedTuple):
    """The classifier's node data (None: the policy's own nodes) and whether it is the per-user cache's
    copy of the records (slurm_gpu/adapters/node_cache.py) rather than a live read."""

    inventory: Inventory | None
    cached: bool


# ---- inputs ----------------------------------------------------------------------------------

# sbatch's own limit (SchedulerParameters=max_script_size, default 4 MiB); a bigger script is refused
# before it is read whole, so /dev/zero or a huge file costs nothing.
MAX_SCRIPT_BYTES = 4 * 1024 * 1024


def read_script(path: str) -> str:
    """The batch script's text (bytes that are not UTF-8 kept as surrogate escapes). Only regular files
    and standard input; at most sbatch's size limit (slurm_gpu/adapters/fs.py read_capped: no FIFO hang)."""
    import errno

    from slurm_gpu.adapters import fs

    what = "standard input" if path == "-" else f"script {path}"
    try:
        data = fs.read_capped(sys.stdin.fileno() if path == "-" else path, limit=MAX_SCRIPT_BYTES)
    except FileNotFoundError:
        raise UsageError(f"script {path}: no such file "
                         "(usage: gpusub [OPTIONS] SCRIPT [ARGS]... or --wrap=CMD)") from None
    except IsADirectoryError:
        raise UsageError(f"script {path}: is a directory, not a batch script") from None
    except PermissionError:
        raise UsageError(f"script {path}: permission denied") from None
    except fs.Untrusted as exc:
        if exc.errno == errno.EFBIG:
            raise UsageError(f"{what}: larger than {MAX_SCRIPT_BYTES} bytes, sbatch's batch script limit "
                             "(max_script_size)") from None
        if exc.errno == errno.EISDIR:
            raise UsageError(f"script {path}: is a directory, not a batch script") from None
        raise UsageError(f"script {path}: not a regular file (a batch script is read from a file or "
                         "standard input)") from None
    except OSError as exc:
        raise UsageError(f"{what}: {exc.strerror or exc}") from None
    assert data is not None
    return data.decode("utf-8", "surrogateescape")


def detect_spelling(env: Mapping[str, str], backend: SlurmClient) -> SlurmSpelling:
    """The option spellings of the Slurm we talk to ($GPUSUB_SLURM_VERSION overrides detection)."""
    from slurm_gpu.slurm.release import DEFAULT_VERSION, parse_sbatch_version, spelling_for

    forced = env.get("GPUSUB_SLURM_VERSION")
    if forced:
        return spelling_for(parse_sbatch_version(forced))
    try:
        return spelling_for(backend.version())
    except SubmitError:
        return spelling_for(DEFAULT_VERSION)._replace(detected=False)


def _with_constraint_warnings(decision: Any, request: Any, policy: Any) -> Any:
    """Warn about a --constraint that no node of the chosen GPU type (in the chosen partition) has."""
    from slurm_gpu.emit.slurm_conf import node_features  # the Features= the emitter writes
    from slurm_gpu.placement.plan import constraint_warnings

    feats = [(nt.name, node_features(policy, nt)) for nt in node_types_for(policy, decision)]
    found = constraint_warnings(request.constraint, feats, decision.gpu_type)
    return decision._replace(warnings=tuple(decision.warnings) + found) if found else decision


def _spank_options(backend: SlurmClient) -> tuple[Any, ...]:
    """The site's SPANK plugin options, from ``sbatch --help`` (cached); none when sbatch cannot be asked."""
    from slurm_gpu.slurm.sbatch.table import spank_options_from_help

    try:
        backend.preflight()  # a missing SLURM_CONF: sbatch would retry for seconds; no plugin options
        return tuple(spank_options_from_help(backend.help_text()))
    except (SubmitError, OSError, AttributeError):
        return ()


def _user_and_groups(env: Mapping[str, str], with_groups: bool = True) -> tuple[str | None, tuple[str, ...]]:
    """The user's name and (``with_groups``) Unix group names. Each group is one name-service lookup
    (LDAP/sssd on a login node), so gpusub asks only when a policy class matches by group."""
    try:
        import pwd

        user = pwd.getpwuid(os.getuid()).pw_name
        if not with_groups:
            return user, ()
        import grp

        # the primary group too: getgroups() lists only the supplementary ones where none were set up
        groups = tuple(sorted({grp.getgrgid(g).gr_name for g in {os.getgid(), *os.getgroups()}}))
        return user, groups
    except (KeyError, ImportError):
        return env.get("USER"), ()


def _no_policy_decision(request: Any) -> Decision:
    from slurm_gpu.request import Decision

    ignored = [name for name, value in (("--gpu-fraction", request.gpu_fraction), ("--model-params",
                                        request.model_params)) if value is not None]
    warnings = tuple(f"{name} needs a site policy (--policy, $GPUSUB_POLICY or /etc/slurm-gpu/policy.yaml); "
                     "it was ignored" for name in ignored)
    return Decision(accepted=True, gpus=request.total_gpus, gpu_type=request.gpu_type,
                    partition=request.partition, qos=request.qos, warnings=warnings,
                    reasons=("no site policy: the job is submitted as sbatch would submit it",))


def prepare(argv: list[str], env: Mapping[str, str], backend: SlurmClient) -> Prepared:
    """Parse and decide; no files written, nothing submitted."""
    from slurm_gpu.slurm.sbatch.parse import parse_submission

    spelling = detect_spelling(env, backend)
    # parse as the detected sbatch does (its options, its conflicts); None when it could not be asked
    version = spelling.version[:2] if getattr(spelling, "detected", True) else None
    spank = _spank_options(backend)
    first = parse_submission(argv, env, None, version=version, spank_options=spank)
    for name in ("help", "usage", "version"):  # sbatch's early options, anywhere before the script
        if first.has(name):
            raise InfoRequested(name)
    script_text = None
    if first.gpusub.interactive:
        sub = _interactive_session(first, argv, env, version=version, spank_options=spank)
    elif first.script_path is not None:
        script_text = read_script(first.script_path)
        sub = parse_submission(argv, env, script_text, version=version, spank_options=spank)
    elif first.wrap is None and not _wants_only_info(first):
        # as sbatch: no script named and no --wrap, so the script is read from standard input
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError("no batch script given (usage: gpusub [OPTIONS] SCRIPT [ARGS]..., --wrap=CMD, "
                             "or the script on standard input)")
        script_text = read_script("-")
        sub = parse_submission(argv, env, script_text, version=version, spank_options=spank)
    else:
        sub = first
    if sub.gpusub.mig is not None or sub.gpusub.mps is not None:  # gpusub --mig / --mps
        sub = _with_sharing(sub, env)
    return decide(sub, spelling, script_text, env, backend)


def decide(sub: Submission, spelling: SlurmSpelling, script_text: str | None, env: Mapping[str, str],
           backend: SlurmClient, live: bool = False) -> Prepared:
    """The verdict and the plan of a parsed submission. The node records come from the per-user cache
    while fresh (slurm_gpu/adapters/node_cache.py; ``live``: read them from Slurm); a refusal decided on
    cached records is decided again on live ones, so a stale entry never refuses a job."""
    from slurm_gpu.slurm.sbatch.to_request import to_job_request

    path = policy_path(sub.gpusub.policy, env)
    policy = None
    if path is not None:
        from slurm_gpu.adapters.policy_cache import load_policy_cached

        policy = load_policy_cached(path)
    user, groups = _user_and_groups(env, policy is not None and any(c.match.groups for c in policy.classes))
    parts = len(sub.components) if getattr(sub, "components", ()) else 1
    requests = [to_job_request(sub, user=user, groups=groups, component=k) for k in range(parts)]
    request = requests[0]

    nodes = NodeView(None, False)
    if policy is None:
        decisions = [_no_policy_decision(r) for r in requests]
    else:
        nodes = node_inventory(env, backend, live=live)
        decisions = _classify(requests, policy, nodes.inventory, backend, user)
        if nodes.cached and not all(d.accepted for d in decisions):
            nodes = node_inventory(env, backend, live=True)  # never refuse on cached records alone
            decisions = _classify(requests, policy, nodes.inventory, backend, user)
    rejected = [d for d in decisions if not d.accepted]
    decision = rejected[0] if rejected else decisions[0]
    plan = None
    if decision.accepted and decision.gpus > 0 and policy is not None and parts == 1:
        given = frozenset(n for n, _ in sub.options) | frozenset(
            o.lstrip("-").partition("=")[0] for o in decision.added_options)
        plan = make_plan(request, decision, policy, spelling, sub.gpusub, given,
                         cpu_bind=env.get("GPUSUB_CPU_BIND"), env=env)
    if decision.accepted and policy is not None and request.constraint:
        decision = _with_constraint_warnings(decision, request, policy)
    return Prepared(sub, request, decision, plan, spelling, policy, script_text, tuple(decisions), nodes)


def _classify(requests: list[JobRequest], policy: Policy, inventory: Inventory | None, backend: SlurmClient,
              user: str | None) -> list[Decision]:
    """Each hetjob component on its own, then the job-level rules (slurm_gpu.policy.classifier.hetjob)."""
    from slurm_gpu import policy as policy_mod

    if inventory is not None and inventory.source == "cluster" and user and any(r.account for r in requests):
        inventory = inventory._replace(accounts=user_accounts(backend, user))
    return list(policy_mod.classify_job(requests, policy, inventory))


NODE_SOURCES = ("cluster", "policy", "off")  # $GPUSUB_NODES: where the classifier's node data comes from


def node_inventory(env: Mapping[str, str], backend: SlurmClient, live: bool = False) -> NodeView:
    """What the nodes offer, for the classifier's check_nodes step and type resolution: the live
    cluster's node records (``scontrol show node -d -o`` through the backend) when Slurm answers, else None
    (the policy's own nodes). The records are kept per SLURM_CONF for ``$GPUSUB_NODES_TTL`` seconds in
    the per-user cache (slurm_gpu/adapters/node_cache.py); ``live`` reads them from Slurm whatever the
    cache holds. ``GPUSUB_NODES=policy`` uses the policy's nodes without asking Slurm;
    ``GPUSUB_NODES=off`` decides without node data (what the policy alone would submit)."""
    from slurm_gpu.adapters import node_cache
    from slurm_gpu.policy.nodes import Inventory, records_inventory

    source = env.get("GPUSUB_NODES") or "cluster"
    if source not in NODE_SOURCES:
        raise UsageError(f"GPUSUB_NODES={source}: one of {', '.join(NODE_SOURCES)}")
    if source == "off":
        return NodeView(Inventory((), "off"), False)
    if source == "policy":
        return NodeView(None, False)
    read = getattr(backend, "nodes_text", None)  # a SlurmClient without it: no node data
    if read is None:
        return NodeView(None, False)
    cache_dir = getattr(backend, "cache_dir", None)
    reader = f"{type(backend).__name__}:{getattr(backend, 'scontrol', '')}"  # whose records an entry holds
    cached = None if live else node_cache.cached_offers(env, reader, cache_dir)
    if cached is not None:
        return NodeView(Inventory(cached, "cluster"), True)
    try:
        text = read()
    except (SubmitError, OSError, AttributeError, NotImplementedError, TypeError):
        return NodeView(None, False)
    from slurm_gpu.slurm.records import read_node_records

    nodes = read_node_records(text).nodes
    if not nodes:
        return NodeView(None, False)
    inventory = records_inventory(nodes)
    node_cache.store_offers(env, reader, inventory.nodes, cache_dir)
    return NodeView(inventory, False)


def user_accounts(backend: SlurmClient, user: str) -> frozenset[str] | None:
    """The user's Slurm accounts (sacctmgr), or None when accounting does not answer."""
    try:
        text = getattr(backend, "accounts_text")(user)  # noqa: B009
    except (SubmitError, OSError, AttributeError, NotImplementedError, TypeError):
        return None
    return frozenset(line.strip() for line in text.splitlines() if line.strip()) or None


def _with_sharing(sub: Any, env: Mapping[str, str]) -> Any:
    """The submission with the --mig/--mps token in its comment (slurm_gpu.submit.gpu_share)."""
    from slurm_gpu.submit.gpu_share import with_sharing

    path = policy_path(sub.gpusub.policy, env)
    policy = None
    if path is not None:
        from slurm_gpu.adapters.policy_cache import load_policy_cached

        policy = load_policy_cached(path)
    return with_sharing(sub, policy)


INTERACTIVE_ONLY_EXPLAIN = ("--interactive goes only with --explain [--json]: it predicts how salloc/srun would "
                            "classify a session with these options; gpusub submits batch jobs only")


def _interactive_session(first: Any, argv: list[str], env: Mapping[str, str], **parse_kw: Any) -> Any:
    """``--interactive``: the submission as a salloc/srun session. Only with --explain (nothing can be
    submitted); a trailing command is salloc's/srun's, not a batch script, so it is not read; sbatch's
    ``SBATCH_*`` variables do not apply (salloc and srun read their own, which gpusub does not)."""
    if not first.gpusub.explain:
        raise UsageError(INTERACTIVE_ONLY_EXPLAIN)
    if first.wrap is not None:
        raise UsageError("--interactive: --wrap is sbatch's; salloc and srun take the command itself")
    if not any(k.startswith("SBATCH_") for k in env):
        return first
    from slurm_gpu.slurm.sbatch.parse import parse_submission

    return parse_submission(argv, {k: v for k, v in env.items() if not k.startswith("SBATCH_")}, None, **parse_kw)


def _wants_only_info(sub: Any) -> bool:
    return bool(sub.gpusub.explain)


# ---- topology + plan -------------------------------------------------------------------------

def node_types_for(policy: Any, decision: Any) -> list[Any]:
    """Node types the decision can land on: in the chosen partition, with the chosen GPU type."""
    part = policy.partition(decision.partition) if decision.partition else None
    names = part.node_types if part is not None and part.node_types else tuple(nt.name for nt in policy.node_types)
    out = []
    for name in names:
        nt = policy.node_type(name)
        if nt is None or not nt.gpu_type or nt.gpus <= 0:
            continue
        if decision.gpu_type and nt.gpu_type != decision.gpu_type:
            continue
        out.append(nt)
    return out


def _topology_key(path: str) -> str:
    """The descriptor and every file beside it (the captures it names), by path, size and mtime."""
    folder = os.path.dirname(os.path.abspath(path)) or "."
    parts = [os.path.abspath(path)]
    try:
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.is_file():
                st = entry.stat()
                parts.append(f"{entry.name}:{st.st_size}:{st.st_mtime_ns}")
    except OSError:  # no such folder (or it went away): no entry matches; reading the file says why
        parts.append("-")
    return "|".join(parts)


def load_layout(node_type: Any, env: Mapping[str, str]) -> NodeLayout:
    """A node type's NodeLayout from its topology file, through a small JSON cache (so that gpusub
    does not import the parsers and YAML on every submission)."""
    import json

    from slurm_gpu.adapters.cache import entry_name, user_cache
    from slurm_gpu.placement.plan import NodeLayout, node_layout
    from slurm_gpu.plain import blake2b

    # keyed by the node names themselves: compressing them to a hostlist needs the hostlist library,
    # which a cache hit then does not import
    names = blake2b(",".join(node_type.nodes).encode(), digest_size=32).hexdigest()
    key = f"{_topology_key(node_type.topology)}|{node_type.name}|{names}"
    cache = user_cache(env)
    entry = entry_name(f"layout-{node_type.name}", os.path.abspath(node_type.topology), node_type.name) + ".json"
    raw = cache.get(entry, key)
    try:
        hit = json.loads(raw) if raw is not None else None
    except ValueError:
        hit = None
    if hit is not None:
        try:
            return NodeLayout(name=hit["name"], nodes=hit["nodes"],
                              gpu_sockets=tuple(tuple(x) for x in hit["gpu_sockets"]),
                              socket_gpus=tuple((s, tuple(g)) for s, g in hit["socket_gpus"]),
                              local_cores_per_gpu=hit["local_cores_per_gpu"],
                              cores_per_socket=hit["cores_per_socket"], sockets=hit["sockets"])
        except (KeyError, TypeError, ValueError):
            pass
    from slurm_gpu.hostlist import compress_hostlist
    from slurm_gpu.topology import load_topology_file

    hosts = compress_hostlist(list(node_type.nodes)) if node_type.nodes else ""
    try:
        layout = node_layout(load_topology_file(node_type.topology), node_type.name, hosts)
    except (OSError, TopologyError) as exc:
        raise PolicyError(f"node type {node_type.name}: topology {node_type.topology}: {exc}") from None
    cache.put(entry, key, json.dumps({
        "name": layout.name, "nodes": layout.nodes, "gpu_sockets": layout.gpu_sockets,
        "socket_gpus": layout.socket_gpus, "local_cores_per_gpu": layout.local_cores_per_gpu,
        "cores_per_socket": layout.cores_per_socket, "sockets": layout.sockets}).encode())  # best effort
    return layout


def make_plan(request: Any, decision: Any, policy: Any, spelling: Any, gpusub_opts: GpusubOptions,
              given: frozenset[str] = frozenset(), cpu_bind: str | None = None,
              env: Mapping[str, str] | None = None) -> BindingPlan | None:
    from slurm_gpu.placement.plan import plan_binding

    candidates = node_types_for(policy, decision)
    if not candidates:
        return None
    layouts = [load_layout(nt, env or {}) for nt in candidates]
    # the partition's DefCpuPerGPU is the least over all of its GPU node types (emit.slurm_conf.job_defaults)
    part = policy.partition(decision.partition) if decision.partition else None
    names = part.node_types if part is not None and part.node_types else tuple(nt.name for nt in policy.node_types)
    in_partition = [nt for nt in (policy.node_type(n) for n in names) if nt is not None and nt.gpus > 0]
    partition_layouts = [load_layout(nt, env or {}) for nt in in_partition] or layouts
    return plan_binding(request, decision, spelling, layouts, launch=gpusub_opts.launch,
                        isolation=gpusub_opts.gpu_isolation or "shared",
                        defaults=getattr(policy, "defaults", None), given=given, cpu_bind=cpu_bind or "cores",
                        partition_layouts=partition_layouts)


# ---- outputs ---------------------------------------------------------------------------------

def checkpoint_settings(prep: Prepared) -> CheckpointSettings | None:
    """The checkpoint protocol's settings (None when it is off): the job's markers are read on its start
    and stop by this interpreter, importing slurm_gpu from where this gpusub runs it."""
    from slurm_gpu.render.checkpoint import settings_for

    library = os.path.dirname(os.path.dirname(os.path.abspath(sys.modules["slurm_gpu"].__file__ or "")))
    return settings_for(prep.submission.gpusub, prep.policy, prep.decision, python=sys.executable or "",
                        library=library)


def checkpoint_warnings(prep: Prepared, settings: CheckpointSettings | None, cwd: str | None = None) -> list[str]:
    """The protocol's warnings; ``cwd``: where gpusub runs (the job's work directory unless -D names
    another), whose earlier jobs' markers tell how long a checkpoint takes."""
    from slurm_gpu.render.checkpoint import user_lead, warnings_for

    if not settings:
        return []
    workdir = next((v for k, v in reversed(prep.submission.options) if k == "chdir" and v), None)
    recorded = None
    if cwd is not None:
        recorded = recorded_checkpoint_cost(os.path.join(cwd, workdir) if workdir else cwd)
    return warnings_for(settings, user_lead(prep.submission.options) or settings.lead_s, recorded)


MAX_CKPT_JOBS_SCANNED = 4096  # entries of .gpusub-ckpt looked at
CKPT_JOBS_READ = 3  # the newest job directories whose markers are read


def recorded_checkpoint_cost(workdir: str) -> tuple[float, str] | None:
    """The longest checkpoint (markers' cost_s) of the newest earlier job in ``workdir/.gpusub-ckpt``
    that recorded one, with its job id; None when there is none. Only the user's own directories and
    files, no symlink followed (adapters/markers.py), a bounded scan; never raises."""
    from slurm_gpu.adapters import markers as store

    base = os.path.join(workdir, ".gpusub-ckpt")
    try:
        if not stat.S_ISDIR(os.lstat(base).st_mode):
            return None
        ids: list[int] = []
        with os.scandir(base) as it:
            for n, entry in enumerate(it):
                if n >= MAX_CKPT_JOBS_SCANNED:
                    break
                if is_digits(entry.name) and len(entry.name) <= 12 and entry.is_dir(follow_symlinks=False):
                    ids.append(int(entry.name))
        for job in sorted(ids, reverse=True)[:CKPT_JOBS_READ]:
            listing = store.read_markers(os.path.join(base, str(job)), expected_uid=os.getuid(),
                                         warn=lambda _text: None)
            costs = [m.cost_s for m in listing.markers if m.cost_s is not None]
            if costs:
                return max(costs), str(job)
    except (OSError, ValueError):
        return None
    return None


def render_prepared(prep: Prepared, env: Mapping[str, str] | None = None,
                    checkpoint: CheckpointSettings | None = None) -> RenderedScript:
    """The rendered job; ``env``: the submitter's environment (its ``SBATCH_*`` inputs, render_script);
    ``checkpoint``: the protocol's settings (checkpoint_settings) or None."""
    from slurm_gpu.render.script import payload_of, render_script

    return render_script(prep.submission, prep.decision, prep.plan, prep.spelling,
                         payload_of(prep.submission, prep.script_text),
                         component_decisions=prep.component_decisions, checkpoint=checkpoint, submit_env=env)


def write_rendered(text: str, env: Mapping[str, str]) -> str:
    """The rendered script in a private temporary file (removed by the caller once sbatch has read it:
    the job carries its own payload, so nothing needs to stay behind)."""
    from slurm_gpu.adapters.fs import create_private

    return create_private(env.get("TMPDIR") or "/tmp", "gpusub.", ".sh",
                          text.encode("utf-8", "surrogateescape"))


def all_warnings(prep: Prepared) -> list[str]:
    """Every policy and binding warning, once each, in order."""
    seen: list[str] = []
    for w in list(prep.decision.warnings) + list(getattr(prep.plan, "warnings", ()) or ()):
        if w not in seen:
            seen.append(w)
    return seen


def sbatch_options_of(rendered: Any) -> list[str]:
    """The sbatch options of a rendered job, without a leading ``sbatch`` or trailing script/args."""
    argv = list(rendered.sbatch_argv)
    if argv and os.path.basename(argv[0]) == "sbatch":
        argv = argv[1:]
    return argv


def explain_payload(prep: Prepared) -> dict[str, Any]:
    data = prep.decision.to_json()
    data["warnings"] = all_warnings(prep)
    data["binding"] = prep.plan.to_json() if prep.plan is not None else None
    data["slurm_version"] = prep.spelling.label
    if len(prep.component_decisions) > 1:  # a hetjob: each component's own decision, in order
        data["components"] = [d.to_json() for d in prep.component_decisions]
    return data


def explain_text(prep: Prepared) -> list[str]:
    lines: list[str] = []
    try:
        from slurm_gpu.policy import explain_lines

        parts = prep.component_decisions
        if len(parts) > 1:  # a hetjob: the job's verdict, then each component's own decision
            d = prep.decision
            lines.append(f"accepted: a heterogeneous job of {len(parts)} components" if d.accepted else
                         f"rejected: {d.message}")
            if not d.accepted and d.fix:
                lines.append(f"fix: {d.fix}")
            for k, part in enumerate(parts):
                lines.append(f"hetjob component {k}:")
                lines.extend(f"  {line}" for line in explain_lines(part))
        else:
            lines.extend(explain_lines(prep.decision))
    except ImportError:
        d = prep.decision
        lines.append(f"{'accepted' if d.accepted else 'REJECTED'}: partition={d.partition} qos={d.qos} gres={d.gres}")
        lines.extend(f"  - {r}" for r in d.reasons)
    if prep.plan is not None:
        lines.append("binding plan:")
        lines.extend(f"  {line}" for line in prep.plan.explanation)
        if prep.plan.sbatch_options:
            lines.append("  sbatch: " + " ".join(prep.plan.sbatch_options))
        if prep.plan.srun_options:
            lines.append("  srun:   " + " ".join(prep.plan.srun_options))
        if prep.plan.env:
            lines.append("  env:    " + " ".join(f"{k}={v}" for k, v in prep.plan.env))
    elif prep.decision.accepted and len(prep.component_decisions) > 1:
        lines.append("binding plan: none (a heterogeneous job: its steps choose with srun --het-group)")
    elif prep.decision.accepted and prep.decision.gpus == 0:
        lines.append("binding plan: none (no GPUs requested)")
    return lines


def _dumps(data: Any) -> str:
    import json

    return json.dumps(data, sort_keys=False)


# ---- the command -----------------------------------------------------------------------------

def make_backend(env: Mapping[str, str]) -> SbatchCli:
    from slurm_gpu.adapters.slurm import DEFAULT_TIMEOUT_S, SbatchCli

    raw = env.get("GPUSUB_TIMEOUT_S")
    try:
        if raw and not raw.isascii():  # float() reads other scripts' digits
            raise ValueError
        timeout_s = float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        raise UsageError(f"GPUSUB_TIMEOUT_S={raw}: not a number of seconds (e.g. 15)") from None
    return SbatchCli(timeout_s=timeout_s, env=env)


def submitted_line(sub: Any, result: Any) -> str:
    """What sbatch prints for a submitted job (src/sbatch/sbatch.c): nothing with --quiet, the bare id
    (``id;cluster``) with --parsable, else ``Submitted batch job ID[ on cluster C]``."""
    if sub.has("quiet"):
        return ""
    if sub.has("parsable"):
        return f"{result.job_id}" + (f";{result.cluster}" if result.cluster else "") + "\n"
    return f"Submitted batch job {result.job_id}" + (f" on cluster {result.cluster}" if result.cluster else "") + "\n"


def _json_record(prep: Prepared, job_id: Any) -> dict[str, Any]:
    return {"job_id": job_id, "partition": prep.decision.partition, "qos": prep.decision.qos,
            "gres": prep.decision.gres, "binding": prep.plan.to_json() if prep.plan is not None else None,
            "warnings": all_warnings(prep)}


def _refuse_rejected(prep: Prepared) -> None:
    if not prep.decision.accepted:
        fix = f" ({prep.decision.fix})" if getattr(prep.decision, "fix", None) else ""
        raise Rejected(f"rejected by policy: {prep.decision.message}{fix}")


def _send(backend: SlurmClient, text: str, options: list[str], env: Mapping[str, str],
          test_only: bool) -> SubmitResult | TestOnlyResult:
    """The rendered job to sbatch (``--test-only``: Slurm's verdict only) through a private temporary file."""
    try:
        script = write_rendered(text, env)
    except OSError as exc:
        raise SubmitError(f"cannot write the job script to a temporary file: {exc.strerror or exc} "
                          "(set TMPDIR to a writable directory)") from None
    try:
        if test_only:
            return backend.test_only(options, script, [])
        # --quiet would hide the job id from us too: gpusub honours it when printing (submitted_line)
        return backend.submit([o for o in options if o != "--quiet"], script, [])
    finally:
        try:
            os.unlink(script)
        except OSError:
            pass


def _decided_live(prep: Prepared, env: Mapping[str, str], backend: SlurmClient) -> Prepared | None:
    """``prep`` decided again on live node records, when it was decided on cached ones that differ from
    them; else None (the cache was not the cause)."""
    if prep.nodes is None or not prep.nodes.cached or prep.nodes.inventory is None:
        return None
    live = node_inventory(env, backend, live=True)
    if live.inventory is not None and live.inventory.nodes == prep.nodes.inventory.nodes:
        return None
    return decide(prep.submission, prep.spelling, prep.script_text, env, backend, live=True)


def run(argv: list[str], env: Mapping[str, str], out: IO[str], err: IO[str],
        backend: SlurmClient | None = None) -> int:
    """gpusub: returns the exit code; raises SlurmGpuError subclasses for the CLI to report."""
    backend = backend if backend is not None else make_backend(env)
    try:
        prep = prepare(argv, env, backend)
    except InfoRequested as info:
        from slurm_gpu import __version__
        from slurm_gpu.submit.usage import HELP_TEXT

        out.write(f"gpusub, version {__version__}\n" if str(info) == "version" else HELP_TEXT)
        return 0
    opts = prep.submission.gpusub
    as_json = bool(opts.json)

    if opts.explain:
        if as_json:
            out.write(_dumps(explain_payload(prep)) + "\n")
        else:
            out.write("\n".join(explain_text(prep)) + "\n")
        return 0 if prep.decision.accepted else 1

    _refuse_rejected(prep)
    ckpt = checkpoint_settings(prep)
    for warning in all_warnings(prep) + checkpoint_warnings(prep, ckpt, os.getcwd()):
        err.write(f"gpusub: warning: {warning}\n")

    rendered = render_prepared(prep, env, ckpt)
    options = sbatch_options_of(rendered)
    if opts.dry_run:
        # exactly the file that would be submitted on stdout; the sbatch command line on stderr
        from shlex import join

        argv_out = ["sbatch", "--parsable", *options, "<this script>"]
        if as_json:
            out.write(_dumps({"script": rendered.text, "sbatch_argv": argv_out, **explain_payload(prep)}) + "\n")
        else:
            out.write(rendered.text)
            err.write("gpusub: dry run; would submit with: " + join(argv_out) + "\n")
        return 0

    try:
        sent = _send(backend, rendered.text, options, env, bool(opts.test_only))
    except SlurmRefused:
        # Slurm refused (nothing was created) a job decided on cached node records: decide again on live ones, and send
        # again only if they differ (a stale entry must not cost a job that Slurm would take)
        again = _decided_live(prep, env, backend)
        if again is None:
            raise
        prep = again
        _refuse_rejected(prep)
        for warning in all_warnings(prep):
            err.write(f"gpusub: warning: {warning}\n")
        ckpt = checkpoint_settings(prep)
        rendered = render_prepared(prep, env, ckpt)
        sent = _send(backend, rendered.text, sbatch_options_of(rendered), env, bool(opts.test_only))
    from slurm_gpu.slurm.records import TestOnlyResult  # the backend has imported it already

    if isinstance(sent, TestOnlyResult):
        test = sent
        if as_json:
            out.write(_dumps({"job_id": test.job_id, "start": test.start, "processors": test.processors,
                              "nodes": test.nodes, "partition": test.partition,
                              "preempts": list(test.preempts)}) + "\n")
        else:
            out.write(f"{test.message}\n" + (f"Preempts: {','.join(map(str, test.preempts))}\n"
                                              if test.preempts else ""))
        return 0
    result = sent
    if result.messages:  # sbatch's own warnings and the site's job_submit messages reach the user, as with sbatch
        err.write(result.messages if result.messages.endswith("\n") else result.messages + "\n")
    if as_json:
        out.write(_dumps(_json_record(prep, result.job_id)) + "\n")
    else:
        out.write(submitted_line(prep.submission, result))
    out.flush()
    if opts.wait:
        import gc

        from slurm_gpu.submit.follow import follow_job

        gc.enable()  # the CLI runs without the cyclic collector; following a job can take days
        return follow_job(backend, result.job_id, err)
    return 0


__all__ = ["run", "prepare", "Prepared", "UsageError", "Rejected", "exit_code_for", "policy_path",
           "node_types_for", "make_plan", "explain_payload", "explain_text"]
