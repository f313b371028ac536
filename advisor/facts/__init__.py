"""Diagnosis facts: the catalogue and their derivation from parsed profiles."""

from advisor.facts.catalogue import CATALOGUE, FactSpec, spec_for
from advisor.facts.derive import derive_facts

__all__ = ["CATALOGUE", "FactSpec", "derive_facts", "spec_for"]
