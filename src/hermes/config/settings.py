"""Typed settings built once from config.yaml, .env and the environment (environment wins).

No `from __future__ import annotations` here: the models' ~160 field annotations are then
objects Python builds once, where pydantic would compile and evaluate each string at every
start (~15% of this module's import, on every command's path).
"""

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from hermes import entry_points
from hermes.config.database import profile_schema, with_search_path
from hermes.config.fields import CommaList, empty_dict, empty_list
from hermes.config.home import (
    DEFAULT_PROFILE,
    ProfileError,
    active_profile,
    ensure_home,
    existing_profile_home,
    root_home,
)
from hermes.errors import HermesError

# before this module's first model (pydantic's plugin look-up): one read of the entry points
entry_points.prime()


class ConfigError(HermesError):
    """The configuration cannot be used; the message names the file and the key."""


class _Section(BaseModel):
    # Built at first use, not at import: `load_settings` builds `Settings` (every section's
    # schema inline, once) and a section class alone is built only if used alone. Building
    # ~30 validators at import was most of this module's cost, on every command's path.
    model_config = ConfigDict(extra="forbid", defer_build=True)


_SectionM = TypeVar("_SectionM", bound=BaseModel)


def _section(model: type[_SectionM]) -> Any:
    """A nested section's field, defaulting to the section's defaults: an empty mapping
    validated by the enclosing model's own schema, as a config.yaml `section: {}` is, so the
    section's class need not build a validator of its own (`defer_build`). Not
    `Field(default_factory=model)`: that builds every section's class at the first `Settings`,
    and pydantic generates a model class's signature field by field."""
    return Field(default_factory=empty_dict, validate_default=True)


class PricingSettings(_Section):
    """What the model costs, in USD per million tokens (`/usage` in `hermes chat`)."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)


def _no_credentials(value: str | None) -> str | None:
    """A model endpoint's URL may not carry a user or password: the key goes as a bearer
    token (`api_key`), and an HTTP client cannot send both (aiohttp refused the call)."""
    authority = (value or "").split("://", 1)[-1]
    for end in "/?#":
        authority = authority.split(end, 1)[0]
    if "@" in authority:
        raise ValueError(
            "holds a user name or password (user:password@host): Hermes sends the model's key "
            "as a bearer token; put it in model.api_key (OPENAI_API_KEY) and leave it out of "
            "the URL"
        )
    return value


class FallbackModelSettings(_Section):
    """One entry of `model.fallbacks`: where to go when the models before it fail."""

    name: str
    base_url: str | None = None
    """None: the main model's endpoint."""
    api_key: SecretStr | None = None
    """None: the main model's key when the endpoint is the same, else no key."""
    context_length: int | None = Field(default=None, gt=0)

    _plain_base_url = field_validator("base_url")(_no_credentials)


class ModelSettings(_Section):
    base_url: str | None = None
    api_key: SecretStr | None = None
    name: str | None = None
    _plain_base_url = field_validator("base_url")(_no_credentials)
    context_length: int | None = Field(default=None, gt=0)
    timeout: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    # Bound on one call's whole wait for an answer, retries included (a stream, once started,
    # is bounded by `timeout` per read instead).
    total_timeout: float = Field(default=300.0, gt=0)
    # the registered model provider (`hermes plugins list`); `openai`: any OpenAI-compatible
    # endpoint at base_url
    provider: str = Field(default="openai", min_length=1)
    pricing: PricingSettings | None = None
    """USD per million tokens; else taken from the endpoint's model list when it says
    (OpenRouter does), else `/usage` shows tokens only."""
    fallbacks: list[FallbackModelSettings] = Field(default_factory=empty_list)
    """Models tried in order when the one before fails (timeout, unreachable, 429, 5xx, or a
    prompt too long for its window where the next is larger)."""
    fallback_cooldown: float = Field(default=60.0, ge=0)
    """Seconds a failed model rests before turns try it first again (kept across restarts)."""
    vision: bool | None = None
    """The model sees images: `image_url` / `input_image` parts and chat photos reach it as
    OpenAI image parts (else they are refused with 400 `vision_not_enabled`). None (unset):
    what the endpoint's `GET /models` says about the model (`hermes.models.vision`)."""
    image_max_bytes: int = Field(default=5_000_000, gt=0)
    """Largest image accepted (decoded bytes); larger ones are refused (413 over HTTP)."""
    images_per_message: int = Field(default=4, ge=1, le=32)
    image_turns: int = Field(default=3, ge=0)
    """Images of the last this-many user messages are sent to the model again; older ones
    reach it as the text `[image]` (they cost ~1,500 tokens each on every call)."""
    images_kept: int = Field(default=1000, ge=1)
    """Images kept on disk per scope (`images/`); past it the least recently sent go, and
    their markers reach the model as `[image]`: with `image_max_bytes` this bounds the disk a
    chat full of photos can fill."""


