"""Reading the user's text files: every OS and decoding error becomes one input error."""

from __future__ import annotations

from pathlib import Path

from advisor.model import InputError


def read_text(path: Path) -> str:
    """The file's text exactly as stored (line endings kept), decoded as UTF-8."""
    try:
        return path.read_bytes().decode("utf-8")
    except IsADirectoryError:
        raise InputError(str(path), "is a folder, not a file") from None
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"not UTF-8 text (byte {exc.start})") from None
