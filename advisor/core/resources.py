"""The one place that finds the rules/ and schemas/ folders.

In a wheel they are shipped as `advisor/_data/{rules,schemas}`; in a source checkout (editable
install or tests) they are the top-level folders of the repository.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path


# found once per process: a check looks it up for each of its ~75 data files
@cache
def data_dir(name: str) -> Path:
    """Return the folder `rules` or `schemas`, wherever the package was installed from."""
    # the package's folder, as importlib.resources.files("advisor") gives it for a package
    # installed as files (importing importlib.resources and its zip reader costs ~2.5 ms)
    shipped = Path(__file__).parents[1] / "_data" / name
    if shipped.is_dir():
        return shipped
    checkout = Path(__file__).resolve().parents[2] / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"advisor data folder '{name}' is missing from the installation")


def rules_dir() -> Path:
    return data_dir("rules")


def schemas_dir() -> Path:
    return data_dir("schemas")
