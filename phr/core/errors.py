"""Errors the toolkit raises on purpose: each says what went wrong and what to do.

The CLI prints the message of a ``PHRError`` without a traceback and exits with its ``exit_code``: 2 for a
``UsageError`` (the command cannot run as given: a bad argument, spec, key, option or input file; fix it and
rerun), 1 for any other failure (the work was attempted and failed: a push, a build step, a call).
"""


class PHRError(Exception):
    """Base class: a clear, user-facing error (the CLI prints it without a traceback)."""

    exit_code = 1


class UsageError(PHRError):
    """The command cannot run as given (bad argument, model spec, API key, option or input file)."""

    exit_code = 2


class UnknownProviderError(UsageError, ValueError):
    pass


class MissingAPIKeyError(UsageError):
    pass


class ModelNotInstalledError(UsageError):
    pass


class EnvironmentFault(PHRError):
    """The machine failed the work: a full disk, a path that cannot be read or written, a damaged cache or
    store (``phr.core.faults`` words the ones Python raises)."""
