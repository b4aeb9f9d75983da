# SPDX-License-Identifier: Apache-2.0
"""Human text for ``gpusub --explain``."""

from __future__ import annotations

from slurm_gpu.request import Decision


def explain_lines(decision: Decision) -> list[str]:
    """The decision as short lines: verdict, placement, added options, warnings, then every reason."""
    d = decision
    if d.accepted:
        lines = [f"accepted: class {d.job_class or '(none)'}, partition {d.partition or '(default)'}, "
                 f"qos {d.qos or '(default)'}, "
                 f"gres {d.gres or '(none)'}"]
        if d.added_options:
            lines.append("options added: " + " ".join(d.added_options))
    else:
        lines = [f"rejected: {d.message}"]
        if d.fix:
            lines.append(f"fix: {d.fix}")
    lines.extend(f"warning: {w}" for w in d.warnings)
    if d.reasons:
        lines.append("why:")
        lines.extend(f"  {i}. {r}" for i, r in enumerate(d.reasons, 1))
    return lines
