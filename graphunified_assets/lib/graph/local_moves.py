"""Placing a few nodes among communities that stay as they are: Louvain's moves, restricted.

An update re-places only the nodes whose edges moved (`leiden.py`); every other node keeps its
community. The moving nodes start alone. In name order, for a few passes, each joins the
neighbouring community, or a new one of its own, that most raises the parent's modularity:

    gain(v → C) = w(v, C) − γ · k_v · vol(C) / 2m

where w(v, C) is the weight of v's edges into C, k_v v's edge weight within the parent, vol(C)
the summed k of C's members and m the parent's edge weight. Then each new community, as a whole,
joins the neighbouring community that most raises it (the same gain with vol of the group for
k_v), and the nodes move again, until no group joins: the two phases of Louvain (Blondel et al.
2008) with the other nodes held fixed. Without the group moves, a new passage's entities, tied
more to each other than each one is to any old community, stayed apart as a community of their
own: 2WikiMultiHopQA grown by 5 % four times ended with 329 top-level communities against 142 in
a cold build.

Re-running Leiden on the whole community of a moved node instead re-split its 12K members and
remade 150-370 communities of the 12.6K home for each added passage.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping

from graphunified_assets.lib.graph.weighted_graph import WeightedGraph

MAX_PASSES = 8  # each pass moves every node once; a handful of nodes settles in two or three
MAX_ROUNDS = 4  # node moves then group moves; new groups rarely merge twice


class _Placement:
    def __init__(
        self, graph: WeightedGraph, inside: set[str], kept: Mapping[int, Collection[str]], resolution: float
    ) -> None:
        self.graph, self.inside, self.resolution = graph, inside, resolution
        self.strength = graph.strengths(inside)
        self.two_m = sum(self.strength.values())
        self.community: dict[str, int] = {n: c for c, ids in kept.items() for n in ids}
        self.volume: dict[int, float] = defaultdict(float)
        for node, c in self.community.items():
            self.volume[c] += self.strength[node]
        self.next_alone = -1  # new communities are numbered -1, -2, ...

    def alone(self) -> int:
        self.next_alone -= 1
        return self.next_alone + 1

    def links(self, nodes: Iterable[str]) -> dict[int, float]:
        """The weight of ``nodes``' edges into each community (within the parent)."""
        found: dict[int, float] = defaultdict(float)
        for node in nodes:
            for _, neighbour, weight in self.graph.edges_of(node):
                if neighbour in self.inside:
                    found[self.community[neighbour]] += weight
        return found

    def best(self, links: Mapping[int, float], k: float) -> int | None:
        """The community whose gain for weight ``k`` with these links is highest and above zero
        (ties: the lower number), or None."""
        best, best_gain = None, 0.0
        for c in sorted(links):
            gain = links[c] - self.resolution * k * self.volume[c] / self.two_m if self.two_m else 0.0
            if gain > best_gain:
                best, best_gain = c, gain
        return best

    def move_nodes(self, order: list[str]) -> None:
        for _ in range(MAX_PASSES):
            moved = False
            for node in order:
                current, k = self.community[node], self.strength[node]
                self.volume[current] -= k
                target = self.best(self.links([node]), k)
                if target is None:  # alone: where it is if it was alone, else a new community
                    target = current if self.volume[current] == 0 else self.alone()
                self.community[node] = target
                self.volume[target] += k
                moved |= target != current
            if not moved:
                return

    def move_groups(self, order: list[str]) -> bool:
        """Each new community joins, as a whole, the one that most raises modularity; whether any did."""
        merged = False
        groups: dict[int, list[str]] = defaultdict(list)
        for node in order:
            if self.community[node] < 0:
                groups[self.community[node]].append(node)
        for c in sorted(groups, reverse=True):  # -1 first: the order the groups were made
            members = groups[c]
            if self.volume[c] == 0 or any(self.community[n] != c for n in members):
                continue  # merged into another group already
            links = self.links(members)
            links.pop(c, None)  # its own inner edges
            target = self.best(links, self.volume[c])
            if target is not None:
                for node in members:
                    self.community[node] = target
                self.volume[target] += self.volume[c]
                self.volume[c] = 0.0
                if target in groups:  # a new group took this one: it moves with them from now on
                    groups[target] += members
                merged = True
        return merged


def place(
    graph: WeightedGraph,
    inside: Collection[str],
    kept: Mapping[int, Collection[str]],
    moving: Collection[str],
    *,
    resolution: float,
) -> tuple[dict[int, list[str]], list[list[str]]]:
    """(``kept``'s communities with the moving nodes that joined them, the new communities of the
    others, each sorted), for ``moving`` nodes of the parent ``inside`` (kept's and moving's)."""
    state = _Placement(graph, set(inside), kept, resolution)
    order = sorted(moving)
    for node in order:
        state.community[node] = state.alone()
        state.volume[state.community[node]] += state.strength[node]
    for _ in range(MAX_ROUNDS):
        state.move_nodes(order)
        if not state.move_groups(order):
            break
    joined: dict[int, list[str]] = {c: list(ids) for c, ids in kept.items()}
    fresh: dict[int, list[str]] = defaultdict(list)
    for node in order:
        c = state.community[node]
        (joined[c] if c >= 0 else fresh[c]).append(node)
    return {c: sorted(ids) for c, ids in joined.items()}, sorted(sorted(ids) for ids in fresh.values())
