"""Writes a class-data-sharing archive of a Spark line's JVM: the classes a small Spark job loads
(SQL parsed and planned, Parquet written and read, a sort-merge and a broadcast join, an
aggregation, a window, EXPLAIN, the UI's REST API), dumped by the JVM as it exits. Every Spark
the suite then starts on that line (pyspark's sessions, the binary's driver, Spark Connect)
maps the archive instead of loading and verifying those classes again: a small Spark
application here takes about 40% less time from start to stop. It changes no plan and no result;
a JVM that cannot use the archive (another pyspark, another Java) says so once and runs without.

    python tests/py/jvm_archive.py ARCHIVE     (the Python whose pyspark the archive is for)

scripts/test runs it once per Spark line, into target/jvm/, and passes the archive to the suites
through SPARK_SUBMIT_OPTS (-XX:SharedArchiveFile)."""
import json
import os
import sys
import tempfile
import urllib.request


def job(spark, folder):
    """The classes of the suite's usual work, loaded."""
    spark.range(20_000).selectExpr("id % 100 AS k", "id AS v", "CAST(id AS STRING) AS s").write.parquet(f"{folder}/f")
    spark.range(100).selectExpr("id AS k", "date_add(DATE'2024-01-01', CAST(id AS INT)) AS d").write.parquet(f"{folder}/d")
    spark.read.parquet(f"{folder}/f").createOrReplaceTempView("f")
    spark.read.parquet(f"{folder}/d").createOrReplaceTempView("d")
    for threshold in ("-1", "10MB"):
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", threshold)
        q = spark.sql("SELECT f.k, count(*), sum(v), max(s) FROM f LEFT JOIN d ON f.k = d.k GROUP BY f.k")
        q.collect()
        spark.sql("EXPLAIN FORMATTED SELECT * FROM f JOIN d USING (k)").collect()
    spark.sql("SELECT k, v, row_number() OVER (PARTITION BY k ORDER BY v) AS r FROM f").where("r < 3").collect()
    ui = spark.sparkContext.uiWebUrl
    if ui:
        apps = json.load(urllib.request.urlopen(f"{ui}/api/v1/applications", timeout=30))
        json.load(urllib.request.urlopen(f"{ui}/api/v1/applications/{apps[0]['id']}/stages", timeout=30))


def main():
    archive = os.path.abspath(sys.argv[1])
    os.makedirs(os.path.dirname(archive), exist_ok=True)
    partial = archive + ".partial"
    os.environ["SPARK_SUBMIT_OPTS"] = f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} -XX:ArchiveClassesAtExit={partial}"
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName("skewjoin jvm archive")
             .config("spark.ui.port", "0").config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory() as folder:
        job(spark, folder)
    gateway = spark.sparkContext._gateway
    spark.stop()
    # The JVM writes the archive as it exits, which it does when its stdin closes: wait for it,
    # then give the archive its name (a run cut short leaves no archive to be used).
    gateway.proc.stdin.close()
    gateway.proc.wait(timeout=300)
    os.replace(partial, archive)


if __name__ == "__main__":
    main()
