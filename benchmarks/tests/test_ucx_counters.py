"""The UCX counters: a totals line of hdfsrdma.stats.file, a client's
file, the DataNodes' files summed, and the DataNodes' bean (its /jmx
answer made up)."""

import os
import tempfile
import unittest
from unittest import mock

from hdfsrdma_bench import measurement, ucx_counters
from hdfsrdma_bench.ucx_counters import (fetched_key, parse_stats,
                                         read_stats, sum_stats)

CLIENT_LINE = (
    "ucx-data-bytes-sent=16777216 ucx-data-bytes-fetched=0 "
    "transports=RMA_lanes_none,_AM_lanes_sysv blocks-over-tcp=0 "
    "queued-sends=3 client-send-nanos=248218289 ratio=0.5\n")


class ParseStats(unittest.TestCase):
    def test_totals_line(self):
        stats = parse_stats(CLIENT_LINE)
        self.assertEqual(stats["ucx-data-bytes-sent"], 16777216)
        self.assertIsInstance(stats["ucx-data-bytes-sent"], int)
        self.assertEqual(stats["transports"], "RMA_lanes_none,_AM_lanes_sysv")
        self.assertEqual(stats["ratio"], 0.5)
        self.assertEqual(len(stats), 7)

    def test_value_may_hold_equals_and_words_without_are_skipped(self):
        self.assertEqual(parse_stats("noise a=b=c n=1"), {"a": "b=c", "n": 1})
        self.assertEqual(parse_stats(""), {})


class StatsFiles(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_client_file(self):
        path = self.write("put.ucx", CLIENT_LINE)
        self.assertEqual(read_stats(path), parse_stats(CLIENT_LINE))

    def test_no_file_no_stats(self):
        self.assertEqual(read_stats(os.path.join(self.dir.name, "none")), {})

    def test_datanode_totals_sum_every_line_of_every_file(self):
        dn1 = self.write("dn1", "ucx-data-bytes-fetched=10 blocks-over-tcp=1"
                         " transports=x\nucx-data-bytes-fetched=5\n")
        dn2 = self.write("dn2", "ucx-data-bytes-fetched=100 ratio=0.5\n")
        missing = os.path.join(self.dir.name, "dn3")
        self.assertEqual(sum_stats([dn1, dn2, missing]),
                         {"ucx-data-bytes-fetched": 115,
                          "blocks-over-tcp": 1})

    def test_no_datanode_files_no_totals(self):
        self.assertEqual(sum_stats([]), {})


class FetchedKey(unittest.TestCase):
    def test_the_beans_attribute(self):
        self.assertEqual(fetched_key({"rdma.DataBytesFetched": 0,
                                      "rdma.BytesFetchedOld": 1}),
                         ucx_counters.FETCHED)

    def test_an_attribute_named_like_it(self):
        self.assertEqual(fetched_key({"activity.BytesFetched": 1,
                                      "rdma.UcxBytesFetchedByGet": 2}),
                         "rdma.UcxBytesFetchedByGet")

    def test_none(self):
        self.assertIsNone(fetched_key({"activity.BytesWritten": 1}))


class DatanodeCounters(unittest.TestCase):
    def test_numeric_attributes_and_timer_maps(self):
        bean = {"name": ucx_counters.RDMA_BEAN, "DataBytesFetched": 64,
                "BlocksOverTcp": 1, "Enabled": True,
                "PacketNanos": [{"key": "copy", "value": 7},
                                {"key": "disk", "value": 9}]}
        with mock.patch.object(measurement, "jmx",
                               return_value=[bean]) as jmx:
            counters = ucx_counters.datanode_counters("dn:9864")
        jmx.assert_called_once_with("dn:9864", ucx_counters.RDMA_BEAN)
        self.assertEqual(counters, {"DataBytesFetched": 64,
                                    "BlocksOverTcp": 1,
                                    "PacketNanos.copy": 7,
                                    "PacketNanos.disk": 9})

    def test_none_without_the_bean_or_an_answer(self):
        with mock.patch.object(measurement, "jmx", return_value=[]):
            self.assertIsNone(ucx_counters.datanode_counters("dn:1"))
        with mock.patch.object(measurement, "jmx",
                               side_effect=ConnectionRefusedError()):
            self.assertIsNone(ucx_counters.datanode_counters("dn:1"))


if __name__ == "__main__":
    unittest.main()