class SpeechToTextSettings(_Section):
    """Voice notes from the gateway, transcribed at an OpenAI-compatible
    `/v1/audio/transcriptions` endpoint."""

    base_url: str | None = None
    """None: the model endpoint (`model.base_url`)."""
    model: str = "whisper-1"
    api_key: SecretStr | None = None
    """None: the model's key when the endpoint is the model's."""
    max_bytes: int = Field(default=25_000_000, gt=0)
    """Longer recordings are not sent (OpenAI's own limit is 25 MB)."""


class TextToSpeechSettings(_Section):
    """Spoken replies through an OpenAI-compatible `/v1/audio/speech` endpoint."""

    mode: Literal["off", "voice_in", "always"] = "off"
    """`voice_in`: a reply to a voice note is also sent as audio; `always`: every reply."""
    base_url: str | None = None
    """None: the model endpoint (`model.base_url`)."""
    model: str = "tts-1"
    voice: str = "alloy"
    api_key: SecretStr | None = None
    """None: the model's key when the endpoint is the model's."""
    max_chars: int = Field(default=4000, gt=0)
    """Longer replies are spoken only up to here (OpenAI's own limit is 4,096 characters)."""


_NAMESPACE = re.compile(r"^[A-Za-z0-9._/@-]{1,64}$")


class ServerSettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(default=11434, ge=0, le=65535)
    api_key: SecretStr | None = None
    model_name: str = "hermes"
    cors_origins: list[str] = Field(default_factory=empty_list)
    max_body_bytes: int = Field(default=10_000_000, gt=0)
    # Seconds a client may take to send its whole request body (then 408).
    body_timeout: float = Field(default=60.0, gt=0)
    ignore_client_tools: bool = False
    # Session-id namespaces that get their own scope: `user:42` -> the brain of user 42 (SPEC §6).
    session_scopes: CommaList = Field(default_factory=empty_list)
    # Listen beyond loopback with no server key: only behind loopback-only publishing (Docker).
    allow_unauthenticated_public_bind: bool = False
    # `/v1/runs` one caller (scope) may have unfinished at once on this replica (then 429).
    max_concurrent_runs: int = Field(default=8, ge=1)

    @field_validator("session_scopes")
    @classmethod
    def _plain_namespaces(cls, value: list[str]) -> list[str]:
        for namespace in value:
            if not _NAMESPACE.match(namespace):
                raise ValueError(
                    f"{namespace!r} is not a session namespace: write the part before the "
                    "colon (e.g. user for user:42), 1-64 letters, digits or . _ / @ -"
                )
        return value


class QuotaSettings(_Section):
    """Per scoped key and per user; None = no limit. The owner is exempt unless asked."""

    requests_per_minute: int | None = Field(default=None, ge=1)
    turns_per_day: int | None = Field(default=None, ge=1)
    apply_to_owner: bool = False


class AgentSettings(_Section):
    max_iterations: int = Field(default=30, ge=1, le=500)
    toolsets: list[str] | None = None


class Mem0Settings(_Section):
    # mem0 runs in its own worker process (mem0_worker): its extraction calls go to the model
    # endpoint (`model`: default model.name), its vectors come from the bundled MiniLM or the
    # endpoint's /v1/embeddings (`embedder: endpoint` with `embedding_model` and
    # `embedding_dims`), and they are kept by qdrant's on-disk local mode under `path`
    # (default $HERMES_HOME/mem0).
    model: str | None = None
    embedder: Literal["minilm", "endpoint"] = "minilm"
    embedding_model: str | None = None
    embedding_dims: int = Field(default=384, gt=0)
    path: Path | None = None
    collection: str = Field(default="hermes", pattern=r"^[A-Za-z0-9_-]{1,64}$")


