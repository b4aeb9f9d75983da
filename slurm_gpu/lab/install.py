# SPDX-License-Identifier: Apache-2.0
"""Install the Debian packages the lab needs (only what is missing; daemons are not auto-started)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable

CORE_PACKAGES = ("munge", "slurmctld", "slurmd", "slurm-client", "slurm-wlm-basic-plugins")
# slurmdbd pulls its MySQL plugin; mariadb-server pulls the `mariadb` client (Debian 12 and 13)
ACCOUNTING_PACKAGES = ("slurmdbd", "mariadb-server")
# the tests compile a stand-in libnvidia-ml.so.1 (tests/nvml_standin, docs/nvml_standin.md); the lab and
# its demo run without it (the node hooks then see no driver, slurm_gpu/lab/nodehooks.py)
BUILD_PACKAGES = ("gcc", "libc6-dev")
# the HTML report is opened in the distribution's headless chromium (tests/cluster/test_report_html.py)
BROWSER_PACKAGES = ("chromium-headless-shell",)
# Each line is one `A + B` of tuples: CI tooling that prefetches the packages reads them with a small AST reader.
TEST_PACKAGES = BUILD_PACKAGES + BROWSER_PACKAGES
TOOL_PACKAGES = ACCOUNTING_PACKAGES + TEST_PACKAGES
PACKAGES = CORE_PACKAGES + TOOL_PACKAGES
# The package sets by purpose: `lab up` installs "demo" (the lab itself: what `make demo` needs);
# `lab up --packages demo,test,browser` (what `make test` runs) adds the test-only ones.
PACKAGE_SETS: dict[str, tuple[str, ...]] = {
    "demo": CORE_PACKAGES + ACCOUNTING_PACKAGES,
    "test": BUILD_PACKAGES,
    "browser": BROWSER_PACKAGES,
}
DEFAULT_SETS = ("demo",)
POLICY_RC_D = "/usr/sbin/policy-rc.d"


def missing_packages(packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Packages from ``packages`` that dpkg does not list as installed."""
    missing = []
    for pkg in packages:
        r = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True, timeout=30, check=False
        )
        if "install ok installed" not in r.stdout:
            missing.append(pkg)
    return missing


def packages_of(sets: tuple[str, ...]) -> tuple[str, ...]:
    """The packages of the named sets (PACKAGE_SETS), in table order, each once; SlurmGpuError names an
    unknown set."""
    unknown = [s for s in sets if s not in PACKAGE_SETS]
    if unknown:
        from slurm_gpu.errors import SlurmGpuError

        raise SlurmGpuError(f"unknown package set {', '.join(unknown)} (known: {', '.join(PACKAGE_SETS)})")
    return tuple(dict.fromkeys(p for name, pkgs in PACKAGE_SETS.items() if name in sets for p in pkgs))


def ensure_packages(log_path: str, say: Callable[[str], None] = print, sets: tuple[str, ...] = DEFAULT_SETS) -> float:
    """apt-get install what is missing of the package ``sets``; returns seconds spent (0.0 when nothing
    was missing)."""
    missing = missing_packages(packages_of(sets))
    if not missing:
        return 0.0
    t0 = time.monotonic()
    made_policy = False
    if not os.path.exists(POLICY_RC_D):  # no daemon autostart from package scripts
        with open(POLICY_RC_D, "w") as f:
            f.write("#!/bin/sh\nexit 101\n")
        os.chmod(POLICY_RC_D, 0o755)
        made_policy = True
    say(f"installing packages: {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        with open(log_path, "a") as log:
            for argv, limit_s in (
                (["apt-get", "update", "-q"], 300),
                (["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing], 900),
            ):
                r = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=limit_s, check=False)
                if r.returncode != 0:
                    from slurm_gpu.errors import SlurmGpuError

                    raise SlurmGpuError(f"{' '.join(argv[:2])} failed (exit {r.returncode}); see {log_path}")
    finally:
        if made_policy:
            os.unlink(POLICY_RC_D)
    return time.monotonic() - t0
