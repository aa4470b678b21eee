"""Configuration: the home directory and typed settings."""

from hermes.config.home import ensure_home, hermes_home
from hermes.config.settings import ConfigError, Settings, load_settings

__all__ = ["ConfigError", "Settings", "ensure_home", "hermes_home", "load_settings"]
