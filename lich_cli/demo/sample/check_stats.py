"""Checks for stats.py: `python3 check_stats.py` prints "all checks passed"."""

from stats import mean, spread

assert mean([1, 2, 3]) == 2
assert spread([4, 1, 9]) == 8
print("all checks passed")
