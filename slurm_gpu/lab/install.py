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
# the stand-in libnvidia-ml.so.1 is compiled (tests/nvml_standin, docs/nvml_standin.md): the lab's static-MIG
# node a100mig1 has its slices detected by Slurm's gpu/nvml over it, and the tests use it. Without a compiler
# the lab still runs (that node then reads the emitted gres.conf lines; the node hooks see no driver)
BUILD_PACKAGES = ("gcc", "libc6-dev")
# the HTML report is opened in the distribution's headless chromium (tests/cluster/test_report_html.py)
BROWSER_PACKAGES = ("chromium-headless-shell",)
# Each line is one `A + B` of tuples: CI tooling that prefetches the packages reads them with a small AST reader.
TEST_PACKAGES = BUILD_PACKAGES + BROWSER_PACKAGES
TOOL_PACKAGES = ACCOUNTING_PACKAGES + TEST_PACKAGES
PACKAGES = CORE_PACKAGES + TOOL_PACKAGES
# The package sets by purpose: `lab up` installs "demo" (the lab itself: what `make demo` needs, the
# stand-in's compiler included); `lab up --packages demo,test,browser` (what `make test` runs) adds the rest.
PACKAGE_SETS: dict[str, tuple[str, ...]] = {
    "demo": CORE_PACKAGES + ACCOUNTING_PACKAGES + BUILD_PACKAGES,
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


# Slurm's NVML GPU plugin (gpu_nvml.so) is in Debian's `contrib` component (package slurm-wlm-nvml-plugin,
# source slurm-wlm-contrib), which the machines here do not enable. Its Depends cannot be met as they are:
# libnvidia-ml1 is non-free (the lab serves the stand-in libnvidia-ml.so.1 instead), and on Debian 12 it
# pins slurm-wlm-basic-plugins (= 22.05.8-4+deb12u2) while main has 22.05.8-4+deb12u3. The plugin is built
# from the same upstream 22.05.8 and slurmd only loads a plugin whose plugin_version equals its own
# SLURM_VERSION_NUMBER (major.minor.micro; src/common/plugin.c plugin_peek), so the lab takes the one file:
# `apt-get download` of the contrib package whose upstream version equals the installed slurmd's, through a
# private sources list (nothing in /etc/apt changes, dpkg never sees it), and `dpkg-deb -x` of gpu_nvml.so
# alone into NVML_PLUGIN_ROOT/<package version>/. slurm.conf's PluginDir names that directory after the
# distribution's own (docs/lab.md "Slurm's NVML plugin").
NVML_PLUGIN_PACKAGE = "slurm-wlm-nvml-plugin"
NVML_PLUGIN_FILE = "gpu_nvml.so"
NVML_PLUGIN_ROOT = "/var/lib/slurm-gpu/nvml-plugin"


def installed_version(package: str) -> str | None:
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True,
                       timeout=30, check=False)
    return r.stdout.strip() or None if r.returncode == 0 else None


def upstream(version: str) -> str:
    """Debian version -> upstream version: ``22.05.8-4+deb12u3`` -> ``22.05.8`` (epoch dropped)."""
    return version.split(":", 1)[-1].rsplit("-", 1)[0]


def system_plugin_dir() -> str | None:
    """Where the distribution's Slurm plugins are (the directory of gres_gpu.so)."""
    import glob

    found = sorted(glob.glob("/usr/lib/*/slurm-wlm/gres_gpu.so")) + sorted(glob.glob("/usr/lib/slurm-wlm/gres_gpu.so"))
    return os.path.dirname(found[0]) if found else None


def contrib_sources(main_sources: list[tuple[str, str]]) -> str:
    """One-line apt sources for the ``contrib`` component of the given (URI, suite) entries."""
    return "".join(f"deb {uri} {suite} contrib\n" for uri, suite in main_sources)


def debian_sources() -> list[tuple[str, str]]:
    """(URI, suite) of the enabled ``deb`` entries with component ``main`` in /etc/apt/sources.list{,.d}."""
    import glob

    out: list[tuple[str, str]] = []
    for path in ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*.list"))]:
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for line in lines:
            words = line.split("#", 1)[0].split()
            if words[:1] == ["deb"]:
                words = [w for w in words[1:] if not w.startswith("[")]
                if len(words) >= 3 and "main" in words[2:]:
                    out.append((words[0], words[1]))
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        try:
            with open(path, encoding="utf-8") as f:
                stanzas = f.read().split("\n\n")
        except OSError:
            continue
        for stanza in stanzas:
            fields: dict[str, str] = {}
            for line in stanza.splitlines():
                key, sep, value = line.partition(":")
                if sep and not line.startswith((" ", "#")):
                    fields[key.strip().lower()] = value.strip()
            if ("deb" in fields.get("types", "").split() and fields.get("enabled", "yes") != "no"
                    and "main" in fields.get("components", "").split()):
                out += [(u, s) for u in fields.get("uris", "").split() for s in fields.get("suites", "").split()]
    codename = os_codename()
    return list(dict.fromkeys((u, s) for u, s in out if not codename or s.split("-")[0] == codename))


def os_codename() -> str:
    """VERSION_CODENAME of /etc/os-release (bookworm, trixie), "" when unknown."""
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return ""
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key == "VERSION_CODENAME":
            return value.strip().strip('"')
    return ""


