"""The upstream repositories `advisor check` is measured on, brought onto this machine.

    python -m benchmarks.corpus [--into DIR]        # prints each repository's folder

Each entry is a public repository at one branch. Its text files of the suffixes `check` walks
(YAML and shell), and the few source files `check` reads a repository's facts from, are copied
out of a git snapshot into `DIR/<name>` (a `git init` folder, so the repository's top level is
where bash scripts expect it). A snapshot is looked for in
`$ADVISOR_CORPUS_MIRROR/<owner>+<name>` (bare or with a work tree; default `/work/.mirror`),
else cloned shallowly from GitHub into `$ADVISOR_CORPUS_CACHE`; without either (no network)
the repository is left out and its users skip. Nothing here is committed: the files are
upstream's, read for measurement only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

SUFFIXES = (".sh", ".bash", ".yaml", ".yml")
# the files `check` reads a repository's own facts from: its release (advisor/engine/targets.py),
# its FSDP2 key schema (advisor/dialects/fsdp2/repository_schema.py), where it declares its
# Megatron flags (rules/megatron.yaml argument_sources)
VERSION_FILES = (
    "setup.py",
    "mindformers/__init__.py",
    "mindspeed_llm/fsdp2/utils/arguments.py",
    "mindspeed_llm/training/arguments.py",
    "mindspeed_llm/features_manager/arguments/deprecated_args.py",
)
# written into a folder once it is complete; a folder written by another layout is extracted again
LAYOUT = "3"


@dataclass(frozen=True)
class Upstream:
    name: str  # the folder it is copied to
    repo: str  # owner/name on GitHub
    ref: str  # branch or tag


CORPUS = (
    Upstream("mindspeed-llm-master", "Ascend/MindSpeed-LLM", "master"),
    Upstream("mindspeed-llm-2.2.0", "Ascend/MindSpeed-LLM", "2.2.0"),
    Upstream("mindspeed-llm-1.0.0", "Ascend/MindSpeed-LLM", "1.0.0"),
    # forks: one pinned before the FSDP2 fused-op switches moved to `optimization` (same
    # 26.0.0dev0 version), one after, one of the 1.0 era
    Upstream("fork-jiangyu67-mindspeed-llm", "jiangyu67/MindSpeed-LLM", "master"),
    Upstream("fork-yuezhou-oh-mindspeed-llm", "YueZhou-oh/MindSpeed-LLM", "main"),
    Upstream("fork-moguizhizi-mindspeed-llm", "moguizhizi/MindSpeed-LLM", "main"),
    Upstream("fork-imhmhm-mindspeed-llm", "imhmhm/MindSpeed-LLM", "master"),
    Upstream("mindspeed-mm", "Ascend/MindSpeed-MM", "master"),
    Upstream("mindspeed-rl", "Ascend/MindSpeed-RL", "master"),
    Upstream("mindformers-master", "mindspore-lab/mindformers", "master"),
    Upstream("mindformers-r1.5.0", "mindspore-lab/mindformers", "r1.5.0"),
    Upstream("mindformers-r1.3.0", "mindspore-lab/mindformers", "r1.3.0"),
    Upstream("mindformers-mindspore-ai", "mindspore-ai/mindformers", "master"),
)


def _git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, timeout=300
    ).stdout


def _git_dir(folder: Path) -> Path | None:
    for candidate in (folder / "repo" / ".git", folder / "repo", folder / ".git", folder):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def _blobs(git_dir: Path, shas: list[str]) -> list[bytes | None]:
    """The blobs' contents in order, read by one `git cat-file --batch` (None: missing)."""
    out = subprocess.run(
        ["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
        input="".join(f"{sha}\n" for sha in shas).encode(),
        check=True,
        capture_output=True,
        timeout=600,
    ).stdout
    blobs: list[bytes | None] = []
    at = 0
    for _ in shas:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) != 3:  # "<sha> missing"
            blobs.append(None)
            continue
        size = int(header[2])
        blobs.append(out[at : at + size])
        at += size + 1
    return blobs