class HonchoSettings(_Section):
    base_url: str | None = None  # default: Honcho's hosted API
    api_key: SecretStr | None = None
    workspace: str = Field(default="hermes", pattern=r"^[A-Za-z0-9_-]{1,100}$")
    assistant_peer: str = Field(default="hermes", pattern=r"^[A-Za-z0-9_-]{1,100}$")


class SupermemorySettings(_Section):
    base_url: str | None = None  # default: Supermemory's hosted API
    api_key: SecretStr | None = None
    container_prefix: str = Field(default="hermes", pattern=r"^[A-Za-z0-9_-]{1,40}$")


class MemorySettings(_Section):
    enabled: bool = True
    memory_char_limit: int = Field(default=2200, gt=0)
    user_char_limit: int = Field(default=1375, gt=0)
    review_interval: int = Field(default=10, ge=0)
    # Versions kept per note, skill or SOUL.md (`hermes memory log`); older ones fold into one.
    history_retention: int = Field(default=200, ge=2)
    # the external provider beside the notes and search (SPEC §15); none by default
    provider: Literal["honcho", "mem0", "supermemory"] | None = None
    # seconds a provider call may take (a prefetch slower than this is skipped for its turn)
    provider_timeout: float = Field(default=8.0, gt=0, le=120)
    # provider work (turn syncs, prefetches) waiting for its worker; beyond it, work is dropped
    provider_queue: int = Field(default=256, ge=1, le=100_000)
    mem0: Mem0Settings = _section(Mem0Settings)
    honcho: HonchoSettings = _section(HonchoSettings)
    supermemory: SupermemorySettings = _section(SupermemorySettings)

    @field_validator("provider", mode="before")
    @classmethod
    def _no_provider(cls, value: object) -> object:
        """`none`, `off` and an empty value all mean no external provider."""
        if isinstance(value, str) and value.strip().lower() in ("", "none", "off", "null"):
            return None
        return value


class SearchSettings(_Section):
    # Search by meaning over past messages: `auto`/`on` use the sentence-embedding model
    # shipped in the package (nothing downloaded; `auto` falls back to words only if it cannot
    # load, `on` says so), `endpoint` asks the model endpoint's /v1/embeddings for
    # `embedding_model`'s vectors, `off` searches by words only.
    embeddings: Literal["auto", "on", "off", "endpoint"] = "auto"
    embedding_model: str | None = None
    # Most vectors of one scope held in memory for semantic search (newest kept; 1.5 KB each).
    max_vectors: int = Field(default=50_000, ge=1000)


class CompressionSettings(_Section):
    enabled: bool = True
    threshold: float = Field(default=0.50, ge=0.5, le=0.95)
    model: str | None = None
    protect_first_turns: int = Field(default=2, ge=0)
    tail_ratio: float = Field(default=0.25, gt=0, lt=1)


class CronSettings(_Section):
    enabled: bool = True
    tick_seconds: float = Field(default=60.0, gt=0)
    max_parallel: int = Field(default=4, ge=1)
    inactivity_timeout: float = Field(default=600.0, ge=0)
    output_retention: int = Field(default=50, ge=0)
    # Webhook deliveries may reach loopback / private / link-local addresses (off: SSRF guard).
    webhook_allow_private: bool = False
    # Jobs one scope (the owner, or one end user) may hold: creating more is refused.
    max_jobs: int = Field(default=200, ge=1)


class StoreSettings(_Section):
    # `sqlite:///<absolute path>` (default: `$HERMES_HOME/state.db`) or `postgresql://…` (§12)
    url: str | None = None
    pool_size: int = Field(default=10, ge=1, le=1000)  # PostgreSQL connections per process

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        if not value.startswith(("sqlite://", "postgresql://", "postgres://")):
            raise ValueError(
                "must start with sqlite:/// (a file) or postgresql:// (a shared database), "
                "e.g. postgresql://hermes@db.internal:5432/hermes"
            )
        return value


class GatewaySettings(BaseModel):
    """SPEC §10. Each platform's section (`gateway.telegram.*`, …) is a plain mapping here:
    the platform's module declares and validates its own model (`read_platform_config`), so
    a platform, built-in or from a plugin, brings its settings without core edits."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    owner: CommaList = Field(default_factory=empty_list)
    pairing: bool = False
    busy_mode: Literal["interrupt", "queue", "steer"] = "interrupt"
    home: str | None = None
    approval_timeout: float = Field(default=300.0, gt=0)
    streaming: bool = True
    """Answers stream into one message edited in place where the platform can edit; off: whole."""

    def platform(self, name: str) -> dict[str, Any]:
        """One platform's section as a mapping, as config.yaml and the environment gave it."""
        extra = self.model_extra or {}
        value = extra.get(name)
        return dict(value) if isinstance(value, dict) else {}


