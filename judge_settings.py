"""Judge settings saved from the settings page, layered over the environment; the API key is write-only."""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Mapping

from evaluator import JudgeConfig
from translations import _

# Setting name -> environment variable it stands for.
VARIABLES = {
    "base_url": "JUDGE_BASE_URL",
    "model": "JUDGE_MODEL",
    "concurrency": "JUDGE_CONCURRENCY",
    "temperature": "JUDGE_TEMPERATURE",
    "language": "JUDGE_LANGUAGE",
    "price_prompt": "JUDGE_PRICE_PROMPT_PER_M",
    "price_completion": "JUDGE_PRICE_COMPLETION_PER_M",
}
PRICE_VARIABLES = ("JUDGE_PRICE_PROMPT_PER_M", "JUDGE_PRICE_COMPLETION_PER_M")
STORE_KEY = "judge"


def prices(environ: Mapping[str, str]) -> dict:
    """Prices per million prompt and completion tokens (None when not configured); ValueError when invalid."""
    out = {}
    for name, variable in (("prompt", PRICE_VARIABLES[0]), ("completion", PRICE_VARIABLES[1])):
        text = (environ.get(variable) or "").strip()
        if not text:
            out[name] = None
            continue
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise ValueError(_("%(name)s must be a price of 0 or more per million tokens, got %(value)s",
                               name=variable, value=repr(text)))
        out[name] = value
    return out


class JudgeSettings:
    """The judge configuration in force: environment, overridden by what was saved on the settings page."""

    def __init__(self, store, key_file: str | Path, base_env: Mapping[str, str] = os.environ):
        self.store = store
        self.key_file = Path(key_file)
        self.base_env = base_env

    def saved(self) -> dict:
        """Values saved on the settings page (never the key)."""
        return dict(self.store.get_setting(STORE_KEY, {}))

    def key_is_set(self) -> bool:
        """Whether an API key is available (saved or in the environment)."""
        env = self.environ()
        return bool(env.get("JUDGE_API_KEY") or env.get("OPENAI_API_KEY"))

    def environ(self) -> dict:
        """The environment the judge is configured from: variables, then saved settings, then the saved key."""
        env = dict(self.base_env)
        for name, value in self.saved().items():
            if value not in (None, ""):
                env[VARIABLES[name]] = str(value)
        if self.key_file.exists():
            env["JUDGE_API_KEY"] = self.key_file.read_text().strip()
        return env

    def save(self, values: Mapping[str, str], api_key: str | None = None, clear_key: bool = False) -> None:
        """Check and save settings; an empty value falls back to the environment. Raises ValueError."""
        cleaned = {name: str(values.get(name, "")).strip() for name in VARIABLES}
        trial = dict(self.base_env)
        trial.update({VARIABLES[n]: v for n, v in cleaned.items() if v})
        JudgeConfig.from_env(trial)  # raises ValueError naming the bad setting
        prices(trial)
        self.store.set_setting(STORE_KEY, {n: v for n, v in cleaned.items() if v})
        if clear_key:
            self.key_file.unlink(missing_ok=True)
        elif api_key and api_key.strip():
            self.key_file.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(api_key.strip())
