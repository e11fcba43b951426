"""Errors of pushes and pulls: each says what failed and what to do (a ``UsageError``: exit 2, except
``PushFailedError``, work that failed part-way: exit 1)."""

from __future__ import annotations

from phr.core.errors import UsageError
from phr.core.report import ValidationReport


class PublishError(UsageError):
    """A push or pull that could not be done; the message says why and what to do."""


class ValidationFailedError(PublishError):
    """The folder failed the validation gate: nothing was uploaded."""

    def __init__(self, message: str, report: ValidationReport | None = None) -> None:
        super().__init__(message)
        self.report = report


class TagExistsError(PublishError):
    pass


class MissingTokenError(PublishError):
    pass


class RepoTypeMismatchError(PublishError):
    pass


class RepoNotFoundError(PublishError):
    pass


class RevisionNotFoundError(PublishError):
    pass


class DestinationExistsError(PublishError):
    pass


class PushFailedError(PublishError):
    """The push failed part-way (network, server, disk): the repo keeps its previous version."""

    exit_code = 1


class UnknownKindError(PublishError):
    """No registered artifact kind recognises the folder."""
