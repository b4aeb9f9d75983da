# SPDX-License-Identifier: Apache-2.0
"""What a callable's ``checkpoint()`` returns: the call to run on the next start (submitit's
``DelayedSubmission``), pure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Generic, TypeVar

from slurm_gpu.plain import Record, record

R = TypeVar("R")


@record
class Resubmission(Record, Generic[R]):
    """``fn(*args, **kwargs)`` to run when the job is requeued."""

    fn: Callable[..., R]
    args: tuple[object, ...] = ()
    kwargs: dict[str, object] = field(default_factory=dict)

    @classmethod
    def of(cls, fn: Callable[..., R], *args: object, **kwargs: object) -> Resubmission[R]:
        return cls(fn, tuple(args), dict(kwargs))


__all__ = ["Resubmission"]
