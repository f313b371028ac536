"""Reading the user's text files: every OS and decoding error becomes one input error."""

from __future__ import annotations

from pathlib import Path

from advisor.core import limits
from advisor.model import InputError


def read_text(path: Path) -> str:
    """The file's text exactly as stored (line endings kept), decoded as UTF-8."""
    try:
        if path.exists() and not path.is_file() and not path.is_dir():
            # a FIFO or a device blocks its reader or never ends: only plain files are read
            raise InputError(str(path), "is not a regular file (a pipe, socket or device)")
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
