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
