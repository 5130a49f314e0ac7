"""Corpus-wide entity resolution: surface mentions → one entity per real-world thing.

Steps: group mentions by normalized name and type; propose merges within a type (fuzzy names,
name-embedding neighbours, unambiguous PERSON short forms); join them with union-find. Across
types only a type vote merges: one exact name typed two ways ("Hale Mill" as ORGANIZATION and as
PERSON, a common small-NER slip) is one entity when the name has several words or one type holds
most of its mentions; so "Jordan" the person and "Jordan" the country, evenly split, stay two.
Output is independent of input order and ids are stable: a hash of the canonical name and type.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from graphunified_assets.lib.graph.description_summary import summarize_descriptions
from graphunified_assets.lib.graph.name_matching import (
    Embed,
    markers,
    middle_name_pairs,
    normalize_name,
    short_name_pairs,
)
from graphunified_assets.lib.graph.resolution_pairs import PairMemory

__all__ = [
    "EntityMention",
    "GroupKey",
    "MentionGroup",
    "Resolution",
    "ResolvedEntity",
    "group_key",
    "mention_groups",
    "resolve_entities",
    "summarize_descriptions",
]


@dataclass(frozen=True)
class EntityMention:
    name: str
    type: str
    description: str = ""
    chunk_id: str = ""


@dataclass(frozen=True)
class ResolvedEntity:
    id: str
    title: str  # canonical display name
    type: str
    descriptions: tuple[str, ...]  # unique fragments, ordered by chunk id
    text_unit_ids: tuple[str, ...]  # sorted unique chunk ids
    frequency: int  # number of distinct chunks
    merged_from: tuple[str, ...]  # other surface names merged into this entity, sorted


class Resolution:
    """Which mention groups make each entity. An entity's row (`ResolvedEntity`: its descriptions
    and chunks gathered from every group) is made when read: an update reads only the few it
    affected, and making all ~72K at 12.6K passages took half of resolution's time."""

    def __init__(
        self,
        clusters: Mapping[str, list[GroupKey]],
        groups: Mapping[GroupKey, MentionGroup],
        entity_ids: Mapping[tuple[str, str], str],
        merges: Mapping[str, int],
    ) -> None:
        self._clusters = clusters  # entity id → its groups, canonical first
        self._groups = groups
        self.entity_ids = entity_ids  # (surface name, TYPE) → entity id
        self.merges = merges  # unions made by each rule
        # (normalized name, TYPE) → entity id
        self.groups = {key: entity for entity, keys in clusters.items() for key in keys}

    def __len__(self) -> int:
        return len(self._clusters)

    @cached_property
    def entities(self) -> tuple[ResolvedEntity, ...]:
        """Every entity, ordered by type, then title."""
        return self.entities_of(self._clusters)

    def entities_of(self, ids: Iterable[str]) -> tuple[ResolvedEntity, ...]:
        """The entities of ``ids`` (unknown ids skipped), in `entities`' order."""
        made = [_entity(self._clusters[i], self._groups) for i in ids if i in self._clusters]
        return tuple(sorted(made, key=lambda e: (e.type, e.title.casefold(), e.id)))

    @cached_property
    def titles(self) -> dict[str, str]:
        """Entity id → its canonical display name."""
        groups = self._groups
        return {entity: _display_name(groups[keys[0]].surfaces) for entity, keys in self._clusters.items()}

    def id_for(self, name: str, type_: str) -> str | None:
        """Entity id of a surface name, tolerant of case and punctuation differences: the entity
        of the group the name would join (`group_key`), read from ``groups`` rather than from
        every surface name normalized again (0.5 s of each update at 12.6K passages)."""
        found = self.entity_ids.get((name.strip(), type_.upper()))
        if found is not None:
            return found
        # A name of punctuation alone normalizes to "": it would match whichever such name came last.
        norm = normalize_name(name)
        return self.groups.get((norm, type_.upper())) if norm else None


GroupKey = tuple[str, str]  # (normalized name, TYPE)


