"""Settings of the LLM agent proposer, from the environment or an env file (pydantic-settings).

Loaded once by the front end (the command line, the screen) where the run's proposer uses it
(core.opening.uses_settings), and passed in: the engine never calls `load` (tests/test_settings_once.py)
but where a Dask worker, a process of its own, starts a suite's task (suite/distributed.py), and nothing reads
it as a global. Sources, strongest first:

1. the environment (`KERNEL_AGENT_MODEL=...`);
2. the project's own file, `$XDG_CONFIG_HOME/kernel-tui/agent.env` (XDG_CONFIG_HOME defaults to ~/.config);
3. for compatibility with the published kernel agent, `~/.config/hello-gpu/kernel-agent.env`;
4. the defaults below.

The API key is a `SecretStr`: its value shows in no repr, log or record; only the request that goes to the
model's API reads it, through `get_secret_value()`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from kernel_tui.core.errors import KernelTuiError

ENV_PREFIX = "KERNEL_AGENT_"
NOT_CONFIGURED = ("no model configured: set KERNEL_AGENT_MODEL (and KERNEL_AGENT_API_KEY) in the environment or in "
                  "~/.config/kernel-tui/agent.env, or use --proposer search")
DEFAULT_EXTRA_BODY: dict[str, Any] = {"parallel_tool_calls": False}


def config_home() -> Path:
    """The user's config directory: $XDG_CONFIG_HOME, else ~/.config."""
    xdg = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"


def project_env_file() -> Path:
    return config_home() / "kernel-tui" / "agent.env"


def compat_env_file() -> Path:
    return Path.home() / ".config" / "hello-gpu" / "kernel-agent.env"


def default_env_files() -> tuple[Path, ...]:
    """Weakest first: a later file overrides an earlier one (pydantic-settings' order)."""
    return (compat_env_file(), project_env_file())


class AgentSettings(BaseSettings):
    """How the agent proposer reaches its model, and how much it may use it."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_file_encoding="utf-8",
        env_ignore_empty=True,
        extra="ignore",
        validate_default=True,
    )

    model: str | None = None
    """The model as litellm names it, provider/model (e.g. `openai/gpt-4.1`, `anthropic/claude-sonnet-4-5`,
    `openai/<name>` for any OpenAI-compatible server together with KERNEL_AGENT_API_BASE). Unset: the agent
    is not configured."""

    api_key: SecretStr | None = None
    """The API key sent to the model's provider. Secret: never logged, recorded or shown."""

    api_base: str | None = None
    """Base URL of the API (e.g. `http://localhost:8000/v1`); unset: the provider's default endpoint."""

    extra_body: dict[str, Any] = Field(default_factory=lambda: dict(DEFAULT_EXTRA_BODY))
    """A JSON object merged into the body of every request. The default asks for one tool call per
    reply; `{}` sends nothing extra (for providers that reject the field)."""

    max_steps: int = Field(25, ge=1)
    """At most this many model calls per run (verdict rounds are counted apart, by the session)."""

    timeout: float = Field(600.0, gt=0)
    """Seconds one model call may take before it is abandoned and retried."""

    def __init__(self, **values: Any) -> None:
        values.setdefault("_env_file", default_env_files())
        super().__init__(**values)

    @field_validator("model", "api_base", mode="before")
    @classmethod
    def _blank_is_unset(cls, v: Any) -> Any:
        return None if isinstance(v, str) and not v.strip() else (v.strip() if isinstance(v, str) else v)

    @field_validator("api_key", mode="before")
    @classmethod
    def _blank_key_is_unset(cls, v: Any) -> Any:
        if isinstance(v, SecretStr):
            v = v.get_secret_value()
        return None if isinstance(v, str) and not v.strip() else (v.strip() if isinstance(v, str) else v)

    @property
    def is_configured(self) -> bool:
        """A model is named; the key may be absent (local servers need none)."""
        return bool(self.model)

    def require_model(self) -> AgentSettings:
        """These settings, if they name a model; else the one line that says how to name one."""
        if not self.is_configured:
            raise KernelTuiError(NOT_CONFIGURED)
        return self

    @property
    def secret(self) -> str:
        """The key's value, or "" (for redaction and for the request only)."""
        return self.api_key.get_secret_value() if self.api_key is not None else ""

    @classmethod
    def load(cls, env_files: Sequence[Path] | None = None) -> AgentSettings:
        """Read the settings; a bad value becomes one KernelTuiError line (no value is echoed)."""
        files = tuple(env_files) if env_files is not None else default_env_files()
        try:
            return cls(_env_file=files)
        except (ValidationError, SettingsError) as exc:
            if isinstance(exc, ValidationError):
                err = exc.errors()[0]
                field = ".".join(str(p) for p in err["loc"]) or "?"
                raise KernelTuiError(f"agent settings: {ENV_PREFIX}{field.upper()}: {err['msg']}") from None
            raise KernelTuiError(f"agent settings: {exc}") from None
