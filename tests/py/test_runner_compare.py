"""The Spark runner's comparison of two results as multisets (python/skewjoin/_spark_driver.py),
run on rows as pyspark gives them, without Spark: floats rounded to the tolerance's digits, and a
sum on a rounding boundary (cents added in another order) not taken for a difference."""
import sys
from collections import Counter

from conftest import ROOT

sys.path.insert(0, str(ROOT / "python"))
from skewjoin._spark_driver import norm, pair_off  # noqa: E402


def multiset(rows, digits=9):
    return Counter(tuple(norm(v, digits) for v in r) for r in rows)


def test_a_sum_on_a_rounding_boundary_is_the_same_row_and_a_real_difference_is_not():
    # 19532921.75 summed in two orders lands on either side of the 9th digit's boundary.
    before = multiset([(7, 19532921.749999996), ("x", 2.0), (8, None)])
    after = multiset([(7, 19532921.750000004), ("x", 2.00000003), (8, None)])
    assert before != after
    pair_off(before, after, 9)
    assert list((before - after).elements()) == [("x", 2.0)]
    assert list((after - before).elements()) == [("x", 2.00000003)]
    # Only rows whose other cells are equal pair off.
    before, after = multiset([(7, 19532921.749999996)]), multiset([(6, 19532921.750000004)])
    pair_off(before, after, 9)
    assert before != after
    before = multiset([(7, 19532921.749999996)] * 2)
    after = multiset([(7, 19532921.750000004), (7, 19532921.749999996)])
    pair_off(before, after, 9)
    assert before == after
