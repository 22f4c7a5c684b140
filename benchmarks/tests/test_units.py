"""Sizes and rates as the command line and Hadoop's configuration give
them, and how HDFS cuts a file into blocks and packets."""

import argparse
import unittest

from hdfsrdma_bench.units import (GiB, KiB, MiB, blocks_of, human,
                                  human_long, packets_of, parse_hadoop_size,
                                  parse_list, parse_rate, parse_size,
                                  parse_size_rep)


class ParseSize(unittest.TestCase):
    def test_units_are_powers_of_two(self):
        self.assertEqual(parse_size("4096"), 4096)
        self.assertEqual(parse_size("64K"), 64 * KiB)
        self.assertEqual(parse_size("16M"), 16 * MiB)
        self.assertEqual(parse_size("5G"), 5 * GiB)

    def test_suffixes_and_case(self):
        self.assertEqual(parse_size("16MiB"), 16 * MiB)
        self.assertEqual(parse_size("16MB"), 16 * MiB)
        self.assertEqual(parse_size("1g"), GiB)
        self.assertEqual(parse_size(" 2m "), 2 * MiB)

    def test_invalid(self):
        for text in ("", "1X", "1.5M", "-1", "M", "1 M", "1T"):
            with self.subTest(text=text):
                with self.assertRaises(argparse.ArgumentTypeError):
                    parse_size(text)


class ParseSizeRep(unittest.TestCase):
    def test_size_and_replication(self):
        self.assertEqual(parse_size_rep("1G:1"), (GiB, 1))
        self.assertEqual(parse_size_rep("512M:3"), (512 * MiB, 3))

    def test_replication_defaults_to_3(self):
        self.assertEqual(parse_size_rep("128M"), (128 * MiB, 3))
        self.assertEqual(parse_size_rep("128M:"), (128 * MiB, 3))

    def test_invalid(self):
        for text in ("1G:x", "1G:1.5", "x:3"):
            with self.subTest(text=text):
                with self.assertRaises(argparse.ArgumentTypeError):
                    parse_size_rep(text)


class ParseRate(unittest.TestCase):
    def test_bits_per_second(self):
        self.assertEqual(parse_rate("1gbit"), 1e9)
        self.assertEqual(parse_rate("10Gbit"), 1e10)
        self.assertEqual(parse_rate("100mbit"), 1e8)
        self.assertEqual(parse_rate("2.5gbit"), 2.5e9)
        self.assertEqual(parse_rate("64kbit"), 64e3)
        self.assertEqual(parse_rate("800bit"), 800)

    def test_invalid(self):
        for text in ("1gbps", "1g", "gbit", "1 tbit", ""):
            with self.subTest(text=text):
                with self.assertRaises(argparse.ArgumentTypeError):
                    parse_rate(text)


class ParseHadoopSize(unittest.TestCase):
    def test_bytes_and_binary_prefixes(self):
        self.assertEqual(parse_hadoop_size("134217728", 0), 128 * MiB)
        self.assertEqual(parse_hadoop_size("128m", 0), 128 * MiB)
        self.assertEqual(parse_hadoop_size("256M", 0), 256 * MiB)
        self.assertEqual(parse_hadoop_size(" 64 k ", 0), 64 * KiB)
        self.assertEqual(parse_hadoop_size("1g", 0), GiB)
        self.assertEqual(parse_hadoop_size("1t", 0), 1 << 40)

    def test_default_where_unreadable(self):
        for text in (None, "", "1.5g", "lots", "128mb"):
            with self.subTest(text=text):
                self.assertEqual(parse_hadoop_size(text, 7), 7)


class ParseList(unittest.TestCase):
    def test_comma_separated_skipping_empties(self):
        self.assertEqual(parse_list(int)("1,2,,4"), [1, 2, 4])
        self.assertEqual(parse_list(parse_size)("1M,1G"), [MiB, GiB])


class Human(unittest.TestCase):
    def test_largest_whole_unit(self):
        self.assertEqual(human(5 * GiB), "5G")
        self.assertEqual(human(1536 * MiB), "1536M")
        self.assertEqual(human(64 * KiB), "64K")
        self.assertEqual(human(1000), "1000")
        self.assertEqual(human_long(512 * MiB), "512 MiB")

    def test_round_trip_through_parse_size(self):
        for size in (1, 64 * KiB, MiB, 16 * MiB, 3 * GiB, MiB + KiB):
            self.assertEqual(parse_size(human(size)), size)


class Packets(unittest.TestCase):
    def test_packets_of_126_chunks_of_512_bytes(self):
        self.assertEqual(packets_of(1), 1)
        self.assertEqual(packets_of(126 * 512), 1)
        self.assertEqual(packets_of(126 * 512 + 1), 2)
        self.assertEqual(packets_of(MiB), 17)
        self.assertEqual(packets_of(16 * MiB), 261)

    def test_each_block_ends_with_its_own_short_packet(self):
        per_block = packets_of(128 * MiB)
        self.assertEqual(per_block, 2081)
        self.assertEqual(packets_of(256 * MiB), 2 * per_block)
        self.assertEqual(packets_of(128 * MiB + 1), per_block + 1)
        self.assertEqual(packets_of(MiB, block=MiB // 2), 2 * 9)

    def test_blocks(self):
        self.assertEqual(blocks_of(0), 1)
        self.assertEqual(blocks_of(128 * MiB), 1)
        self.assertEqual(blocks_of(128 * MiB + 1), 2)
        self.assertEqual(blocks_of(5 * GiB, 256 * MiB), 20)


if __name__ == "__main__":
    unittest.main()
