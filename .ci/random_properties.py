"""The property tests with random examples for a fixed time: each round draws a
seed, prints it, and runs the property files under hypothesis' ``random``
profile with that seed, until the time is up.  A failure prints the command
that replays it (the same seed gives the same examples).

    python3 .ci/random_properties.py [--minutes 8] [--seed N]

Exit status: 0 when every round passed, 1 at the first failure.
"""

import argparse
import glob
import os
import secrets
import subprocess
import sys
import time

FILES = sorted(glob.glob("tests/test_properties_*.py")) + ["tests/test_fuzz.py"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=8.0, help="time budget (default 8)")
    parser.add_argument("--seed", type=int, default=None, help="the first round's seed (default: drawn)")
    args = parser.parse_args()
    deadline = time.monotonic() + 60.0 * args.minutes
    seed = secrets.randbelow(2 ** 32) if args.seed is None else args.seed
    env = {**os.environ, "HYPOTHESIS_PROFILE": "random"}
    rounds = 0
    while True:
        left = deadline - time.monotonic()
        if left < 30.0 and rounds:
            break
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                   "--doctest-modules", "--ignore=kerndwd", f"--hypothesis-seed={seed}", *FILES]
        print(f"hypothesis seed: {seed} (round {rounds + 1}, {left / 60:.1f} min left)", flush=True)
        result = subprocess.run(command, env=env)
        if result.returncode != 0:
            print(f"FAILED with hypothesis seed {seed}; replay: HYPOTHESIS_PROFILE=random "
                  f"python3 -m pytest --hypothesis-seed={seed} {' '.join(FILES)}", flush=True)
            return 1
        rounds += 1
        seed = secrets.randbelow(2 ** 32)
    print(f"{rounds} rounds passed", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
