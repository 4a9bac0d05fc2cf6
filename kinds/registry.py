"""The one place that registers benchmark kinds: the five built in, those of installed packages and those named by
the setting PSB_KINDS.

Each is named the way an entry point names an object, `module:Class` (the class, or an instance of it): the built-in
kinds by `BUILTIN`, as Datasette loads its default plug-ins; a package's by its entry points of the group `GROUP`
(importlib.metadata), so that installing the package is all it takes; a module that is not installed (on PYTHONPATH,
say) by the setting PSB_KINDS, a comma-separated list. The built-in kinds are registered on first use, the others
by `load_installed`, which `create_app` calls: so the web app, `flask --app app ...` and the Celery workers
(`celery -A app:celery_app worker`, whose app is built by create_app) all see the same kinds.
"""
from __future__ import annotations

import importlib
import os
import sys
from importlib import metadata
from pathlib import Path
from typing import Callable, Iterator, Mapping, TypeVar, cast

import jinja2

from kinds.host import Table
from kinds.kind import Kind, Scored, missing_attributes
from translations import _

GROUP = "personasteer.kinds"  # the entry-point group of installed packages' kinds
SETTING = "PSB_KINDS"  # the setting (environment variable, or the app's config) naming kinds that are not installed
# personas before conversation: its sniff is the stricter (a first line with persona_id and user_profile)
BUILTIN = ("kinds.mobility.kind:MobilityKind", "kinds.agentbench.kind:AgentBenchKind",
           "kinds.personas.kind:PersonasKind", "kinds.conversation.kind:ConversationKind",
           "kinds.dialogue.kind:DialogueKind")

_KINDS: dict[str, Kind] = {}
_SOURCES: dict[str, str] = {}  # where each registered kind came from: its entry point, PSB_KINDS or the built-ins
_started: list[bool] = []  # whether the built-in kinds were registered
_scanned: list[tuple] = []  # the sys.path the entry points were last read with (they are read again when it changes)
K = TypeVar("K", bound=Kind)


class KindError(ValueError):
    """A kind that cannot be loaded or registered; the message names where it came from and what to fix."""


class NotScored(LookupError):
    """An evaluation asked of a kind whose uploads are not scored (it is not `Scored`)."""


def register(kind: Kind, source: str = "") -> Kind:
    """Add a kind (or replace one of the same name); returns it. KindError when it lacks a name, a label or an
    attribute a capability it declares requires. `source` says where it came from, for messages."""
    _builtin()
    where = source or type(kind).__name__
    if not isinstance(kind, Kind):
        raise KindError(_("%(source)s: not a subclass of kinds.kind.Kind.", source=where))
    missing = [f"Kind.{name}" for name in ("name", "label") if not getattr(kind, name, None)]
    missing += [name for name in missing_attributes(kind) if name not in missing]
    if missing:
        raise KindError(_("%(source)s: the kind lacks %(names)s.", source=where, names=", ".join(missing)))
    _KINDS[kind.name] = kind
    _SOURCES[kind.name] = source
    return kind


def unregister(name: str) -> None:
    """Remove a kind (tests that add their own take it away again); an installed package's comes back at the next
    `load_installed` while it is installed."""
    _KINDS.pop(name, None)
    _SOURCES.pop(name, None)
    _scanned.clear()


def load(reference: str, source: str) -> Kind:
    """The kind an object reference names (`module:Class`: a Kind subclass, made with no arguments, or an instance);
    KindError naming `source` and what is wrong when it cannot be loaded."""
    module_name, _colon, attribute = reference.strip().partition(":")
    if not module_name or not attribute:
        raise KindError(_("%(source)s: %(reference)s does not name a kind; write module:Class "
                          "(mypackage.kind:MyKind, say).", source=source, reference=repr(reference)))
    try:
        found: object = importlib.import_module(module_name)
    except Exception as exc:  # whatever the module raises: the message says which kind and why
        raise KindError(_("%(source)s: the module %(module)s cannot be imported: %(error)s", source=source,
                          module=module_name, error=f"{type(exc).__name__}: {exc}")) from exc
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise KindError(_("%(source)s: the module %(module)s has no %(name)s.", source=source, module=module_name,
                              name=attribute))
        found = getattr(found, part)
    if isinstance(found, type) and issubclass(found, Kind):
        try:
            found = found()
        except TypeError as exc:  # a method the interface requires left out, say
            raise KindError(_("%(source)s: %(reference)s cannot be made: %(error)s", source=source,
                              reference=reference, error=str(exc))) from exc
    if not isinstance(found, Kind):
        raise KindError(_("%(source)s: %(reference)s is not a subclass of kinds.kind.Kind nor an instance of one.",
                          source=source, reference=reference))
    return found


