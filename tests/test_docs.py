"""The manual (README.md and docs/*.md) against the code: nothing the code offers goes undocumented.

As datasette's tests/test_docs.py does for its plug-in hooks, each test collects what the code has and fails naming
what the documentation lacks:

- every class of the kind interface (`kinds.kind.INTERFACE`: Kind and its capabilities), each of their methods and
  class attributes is described in docs/adding-a-kind.md, and the example kind's code it shows is its files' code;
- every environment variable the product's modules read has a row in docs/settings.md, and every row there is read;
- every `flask --app app` command (and each of its options) is in docs/cli.md;
- every relative link of README.md and docs/*.md reaches a file of the repository, and its #anchor a heading.

The shell commands of the documentation are run by tests/test_docs_commands.py and tests/test_docs_team.py; what the
manual says the code does (its routes, the judge's retries, the layout) is checked by tests/test_docs_claims.py.
"""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import click
import pytest

from kinds.kind import INTERFACE
from tests.doc_commands import DOCS, README, ROOT, pages

README_MAX_LINES = 200  # the front page stays short; the manual is docs/


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _without_code_blocks(text: str) -> str:
    """Markdown text without its fenced blocks (their lines left empty, so line numbers keep)."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else line)
    return "\n".join(out)


def test_the_readme_is_a_front_page():
    lines = _text(README).splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines: move the detail to docs/"
    assert "## Two commands" in lines


# --- (a) the Kind interface -----------------------------------------------------------------------------------

KIND_PAGE = DOCS / "adding-a-kind.md"
KIND_CLASSES = [cls.__name__ for cls in INTERFACE]
KIND_METHODS = sorted(f"{cls.__name__}.{name}" for cls in INTERFACE for name, member in vars(cls).items()
                      if inspect.isfunction(member) and not name.startswith("_"))
KIND_ATTRIBUTES = sorted(f"{cls.__name__}.{name}" for cls in INTERFACE for name in cls.__annotations__
                         if not name.startswith("_"))
# The example's files the page shows whole, each after a comment naming it: <!-- the file PATH -->
SHOWN_FILE = re.compile(r"^<!-- the file (\S+) -->\n```\w+\n(.*?)^```$", re.S | re.M)


def test_the_kind_interface_is_found():
    assert KIND_CLASSES[:3] == ["Kind", "Scored", "Judged"] and "HoldsPersonas" in KIND_CLASSES
    assert {"Kind.sniff", "Kind.validate", "Scored.start", "Judged.plan", "Judged.requests", "Scored.score",
            "Scored.csv", "Scored.compare", "Scored.cli_start", "HoldsPersonas.personas"} <= set(KIND_METHODS)
    assert {"Kind.name", "Kind.label", "Scored.cli_options", "Paired.paired_metrics"} <= set(KIND_ATTRIBUTES)


@pytest.mark.parametrize("name", KIND_CLASSES)
def test_every_class_of_the_interface_has_a_row(name):
    assert f"| `{name}`" in _text(KIND_PAGE), f"{name} has no row in docs/adding-a-kind.md's table of the interface"


@pytest.mark.parametrize("method", KIND_METHODS)
def test_every_kind_method_is_documented(method):
    name = method.split(".")[1]
    assert f"`{name}(" in _text(KIND_PAGE), f"{method} is not described in docs/adding-a-kind.md"


@pytest.mark.parametrize("attribute", KIND_ATTRIBUTES)
def test_every_kind_attribute_is_documented(attribute):
    owner, name = attribute.split(".")
    assert f"| `{name}` | (`{owner}`" in _text(KIND_PAGE), f"{attribute} has no row in docs/adding-a-kind.md"


def test_the_example_kinds_code_shown_is_its_files():
    shown = dict(SHOWN_FILE.findall(_text(KIND_PAGE)))
    assert set(shown) == {"tests/plugins/psb-answers/pyproject.toml", "tests/plugins/psb-answers/psb_answers/kind.py",
                          *(f"tests/plugins/psb-answers/psb_answers/templates/{page}.html"
                            for page in ("upload", "result", "compare"))}
    for path, text in shown.items():
        assert text == _text(ROOT / path), f"docs/adding-a-kind.md shows {path} other than it is: copy it again"


# --- (b) environment settings ---------------------------------------------------------------------------------

SETTINGS_PAGE = DOCS / "settings.md"
# The product's own modules: everything but the tests and the benchmarks (which set variables, not read them).
PRODUCT_MODULES = sorted(path for path in ROOT.rglob("*.py")
                         if path.relative_to(ROOT).parts[0] not in ("tests", "bench", ".git")
                         and not any(part.startswith(".") for part in path.relative_to(ROOT).parts))
# A variable read by name: os.environ.get("X"), environ["X"], os.getenv("X"), environ().get("X"),
# os.environ.setdefault("X", ...) (the user's value wins), and celery_tasks' _setting(config, "X", default), which
# reads the app's config, else the environment.
READ_BY_NAME = re.compile(r"""(?:\benviron(?:\(\))?\.(?:get|setdefault)\(|\benviron\[|\bgetenv\(|"""
                          r"""\b_setting\(\s*[\w.]+\s*,)\s*"""
                          r"""["']([A-Z][A-Z0-9_]*)["']""")
# Variables read through a table or a helper (judge.config._env(environ, "JUDGE_BASE_URL", "OPENAI_BASE_URL"),
# judge_settings.VARIABLES, limits.SETTINGS, ...): any string literal in the namespaces the settings live in.
NAMESPACED = re.compile(r"""["']((?:JUDGE|OPENAI|LIMIT|CELERY|AWS)_[A-Z0-9_]+)["']""")
NOT_ENVIRONMENT = {
    "JUDGE_ENV": "a key of create_app's config: the mapping the judge settings are read from (os.environ)",
    "JUDGE_KEY_FILE": "a key of create_app's config: where an earlier version kept the saved key (moved in once)",
}


def read_variables() -> dict[str, list[str]]:
    """The environment variables the product reads, each with the modules that name it."""
    found: dict[str, list[str]] = {}
    for path in PRODUCT_MODULES:
        source = _text(path)
        for name in {*READ_BY_NAME.findall(source), *NAMESPACED.findall(source)}:
            if name not in NOT_ENVIRONMENT:
                found.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return found


def documented_variables() -> set[str]:
    return set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)`", _text(SETTINGS_PAGE), flags=re.M))


def test_the_variables_are_found():
    found = read_variables()
    assert {"HOST", "PORT", "DATABASE_URL", "JUDGE_BASE_URL", "OPENAI_API_KEY", "JUDGE_MAX_TOKENS", "LIMIT_ROUNDS",
            "CELERY_SWEEP_S", "AWS_REGION", "SECURE_COOKIES", "JUDGE_BATCH_POLL_S"} <= set(found)


def test_every_environment_variable_is_documented():
    missing = {name: modules for name, modules in read_variables().items() if name not in documented_variables()}
    assert missing == {}, "variables the code reads with no row in docs/settings.md"


def test_every_documented_variable_is_read():
    stale = documented_variables() - set(read_variables())
    assert stale == set(), "rows of docs/settings.md for variables no module reads"


# --- (c) the CLI ------------------------------------------------------------------------------------------------

CLI_PAGE = DOCS / "cli.md"


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], click.Command]:
    """Every command under `group`, by its path (("users", "create"), ...), groups descended into."""
    found = {}
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found.update(_commands(command, (*prefix, name)))
        else:
            found[(*prefix, name)] = command
    return found


@pytest.fixture
def cli_commands(make_app):
    return _commands(make_app().cli)


def test_the_cli_commands_are_found(cli_commands):
    assert {("score",), ("bundle",), ("users", "create"), ("users", "list"), ("users", "delete"),
            ("users", "set-password"), ("jobs", "requeue"), ("storage", "check")} <= set(cli_commands)


def test_every_cli_command_is_documented(cli_commands):
    text = _text(CLI_PAGE)
    missing = [" ".join(path) for path in cli_commands
               if not re.search(rf"`flask --app app {re.escape(' '.join(path))}[ `]", text)]
    assert missing == [], "commands with no `flask --app app ...` entry in docs/cli.md"


def test_every_cli_option_is_documented(cli_commands):
    text = _text(CLI_PAGE)
    missing = [f"{' '.join(path)} {option}" for path, command in cli_commands.items() for parameter in command.params
               if isinstance(parameter, click.Option) for option in parameter.opts
               if option.startswith("--") and not re.search(rf"`{re.escape(option)}[ =`]", text)]
    assert missing == [], "options not named (as `--option`) in docs/cli.md"


# --- (d) links ----------------------------------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings, as GitHub makes them (a repeated one gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    for line in _without_code_blocks(_text(path)).splitlines():
        match = re.match(r"#{1,6} (.*)", line)
        if not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


def links() -> list[tuple[Path, str]]:
    return [(page, target) for page in pages() for target in LINK.findall(_without_code_blocks(_text(page)))
            if not re.match(r"[a-z]+:", target)]  # http:, https:, mailto: are not checked here


def test_the_links_are_found():
    assert (README, "docs/screenshots/result.png") in links()
    assert len({page for page, _target in links()}) >= 10


@pytest.mark.parametrize("page,target", links(), ids=lambda value: str(value).replace(str(ROOT) + "/", ""))
def test_every_relative_link_resolves(page, target):
    address, _, anchor = target.partition("#")
    file = (page.parent / address).resolve() if address else page
    assert file.is_relative_to(ROOT), f"{page.name}: {target} points outside the repository"
    assert file.exists(), f"{page.name}: {target} names a missing file"
    if anchor and file.suffix == ".md":
        assert anchor in anchors(file), f"{page.name}: {target} names no heading of {file.name}"
