"""Diagnosis facts: the catalogue and their derivation from parsed profiles."""

from advisor.facts.catalogue import FactSpec, spec_for
from advisor.facts.derive import derive_facts

__all__ = ["FactSpec", "derive_facts", "spec_for"]