def choose_version(candidates: list[str], slurmd_version: str) -> str | None:
    """The candidate equal to slurmd's Debian version, else the newest of the same upstream version."""
    if slurmd_version in candidates:
        return slurmd_version
    same = [c for c in candidates if upstream(c) == upstream(slurmd_version)]
    if not same:
        return None
    r = subprocess.run(["sort", "-V"], input="\n".join(same) + "\n", capture_output=True, text=True, timeout=30,
                       check=False)
    return r.stdout.split()[-1] if r.returncode == 0 and r.stdout.split() else same[-1]


def find_nvml_plugin(root: str = NVML_PLUGIN_ROOT, slurmd: str | None = None) -> str | None:
    """The fetched plugin's directory for the installed slurmd's upstream version (no network), or None."""
    slurmd = slurmd or installed_version("slurmd")
    if not slurmd or not os.path.isdir(root):
        return None
    names = sorted(os.listdir(root), key=lambda n: n != slurmd)  # slurmd's own Debian version first
    for found in names:
        if upstream(found) == upstream(slurmd) and os.path.isfile(os.path.join(root, found, NVML_PLUGIN_FILE)):
            return os.path.join(root, found)
    return None


def _logged(log_path: str, argv: list[str], cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    from slurm_gpu.adapters import fs

    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    fs.append_line(log_path, f"$ {' '.join(argv)} -> exit {r.returncode}")
    for line in (r.stdout + r.stderr).splitlines()[-20:]:
        fs.append_line(log_path, line)
    return r


def ensure_nvml_plugin(log_path: str, say: Callable[[str], None] = print,
                       root: str = NVML_PLUGIN_ROOT) -> str | None:
    """The directory holding Slurm's gpu_nvml.so for the installed slurmd (fetched once), or None with one
    line said when there is none (no contrib package of slurmd's upstream version, no network)."""
    slurmd = installed_version("slurmd")
    if not slurmd:
        say("nvml plugin: slurmd is not installed")
        return None
    if (have := find_nvml_plugin(root, slurmd)) is not None:
        return have
    sources = debian_sources()
    if not sources:
        say("nvml plugin: no Debian archive with component main in /etc/apt/sources.list*")
        return None
    from slurm_gpu.adapters import fs

    work = os.path.join(root, ".apt")  # root's own directory: apt, dpkg-deb and we write only there
    subprocess.run(["rm", "-rf", "--one-file-system", work], timeout=120, check=False)
    for d in ("lists/partial", "cache/archives/partial", "get"):
        os.close(fs.open_dir(os.path.join(work, d), create=True, mode=0o755))
    src = fs.write_file(os.path.join(work, "contrib.list"), contrib_sources(sources).encode())
    opts = [f"-oDir::Etc::SourceList={src}", "-oDir::Etc::SourceParts=/nonexistent",
            f"-oDir::State::Lists={work}/lists", f"-oDir::Cache={work}/cache", "-oAPT::Sandbox::User=root"]
    if _logged(log_path, ["apt-get", *opts, "update", "-q"]).returncode != 0:
        say(f"nvml plugin: apt-get update of the contrib component failed; see {log_path}")
        return None
    r = _logged(log_path, ["apt-cache", *opts, "madison", NVML_PLUGIN_PACKAGE])
    candidates = [f.split("|")[1].strip() for f in r.stdout.splitlines() if f.count("|") >= 2]
    version = choose_version(candidates, slurmd)
    if version is None:
        say(f"nvml plugin: no {NVML_PLUGIN_PACKAGE} of Slurm {upstream(slurmd)} in contrib "
            f"(found: {', '.join(candidates) or 'none'})")
        return None
    get = os.path.join(work, "get")
    download = ["apt-get", *opts, "download", f"{NVML_PLUGIN_PACKAGE}={version}"]
    if _logged(log_path, download, cwd=get).returncode != 0:
        say(f"nvml plugin: apt-get download {NVML_PLUGIN_PACKAGE}={version} failed; see {log_path}")
        return None
    debs = [n for n in os.listdir(get) if n.endswith(".deb")]
    unpack = ["dpkg-deb", "-x", os.path.join(get, debs[0] if debs else "none"), os.path.join(work, "x")]
    if len(debs) != 1 or _logged(log_path, unpack).returncode:
        say(f"nvml plugin: cannot unpack the {NVML_PLUGIN_PACKAGE} package; see {log_path}")
        return None
    found = [os.path.join(d, NVML_PLUGIN_FILE) for d, _, files in os.walk(os.path.join(work, "x"))
             if NVML_PLUGIN_FILE in files]
    if len(found) != 1:
        say(f"nvml plugin: {NVML_PLUGIN_PACKAGE}={version} holds no {NVML_PLUGIN_FILE}")
        return None
    dest = os.path.join(root, version)
    data = fs.read_capped(found[0], limit=64 << 20)
    if data is None:
        say(f"nvml plugin: cannot read the unpacked {NVML_PLUGIN_FILE}")
        return None
    fs.write_file(os.path.join(dest, NVML_PLUGIN_FILE), data, mode=0o644, create=True)
    subprocess.run(["rm", "-rf", "--one-file-system", work], timeout=120, check=False)
    say(f"nvml plugin: {NVML_PLUGIN_FILE} of {NVML_PLUGIN_PACKAGE}={version} (slurmd {slurmd}) in {dest}")
    return dest
