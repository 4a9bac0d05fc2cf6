"""The shell commands of the documentation (README.md and docs/*.md), as written, for the tests that run them.

`commands(path, heading)` gives the commands of the ```bash blocks under one heading of a Markdown file: comments
dropped, lines ending in a backslash joined, a quoted argument kept whole across lines. `substitute(command,
replacements)` swaps the documentation's example hosts, ports, passwords and folders for the test's; nothing else
of a command may change. `pages()` lists the documentation's files, `bash_blocks_of(path)` every ```bash block of one.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
EXAMPLE_HOSTS = re.compile(r"[\w.-]*\.example\b")  # what a test must have replaced before it runs a command


def section(path: Path, heading: str) -> str:
    """The text under the Markdown heading `heading` (any level), up to the next heading of the same or a higher
    level."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for start, line in enumerate(lines):
        match = re.match(r"(#+) (.*)", line)
        if match and match.group(2).strip() == heading:
            level = len(match.group(1))
            break
    else:
        raise LookupError(f"{path.name} has no heading {heading!r}")
    body, fenced = [], False
    for line in lines[start + 1:]:
        fenced ^= line.startswith("```")
        match = None if fenced else re.match(r"(#+) ", line)
        if match and len(match.group(1)) <= level:
            break
        body.append(line)
    return "\n".join(body)


def bash_blocks(text: str) -> list[str]:
    """The bodies of the ```bash blocks of a Markdown text."""
    return re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M)


def block_commands(block: str) -> list[str]:
    """The commands of one bash block, without comments: lines ending in a backslash are joined, and a quoted
    argument may span lines (a JSON value)."""
    out, pending = [], ""
    for line in block.replace("\\\n", " ").splitlines():
        if not pending:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
        for text in (re.sub(r"\s+#.*$", "", line), line):  # without a comment after the command, else whole
            attempt = f"{pending}\n{text}" if pending else text
            try:
                shlex.split(attempt)
            except ValueError:  # a quote still open
                continue
            out.append(attempt.strip())
            pending = ""
            break
        else:  # the command goes on on the next line
            pending = f"{pending}\n{line}" if pending else line
    return out


def pages() -> list[Path]:
    """The documentation's Markdown files: README.md and every page of docs/."""
    return [README, *sorted(DOCS.glob("*.md"))]


def bash_blocks_of(path: Path) -> list[str]:
    """The bodies of every ```bash block of a Markdown file, in order."""
    return bash_blocks(path.read_text(encoding="utf-8"))


def headings_of_bash_blocks(path: Path) -> list[str]:
    """The heading each ```bash block of a Markdown file stands under, in order."""
    found, heading, fenced = [], "", False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if not fenced and line.strip() == "```bash":
                found.append(heading)
            fenced = not fenced
        elif not fenced and (match := re.match(r"#+ (.*)", line)):
            heading = match.group(1).strip()
    return found


def commands(path: Path, heading: str) -> list[str]:
    """The commands of the ```bash blocks under `heading`, without comments."""
    return [command for block in bash_blocks(section(path, heading)) for command in block_commands(block)]


def substitute(command: str, replacements: dict[str, str]) -> str:
    """`command` with each example value replaced; AssertionError when an example host is left."""
    for example, value in replacements.items():
        command = command.replace(example, value)
    left = EXAMPLE_HOSTS.search(command)
    assert left is None, f"the test has no value for {left.group()!r} in: {command}"
    return command
