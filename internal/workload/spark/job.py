# The Spark side of isobench's spark workload (HiBench's WordCount,
# TeraSort, PageRank and K-means). The agent writes this file to the
# scratch directory and runs it with spark-submit:
#   job.py JOB INPUT OUTPUT RESULT [key=value ...]
# It writes the job's output to OUTPUT as HiBench does and a small JSON
# summary to RESULT, which the agent checks against the generator's truth.
import json
import sys
import time
from operator import add

from pyspark import SparkConf, SparkContext


def wordcount(sc, inp, out, opts):
    counts = sc.textFile(inp).flatMap(lambda l: l.split()).map(lambda w: (w, 1)).reduceByKey(add)
    counts = counts.cache()
    counts.saveAsTextFile(out)
    total = counts.values().sum()
    top = counts.takeOrdered(1, key=lambda wc: (-wc[1], wc[0]))
    return {"total": total, "distinct": counts.count(),
            "top_word": top[0][0] if top else "", "top_count": top[0][1] if top else 0}


def terasort(sc, inp, out, opts):
    recs = sc.textFile(inp)
    parts = max(1, recs.getNumPartitions())
    srt = recs.sortBy(lambda r: r[:10], ascending=True, numPartitions=parts)
    validate = opts.get("validate") == "1"
    if validate:
        srt = srt.cache()
    srt.saveAsTextFile(out)
    res = {"partitions": parts}
    if validate:
        # The output is on the executors' disks (a cluster without a
        # shared file system): summarise every sorted partition where it
        # is, as TeraValidate does, untimed.
        start = time.monotonic()
        res["validate"] = srt.mapPartitionsWithIndex(sort_summary).collect()
        res["validate_seconds"] = time.monotonic() - start
    return res


def sort_summary(idx, recs):
    import zlib
    n, crc, first, last, ordered, badlen = 0, 0, None, None, True, 0
    for r in recs:
        if len(r) != 98:
            badlen += 1
        k = r[:10]
        if first is None:
            first = k
        elif k < last:
            ordered = False
        last = k
        crc += zlib.crc32(r.encode("latin-1"))
        n += 1
    yield {"part": idx, "records": n, "checksum": crc & 0xFFFFFFFFFFFFFFFF,
           "first": first, "last": last, "ordered": ordered, "bad_length": badlen}


def pagerank(sc, inp, out, opts):
    iterations = int(opts.get("iterations", "3"))
    top_n = int(opts.get("top", "20"))
    small = int(opts.get("small", "1000"))

    def edge(l):
        s, d = l.split("\t")
        return int(s), int(d)

    links = sc.textFile(inp).map(edge).distinct().groupByKey().cache()
    ranks = links.mapValues(lambda _: 1.0)

    def contribs(urls_rank):
        urls, rank = urls_rank
        urls = list(urls)
        for u in urls:
            yield u, rank / len(urls)

    for _ in range(iterations):
        ranks = links.join(ranks).values().flatMap(contribs).reduceByKey(add).mapValues(lambda r: 0.15 + 0.85 * r)
    ranks = ranks.cache()
    ranks.saveAsTextFile(out)
    n = ranks.count()
    res = {"nodes": n, "sum": ranks.values().sum(),
           "top": [[v, r] for v, r in ranks.takeOrdered(top_n, key=lambda vr: (-vr[1], vr[0]))]}
    if n <= small:
        res["ranks"] = sorted(ranks.collect())
    return res


def kmeans(sc, inp, out, opts):
    import numpy as np
    from pyspark.mllib.clustering import KMeans

    k = int(opts.get("k", "10"))
    iterations = int(opts.get("iterations", "5"))
    seed = int(opts.get("seed", "1"))
    pts = sc.textFile(inp).map(lambda l: np.array([float(x) for x in l.split()])).cache()
    model = KMeans.train(pts, k, maxIterations=iterations, initializationMode="k-means||", seed=seed)
    centres = [[float(x) for x in c] for c in model.clusterCenters]
    sc.parallelize([" ".join("%.6f" % x for x in c) for c in centres], 1).saveAsTextFile(out)
    return {"centres": centres, "points": pts.count(), "cost": model.computeCost(pts)}


JOBS = {"wordcount": wordcount, "terasort": terasort, "pagerank": pagerank, "kmeans": kmeans}


def main():
    job, inp, out, result = sys.argv[1:5]
    opts = dict(a.split("=", 1) for a in sys.argv[5:])
    conf = SparkConf().setAppName("isobench-" + job)
    sc = SparkContext(conf=conf)
    sc.setLogLevel("WARN")
    start = time.monotonic()
    res = JOBS[job](sc, inp, out, opts)
    res["job_seconds"] = time.monotonic() - start - res.get("validate_seconds", 0)
    sc.stop()
    with open(result + ".tmp", "w") as f:
        json.dump(res, f)
    import os
    os.rename(result + ".tmp", result)


if __name__ == "__main__":
    main()