@dataclass(slots=True)
class MentionGroup:
    """All mentions sharing one normalized name and type, held chunk by chunk so that a removed
    chunk's mentions come out exactly (`GraphState` keeps them from one build to the next)."""

    surfaces: Counter[str] = field(default_factory=Counter)  # surface name -> mentions
    by_chunk: dict[str, list[str]] = field(default_factory=dict)  # chunk id -> its surface names
    fragments: dict[str, set[str]] = field(default_factory=dict)  # chunk id -> its descriptions

    def add(self, mention: EntityMention, surface: str) -> None:
        self.surfaces[surface] += 1
        self.by_chunk.setdefault(mention.chunk_id, []).append(surface)
        if mention.description.strip():
            self.fragments.setdefault(mention.chunk_id, set()).add(" ".join(mention.description.split()))

    def remove_chunk(self, chunk_id: str) -> None:
        for surface in self.by_chunk.pop(chunk_id, ()):
            self.surfaces[surface] -= 1
            if not self.surfaces[surface]:
                del self.surfaces[surface]
        self.fragments.pop(chunk_id, None)

    @property
    def chunks(self) -> set[str]:
        return {chunk for chunk in self.by_chunk if chunk}


def group_key(name: str, type_: str) -> tuple[GroupKey, str] | None:
    """The group a mention joins and its surface name (whitespace collapsed); None for a blank name."""
    surface = " ".join(name.split())
    norm = normalize_name(surface) or surface.casefold()
    return ((norm, type_.upper()), surface) if norm else None


