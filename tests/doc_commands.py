"""The shell commands of the documentation, as written, for the tests that run them.

`commands(path, heading)` gives the commands of the ```bash blocks under one heading of a Markdown file: comments
dropped, lines ending in a backslash joined. `substitute(command, replacements)` swaps the documentation's example
hosts, ports, passwords and folders for the test's; nothing else of a command may change.
"""
from __future__ import annotations

import re
from pathlib import Path

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


def commands(path: Path, heading: str) -> list[str]:
    """The commands of the ```bash blocks under `heading`, one a line, without comments."""
    out = []
    for block in bash_blocks(section(path, heading)):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()  # a comment after a command (none of ours has '#' in it)
            if line and not line.startswith("#"):
                out.append(line)
    return out


def substitute(command: str, replacements: dict[str, str]) -> str:
    """`command` with each example value replaced; AssertionError when an example host is left."""
    for example, value in replacements.items():
        command = command.replace(example, value)
    left = EXAMPLE_HOSTS.search(command)
    assert left is None, f"the test has no value for {left.group()!r} in: {command}"
    return command
