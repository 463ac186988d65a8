"""Print the first ```python block of a Markdown file (the README's first example).

Usage: python3 .ci/readme_example.py README.md > first_example.py

It exits non-zero when the file has no ```python block, so that a CI step
that runs the extracted example cannot pass on an empty script.
"""

import re
import sys


def first_python_block(text):
    match = re.search(r"^```python[ \t]*\n(.*?)^```[ \t]*$", text, re.M | re.S)
    return None if match is None else match.group(1)


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
