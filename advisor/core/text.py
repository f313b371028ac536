"""Reading the user's text files: every OS and decoding error becomes one input error."""

from __future__ import annotations

from pathlib import Path

from advisor.core import limits
from advisor.model import InputError


def require_regular(path: Path, why: str = " (a pipe, socket or device)") -> None:
    """Refuse a path that exists but is not a plain file (a folder, a FIFO or a device: the
    last two block their reader or never end). `why` finishes the one-line message."""
    if path.exists() and not path.is_file():
        raise InputError(str(path), f"is not a regular file{why}")


def read_text(path: Path) -> str:
    """The file's text exactly as stored (line endings kept), decoded as UTF-8."""
    try:
        if not path.is_dir():  # a folder gets its own message below
            require_regular(path)
        data = path.read_bytes()
        if len(data) > limits.text_max_bytes():
            raise InputError(
                str(path),
                f"{len(data):,} bytes is larger than {limits.text_max_bytes():,} "
                "(ADVISOR_MAX_TEXT_BYTES)",
            )
        nul = data.find(b"\0")
        if nul >= 0:
            raise InputError(str(path), f"a binary file, not text (NUL byte at offset {nul})")
        return data.decode("utf-8")
    except IsADirectoryError:
        raise InputError(str(path), "is a folder, not a file") from None
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"not UTF-8 text (byte {exc.start})") from None
