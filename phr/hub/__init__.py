"""Publishing to the Hugging Face Hub or a local hub, generic over artifact kinds.

``push`` / ``pull`` (``phr.hub.publish``), the validation ``gate`` and the artifact-kind registry
(``phr.hub.kinds``: each kind brings its own content validator), the local hub (``phr.hub.local``) and the online
path (``phr.hub.online``). Nothing here knows PHRBench or any other artifact.
"""

from phr.hub.errors import (
    DestinationExistsError,
    MissingTokenError,
    PublishError,
    PushFailedError,
    RepoNotFoundError,
    RepoTypeMismatchError,
    RevisionNotFoundError,
    TagExistsError,
    UnknownKindError,
    ValidationFailedError,
)
from phr.hub.gate import gate
from phr.hub.kinds import ArtifactKind, all_kinds, register_kind, unregister_kind
from phr.hub.local import LocalHub
from phr.hub.publish import pull, push
from phr.hub.repo import README, PushResult, folder_files, hub_dir

__all__ = [
    "ArtifactKind",
    "DestinationExistsError",
    "LocalHub",
    "MissingTokenError",
    "PublishError",
    "PushFailedError",
    "PushResult",
    "README",
    "RepoNotFoundError",
    "RepoTypeMismatchError",
    "RevisionNotFoundError",
    "TagExistsError",
    "UnknownKindError",
    "ValidationFailedError",
    "folder_files",
    "gate",
    "hub_dir",
    "all_kinds",
    "pull",
    "push",
    "register_kind",
    "unregister_kind",
]
