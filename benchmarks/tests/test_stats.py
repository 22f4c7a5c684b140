"""Medians, ratios, the least-squares line and the Williams orders."""

import itertools
import unittest

from hdfsrdma_bench.stats import linfit, median, ratio, williams_orders


class Median(unittest.TestCase):
    def test_skips_what_was_not_measured(self):
        self.assertEqual(median([3, None, 1, 2]), 2)
        self.assertEqual(median([4, 1, None, 2, 3]), 2.5)

    def test_nothing_measured(self):
        self.assertIsNone(median([]))
        self.assertIsNone(median([None, None]))


class Ratio(unittest.TestCase):
    def test_ratio(self):
        self.assertEqual(ratio(3, 4), 0.75)
        self.assertEqual(ratio(0, 4), 0)

    def test_unknown_where_either_side_is(self):
        self.assertIsNone(ratio(None, 1))
        self.assertIsNone(ratio(1, None))
        self.assertIsNone(ratio(1, 0))


class Linfit(unittest.TestCase):
    def test_exact_line(self):
        slope, icpt, r2 = linfit([0.5, 1, 4], [2.0, 3.0, 9.0])
        self.assertAlmostEqual(slope, 2.0)
        self.assertAlmostEqual(icpt, 1.0)
        self.assertAlmostEqual(r2, 1.0)

    def test_noisy_points(self):
        # y = x with the middle point 1 too high: slope 1, intercept 1/3,
        # residuals -1/3, 2/3, -1/3: R² = 1 - (2/3) / (8/3).
        slope, icpt, r2 = linfit([0, 1, 2], [0, 2, 2])
        self.assertAlmostEqual(slope, 1.0)
        self.assertAlmostEqual(icpt, 1 / 3)
        self.assertAlmostEqual(r2, 0.75)

    def test_flat_line_fits_exactly(self):
        self.assertEqual(linfit([1, 2], [5, 5]), (0.0, 5.0, 1.0))

    def test_no_line_without_two_sizes(self):
        self.assertIsNone(linfit([1], [1]))
        self.assertIsNone(linfit([2, 2, 2], [1, 2, 3]))


class WilliamsOrders(unittest.TestCase):
    def test_every_row_a_permutation(self):
        for n in range(1, 8):
            for row in williams_orders(n):
                self.assertEqual(sorted(row), list(range(n)))

    def test_rows_n_or_twice_n_when_odd(self):
        for n in range(1, 8):
            self.assertEqual(len(williams_orders(n)),
                             n if n % 2 == 0 else 2 * n)

    def test_each_item_equally_often_in_each_position(self):
        for n in range(1, 8):
            rows = williams_orders(n)
            for pos in range(n):
                counts = [sum(row[pos] == i for row in rows)
                          for i in range(n)]
                self.assertEqual(set(counts), {len(rows) // n},
                                 "n=%d position %d" % (n, pos))

    def test_each_item_right_after_every_other_equally_often(self):
        for n in range(2, 8):
            rows = williams_orders(n)
            follows = {pair: 0
                       for pair in itertools.permutations(range(n), 2)}
            for row in rows:
                for a, b in zip(row, row[1:]):
                    follows[a, b] += 1
            self.assertEqual(set(follows.values()), {len(rows) // n},
                             "n=%d" % n)

    def test_three_systems(self):
        self.assertEqual(williams_orders(3), [[0, 1, 2], [1, 2, 0],
                                              [2, 0, 1], [2, 1, 0],
                                              [0, 2, 1], [1, 0, 2]])


if __name__ == "__main__":
    unittest.main()