def resolve_entities(
    mentions: Iterable[EntityMention] | Mapping[GroupKey, MentionGroup],
    *,
    embed: Embed | None = None,
    fuzzy_threshold: float = 92.0,
    embed_threshold: float = 0.92,
    embed_neighbours: int = 5,
    memory: PairMemory | None = None,
) -> Resolution:
    """Mentions, or mentions already grouped (an update's groups, `GraphState`), resolved.

    ``memory`` remembers the candidate pairs of earlier builds: only pairs involving new or
    changed names are computed (`resolution_pairs`), with the same result as without it."""
    groups = mentions if isinstance(mentions, Mapping) else mention_groups(mentions)
    pairs = memory if memory is not None else PairMemory(settings={})  # none remembered: all computed
    keys = sorted(groups)
    parent = list(range(len(keys)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(pairs: Iterable[tuple[int, int]]) -> int:
        joined = 0
        for a, b in pairs:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)  # smaller index wins: order-independent roots
                joined += 1
        return joined

    merges = Counter({"normalized": sum(len(g.surfaces) - 1 for g in groups.values())})
    by_type: dict[str, list[int]] = defaultdict(list)
    for i, (_, type_) in enumerate(keys):
        by_type[type_].append(i)
    for type_, members in sorted(by_type.items()):
        norms = [keys[i][0] for i in members]
        found = pairs.fuzzy_pairs(type_, norms, threshold=fuzzy_threshold)
        merges["fuzzy"] += union((members[a], members[b]) for a, b in found)
        if embed is not None:
            labels = [_display_name(groups[keys[i]].surfaces) for i in members]
            found = pairs.embedding_pairs(
                type_, norms, labels, embed, threshold=embed_threshold, neighbours=embed_neighbours
            )
            # Distinct people's names embed close together, and numbers barely move an embedding.
            found = [(a, b) for a, b in found if type_ != "PERSON" and markers(norms[a]) == markers(norms[b])]
            merges["embedding"] += union((members[a], members[b]) for a, b in found)
        if type_ == "PERSON":
            # Middle names first, so "Barack Hussein Obama" and "Barack Obama" are one candidate for "Obama".
            found = middle_name_pairs(norms, [find(m) for m in members])
            merges["alias"] += union((members[a], members[b]) for a, b in found)
            chunks = _chunks_of([keys[i] for i in members], groups)  # read only for candidates
            found = short_name_pairs(norms, [find(m) for m in members], chunks)
            merges["alias"] += union((members[a], members[b]) for a, b in found)

    merges["type_vote"] += union(_type_vote_pairs(keys, groups))

    clusters: dict[int, list[int]] = defaultdict(list)
    for i in range(len(keys)):
        clusters[find(i)].append(i)
    by_entity: dict[str, list[GroupKey]] = {}
    entity_ids: dict[tuple[str, str], str] = {}
    for members in clusters.values():
        member_keys = [keys[i] for i in members]
        canonical = _canonical(member_keys, groups)
        entity = _entity_id(canonical)
        by_entity[entity] = [canonical, *(key for key in member_keys if key != canonical)]
        for key in member_keys:
            for surface in groups[key].surfaces:
                entity_ids[(surface, key[1])] = entity
    return Resolution(by_entity, groups, entity_ids, dict(merges))


TYPE_VOTE_SHARE = 0.6  # a single-word name joins its majority type when that type has this share


def mention_groups(mentions: Iterable[EntityMention]) -> dict[GroupKey, MentionGroup]:
    groups: dict[GroupKey, MentionGroup] = defaultdict(MentionGroup)
    for mention in mentions:
        if found := group_key(mention.name, mention.type):
            groups[found[0]].add(mention, found[1])
    return groups


def _type_vote_pairs(keys: list[GroupKey], groups: Mapping[GroupKey, MentionGroup]) -> list[tuple[int, int]]:
    by_name: dict[str, list[int]] = defaultdict(list)
    for i, (norm, _) in enumerate(keys):
        by_name[norm].append(i)
    pairs = []
    for norm, members in by_name.items():
        if len(members) < 2:
            continue
        counts = [sum(groups[keys[i]].surfaces.values()) for i in members]
        if " " in norm or max(counts) >= TYPE_VOTE_SHARE * sum(counts):
            pairs += [(members[0], other) for other in members[1:]]
    return pairs


def _display_name(surfaces: Counter[str]) -> str:
    """Most used spelling; then capitalized, not shouting, least punctuation. Not the first seen
    of equals (`most_common`): that made resolution depend on the order documents were read."""
    if len(surfaces) == 1:  # most names have one spelling
        return next(iter(surfaces))
    return max(surfaces, key=lambda s: (surfaces[s], s[:1].isupper(), not s.isupper(), -len(s), s))


def _chunks_of(keys: list[GroupKey], groups: Mapping[GroupKey, MentionGroup]) -> Callable[[int], set[str]]:
    return lambda i: groups[keys[i]].chunks


def _canonical(members: list[GroupKey], groups: Mapping[GroupKey, MentionGroup]) -> GroupKey:
    """A multi-word full name if there is one, then the most mentioned, then the longest."""
    if len(members) == 1:  # most entities are one group
        return members[0]

    def rank(key: GroupKey) -> tuple[bool, int, int, str]:
        return (" " in key[0], sum(groups[key].surfaces.values()), len(key[0]), key[0])

    return max(members, key=rank)


def _entity_id(canonical: GroupKey) -> str:
    norm, type_ = canonical
    return "ent-" + hashlib.sha256(f"{type_}\x1f{norm}".encode()).hexdigest()[:16]


def _entity(members: list[GroupKey], groups: Mapping[GroupKey, MentionGroup]) -> ResolvedEntity:
    """The entity of ``members`` (its groups, canonical first)."""
    canonical = members[0]
    title = _display_name(groups[canonical].surfaces)
    chunks: set[str] = set()
    fragments: set[tuple[str, str]] = set()
    names: set[str] = set()
    for key in members:
        group = groups[key]
        chunks |= group.chunks
        fragments.update((chunk, text) for chunk, texts in group.fragments.items() for text in texts)
        names |= set(group.surfaces)
    descriptions = list(dict.fromkeys(text for _, text in sorted(fragments)))
    return ResolvedEntity(
        id=_entity_id(canonical),
        title=title,
        type=canonical[1],
        descriptions=tuple(descriptions),
        text_unit_ids=tuple(sorted(chunks)),
        frequency=len(chunks),
        merged_from=tuple(sorted(names - {title})),
    )