def _add(reference: str, source: str, name: str | None = None) -> None:
    """Load and register the kind `reference` names, unless it is registered from the same source already;
    KindError when another kind has its name, or (`name`: an entry point's) when its name is not the entry point's."""
    if name is not None and _SOURCES.get(name) == source:
        return
    kind = load(reference, source)
    if name is not None and kind.name != name:
        raise KindError(_("%(source)s: the kind is named %(name)s; name the entry point after it "
                          "(%(name)s = %(reference)s).", source=source, name=kind.name, reference=reference))
    if _SOURCES.get(kind.name) == source:
        return
    if kind.name in _KINDS:
        raise KindError(_("%(source)s: a kind named %(name)s is already registered (%(other)s); give this one "
                          "another name.", source=source, name=kind.name,
                          other=_SOURCES[kind.name] or type(_KINDS[kind.name]).__name__))
    register(kind, source)


def _builtin() -> None:
    """Register the built-in kinds, once, before any other."""
    if not _started:
        _started.append(True)
        for reference in BUILTIN:
            _add(reference, _("%(reference)s (built in)", reference=reference))


def load_installed(setting: str | None = None) -> list[str]:
    """Register the kinds of installed packages (entry points of GROUP) and those `setting` names (else the
    environment's PSB_KINDS), each once; the names of every registered kind. KindError for one that cannot be."""
    _builtin()
    path = tuple(sys.path)
    if _scanned != [path]:  # a package installed meanwhile, or another path: read the entry points again
        for entry in metadata.entry_points(group=GROUP):
            package = f"{entry.dist.name} {entry.dist.version}" if entry.dist else "?"
            _add(entry.value, _("the entry point %(entry)s of %(package)s", entry=f"{entry.name} = {entry.value}",
                                package=package), entry.name)
        _scanned[:] = [path]  # only once every one loaded: a failed start fails again until it is fixed
    named = os.environ.get(SETTING, "") if setting is None else setting
    for reference in (part.strip() for part in named.split(",")):
        if reference:
            _add(reference, f"{SETTING}: {reference}")
    return names()


def get(name: str) -> Kind:
    """The kind of this name; KeyError when there is none."""
    _builtin()
    return _KINDS[name]


def scored(name: str) -> Scored:
    """The kind of this name, whose uploads are evaluated; KeyError when there is none, NotScored when its uploads
    are not scored."""
    kind = get(name)
    if not isinstance(kind, Scored):
        raise NotScored(name)
    return kind


def kinds() -> list[Kind]:
    """Every registered kind, in registration order."""
    _builtin()
    return list(_KINDS.values())


def having(capability: Callable[..., K]) -> list[K]:
    """The registered kinds that declare a capability (a class of kinds/kind.py's INTERFACE), in registration
    order. (A callable in the signature, as type checkers take no abstract class where a type[...] is asked.)"""
    return cast(list[K], [kind for kind in kinds() if isinstance(kind, cast(type, capability))])


def names() -> list[str]:
    """The names of the registered kinds."""
    return [kind.name for kind in kinds()]


def source(name: str) -> str:
    """Where a registered kind came from: its entry point and package, PSB_KINDS, or built in."""
    get(name)
    return _SOURCES[name]


def tables() -> list[Table]:
    """The tables the registered kinds keep (the store creates them and deletes their rows with evaluations)."""
    return [table for kind in kinds() for table in kind.tables]


def detect(head: bytes, filename: str = "", path: str | Path | None = None) -> str:
    """The kind of a file, from its start (and the whole file at `path`): the first kind that claims it, else
    the fallback kind (whose validation then says what is wrong)."""
    text = head.removeprefix(b"\xef\xbb\xbf")
    ordered = sorted(kinds(), key=lambda kind: kind.fallback)
    for kind in ordered:
        if kind.fallback or kind.sniff(text, filename, Path(path) if path is not None else None):
            return kind.name
    raise LookupError("no kind registered")


class _TemplateFolders(Mapping):
    """Each kind's templates under its name ("dialogue/result.html"), looked up live so late kinds count."""

    def __getitem__(self, name: str) -> jinja2.BaseLoader:
        return get(name).templates()

    def __iter__(self) -> Iterator[str]:
        return iter(names())

    def __len__(self) -> int:
        return len(kinds())


def template_loader() -> jinja2.BaseLoader:
    """A Jinja loader for every kind's templates, each under its kind's name."""
    return jinja2.PrefixLoader(_TemplateFolders())
