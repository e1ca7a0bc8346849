"""skewjoin from Python: find the hot keys that make a Spark join slow, and rewrite the join
so no task carries them.

    import skewjoin
    k = skewjoin.keys("events.parquet", "title_id")
    p = skewjoin.plan("events.parquet", "titles.parquet", on="title_id", how="left")
    q = skewjoin.rewrite(open("query.sql").read(), tables_dir="data/")
    v = skewjoin.verify(open("query.sql").read(), tables_dir="data/", engine="polars")
    d = skewjoin.diagnose("eventlog.zst")
    f = skewjoin.fix("eventlog.zst", verify=True)

Each function mirrors the command of the same name (docs/commands.md) and returns its typed
report: `print()` shows the text report, a notebook the HTML page, `.data` the JSON of
docs/json.md. A failed run raises `SkewjoinError` with the one-line message. `skewjoin.spark`
works from a live SparkSession.
"""

from ._api import diagnose, fix, keys, plan, rewrite, verify
from ._results import (
    ApplicationList,
    DiagnoseReport,
    FixReport,
    KeysReport,
    PlanReport,
    RewriteReport,
    VerifyReport,
    WindowPlanReport,
)
from ._run import SkewjoinError, binary

__all__ = [
    "keys",
    "plan",
    "rewrite",
    "verify",
    "diagnose",
    "fix",
    "SkewjoinError",
    "binary",
    "KeysReport",
    "PlanReport",
    "WindowPlanReport",
    "RewriteReport",
    "VerifyReport",
    "DiagnoseReport",
    "FixReport",
    "ApplicationList",
]


def __getattr__(name):
    # The package's version (Cargo.toml's, through the wheel's metadata) and `skewjoin.spark`
    # load on first use: importlib.metadata and pyspark are not paid for by `import skewjoin`.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("skewjoin")
        except PackageNotFoundError:
            return "unknown"
    if name == "spark":
        import importlib

        return importlib.import_module(".spark", __name__)
    raise AttributeError(f"module 'skewjoin' has no attribute {name!r}")
