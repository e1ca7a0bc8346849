"""The demo's slow job: samples/query.sql run by Spark in local mode with its event log on, as
a job that runs with adaptive execution off (the settings of samples/scaled-down.conf
otherwise). The tables are catalog tables over the sample files, and the query is set as the
job's description (as spark-sql, the Thrift server and notebooks do), so the log holds the SQL.

    python samples/spark_job.py LOG_DIR      # prints the event log's path
"""
import pathlib
import sys

from pyspark.sql import SparkSession

HERE = pathlib.Path(__file__).resolve().parent


def settings():
    """samples/scaled-down.conf's settings, AQE off."""
    conf = {}
    for line in (HERE / "scaled-down.conf").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, value = line.split(None, 1)
            conf[key] = value.strip()
    conf["spark.sql.adaptive.enabled"] = "false"
    return conf


def main(log_dir):
    log_dir = pathlib.Path(log_dir).resolve()
    log_dir.mkdir(parents=True, exist_ok=True)
    before = set(log_dir.iterdir())
    b = (SparkSession.builder.master("local[2]").appName("skewjoin-demo-job")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", log_dir.as_uri())
         .config("spark.eventLog.compress", "false").config("spark.eventLog.rolling.enabled", "false"))
    for k, v in settings().items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        for name in ("events", "titles"):
            spark.sql(f"CREATE TABLE {name} USING parquet LOCATION '{HERE / (name + '.parquet')}'")
        sql = (HERE / "query.sql").read_text()
        spark.sparkContext.setJobDescription(sql)
        spark.sql(sql).collect()
    finally:
        spark.stop()
    new = [p for p in log_dir.iterdir() if p not in before and not p.name.endswith(".inprogress")]
    print(new[0])


if __name__ == "__main__":
    main(sys.argv[1])
