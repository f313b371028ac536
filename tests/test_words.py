"""The renderers own the words: every code the engine returns has its wording, so no outcome
reaches a user as a bare code."""

from __future__ import annotations

from advisor.engine.compare import Collect, CompareCode
from advisor.engine.diagnose import CollectBy, Collection, Unknown
from advisor.model import Grounds, RejectCode, Rejected, TrustCheck, TrustWarning
from advisor.render import compare_words, words


def test_every_code_has_words():
    assert set(words._REJECTIONS) == set(RejectCode)
    assert set(words._TRUST) == set(TrustCheck)
    assert set(words._GROUNDS) == set(Grounds)
    assert set(compare_words._NOTES) == set(CompareCode)
    assert set(compare_words._COLLECT) == set(Collect)


def test_words_come_from_the_values():
    rejected = Rejected("feature.x", RejectCode.after, {"other": "feature.y"})
    assert "feature.y" in words.rejection(rejected)
    warning = TrustWarning(TrustCheck.no_collectives, {"world_size": 16})
    assert "16" in words.trust_message(warning)
    ways = (
        Collection(CollectBy.config, "parallel.tp"),
        Collection(CollectBy.config, "parallel.tp"),
    )
    assert words.how_to_collect(Unknown("symptom.x", ["parallel.tp"], ways)).count("tp") == 1


def test_a_watched_fact_reads_as_an_instruction():
    from advisor.model import Direction, VerifyCheck

    check = VerifyCheck("memory.reserved_peak_bytes", Direction.watch, 2.0 * 2**30, "bytes")
    assert words.verify_line(check) == "watch memory.reserved_peak_bytes (now 2.00 GiB)"
    down = VerifyCheck("step.time_ms", Direction.decrease, 6.0, "ms")
    assert words.verify_line(down).startswith("step.time_ms should decrease (now 6")


def test_no_collection_hint_repeats_the_needs_it_follows():
    """The text reads `needs FACT: HINT`: a hint that starts with `needs` says it twice."""
    from advisor.facts.catalogue import catalogue, collect_hint

    for fact_id in catalogue().specs:
        for platform in ("ascend", "cuda"):
            hint = collect_hint(fact_id, platform)
            assert not hint.lower().startswith("needs"), (fact_id, hint)
