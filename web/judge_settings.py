"""Judge settings saved from the settings page, layered over the environment; API keys are write-only."""
from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Mapping

from cryptography.fernet import Fernet, InvalidToken

from judge import JudgeConfig, prices
from judge import endpoints as judge_endpoints
from storage.shared_secrets import read_if_there
from translations import _

# Setting name -> environment variable it stands for.
VARIABLES = {
    "base_url": "JUDGE_BASE_URL",
    "models": "JUDGE_MODELS",
    "model": "JUDGE_MODEL",
    "concurrency": "JUDGE_CONCURRENCY",
    "temperature": "JUDGE_TEMPERATURE",
    "language": "JUDGE_LANGUAGE",
    "price_prompt": "JUDGE_PRICE_PROMPT_PER_M",
    "price_completion": "JUDGE_PRICE_COMPLETION_PER_M",
}
STORE_KEY = "judge"
ENDPOINTS_KEY = "judge_endpoints"  # named endpoints saved on the settings page (their keys apart, below)
API_KEY = "judge_api_key"  # the default endpoint's key saved on the settings page, encrypted
ENDPOINT_KEYS = "judge_endpoint_keys"  # {endpoint name: its key, encrypted}


class JudgeSettings:
    """The judge configuration in force: environment, overridden by what was saved on the settings page.

    Saved API keys live in the database encrypted with `fernet` (storage/shared_secrets.py), so every process of a
    deployment reads them; `legacy_key_file` names where earlier versions kept them, moved in once.
    """

    def __init__(self, store, fernet: Fernet, base_env: Mapping[str, str] = os.environ,
                 legacy_key_file: str | Path | None = None):
        self.store = store
        self.fernet = fernet
        self.base_env = base_env
        if legacy_key_file:
            self._move_key_files(Path(legacy_key_file))

    def _move_key_files(self, key_file: Path) -> None:
        """Put the keys an earlier version kept in files into the database (unless it has them), then delete the
        files."""
        endpoint_file = key_file.with_name("judge_endpoint_keys.json")
        key, endpoint_keys = read_if_there(key_file).strip(), read_if_there(endpoint_file).strip()
        if key and self.store.get_setting(API_KEY) is None:
            self.store.set_setting(API_KEY, self._seal(key))
        if endpoint_keys:
            sealed = self.store.get_setting(ENDPOINT_KEYS, {})
            for name, value in json.loads(endpoint_keys).items():
                sealed.setdefault(name, self._seal(value))
            self.store.set_setting(ENDPOINT_KEYS, sealed)
        key_file.unlink(missing_ok=True)
        endpoint_file.unlink(missing_ok=True)

    def _seal(self, key: str) -> str:
        return self.fernet.encrypt(key.encode("utf-8")).decode("ascii")

    def _unseal(self, token: str | None) -> str | None:
        """The key, or None when there is none or it was encrypted with another key (SETTINGS_KEY changed)."""
        try:
            return self.fernet.decrypt(token.encode("ascii")).decode("utf-8") if token else None
        except InvalidToken:
            return None

    def key_problem(self) -> str | None:
        """What to do about saved keys that can no longer be decrypted, or None when every one can."""
        sealed = {judge_endpoints.DEFAULT: self.store.get_setting(API_KEY),
                  **self.store.get_setting(ENDPOINT_KEYS, {})}
        lost = [name for name, token in sealed.items() if token and self._unseal(token) is None]
        if not lost:
            return None
        return _("The API key saved here for %(endpoints)s can no longer be decrypted: SETTINGS_KEY or SECRET_KEY "
                 "has changed since it was saved. Enter the key again to use it.", endpoints=", ".join(lost))

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
        key = self._unseal(self.store.get_setting(API_KEY))
        if key:
            env["JUDGE_API_KEY"] = key
        saved = self.saved_endpoints()
        if saved:
            keys = self._endpoint_keys()
            try:
                named = json.loads(env.get("JUDGE_ENDPOINTS") or "{}")
            except ValueError:
                return env  # left as it is, so that judge_endpoints.parse reports the variable's problem
            for name, spec in saved.items():
                named.setdefault(name, {**spec, "api_key": keys.get(name), "source": "settings"})
            env["JUDGE_ENDPOINTS"] = json.dumps(named)
        return env

    def endpoints(self) -> dict[str, judge_endpoints.Endpoint]:
        """The judge endpoints in force, by name; ValueError when the environment's are invalid. The default
        endpoint counts as defined on the settings page when its URL or key was saved there (they win over the
        environment's)."""
        environ = self.environ()
        found = judge_endpoints.parse(environ)
        try:
            own = prices(environ)
        except ValueError:  # a bad price: the settings page says why
            own = {"prompt": None, "completion": None}
        found[judge_endpoints.DEFAULT] = replace(found[judge_endpoints.DEFAULT], prices=(own["prompt"],
                                                                                         own["completion"]))
        if self.saved().get("base_url") or self.store.get_setting(API_KEY):
            found[judge_endpoints.DEFAULT] = replace(found[judge_endpoints.DEFAULT], source="settings")
        return found

    def saved_endpoints(self) -> dict:
        """Named endpoints saved on the settings page: {name: {base_url, models, their prices when set}} (never the
        keys)."""
        return dict(self.store.get_setting(ENDPOINTS_KEY, {}))

    def _endpoint_keys(self) -> dict:
        """The saved endpoints' keys, decrypted (those that cannot be are left out)."""
        keys = {name: self._unseal(token) for name, token in self.store.get_setting(ENDPOINT_KEYS, {}).items()}
        return {name: key for name, key in keys.items() if key}

    def add_endpoint(self, name: str, base_url: str, models: str = "", api_key: str | None = None,
                     price_prompt: str = "", price_completion: str = "") -> None:
        """Check and save a named endpoint with its key and prices per million tokens; ValueError when invalid or
        the name is taken."""
        name = judge_endpoints.check_name(name.strip())
        spec: dict = {"base_url": judge_endpoints.check_url(name, base_url), "models":
                      list(judge_endpoints.split_models(models))}
        for field, value in zip(judge_endpoints.PRICE_FIELDS, (price_prompt, price_completion)):
            price = judge_endpoints.check_price(name, field, value)
            if price is not None:
                spec[field] = price
        if name in self.endpoints():
            raise ValueError(_("A judge endpoint named '%(name)s' exists already; remove it first or pick another "
                               "name.", name=name))
        sealed = self.store.get_setting(ENDPOINT_KEYS, {})
        sealed.pop(name, None)
        if api_key and api_key.strip():
            sealed[name] = self._seal(api_key.strip())
        self.store.set_setting(ENDPOINT_KEYS, sealed)
        self.store.set_setting(ENDPOINTS_KEY, {**self.saved_endpoints(), name: spec})

    def remove_endpoint(self, name: str) -> bool:
        """Forget a named endpoint saved on the settings page and its key; False when there is none."""
        saved = self.saved_endpoints()
        if saved.pop(name, None) is None:
            return False
        self.store.set_setting(ENDPOINTS_KEY, saved)
        sealed = self.store.get_setting(ENDPOINT_KEYS, {})
        if sealed.pop(name, None) is not None:
            self.store.set_setting(ENDPOINT_KEYS, sealed)
        return True

    def save(self, values: Mapping[str, str], api_key: str | None = None, clear_key: bool = False) -> None:
        """Check and save settings; an empty value falls back to the environment. Raises ValueError."""
        cleaned = {name: str(values.get(name, "")).strip() for name in VARIABLES}
        trial = dict(self.base_env)
        trial.update({VARIABLES[n]: v for n, v in cleaned.items() if v})
        JudgeConfig.from_env(trial)  # raises ValueError naming the bad setting
        judge_endpoints.parse(trial)
        prices(trial)
        self.store.set_setting(STORE_KEY, {n: v for n, v in cleaned.items() if v})
        if clear_key:
            self.store.delete_setting(API_KEY)
        elif api_key and api_key.strip():
            self.store.set_setting(API_KEY, self._seal(api_key.strip()))