class SkillsSettings(_Section):
    enabled: bool = True
    # The index of skills in the system prompt never grows past this many tokens (chars/4).
    index_token_budget: int = Field(default=1500, ge=100)
    # Copy the starter skills shipped with Hermes into skills/ on first use.
    starters: bool = True
    # After an owner's turn with at least this many tool calls (or one that recovered from a
    # failed tool call), a background pass may write or patch a skill; 0 turns it off.
    review_min_tool_calls: int = Field(default=8, ge=0)


_MCP_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")


class McpServerSettings(_Section):
    """One `mcp_servers.<name>` entry: a command to run (stdio) or a URL (streamable HTTP)."""

    command: str | None = None
    args: list[str] = Field(default_factory=empty_list)
    env: dict[str, str] = Field(default_factory=empty_dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=empty_dict)
    tools: list[str] | None = None
    exclude: list[str] = Field(default_factory=empty_list)
    enabled: bool = True
    timeout: float = Field(default=60.0, gt=0)
    connect_timeout: float = Field(default=30.0, gt=0)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value

    def transport(self) -> str:
        return "stdio" if self.command else "http"


class FilesSettings(_Section):
    allow_outside_workdir: bool = False
    max_read_bytes: int = Field(default=5_000_000, gt=0)


class TerminalSettings(_Section):
    # `on`: dangerous commands need approval; `off`: they run unasked (logged loudly)
    approval: Literal["on", "off"] = "on"
    timeout: float = Field(default=180.0, gt=0)
    max_timeout: float = Field(default=3600.0, gt=0)
    output_chars: int = Field(default=20_000, ge=1000)

    @field_validator("approval", mode="before")
    @classmethod
    def _yaml_bool(cls, value: Any) -> Any:
        """YAML reads a bare `off` as false: accept both spellings."""
        if isinstance(value, bool):
            return "on" if value else "off"
        return value


class DelegateSettings(_Section):
    max_steps: int = Field(default=20, ge=1, le=200)
    max_parallel: int = Field(default=3, ge=1, le=3)


class ToolsSettings(_Section):
    """The built-in tools (SPEC §11): workdir, files, terminal, delegation, end-user toolsets."""

    # None: `hermes chat` uses its current directory, everything else $HERMES_HOME/workspace
    workdir: Path | None = None
    files: FilesSettings = _section(FilesSettings)
    terminal: TerminalSettings = _section(TerminalSettings)
    delegate: DelegateSettings = _section(DelegateSettings)
    # seconds a run's dangerous tool call waits for POST /v1/runs/{id}/approval (then denied)
    approval_timeout: float = Field(default=300.0, gt=0)
    # tool groups or tool names end users get (None: memory, session_search, web, skills)
    end_user_toolsets: CommaList | None = None


class WebSearchSettings(_Section):
    # None: the first configured of searxng_url, brave_api_key, tavily_api_key
    backend: Literal["searxng", "brave", "tavily"] | None = None
    searxng_url: str | None = None
    brave_api_key: SecretStr | None = None
    tavily_api_key: SecretStr | None = None
    # the Brave / Tavily API root, for a proxy or a self-hosted stand-in
    api_base: str | None = None
    max_results: int = Field(default=5, ge=1, le=20)
    timeout: float = Field(default=15.0, gt=0)


class WebExtractSettings(_Section):
    max_bytes: int = Field(default=3_000_000, gt=0)
    max_chars: int = Field(default=12_000, ge=500)
    timeout: float = Field(default=20.0, gt=0)


class WebSettings(_Section):
    # web_extract may fetch loopback / private / link-local addresses (off: SSRF guard)
    allow_private: bool = False
    search: WebSearchSettings = _section(WebSearchSettings)
    extract: WebExtractSettings = _section(WebExtractSettings)


class ObservabilitySettings(_Section):
    """OpenTelemetry traces (SPEC §17): off until an OTLP/HTTP endpoint is named."""

    # e.g. http://127.0.0.1:4318 (spans go to <endpoint>/v1/traces); env OTEL_EXPORTER_OTLP_ENDPOINT
    otlp_endpoint: str | None = None
    # message text (the user's turn, the answer, tool arguments) in spans; off: sizes only
    capture_content: bool = False
    service_name: str = Field(default="hermes", min_length=1, max_length=100)

    @field_validator("otlp_endpoint")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http:// or https:// URL (OTLP over HTTP)")
        return value


