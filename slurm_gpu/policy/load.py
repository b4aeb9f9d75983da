# SPDX-License-Identifier: Apache-2.0
"""Entry points: load_policy (raise on problems) and check_policy (problems + warnings)."""

from __future__ import annotations

from slurm_gpu.errors import PolicyError
from slurm_gpu.plain import Record, record
from slurm_gpu.policy.model import Policy


@record
class CheckResult(Record):
    policy: Policy | None
    errors: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.policy is not None and not self.errors


def check_policy(path: str, lint: bool = True) -> CheckResult:
    """Validate a policy file and its includes; every problem is collected, none raised."""
    from slurm_gpu.policy.build import check_and_build
    from slurm_gpu.policy.validate import Context, load_file

    ctx = Context()
    load_file(ctx, str(path), ())
    had_problems = bool(ctx.problems)
    try:  # cross-reference checks run even after field errors, so every problem is reported at once
        policy = check_and_build(ctx, str(path))
    except Exception:  # noqa: BLE001 - a half-converted model may trip a cross check; field errors stand
        policy = None
    if had_problems:
        policy = None
    warnings = list(ctx.warnings)
    if policy is not None and lint:
        from slurm_gpu.policy.lint import lint_policy

        warnings.extend(lint_policy(policy, ctx))
    return CheckResult(policy, tuple(ctx.problems), tuple(warnings))


def load_policy(path: str) -> Policy:
    """Load and validate a policy. Raises PolicyError listing every ``file:line:col`` problem."""
    result = check_policy(path, lint=False)
    if result.policy is None:
        raise PolicyError(list(result.errors) or [f"{path}: invalid policy"])
    return result.policy
