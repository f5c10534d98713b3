"""Configuration: the key table, the sources and how they merge, the trust side of each key.

- `keys`: every key (lich_core.config.keys.KEYS): its check, environment variable, trust side;
  defaults live once, in lich_core.settings.Settings.
- `validators`: value checks with messages that name the key path and what is allowed.
- `sources`: reading the files and the environment; each source checked on its own, a bad value
  dropped alone (`ConfigProblem`).
- `sides`: what an untrusted workspace file may do with each key.
- `loader`: `load_config`, merging the sources into the effective `Config`.
- `trusting`: `set_workspace_trust` and what trusting changes; `display`: masking secrets.
"""

from lich_core.config.display import is_secret_name, mask_secrets
from lich_core.config.keys import DROPPED, KEYS, KeySpec, keys_on, validate_value
from lich_core.config.loader import (
    BROKEN_USER_CONFIG_CAPABILITIES,
    WHOLE_FILE,
    Config,
    config_files,
    ignored_settings,
    load_config,
    workspace_trust_status,
)
from lich_core.config.sides import (
    APPROVAL_STRICTNESS,
    DEFAULT_ASK_CAPABILITIES,
    SIDE_ANY,
    SIDE_NARROW,
    SIDE_NEVER,
    SIDE_USER,
    SIDES,
    default_approval,
    narrow_approval,
)
from lich_core.config.sources import (
    CONFIG_DIR_NAME,
    CONFIG_FILE_NAME,
    EDITOR_SOURCE,
    ENV_SOURCE,
    ConfigProblem,
    check_source,
    env_values,
    read_config_file,
    strip_json_comments,
    user_config_path,
    workspace_config_path,
)
from lich_core.config.trusting import (
    TrustChange,
    WorkspaceChange,
    config_changes,
    set_workspace_trust,
    workspace_changes,
)
from lich_core.config.validators import COMPLETION_FORMATS_BY_KIND, v_completion, v_next_edit

__all__ = [
    "APPROVAL_STRICTNESS",
    "BROKEN_USER_CONFIG_CAPABILITIES",
    "COMPLETION_FORMATS_BY_KIND",
    "CONFIG_DIR_NAME",
    "CONFIG_FILE_NAME",
    "DEFAULT_ASK_CAPABILITIES",
    "DROPPED",
    "EDITOR_SOURCE",
    "ENV_SOURCE",
    "KEYS",
    "SIDES",
    "SIDE_ANY",
    "SIDE_NARROW",
    "SIDE_NEVER",
    "SIDE_USER",
    "WHOLE_FILE",
    "Config",
    "ConfigProblem",
    "KeySpec",
    "TrustChange",
    "WorkspaceChange",
    "check_source",
    "config_changes",
    "config_files",
    "default_approval",
    "env_values",
    "ignored_settings",
    "is_secret_name",
    "keys_on",
    "load_config",
    "mask_secrets",
    "narrow_approval",
    "read_config_file",
    "set_workspace_trust",
    "strip_json_comments",
    "user_config_path",
    "v_completion",
    "v_next_edit",
    "validate_value",
    "workspace_changes",
    "workspace_config_path",
    "workspace_trust_status",
]