class LoggingSettings(_Section):
    # `json`: one JSON object per line with request_id, run_id and session_id (SPEC §17)
    format: Literal["text", "json"] = "text"


class PluginsSettings(BaseModel):
    """Which installed plugins load (`hermes plugins list`; built-in parts always do), and
    each plugin's own section `plugins.<name>`, which the plugin validates with the model it
    declares next to its code (`plugin_section`)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    # only these (HERMES_LOAD_PLUGINS=a,b; `none` or an empty list: no plugin); None: all
    load: CommaList | None = None
    disabled: CommaList = Field(default_factory=empty_list)

    @field_validator("load")
    @classmethod
    def _none(cls, value: list[str] | None) -> list[str] | None:
        return [] if value == ["none"] else value


SectionT = TypeVar("SectionT", bound=BaseModel)


def plugin_section(settings: "Settings", plugin: str, model: type[SectionT]) -> SectionT:
    """`plugins.<plugin>` validated as the plugin's `model`; a bad value is a ConfigError
    that names its key."""
    raw = (settings.plugins.model_extra or {}).get(plugin) or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"`plugins.{plugin}` must be a mapping of settings")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, "config.yaml", prefix=f"plugins.{plugin}.")) from None


class Settings(_Section):
    """Everything Hermes needs to run; built by `load_settings` and passed down."""

    home: Path
    profile: str = DEFAULT_PROFILE
    """Which profile these settings are (`default`: the root HERMES_HOME)."""
    timezone: str | None = None

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"{value!r} is not an IANA timezone name (e.g. Europe/Berlin)"
            ) from None
        return value

    model: ModelSettings = _section(ModelSettings)
    server: ServerSettings = _section(ServerSettings)
    agent: AgentSettings = _section(AgentSettings)
    memory: MemorySettings = _section(MemorySettings)
    compression: CompressionSettings = _section(CompressionSettings)
    search: SearchSettings = _section(SearchSettings)
    cron: CronSettings = _section(CronSettings)
    quotas: QuotaSettings = _section(QuotaSettings)
    store: StoreSettings = _section(StoreSettings)

    @property
    def database_url(self) -> str:
        """`store.url`, or the embedded default `sqlite:///$HERMES_HOME/state.db`. A named
        profile on PostgreSQL works in a schema of its own in that database, so profiles
        sharing one database never see each other's rows."""
        url = self.store.url or "sqlite:///" + str(self.home / "state.db").lstrip("/")
        if self.profile == DEFAULT_PROFILE or not url.startswith(("postgresql:", "postgres:")):
            return url
        return with_search_path(url, profile_schema(self.profile))

    gateway: GatewaySettings = _section(GatewaySettings)
    stt: SpeechToTextSettings = _section(SpeechToTextSettings)
    tts: TextToSpeechSettings = _section(TextToSpeechSettings)
    tools: ToolsSettings = _section(ToolsSettings)
    web: WebSettings = _section(WebSettings)
    skills: SkillsSettings = _section(SkillsSettings)
    mcp_servers: dict[str, McpServerSettings] = Field(default_factory=empty_dict)
    observability: ObservabilitySettings = _section(ObservabilitySettings)
    logging: LoggingSettings = _section(LoggingSettings)
    plugins: PluginsSettings = _section(PluginsSettings)

    @field_validator("mcp_servers")
    @classmethod
    def _server_names(cls, value: dict[str, McpServerSettings]) -> dict[str, McpServerSettings]:
        for name, server in value.items():
            if not _MCP_NAME.match(name):
                raise ValueError(
                    f"{name!r} is not an MCP server name: use 1-32 letters, digits, _ or - "
                    "(it becomes part of the tool names mcp_<name>_<tool>)"
                )
            if bool(server.command) == bool(server.url):
                raise ValueError(
                    f"mcp_servers.{name} needs exactly one of `command` (stdio) or `url` "
                    "(streamable HTTP)"
                )
        return value


