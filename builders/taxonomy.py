"""Domain -> Subtype taxonomy for base questions: a data-driven map from (source, native label).

The mapping lives in ``taxonomy.yaml`` next to this module (see docs/sources.md for the table). Set
``PHR_TAXONOMY`` to another YAML/JSON file, or call :func:`set_default_taxonomy`, to change it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from phr.bench.records import Domain
from phr.core.errors import UsageError

DEFAULT_PATH = Path(__file__).with_name("taxonomy.yaml")
ENV_VAR = "PHR_TAXONOMY"

Label = str | Sequence[str] | None
# Where a subtype comes from (card and manifest; docs/sources.md "Subtype origin"). The paper's subtypes are
# reasoning-based (§A.1); its Table 3 with their names was lost, so only some can follow it.
REASONING = "reasoning subtype"  # a reasoning-based subtype named after the paper's §A.1 text
SOURCE_LABEL = "source label"  # the source's native task / subject label, kept (§A.1 allows it when compatible)
SOURCE_DEFAULT = "source default"  # one fixed subtype for a source without labels: no per-question mapping
ORIGINS = (REASONING, SOURCE_LABEL, SOURCE_DEFAULT)


class TaxonomyError(UsageError, ValueError):
    """The taxonomy file is invalid, or has no rule for a source / label."""


def norm(label: str) -> str:
    """Matching key of a label: lowercase, with '-', '_' and whitespace runs as one space."""
    return re.sub(r"[\s_\-]+", " ", label.strip().lower())


def pretty(label: str) -> str:
    """Display form of a native label: 'college_physics' -> 'College Physics'; others unchanged."""
    text = re.sub(r"[_\s]+", " ", label.strip())
    return text.title() if ("_" in label or text.islower()) else text


@dataclass(frozen=True)
class SourceRule:
    """How one source's native labels map to a domain and a subtype."""

    domain: Domain | None = None
    domains: dict[str, Domain] = field(default_factory=dict)
    keep_native: bool = False
    subtypes: dict[str, str] = field(default_factory=dict)
    default: str | None = None
    default_origin: str = SOURCE_DEFAULT  # what `default` is: REASONING (named after §A.1) or SOURCE_DEFAULT


def _labels(label: Label) -> list[str]:
    if label is None:
        return []
    return [label] if isinstance(label, str) else [x for x in label if x]


