"""Print the first ```python block of a Markdown file (the README's first example).

Usage: python3 .ci/readme_example.py README.md > first_example.py

It exits non-zero when the file has no ```python block, so that a CI step
that runs the extracted example cannot pass on an empty script.
:func:`python_blocks` gives every block (tests/test_readme.py runs them all).
"""

import re
import sys

#: A fenced block opened by ```python at the start of a line, up to its closing fence.
PYTHON_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def python_blocks(text):
    """The code of every ```python block of ``text``, in order."""
    return [match.group(1) for match in PYTHON_BLOCK.finditer(text)]


def first_python_block(text):
    blocks = python_blocks(text)
    return blocks[0] if blocks else None


def main(argv):
    if len(argv) != 2:
        sys.exit(f"usage: {argv[0]} MARKDOWN_FILE")
    with open(argv[1], encoding="utf-8") as fh:
        code = first_python_block(fh.read())
    if not code:
        sys.exit(f"{argv[1]}: no ```python block")
    sys.stdout.write(code)


if __name__ == "__main__":
    main(sys.argv)
