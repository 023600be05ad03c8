"""Diffs of PyG example scripts against their pyg_sar ports, for the "port your PyG script" page.

A diff file (``docs/porting/<name>.diff``) holds one preamble line naming PyG's original (its
repository commit and SHA-256), then the unified diff from that original to
``examples/<name>.py``. The original is not stored in this repository: :func:`original_text`
rebuilds it by applying the diff backwards to the port, strictly (every hunk at its recorded
place, every line equal), and the docs test checks that the rebuilt text has the recorded
SHA-256 and that the diff is exactly what :func:`unified_diff` makes of the two texts. So a
port that changes without its diff fails the test.

Regenerate a diff from a checkout of PyG's repository::

    python docs/_ext/portdiff.py PATH/TO/pytorch_geometric/examples/gcn.py --commit SHA

The Sphinx directive ``port-diff`` renders a diff side by side (PyG left, pyg_sar right; changed
lines highlighted).
"""
from __future__ import annotations

import argparse
import difflib
import hashlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DIFF_DIR = ROOT / "docs" / "porting"
_PREAMBLE = re.compile(r"^PyG (?P<path>\S+) at pytorch_geometric (?P<commit>[0-9a-f]{7,40}) "
                       r"\(sha256 (?P<sha>[0-9a-f]{64})\)$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def unified_diff(original: str, port: str, name: str) -> str:
    """The unified diff (3 lines of context) from PyG's ``examples/<name>.py`` to the port."""
    lines = difflib.unified_diff(original.splitlines(keepends=True),
                                 port.splitlines(keepends=True),
                                 f"a/examples/{name}.py", f"b/examples/{name}.py", n=3)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def make_diff_file(original: str, port: str, name: str, commit: str) -> str:
    """The content of ``docs/porting/<name>.diff``: the preamble and the diff."""
    return (f"PyG examples/{name}.py at pytorch_geometric {commit} (sha256 {sha256(original)})\n"
            + unified_diff(original, port, name))


def parse(diff_file: str) -> tuple[dict, list[tuple[int, int, list[str]]]]:
    """The preamble's fields and the hunks ``(old_start, new_start, lines)`` of a diff file."""
    lines = diff_file.splitlines()
    match = _PREAMBLE.match(lines[0]) if lines else None
    if match is None:
        raise ValueError("the diff's first line must be 'PyG <path> at pytorch_geometric "
                         "<commit> (sha256 <hex>)'")
    hunks: list[tuple[int, int, list[str]]] = []
    for line in lines[1:]:
        if line.startswith(("--- ", "+++ ")) and not hunks:
            continue
        head = _HUNK.match(line)
        if head:
            hunks.append((int(head.group(1)), int(head.group(3)), []))
        elif hunks and line[:1] in (" ", "-", "+"):
            hunks[-1][2].append(line)
        elif line.strip() and not line.startswith("\\"):
            raise ValueError(f"unexpected line in the diff: {line!r}")
    return match.groupdict(), hunks


def original_text(diff_file: str, port: str) -> str:
    """PyG's original, rebuilt by applying the diff backwards to ``port`` (strictly)."""
    _, hunks = parse(diff_file)
    new = port.splitlines(keepends=True)
    out: list[str] = []
    pos = 0  # next line of ``new`` not yet copied
    for _old_start, new_start, body in hunks:
        start = max(new_start - 1, 0)
        if start < pos:
            raise ValueError(f"hunk at line {new_start} overlaps the previous one")
        out += new[pos:start]
        pos = start
        for line in body:
            tag, text = line[:1], line[1:]
            if tag in (" ", "+"):
                if pos >= len(new) or new[pos].rstrip("\n") != text:
                    got = new[pos].rstrip("\n") if pos < len(new) else "end of file"
                    raise ValueError(f"the port's line {pos + 1} is {got!r}, the diff expects "
                                     f"{text!r}: regenerate the diff")
                if tag == " ":
                    out.append(new[pos])
                pos += 1
            if tag == "-":
                out.append(text + "\n")
    out += new[pos:]
    return "".join(out)


def changed_lines(diff_file: str) -> int:
    """Lines removed plus lines added (what ``diff`` reports as changed lines)."""
    _, hunks = parse(diff_file)
    return sum(line[:1] in "-+" for _, _, body in hunks for line in body)


def _aligned(body: list[str]) -> tuple[list[str], list[str], list[int], list[int]]:
    """One hunk's two sides, a run of removed lines next to the run of added lines that replaces
    it (the shorter run padded with blank lines), and the 1-based changed positions."""
    left: list[str] = []
    right: list[str] = []
    hl_left: list[int] = []
    hl_right: list[int] = []
    removed: list[str] = []
    added: list[str] = []
    for line in [*body, " "]:  # a closing context line flushes the last run
        tag, text = line[:1], line[1:]
        if tag == "-":
            removed.append(text)
            continue
        if tag == "+":
            added.append(text)
            continue
        for i in range(max(len(removed), len(added))):
            if i < len(removed):
                hl_left.append(len(left) + 1)
            if i < len(added):
                hl_right.append(len(right) + 1)
            left.append(removed[i] if i < len(removed) else "")
            right.append(added[i] if i < len(added) else "")
        removed, added = [], []
        left.append(text)
        right.append(text)
    return left[:-1], right[:-1], hl_left, hl_right


def side_by_side(diff_file: str) -> list[tuple[list[str], list[str], list[int], list[int]]]:
    """Per hunk: PyG's lines, the port's lines (aligned, padded with blank lines) and the
    1-based positions of the changed lines on each side."""
    _, hunks = parse(diff_file)
    return [_aligned(body) for _, _, body in hunks]


def setup(app):  # pragma: no cover - exercised by the docs build
    from docutils import nodes
    from docutils.parsers.rst import Directive

    class PortDiff(Directive):
        """``port-diff <name>``: PyG's examples/<name>.py and its port, side by side."""

        required_arguments = 1

        def run(self):
            name = self.arguments[0]
            path = DIFF_DIR / f"{name}.diff"
            env = self.state.document.settings.env
            env.note_dependency(str(path))
            env.note_dependency(str(ROOT / "examples" / f"{name}.py"))
            text = path.read_text(encoding="utf-8")
            meta, _ = parse(text)
            table = nodes.table(classes=["port-diff"])
            group = nodes.tgroup(cols=2)
            table += group
            group += nodes.colspec(colwidth=1)
            group += nodes.colspec(colwidth=1)
            head = nodes.thead()
            group += head
            head_row = nodes.row()
            for title in (f"PyG examples/{name}.py ({meta['commit'][:7]})",
                          f"pyg_sar examples/{name}.py"):
                entry = nodes.entry()
                entry += nodes.paragraph(text=title)
                head_row += entry
            head += head_row
            body = nodes.tbody()
            group += body
            for left, right, hl_left, hl_right in side_by_side(text):
                row = nodes.row()
                for lines, hl in ((left, hl_left), (right, hl_right)):
                    code = "\n".join(lines)
                    block = nodes.literal_block(code, code, language="python")
                    block["highlight_args"] = {"hl_lines": hl}
                    entry = nodes.entry()
                    entry += block
                    row += entry
                body += row
            return [table]

    app.add_directive("port-diff", PortDiff)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("original", type=Path, help="PyG's examples/<name>.py")
    parser.add_argument("--commit", required=True, help="the PyG commit it was read from")
    args = parser.parse_args(argv)
    name = args.original.stem
    original = args.original.read_text(encoding="utf-8")
    port = (ROOT / "examples" / f"{name}.py").read_text(encoding="utf-8")
    out = DIFF_DIR / f"{name}.diff"
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(make_diff_file(original, port, name, args.commit), encoding="utf-8")
    tmp.replace(out)
    print(f"{out}: {changed_lines(out.read_text(encoding='utf-8'))} changed lines")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
