"""Errors that carry a message meant for the operator, not a stack trace."""


class LbError(Exception):
    """Base class: the message alone must tell the user what is wrong and how to fix it."""


class SetupError(LbError):
    """The machine is not ready to run Spark/Delta (Java missing or too old, Delta jars unavailable)."""


class InputError(LbError):
    """A snapshot file is malformed: the message names the file, the field and what was expected."""

    def __init__(self, file: str, field: str, expected: str, got: object = None):
        self.file, self.field, self.expected, self.got = file, field, expected, got
        detail = f"{file}: field '{field}': expected {expected}"
        if got is not None:
            detail += f", got {got!r}"[:300]
        super().__init__(detail)


# What ran out, by the text the JVM or Python gives (innermost first): errno names and Java's error classes.
_EXHAUSTED = (
    ("No space left on device", "disk"), ("Disk quota exceeded", "disk"),
    ("java.lang.OutOfMemoryError", "memory"), ("MemoryError", "memory"), ("Cannot allocate memory", "memory"),
    ("Too many open files", "files"),
)


def ran_out(text: str, places: dict[str, str | None]) -> str | None:
    """One line saying what ran out and where, for an error whose text (class, message, stack) shows that a
    resource was exhausted; None for any other error. ``places`` names the folders the night writes (the lake,
    the reports, Spark's scratch space): on a full disk, the line names each of them whose file system is nearly
    full, with its free space."""
    import shutil
    from pathlib import Path

    kind = next((k for needle, k in _EXHAUSTED if needle in text), None)
    if kind == "memory":
        cause = "java.lang.OutOfMemoryError" if "OutOfMemoryError" in text else "MemoryError"
        return (f"ran out of memory ({cause}): give Spark more (LB_SPARK_CONF '{{\"spark.driver.memory\": \"8g\"}}') "
                "or run fewer days at once")
    if kind == "files":
        return "ran out of open files (Too many open files): raise the limit (ulimit -n) and run the day again"
    if kind != "disk":
        return None
    full = []
    for name, folder in places.items():
        path = Path(folder) if folder else None
        while path is not None and not path.exists() and path != path.parent:
            path = path.parent
        if path is None:
            continue
        try:
            usage = shutil.disk_usage(path)
        except OSError:
            continue
        if usage.free < max(64 << 20, usage.total // 100):  # under 64 MiB or 1 % left
            full.append(f"{name} {folder} ({_size(usage.free)} free of {_size(usage.total)})")
    if not full:
        named = ", ".join(f"{n} {f}" for n, f in places.items() if f)
        return ("ran out of disk space (No space left on device)"
                + (f"; none of {named} is full now (space freed since?)" if named else "")
                + ". Free space and run the day again")
    return f"ran out of disk space (No space left on device): {'; '.join(full)}. Free space there and run the day again"


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
