"""Errors the toolkit raises on purpose: each says what went wrong and what to do."""


class PHRError(Exception):
    """Base class: a clear, user-facing error (the CLI prints it without a traceback)."""


class UnknownProviderError(PHRError, ValueError):
    pass


class MissingAPIKeyError(PHRError):
    pass


class ModelNotInstalledError(PHRError):
    pass


class EndpointUnreachableError(PHRError):
    pass