def _has_ref(git_dir: Path, ref: str) -> bool:
    try:
        _git(git_dir, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except subprocess.CalledProcessError:
        return False
    return True


def _clone(item: Upstream) -> Path | str:
    """A shallow clone of the branch, or why there is none (no network, git refused)."""
    cache = Path(os.environ.get("ADVISOR_CORPUS_CACHE", Path(tempfile.gettempdir()) / "corpus"))
    target = cache / "clones" / f"{item.repo.replace('/', '+')}@{item.ref}"
    if _git_dir(target) is None:
        url = f"https://github.com/{item.repo}.git"
        try:
            subprocess.run(
                ["git", "clone", "-q", "--bare", "--depth", "1", "--branch", item.ref, url, target],
                check=True,
                capture_output=True,
                timeout=600,
            )
        except subprocess.CalledProcessError as exc:
            shutil.rmtree(target, ignore_errors=True)
            lines = exc.stderr.decode(errors="replace").strip().splitlines()
            return f"git clone failed: {lines[-1] if lines else exc}"
        except (subprocess.SubprocessError, OSError) as exc:
            shutil.rmtree(target, ignore_errors=True)
            return f"git clone failed: {exc}"
    return _git_dir(target) or "git clone left no repository"


def snapshot(item: Upstream) -> tuple[Path, str] | str:
    """(git directory, revision) holding the entry's branch, or why none can be had."""
    mirror = Path(os.environ.get("ADVISOR_CORPUS_MIRROR", "/work/.mirror"))
    found = _git_dir(mirror / item.repo.replace("/", "+"))
    if found is not None:
        for ref in (item.ref, f"origin/{item.ref}", f"refs/tags/{item.ref}"):
            if _has_ref(found, ref):
                return found, ref
    cloned = _clone(item)
    if isinstance(cloned, str):
        where = "no mirror holds it" if found is None else f"the mirror lacks {item.ref}"
        return f"{where}; {cloned}"
    return cloned, "HEAD"


def _marker(item: Upstream) -> str:
    return f"{item.repo}@{item.ref} layout {LAYOUT}\n"


def extract(item: Upstream, into: Path) -> Path | str:
    """The entry's YAML and shell files under `into/<name>` (reused when already there), or
    why it cannot be had."""
    folder = into / item.name
    marker = folder / ".corpus-complete"
    if marker.is_file() and marker.read_text(encoding="utf-8") == _marker(item):
        return folder
    found = snapshot(item)
    if isinstance(found, str):
        return found
    git_dir, ref = found
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    wanted: list[tuple[str, str]] = []  # (blob, path)
    for entry in _git(git_dir, "ls-tree", "-r", "-z", ref).split(b"\0"):
        meta, _, name = entry.partition(b"\t")
        path = name.decode("utf-8", "surrogateescape")
        parts = meta.split()
        # a symbolic link (120000) is left out: its target is walked once, as itself
        regular = len(parts) == 3 and parts[0] in (b"100644", b"100755") and parts[1] == b"blob"
        if regular and (path.endswith(SUFFIXES) or path in VERSION_FILES):
            wanted.append((parts[2].decode(), path))
    for path, blob in zip(
        (p for _, p in wanted), _blobs(git_dir, [b for b, _ in wanted]), strict=True
    ):
        if blob is None:
            continue  # a blob the snapshot lacks (large files are left out of snapshots)
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob)
    subprocess.run(["git", "init", "-q", str(folder)], check=True, capture_output=True)
    marker.write_text(_marker(item), encoding="utf-8")
    return folder


def corpus(into: Path | None = None) -> dict[str, Path | str]:
    """name -> folder, or why the entry could not be had (its users skip it)."""
    base = into or Path(
        os.environ.get("ADVISOR_CORPUS_CACHE", Path(tempfile.gettempdir()) / "corpus")
    )
    return {item.name: extract(item, base) for item in CORPUS}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--into", type=Path, default=None)
    args = parser.parse_args()
    for name, found in corpus(args.into).items():
        shown = found if isinstance(found, Path) else f"(skipped: {found})"
        print(f"{name:30} {shown}")


if __name__ == "__main__":
    main()