# environment variable -> dotted config key
ENV_OVERRIDES: dict[str, str] = {
    "OPENAI_BASE_URL": "model.base_url",
    "OPENAI_API_KEY": "model.api_key",
    "HERMES_MODEL": "model.name",
    "HERMES_CONTEXT_LENGTH": "model.context_length",
    "HERMES_MODEL_PROVIDER": "model.provider",
    "HERMES_LOAD_PLUGINS": "plugins.load",
    "HERMES_API_KEY": "server.api_key",
    "HERMES_HOST": "server.host",
    "HERMES_PORT": "server.port",
    "HERMES_SESSION_SCOPES": "server.session_scopes",
    "HERMES_ALLOW_UNAUTHENTICATED_PUBLIC_BIND": "server.allow_unauthenticated_public_bind",
    "HERMES_TIMEZONE": "timezone",
    "HERMES_DATABASE_URL": "store.url",
    "HERMES_EMBEDDINGS": "search.embeddings",
    # messaging platforms (SPEC §10); config keys under gateway.<platform>.* mirror them
    "TELEGRAM_BOT_TOKEN": "gateway.telegram.token",
    "TELEGRAM_API_BASE": "gateway.telegram.api_base",
    "TELEGRAM_ALLOWED_USERS": "gateway.telegram.allowed_users",
    "EMAIL_IMAP_HOST": "gateway.email.imap_host",
    "EMAIL_IMAP_PORT": "gateway.email.imap_port",
    "EMAIL_SMTP_HOST": "gateway.email.smtp_host",
    "EMAIL_SMTP_PORT": "gateway.email.smtp_port",
    "EMAIL_USERNAME": "gateway.email.username",
    "EMAIL_PASSWORD": "gateway.email.password",
    "EMAIL_ADDRESS": "gateway.email.address",
    "EMAIL_ALLOWED_USERS": "gateway.email.allowed_senders",
    "MATRIX_HOMESERVER": "gateway.matrix.homeserver",
    "MATRIX_USER_ID": "gateway.matrix.user_id",
    "MATRIX_PASSWORD": "gateway.matrix.password",
    "MATRIX_ACCESS_TOKEN": "gateway.matrix.access_token",
    "MATRIX_ALLOWED_USERS": "gateway.matrix.allowed_users",
    "SLACK_BOT_TOKEN": "gateway.slack.bot_token",
    "SLACK_APP_TOKEN": "gateway.slack.app_token",
    "SLACK_ALLOWED_USERS": "gateway.slack.allowed_users",
    "DISCORD_BOT_TOKEN": "gateway.discord.token",
    "DISCORD_ALLOWED_USERS": "gateway.discord.allowed_users",
    "WHATSAPP_TOKEN": "gateway.whatsapp.token",
    "WHATSAPP_PHONE_NUMBER_ID": "gateway.whatsapp.phone_number_id",
    "WHATSAPP_APP_SECRET": "gateway.whatsapp.app_secret",
    "WHATSAPP_VERIFY_TOKEN": "gateway.whatsapp.verify_token",
    "WHATSAPP_ALLOWED_USERS": "gateway.whatsapp.allowed_users",
    "TWILIO_ACCOUNT_SID": "gateway.sms.account_sid",
    "TWILIO_AUTH_TOKEN": "gateway.sms.auth_token",
    "TWILIO_PHONE_NUMBER": "gateway.sms.phone_number",
    "SMS_ALLOWED_USERS": "gateway.sms.allowed_users",
    "SIGNAL_API_BASE": "gateway.signal.api_base",
    "SIGNAL_NUMBER": "gateway.signal.number",
    "SIGNAL_ALLOWED_USERS": "gateway.signal.allowed_users",
    "MATTERMOST_URL": "gateway.mattermost.url",
    "MATTERMOST_TOKEN": "gateway.mattermost.token",
    "MATTERMOST_ALLOWED_USERS": "gateway.mattermost.allowed_users",
    "HERMES_GATEWAY_OWNER": "gateway.owner",
    "HERMES_GATEWAY_BUSY_MODE": "gateway.busy_mode",
    "HERMES_GATEWAY_STREAMING": "gateway.streaming",
    "HERMES_STT_BASE_URL": "stt.base_url",
    "HERMES_STT_MODEL": "stt.model",
    "HERMES_TTS_MODE": "tts.mode",
    "HERMES_TTS_BASE_URL": "tts.base_url",
    "HERMES_VISION": "model.vision",
    "HERMES_WORKDIR": "tools.workdir",
    "SEARXNG_URL": "web.search.searxng_url",
    "BRAVE_API_KEY": "web.search.brave_api_key",
    "TAVILY_API_KEY": "web.search.tavily_api_key",
    # external memory providers (SPEC §15)
    "HONCHO_API_KEY": "memory.honcho.api_key",
    "HONCHO_BASE_URL": "memory.honcho.base_url",
    "SUPERMEMORY_API_KEY": "memory.supermemory.api_key",
    "SUPERMEMORY_BASE_URL": "memory.supermemory.base_url",
    # observability (SPEC §17)
    "OTEL_EXPORTER_OTLP_ENDPOINT": "observability.otlp_endpoint",
    "HERMES_LOG_FORMAT": "logging.format",
}


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    import yaml  # here, not at the top: a home without config.yaml never needs it

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8-sig"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(
            f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: the top level must be a mapping of sections, not {type(data).__name__}"
        )
    return data


