"""Edits of a Megatron-backend script's training arguments, placed where each value comes from.

A value is changed where its characters are written: the knob variable (`TP=8`) when the flag
reads `${TP}` and nothing else reads TP, else the reference itself, else the flag's text in its
group string. A new flag goes beside its neighbours (the rule's `near` flags, else the flag
sharing the longest name prefix), on its own line when they have theirs. A removed flag goes
from every occurrence. After the edits the script is read again and must give exactly the
intended arguments, and `bash -n` must accept it; otherwise nothing is proposed.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from advisor.dialects.megatron.flags import megatron_flags
from advisor.dialects.megatron.script import MegatronScript, Occurrence, read_megatron
from advisor.edit.launch_text import bash_accepts
from advisor.model import InputError
from advisor.shell.expand import Field
from advisor.shell.overrides import cli_value

_SAFE = re.compile(r"^[A-Za-z0-9_./:,=+@%-]+$")


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int
    text: str


def _word(value: object) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if not _SAFE.match(text):
        raise InputError("", f"the value {text!r} is not a plain shell word: not edited")
    return text


def _apply(text: str, edits: Sequence[_Edit]) -> str:
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    for a, b in itertools.pairwise(ordered):
        if b.start < a.end:
            raise InputError("", "two edits of the same text overlap")
    for edit in reversed(ordered):
        text = text[: edit.start] + edit.text + text[edit.end :]
    return text


def _value_spans(field: Field) -> list[tuple[int, int]]:
    """Where a value can be rewritten: its literal (the knob's assignment or the group text),
    then the `${VAR}` reference that brought it (when it came through a variable)."""
    spans = []
    literal = field.span()
    if literal is not None:
        spans.append(literal)
    refs = {c.ref for c in field.chars}
    if field.variable is not None and len(refs) == 1:
        ref = refs.pop()
        if ref is not None:
            spans.append(ref)
    return spans


def _shared_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split("-"), b.split("-"), strict=False):
        if x != y:
            break
        n += 1
    return n


class MegatronEditor:
    """Collects argument changes to one script, then yields the verified new text."""

    def __init__(self, script: MegatronScript) -> None:
        self.script = script
        self.intended = script.args.known_values()
        self.changes: list[tuple[str, object, Sequence[str]]] = []  # (flag, value|None, near)

    def set_flag(self, flag: str, value: object, near: Sequence[str] = ()) -> None:
        """`value` True: a store_true flag on; False: off (removed); else the flag's value."""
        if value is False and self._is_switch(flag):
            self.remove_flag(flag)
            return
        self.changes.append((flag, value, tuple(near)))
        self.intended[flag] = True if value is True else cli_value(_word(value))

    def remove_flag(self, flag: str) -> None:
        self.changes.append((flag, None, ()))
        self.intended.pop(flag, None)

    def _is_switch(self, flag: str) -> bool:
        occurrences = self.script.args.all_of(flag)
        if not occurrences:
            return flag in megatron_flags().switches
        return all(not o.values for o in occurrences)

    # ------------------------------------------------------------ building the edits

    def _check_known(self, flag: str) -> None:
        args = self.script.args
        if flag in args.uncertain or (args.opaque and flag not in args.parsed):
            raise InputError(
                str(self.script.path),
                f"--{flag} cannot be read statically (it comes from a substitution or a "
                "conditional assignment): not edited",
            )

    def _edits_for(self, flag: str, value: object, near: Sequence[str]) -> list[list[_Edit]]:
        """Alternative edit sets for one change, preferred first."""
        self._check_known(flag)
        occurrences = self.script.args.all_of(flag)
        if value is None:
            return [[e for occ in occurrences for e in self._removal(occ)]]
        if not occurrences:
            return [[self._addition(flag, value, near)]]
        if value is True:
            return [[]]
        word = _word(value)
        valued = [o for o in occurrences if o.values]
        if not valued:
            raise InputError(str(self.script.path), f"--{flag} is given without a value")
        per_occurrence = []
        for occ in valued:
            if len(occ.values) != 1:
                raise InputError(
                    str(self.script.path), f"--{flag} has {len(occ.values)} values: not edited"
                )
            spans = _value_spans(occ.values[0])
            if not spans:
                raise InputError(
                    str(self.script.path), f"the value of --{flag} is computed: not edited"
                )
            per_occurrence.append(spans)
        # first try every occurrence at its preferred place, then at the reference
        options = []
        for choice in range(max(len(s) for s in per_occurrence)):
            options.append(
                [_Edit(*spans[min(choice, len(spans) - 1)], word) for spans in per_occurrence]
            )
        return options

    def _removal(self, occ: Occurrence) -> list[_Edit]:
        text = self.script.text
        start_span = occ.flag_field.span()
        if start_span is None:
            raise InputError(str(self.script.path), f"--{occ.flag} is computed: not removed")
        end = start_span[1]
        for value in occ.values:
            spans = _value_spans(value)
            if not spans:
                raise InputError(str(self.script.path), f"--{occ.flag}'s value is computed")
            span = spans[-1] if value.variable else spans[0]
            if not text[end : span[0]].replace("\\\n", "").strip() == "":
                raise InputError(
                    str(self.script.path), f"--{occ.flag} and its value are written apart"
                )
            end = span[1]
        start = start_span[0]
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", end)
        line_end = len(text) if line_end < 0 else line_end
        before, after = text[line_start:start], text[end:line_end]
        if not before.strip() and after.strip() in ("", "\\"):
            return [_Edit(line_start, min(line_end + 1, len(text)), "")]  # its own line
        # among other words: take the flag and the blanks after it
        while end < len(text) and text[end] in " \t":
            end += 1
        return [_Edit(start, end, "")]

    def _anchor(self, flag: str, near: Sequence[str]) -> Occurrence:
        args = self.script.args
        for name in near:
            occ = args.last(name)
            if occ is not None and occ.flag_field.span() is not None:
                return occ
        placed = [o for o in args.occurrences if o.flag_field.span() is not None and o.known]
        if not placed:
            raise InputError(str(self.script.path), "no written flag to place a new one beside")
        related = max(placed, key=lambda o: (_shared_prefix(o.flag, flag), o.index))
        if _shared_prefix(related.flag, flag):
            return related  # --moe-x beside the other --moe- flags
        # nothing related: the last flag of a group variable (the command line itself holds
        # paths and launch options)
        grouped = [o for o in placed if o.flag_field.variable is not None]
        return (grouped or placed)[-1]

    def _addition(self, flag: str, value: object, near: Sequence[str]) -> _Edit:
        text = self.script.text
        words = f"--{flag}" if value is True else f"--{flag} {_word(value)}"
        anchor = self._anchor(flag, near)
        span = anchor.flag_field.span()
        assert span is not None
        line_start = text.rfind("\n", 0, span[0]) + 1
        indent = text[line_start : span[0]]
        if not indent.strip():  # the neighbour has its own line: so does the new flag
            return _Edit(line_start, line_start, f"{indent}{words} \\\n")
        return _Edit(span[0], span[0], f"{words} ")

    def result(self) -> str:
        """The new text; raises InputError when no placement yields exactly the change."""
        text = self.script.text
        if not self.changes:
            return text
        options = [self._edits_for(flag, value, near) for flag, value, near in self.changes]
        depth = max(len(o) for o in options)
        last_error = ""
        for choice in range(depth):
            edits = [e for o in options for e in o[min(choice, len(o) - 1)]]
            try:
                after = _apply(text, edits)
                got = read_megatron(self.script.path, after).args.known_values()
            except InputError as exc:
                last_error = exc.problem
                continue
            if got == self.intended:
                bash_accepts(self.script.path, after)
                return after
            changed = sorted(
                k for k in set(got) | set(self.intended) if got.get(k) != self.intended.get(k)
            )
            last_error = "it would also change " + ", ".join(f"--{k}" for k in changed[:4])
        raise InputError(
            str(self.script.path),
            f"no edit of the script gives exactly the intended arguments ({last_error}): not proposed",
        )
