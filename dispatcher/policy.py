"""The plugin policy: ``plugins.toml`` shipped with ember, merged with the user's file."""

from __future__ import annotations

import os
from pathlib import Path

import tomllib

DEFAULT_FILE = Path(__file__).with_name("plugins.toml")
CONFIG_ENV = "EMBER_PLUGINS_CONFIG"
AUTOLOAD_ENV = "EMBER_BACKEND_AUTOLOAD"


def _merge(base: dict, override: dict) -> dict:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


class Policy:
    """Which plugins load, their priorities, and when ops may fall back to the CPU."""

    def __init__(self, data: dict, sources: tuple[str, ...] = ()):
        self.data = data
        self.sources = sources

    @classmethod
    def load(cls, environ=os.environ) -> Policy:
        data = tomllib.loads(DEFAULT_FILE.read_text())
        sources = [str(DEFAULT_FILE)]
        user = environ.get(CONFIG_ENV)
        if user:
            path = Path(user)
            try:
                data = _merge(data, tomllib.loads(path.read_text()))
            except (OSError, tomllib.TOMLDecodeError) as exc:
                raise RuntimeError(
                    f"{CONFIG_ENV}={user}: can't read the plugin policy: {exc}"
                ) from exc
            sources.append(str(path))
        if environ.get(AUTOLOAD_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
            data = _merge(data, {"autoload": {"enabled": False}})
            sources.append(f"{AUTOLOAD_ENV}=0")
        return cls(data, tuple(sources))

    @property
    def autoload(self) -> bool:
        return bool(self.data.get("autoload", {}).get("enabled", True))

    def backend(self, name: str) -> dict:
        return self.data.get("backends", {}).get(name, {})

    def enabled(self, name: str) -> bool:
        return bool(self.backend(name).get("enabled", True))

    def priority(self, name: str, declared: int | None) -> int:
        value = self.backend(name).get("priority")
        if value is None:
            value = declared if declared is not None else 0
        return int(value)

    def cpu_fallback(self, name: str) -> bool:
        value = self.backend(name).get("fallback")
        if value is None:
            value = self.data.get("fallback", {}).get("cpu", True)
        return bool(value)

    @property
    def warn_fallback(self) -> bool:
        return bool(self.data.get("fallback", {}).get("warn", True))