def _read_dotenv(path: Path) -> dict[str, str | None]:
    if not path.exists():
        return {}  # what dotenv_values says of a missing file, without importing it
    from dotenv import dotenv_values

    return dict(dotenv_values(path))


def _set_dotted(data: dict[str, Any], dotted: str, value: str) -> None:
    node = data
    *parents, leaf = dotted.split(".")
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[leaf] = value


def _describe(errors: ValidationError, source: str, prefix: str = "") -> str:
    first = errors.errors()[0]
    key = prefix + ".".join(str(p) for p in first["loc"])
    problem = first["msg"]
    if first["type"] == "extra_forbidden":
        problem = "unknown key (check the spelling)"
    return f"{source}: `{key}`: {problem}"


def _is_set(data: dict[str, Any], dotted: str) -> bool:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or node.get(part) in (None, ""):
            return False
        node = node[part]
    return True


PROFILE_OWNED_VARS = frozenset(
    var
    for var, dotted in ENV_OVERRIDES.items()
    if dotted == "server.api_key" or dotted.startswith("gateway.")
)
"""What the process environment never gives a named profile: its server key and its bots'
credentials belong to the default profile (each key opens one profile, each bot token belongs
to one profile); a named profile sets its own in its config.yaml or .env."""


def load_settings(
    home: Path | None = None, env: Mapping[str, str] | None = None, *, profile: str | None = None
) -> Settings:
    """Merge config.yaml < .env < process environment into a validated Settings.

    A named profile (HERMES_PROFILE, `hermes -p`, or `profile=`) reads its own home, and the
    process environment (the default profile's configuration) only fills in what the
    profile's own config.yaml and .env leave unset, never its server key, bot credentials or
    a SQLite file (a shared PostgreSQL database is inherited: see `database_url`).
    """
    env = dict(os.environ if env is None else env)
    try:
        name = profile if profile is not None else active_profile(env)
        home = ensure_home(home or existing_profile_home(root_home(env), name))
    except ProfileError as exc:
        raise ConfigError(str(exc)) from None
    config_path = home / "config.yaml"
    data = _read_yaml(config_path)
    data.pop("home", None)
    data.pop("profile", None)
    dotenv = {k: v for k, v in _read_dotenv(home / ".env").items() if v is not None}
    overridden: dict[str, str] = {}
    named = name != DEFAULT_PROFILE
    for layer_name, layer in ((".env", dotenv), ("environment", env)):
        inherited = named and layer is env
        for var, dotted in ENV_OVERRIDES.items():
            value = layer.get(var)
            if value in (None, ""):
                continue
            if inherited and (
                var in PROFILE_OWNED_VARS
                or _is_set(data, dotted)
                or (dotted == "store.url" and value.startswith("sqlite:"))  # a file: one home's
            ):
                continue
            _set_dotted(data, dotted, value)
            overridden[dotted] = f"{var} ({layer_name})"
    if (
        named
        and not _is_set(data, "server.model_name")
        and isinstance(data.get("server", {}), dict)
    ):
        _set_dotted(data, "server.model_name", name)  # /v1/models advertises the profile
    try:
        return Settings(home=home, profile=name, **data)
    except ValidationError as exc:
        loc = ".".join(str(p) for p in exc.errors()[0]["loc"])
        source = overridden.get(loc, str(config_path))
        raise ConfigError(_describe(exc, source)) from None
    except TypeError as exc:
        raise ConfigError(f"{config_path}: {exc}") from None
