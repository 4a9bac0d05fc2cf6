"""Languages of the dashboard and the gettext function every module uses for user-visible text."""
from flask_babel import gettext, lazy_gettext, ngettext

LANGUAGES = {"en": "English", "zh": "中文", "ko": "한국어"}

_ = gettext
__all__ = ["LANGUAGES", "_", "gettext", "lazy_gettext", "ngettext"]
