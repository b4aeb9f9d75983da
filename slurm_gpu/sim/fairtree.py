# SPDX-License-Identifier: Apache-2.0
"""Fair Tree fair share (priority/multifactor with PriorityFlags=FAIR_TREE, Slurm's default since 19.05).

The association tree: ``root`` -> accounts (nested by ``parent/child`` names in the shares) -> users (one
association per (account, user), 1 share each, as ``sacctmgr add user`` gives). At every level each
association's **Level FS** = S / U, with S its shares over the shares of its siblings and U its decayed
usage over its siblings' usage (infinite without usage, 0 without shares). Siblings are sorted by Level
FS, highest first, and the tree is walked depth first in that order: each user association met takes the
next rank, counting down from the number of user associations; its fair-share factor is rank / count. Ties:
users with equal Level FS take the same rank (the count still moves on per user); sibling accounts with
equal Level FS have their children merged and sorted together (users of a tie group are ranked before the
merged children). So every user of an account with a higher Level FS ranks above every user of its
lower siblings. Pure: data in, data out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

Assoc = tuple[str, str]  # (account, user): one user association
INF = math.inf


class Tree:
    """Accounts (with shares and parents) and user associations. ``shares``: ``{"phys": 3,
    "phys/theory": 1, "chem": 1}`` (an account path -> its raw shares; an account not named has 1 share
    under root). ``assocs``: the (account, user) pairs that run jobs."""

    __slots__ = ("parent", "shares", "children", "assocs")

    def __init__(self, assocs: Iterable[Assoc], shares: Mapping[str, float] | None = None) -> None:
        self.parent: dict[str, str] = {}
        self.shares: dict[str, float] = {}
        for path, s in (shares or {}).items():
            parts = [p for p in path.split("/") if p]
            for k, name in enumerate(parts):
                self.parent.setdefault(name, parts[k - 1] if k else "root")
                self.shares.setdefault(name, 1.0)
            if parts:
                self.shares[parts[-1]] = float(s)
        self.assocs = sorted(set(assocs))
        for account, _user in self.assocs:
            self.parent.setdefault(account, "root")
            self.shares.setdefault(account, 1.0)
        self.children: dict[str, list[str | Assoc]] = {}
        for name, par in self.parent.items():
            self.children.setdefault(par, []).append(name)
        for a in self.assocs:
            self.children.setdefault(a[0], []).append(a)
        for kids in self.children.values():
            kids.sort(key=lambda k: (isinstance(k, tuple), str(k)))

    def entitlement(self, account: str) -> float:
        """The account's normalised shares: its share of its siblings' shares, times its parent's, up to root."""
        out = 1.0
        node = account
        while node in self.parent:
            par = self.parent[node]
            sib = sum(self.shares[k] for k in self.children.get(par, ()) if isinstance(k, str))
            out *= self.shares[node] / sib if sib > 0 else 0.0
            node = par
        return out

    def top(self, account: str) -> str:
        """The account's ancestor just under root."""
        while self.parent.get(account, "root") != "root":
            account = self.parent[account]
        return account


def account_usage(tree: Tree, usage: Mapping[Assoc, float]) -> dict[str, float]:
    """Usage summed up the tree: per account (its users and sub-accounts)."""
    out: dict[str, float] = {}
    for (account, _user), u in usage.items():
        node = account
        while node != "root":
            out[node] = out.get(node, 0.0) + u
            node = tree.parent.get(node, "root")
    return out


def _shares_of(tree: Tree, node: str | Assoc) -> float:
    return 1.0 if isinstance(node, tuple) else tree.shares.get(node, 1.0)


def _usage_of(node: str | Assoc, usage: Mapping[Assoc, float], acc: Mapping[str, float]) -> float:
    return usage.get(node, 0.0) if isinstance(node, tuple) else acc.get(node, 0.0)


def level_fs(tree: Tree, siblings: list[str | Assoc], usage: Mapping[Assoc, float],
             acc: Mapping[str, float]) -> dict[str | Assoc, float]:
    """Level FS = S / U of each of ``siblings`` (children of one parent)."""
    s_tot = sum(_shares_of(tree, k) for k in siblings)
    u_tot = sum(_usage_of(k, usage, acc) for k in siblings)
    out: dict[str | Assoc, float] = {}
    for k in siblings:
        s = _shares_of(tree, k) / s_tot if s_tot > 0 else 0.0
        u = _usage_of(k, usage, acc) / u_tot if u_tot > 0 else 0.0
        out[k] = 0.0 if s <= 0 else INF if u <= 0 else s / u
    return out


def factors(tree: Tree, usage: Mapping[Assoc, float]) -> dict[Assoc, float]:
    """The Fair Tree fair-share factor (0, 1] of every user association, from the decayed usage per association."""
    n = len(tree.assocs)
    if n == 0:
        return {}
    acc = account_usage(tree, usage)
    out: dict[Assoc, float] = {}
    counter = [n, n]  # [next rank to hand out, rank of the current tie]

    def walk(groups: list[list[str | Assoc]]) -> None:
        # groups: sibling sets (one per parent) whose members are sorted together (merged after a tie)
        lfs: dict[str | Assoc, float] = {}
        for sibs in groups:
            lfs.update(level_fs(tree, sibs, usage, acc))
        members = sorted(lfs, key=lambda k: -lfs[k])
        i = 0
        while i < len(members):
            j = i
            while j < len(members) and lfs[members[j]] == lfs[members[i]]:
                j += 1
            tie = members[i:j]
            users = [k for k in tie if isinstance(k, tuple)]
            for k, u in enumerate(users):
                if k == 0:
                    counter[1] = counter[0]
                out[u] = counter[1] / n
                counter[0] -= 1
            accounts = [k for k in tie if isinstance(k, str)]
            kids = [tree.children[a] for a in accounts if tree.children.get(a)]
            if kids:
                walk(kids)
            i = j

    walk([tree.children.get("root", [])])
    return out
