"""A script's simple commands as bash would separate them, with the word spans of each.

Commands end at newlines, `;`, `&`, `|`, `&&`, `||` and parentheses; `\\`+newline continues a
command; an array assignment `NAME=(a b ...)` is one word, however many lines it spans;
comments, redirections and heredoc bodies are not words. Each command knows how deep it sits
inside if/for/while/case/function/`{ }` bodies: a command at depth 0 always runs, one deeper
may or may not, so what it assigns is only possibly the value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from advisor.shell.expand import ShellError
from advisor.shell.words import array_elements, word_end

# `NAME=` or `NAME+=` right before `(`: an array assignment, one word up to its `)`
_ARRAY_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_OPENERS = {"if", "for", "while", "until", "case", "select", "function"}
_CLOSERS = {"fi", "done", "esac"}
_CONTINUERS = {"then", "do", "else", "elif", "!"}
_HEREDOC_WORD = re.compile(r"-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


@dataclass(frozen=True)
class Word:
    start: int
    end: int


@dataclass
class Command:
    words: list[Word] = field(default_factory=list)
    depth: int = 0  # 0: top level, runs unconditionally
    start: int = 0  # offset of the first word
    end: int = 0  # offset past the last word
    guarded: bool = False  # after `&&` or `||`: runs only if the command before it succeeds/fails

    @property
    def conditional(self) -> bool:
        return self.depth > 0 or self.guarded

    def texts(self, text: str) -> list[str]:
        return [text[w.start : w.end] for w in self.words]


def line_of(text: str, offset: int) -> int:
    """1-based line number of an offset."""
    return text.count("\n", 0, offset) + 1


class _Splitter:
    def __init__(self, text: str) -> None:
        self.text = text
        self.commands: list[Command] = []
        self.current = Command()
        self.depth = 0
        self.heredocs: list[str] = []  # words ending heredocs that start after this line
        self.guard_next = False  # the command being read follows `&&` / `||`

    def finish(self, guards_next: bool = False) -> None:
        cmd = self.current
        self.current = Command()
        if not cmd.words:  # `a &&` then a newline: the guard carries over to the next command
            self.guard_next = self.guard_next or guards_next
            return
        cmd.guarded = self.guard_next
        self.guard_next = guards_next
        words = self.text[cmd.words[0].start : cmd.words[0].end]
        while words in _CONTINUERS and cmd.words:
            cmd.words = cmd.words[1:]
            words = self.text[cmd.words[0].start : cmd.words[0].end] if cmd.words else ""
        if not cmd.words:
            return
        first = words
        if first in _CLOSERS or first == "}":
            self.depth = max(0, self.depth - 1)
            return
        cmd.depth = self.depth
        cmd.start, cmd.end = cmd.words[0].start, cmd.words[-1].end
        if first in _OPENERS or first == "{":
            self.depth += 1
            if first == "{" and len(cmd.words) > 1:  # `{ cmd` runs cmd inside the block
                cmd.words = cmd.words[1:]
                cmd.depth = self.depth
                self.commands.append(cmd)
            return
        last = self.text[cmd.words[-1].start : cmd.words[-1].end]
        if last == "{":  # `name() {` : a function body follows
            self.depth += 1
            return
        self.commands.append(cmd)

    def skip_heredocs(self, i: int) -> int:
        """`i` is just past a newline: skip the bodies of the heredocs opened on that line."""
        text = self.text
        while self.heredocs:
            word = self.heredocs.pop(0)
            while i < len(text):
                line_end = text.find("\n", i)
                line_end = len(text) if line_end < 0 else line_end
                line = text[i:line_end]
                i = line_end + 1
                if line.strip() == word:
                    break
        return i

    def redirect(self, i: int) -> int:
        text = self.text
        j = i
        while j < len(text) and text[j] in "<>&|":
            j += 1
        operator = text[i:j]
        if operator.startswith("<<") and not operator.startswith("<<<"):
            m = _HEREDOC_WORD.match(text, j)
            if m:
                self.heredocs.append(m.group(2))
                return m.end()
        while j < len(text) and text[j] in " \t":
            j += 1
        if j < len(text) and text[j] not in "\n;&|()":
            end = word_end(text, j)
            if end is None:
                raise ShellError(j, "unterminated quote in a redirection")
            j = end
        return j

    def run(self) -> list[Command]:
        text = self.text
        i, n = 0, len(text)
        while i < n:
            ch = text[i]
            if ch in " \t\r":
                i += 1
            elif ch == "\\" and text[i + 1 : i + 2] == "\n":
                i += 2
            elif ch == "#":
                newline = text.find("\n", i)
                i = n if newline < 0 else newline
            elif ch == "\n":
                self.finish()
                i = self.skip_heredocs(i + 1)
            elif ch in ";&|()":
                if ch == "&" and text[i + 1 : i + 2] == ">":
                    i = self.redirect(i)
                    continue
                pair = text[i : i + 2]
                self.finish(guards_next=pair in ("&&", "||"))
                i += 2 if pair in (";;", "&&", "||") else 1
            elif ch in "<>":
                # `2>&1`: the digit before the operator is part of the redirection
                if self.current.words:
                    last = self.current.words[-1]
                    if last.end == i and text[last.start : last.end].isdigit():
                        self.current.words.pop()
                i = self.redirect(i)
            else:
                i = self.word(i)
        self.finish()
        return self.commands

    def word(self, i: int) -> int:
        """Add the word starting at `i` (an array assignment `NAME=(...)` is one word up to its
        `)`); the index past it."""
        text = self.text
        end = word_end(text, i)
        if end is None:
            raise ShellError(i, "unterminated quote or substitution")
        if end == i:  # an operator word_end stops at: never loop on it
            end = i + 1
        elif text[end : end + 1] == "(" and _ARRAY_ASSIGN.fullmatch(text, i, end):
            array = array_elements(text, end)
            if array is None:
                raise ShellError(end, "unterminated array assignment")
            end = array[0]
        self.current.words.append(Word(i, end))
        return end


def split_commands(text: str) -> list[Command]:
    """The simple commands of a script, in order (raises ShellError on unterminated quotes)."""
    return _Splitter(text).run()
