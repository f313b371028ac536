"""Facts quoted in messages read in their unit: a per-link ratio is a percentage."""

from __future__ import annotations

from advisor.facts.units import format_value


def test_a_mapping_of_ratios_reads_as_percentages():
    assert format_value({"HCCS": 0.2768, "SDMA": 0.5}, "ratio") == "HCCS 27.7%, SDMA 50.0%"
    # a mapping whose values are not all numbers keeps its values as they are
    assert format_value({"link": "3-11", "share": 0.5}, "ratio") == "link 3-11, share 0.5"


def test_a_single_ratio_is_a_percentage():
    assert format_value(0.125, "ratio") == "12.5%"
