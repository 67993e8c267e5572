"""Files the CLI writes for a user (reports, agent cases): whole or not at all."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_output"]


def write_output(path: Path, text: str, *, replace: bool = True, option: str = "") -> None:
    """Write ``text`` to ``path`` atomically (a temporary file renamed into place), with
    the mode any new file of the user gets.

    Args:
        path: Where to write.
        text: The whole content.
        replace: Replace an existing file; False: refuse one, even one that appears
            while writing.
        option: The option that named the path (``--out``), shown in errors.

    Raises:
        InputError: The file cannot be written there, or exists and not ``replace``; the
            message names the path.
    """
    from arbiter.errors import InputError

    named = f"{option} {path}" if option else str(path)
    folder = path.parent if str(path.parent) else Path(".")
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"cannot write {named}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as file:
            file.write(text)
        # mkstemp makes the file private; give it the mode any new file of the user gets.
        mask = os.umask(0o022)
        os.umask(mask)
        os.chmod(temporary, 0o666 & ~mask)
        if not replace:
            # Claim the name first (fails if it exists), so a file that appeared since
            # the check is never overwritten; the rename then fills it in one step.
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        os.replace(temporary, path)
    except FileExistsError:
        raise InputError(f"{named}: the file exists; pass --force to replace it") from None
    except OSError as exc:
        raise InputError(f"cannot write {named}: {exc.strerror or exc}") from None
    finally:
        Path(temporary).unlink(missing_ok=True)