class Taxonomy:
    """Per-source rules; build with :meth:`from_mapping` or :meth:`from_file`."""

    def __init__(self, rules: Mapping[str, SourceRule], origin: str = "<mapping>") -> None:
        self.rules = dict(rules)
        self.origin = origin

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], origin: str = "<mapping>") -> Taxonomy:
        """Build from the parsed file content ({'sources': {source: {...}}})."""
        sources = data.get("sources") if isinstance(data, Mapping) else None
        if not isinstance(sources, Mapping):
            raise TaxonomyError(f"{origin}: expected a top-level 'sources' mapping")
        rules: dict[str, SourceRule] = {}
        for source, spec in sources.items():
            if not isinstance(spec, Mapping):
                raise TaxonomyError(f"{origin}: sources.{source} must be a mapping")
            try:
                rules[str(source)] = SourceRule(
                    domain=Domain(spec["domain"]) if spec.get("domain") else None,
                    domains={norm(str(k)): Domain(v) for k, v in (spec.get("domains") or {}).items()},
                    keep_native=bool(spec.get("keep_native", False)),
                    subtypes={norm(str(k)): str(v) for k, v in (spec.get("subtypes") or {}).items()},
                    default=spec.get("default"),
                    default_origin=spec.get("default_origin", SOURCE_DEFAULT),
                )
            except ValueError as e:
                raise TaxonomyError(f"{origin}: sources.{source}: {e} (domains: {[d.value for d in Domain]})") from e
            if rules[str(source)].default_origin not in ORIGINS:
                raise TaxonomyError(f"{origin}: sources.{source}.default_origin must be one of {ORIGINS}")
            if rules[str(source)].domain is None and not rules[str(source)].domains:
                raise TaxonomyError(f"{origin}: sources.{source} needs 'domain' or 'domains'")
        return cls(rules, origin)

    @classmethod
    def from_file(cls, path: str | Path) -> Taxonomy:
        """Read a YAML (or JSON) taxonomy file."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise TaxonomyError(f"cannot read taxonomy file {path}: {e}") from e
        if path.suffix == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
        return cls.from_mapping(data, str(path))

    def rule(self, source: str) -> SourceRule:
        try:
            return self.rules[source]
        except KeyError:
            raise TaxonomyError(f"no taxonomy rule for source {source!r} in {self.origin}") from None

    def domain_for(self, source: str, label: Label = None) -> Domain:
        """PHRBench domain of a row of `source` whose native domain label is `label`."""
        rule = self.rule(source)
        for item in _labels(label):
            if norm(item) in rule.domains:
                return rule.domains[norm(item)]
        if rule.domain is not None:
            return rule.domain
        raise TaxonomyError(
            f"no PHRBench domain for {source} label {label!r}; add it under sources.{source}.domains in {self.origin}"
        )

    def subtype_for(self, source: str, label: Label = None) -> str:
        """Subtype of a row of `source` with native label(s) `label` (first mapped label wins)."""
        rule = self.rule(source)
        labels = _labels(label)
        for item in labels:
            if norm(item) in rule.subtypes:
                return rule.subtypes[norm(item)]
        if rule.keep_native and labels:
            return pretty(labels[0])
        if rule.default:
            return rule.default
        raise TaxonomyError(f"no subtype for {source} label {label!r}; add a default for {source} in {self.origin}")

    def origin_of(self, source: str, subtype: str) -> str:
        """Where a subtype of `source` came from: REASONING, SOURCE_LABEL or SOURCE_DEFAULT."""
        rule = self.rule(source)
        if subtype == rule.default and subtype not in rule.subtypes.values():
            return rule.default_origin
        return SOURCE_LABEL

    def has_domain(self, source: str, label: Label = None) -> bool:
        try:
            self.domain_for(source, label)
        except TaxonomyError:
            return False
        return True


_override: Taxonomy | None = None


@lru_cache(maxsize=8)
def _load_cached(path: str) -> Taxonomy:
    return Taxonomy.from_file(path)


def default_taxonomy() -> Taxonomy:
    """The taxonomy in use: set_default_taxonomy(...), else $PHR_TAXONOMY, else the packaged taxonomy.yaml."""
    if _override is not None:
        return _override
    return _load_cached(os.environ.get(ENV_VAR) or str(DEFAULT_PATH))


def set_default_taxonomy(taxonomy: Taxonomy | str | Path | None) -> None:
    """Use `taxonomy` (an object or a file path) for every later lookup; None restores the default."""
    global _override
    _override = Taxonomy.from_file(taxonomy) if isinstance(taxonomy, str | Path) else taxonomy


def domain_for(source: str, label: Label = None, *, taxonomy: Taxonomy | None = None) -> Domain:
    """Domain of a row of `source` with native domain label `label`."""
    return (taxonomy or default_taxonomy()).domain_for(source, label)


def subtype_for(source: str, label: Label = None, *, taxonomy: Taxonomy | None = None) -> str:
    """Subtype of a row of `source` with native label(s) `label`, e.g. ('mmlu', 'college physics')."""
    return (taxonomy or default_taxonomy()).subtype_for(source, label)


def subtype_origins(
    pairs: Iterable[tuple[str, str]], *, taxonomy: Taxonomy | None = None
) -> dict[str, dict[str, list[str]]]:
    """{origin: {subtype: [sources]}} for the (source, subtype) pairs of a build (card and manifest)."""
    tax = taxonomy or default_taxonomy()
    out: dict[str, dict[str, list[str]]] = {}
    for source, subtype in sorted(set(pairs)):
        out.setdefault(tax.origin_of(source, subtype), {}).setdefault(subtype, []).append(source)
    return out


def classify(
    source: str, label: Label = None, *, domain_label: Label = None, taxonomy: Taxonomy | None = None
) -> tuple[Domain, str]:
    """(domain, subtype); the domain comes from `domain_label` when given, else from `label`."""
    tax = taxonomy or default_taxonomy()
    return tax.domain_for(source, domain_label if domain_label is not None else label), tax.subtype_for(source, label)
