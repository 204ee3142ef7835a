"""The local pool's configuration file, in HTCondor's configuration syntax.

Where the file is (first found wins):

1. the path given explicitly (``sheaf run --pool-config FILE``);
2. the environment variable ``SHEAF_CONFIG``;
3. ``~/.config/sheaf/pool.conf`` if it exists;
4. none: the pool is laid out as HTCondor lays out an unconfigured machine (one static slot per CPU,
   each with an even share of memory and disk).

Syntax: HTCondor's configuration language, as ``sheaf.condor`` reads it (``CondorConfig``: ``NAME =
value`` lines, continuations, ``$(NAME)`` and ``$ENV(VAR)`` macros, each definition's line kept for
located errors).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from sheaf._text import read_text
from sheaf.condor import CondorConfig, parse_condor_config

__all__ = ["PoolConfig", "find_config", "load_config", "parse_config"]

ENV_VAR = "SHEAF_CONFIG"
USER_FILE = Path("~/.config/sheaf/pool.conf")
#: the pool's configuration is an HTCondor configuration
PoolConfig = CondorConfig
parse_config = parse_condor_config


def find_config(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The configuration file to use, or None (see the module docstring for the order)."""
    if explicit is not None:
        return Path(explicit)
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return Path(from_env)
    user = USER_FILE.expanduser()
    return user if user.is_file() else None


def load_config(explicit: str | os.PathLike[str] | None = None) -> PoolConfig:
    """Find and parse the configuration; an empty one when there is no file."""
    path = find_config(explicit)
    if path is None:
        return PoolConfig()
    return parse_config(read_text(str(path), "pool configuration"), str(path))


def as_mapping(config: Mapping[str, str] | str | None, path: str | None = None) -> PoolConfig:
    """Accept a ``PoolConfig``, configuration text, a plain mapping, or None."""
    if isinstance(config, PoolConfig):
        return config
    if config is None:
        return PoolConfig(path=path)
    if isinstance(config, str):
        return parse_config(config, path)
    text = "\n".join(f"{key} = {value}" for key, value in config.items())
    return parse_config(text, path)
