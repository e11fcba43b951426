"""Run settings: one typed config per operation (``ops``), its views (``base``), the shared facts
(``defaults``). Imports only pydantic (and yaml when a file is read)."""

from phr.config.base import ConfigError, OpConfig, command_line, resolve, setting
from phr.config.defaults import CALL_TIMEOUT_S, MAX_RETRY_AFTER_S, NO_MODEL, OFFLINE_MODEL, is_no_model, model_or_none

__all__ = [
    "CALL_TIMEOUT_S",
    "MAX_RETRY_AFTER_S",
    "NO_MODEL",
    "OFFLINE_MODEL",
    "ConfigError",
    "OpConfig",
    "command_line",
    "is_no_model",
    "model_or_none",
    "resolve",
    "setting",
]
