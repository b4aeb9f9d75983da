# SPDX-License-Identifier: Apache-2.0
"""GPU health, pure: readings of one GPU -> the real failures among them (each a drain reason), and the
kernel log's Xid lines -> the Xids of a job's GPUs during the job.

Only hardware faults count. ``None`` in a reading means "not supported / not readable" and is never a
failure: a missing driver, a permission problem or an older GPU must not drain a node.
"""

from __future__ import annotations

from slurm_gpu.digits import ascii_int

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a hook starts for every job)
if TYPE_CHECKING:
    from collections.abc import Iterable


class Reading:
    """One GPU's health counters as NVML gave them (None: not supported or not readable)."""

    __slots__ = ("label", "lost", "ecc_volatile_uncorrected", "retired_pending", "remap_pending",
                 "remap_failure")

    def __init__(self, label: str, lost: bool = False, ecc_volatile_uncorrected: int | None = None,
                 retired_pending: bool | None = None, remap_pending: bool | None = None,
                 remap_failure: bool | None = None) -> None:
        self.label, self.lost = label, lost
        self.ecc_volatile_uncorrected = ecc_volatile_uncorrected
        self.retired_pending = retired_pending
        self.remap_pending, self.remap_failure = remap_pending, remap_failure


def judge(r: Reading) -> list[str]:
    """The real failures of one GPU (empty: healthy as far as NVML tells)."""
    if r.lost:
        return [f"{r.label} lost (fallen off the bus / NVML GPU_IS_LOST)"]
    out = []
    if r.ecc_volatile_uncorrected:
        out.append(f"{r.label} {r.ecc_volatile_uncorrected} uncorrectable ECC error(s) since driver load")
    if r.retired_pending:
        out.append(f"{r.label} retired pages pending (GPU reset needed)")
    if r.remap_failure:
        out.append(f"{r.label} row remapping failed")
    elif r.remap_pending:
        out.append(f"{r.label} row remap pending (GPU reset needed)")
    return out


class Xid:
    """One ``NVRM: Xid (PCI:0000:53:00): 79, pid=..., name=..., ...`` kernel log record."""

    __slots__ = ("ts_us", "bus", "code", "text")

    def __init__(self, ts_us: int, bus: str, code: int, text: str) -> None:
        self.ts_us, self.bus, self.code, self.text = ts_us, bus, code, text


def bus_key(bus_id: str) -> str:
    """``00000000:53:00.0`` / ``0000:53:00`` -> ``0000:53:00`` (domain:bus:device, lower case), the form
    the driver prints in Xid lines."""
    parts = bus_id.strip().lower().split(":")
    if len(parts) != 3:
        return bus_id.strip().lower()
    dom, bus, dev = parts
    return f"{dom[-4:].rjust(4, '0')}:{bus.rjust(2, '0')}:{dev.split('.')[0].rjust(2, '0')}"


def parse_kmsg(record: str) -> Xid | None:
    """One /dev/kmsg record (``prio,seq,usec,flags;message``) -> Xid, or None for anything else."""
    head, semi, msg = record.partition(";")
    if not semi or "NVRM: Xid (" not in msg:
        return None
    fields = head.split(",")
    if len(fields) < 3:
        return None
    rest = msg.split("NVRM: Xid (", 1)[1]
    where, close, after = rest.partition("):")
    if not close:
        return None
    bus = where[4:] if where.upper().startswith("PCI:") else where
    code = ascii_int(after.strip().split(",", 1)[0].strip(), max_len=6)
    usec = ascii_int(fields[2])
    if code is None or usec is None:
        return None
    return Xid(usec, bus_key(bus), code, msg.strip()[:300])


def job_xids(records: Iterable[str], buses: Iterable[str], since_us: int) -> list[Xid]:
    """The Xids of the given GPUs (PCI bus ids) logged at or after ``since_us`` (kernel monotonic µs)."""
    want = {bus_key(b) for b in buses if b}
    out = []
    for rec in records:
        x = parse_kmsg(rec)
        if x is not None and x.bus in want and x.ts_us >= since_us:
            out.append(x)
    return out


def xid_failures(xids: Iterable[Xid], drain_codes: Iterable[int], label_of: dict[str, str]) -> tuple[
        list[str], list[str]]:
    """(drain reasons, log-only notes) for the Xids seen during a job."""
    codes = set(drain_codes)
    fail: dict[str, None] = {}
    notes: dict[str, None] = {}
    for x in xids:
        text = f"{label_of.get(x.bus, x.bus)} Xid {x.code} during the job"
        (fail if x.code in codes else notes)[text] = None
    return list(fail), list(notes)


def _job_dir(part: str) -> int | None:
    return ascii_int(part[4:], max_len=10) if part.startswith("job_") else None


def job_of_cgroup(text: str) -> int | None:
    """The Slurm job a process belongs to, from /proc/<pid>/cgroup; None when it is in no job's cgroup.
    Only where slurmstepd puts a job, at the top of the hierarchy, where only root creates cgroups:
    cgroup v2 ``0::/system.slice/[<node>_]slurmstepd.scope/job_J/...``, v1
    ``N:controller:/slurm[_<node>]/uid_U/job_J/...``. A ``job_J`` further down (a user's own delegated
    subtree, ``/user.slice/.../user@U.service/x/job_J``) is no job."""
    for line in text.splitlines():
        parts = line.split(":", 2)[-1].split("/")[1:4]
        if len(parts) < 3:
            continue
        top, middle, job = parts
        v2 = top == "system.slice" and middle.endswith("slurmstepd.scope")
        v1 = (top == "slurm" or top.startswith("slurm_")) and middle.startswith("uid_") and \
            ascii_int(middle[4:], max_len=10) is not None
        if v1 or v2:
            found = _job_dir(job)
            if found is not None:
                return found
    return None


def job_of_environ(data: bytes) -> int | None:
    """The job that /proc/<pid>/environ's ``SLURM_JOB_ID`` names; None if absent. Anyone can set it:
    a claim, never proof (the Epilog believes it only for a job running here on that GPU)."""
    for item in data.split(b"\0"):
        if item.startswith(b"SLURM_JOB_ID="):
            return ascii_int(item[13:], max_len=10)
    return None
