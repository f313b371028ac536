"""Diagnosis facts: the catalogue and their derivation from parsed profiles.

The package face imports nothing: a module of the package that imports a sibling
(`from advisor.facts import registry`) must not run the derivation modules first.
"""
