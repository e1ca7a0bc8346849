//! A last line of defence: the Parquet reader can panic on some corrupt files, and Polars on
//! some queries. Such a panic becomes an error that names the file or the query, never a crash
//! with a backtrace. The process's one panic hook is here.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Once;

/// The panic hook is installed once per process.
static QUIET: Once = Once::new();

/// Not a statistic or a cache: how many `no_panic_anywhere` calls are running, during which
/// the hook is quiet on every thread (a panic on a worker thread reaches the caller through
/// its pool, and is reported there in one line).
static QUIET_ANYWHERE: AtomicU32 = AtomicU32::new(0);

// Not a statistic or a cache: how deep this thread is inside `no_panic`, which the hook reads
// to stay quiet for a reader's panic (it must be per thread: another thread's panic is a bug
// and is printed).
thread_local! {
    static GUARDED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Run `f`, turning a panic into `Err(the panic's message)`. A panic inside `f` prints
/// nothing; any other panic (a bug elsewhere, a failing test) still goes to the default hook.
pub fn no_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    QUIET.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let quiet = GUARDED.with(|g| g.get()) > 0 || QUIET_ANYWHERE.load(Ordering::Relaxed) > 0;
            if !quiet {
                default(info);
            }
        }));
    });
    GUARDED.with(|g| g.set(g.get() + 1));
    let r = catch_unwind(AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(g.get() - 1));
    r.map_err(|p| {
        p.downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown failure".into())
    })
}

/// `no_panic` around the Parquet reader: its panic said as the reader's failure.
pub fn no_reader_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    no_panic(f).map_err(|msg| format!("the Parquet reader failed ({msg})"))
}

/// `no_panic`, quiet for a panic on any thread while `f` runs: for a whole command, or a
/// library (Polars) that runs its work on its own threads.
pub fn no_panic_anywhere<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    QUIET_ANYWHERE.fetch_add(1, Ordering::Relaxed);
    let r = no_panic(f);
    QUIET_ANYWHERE.fetch_sub(1, Ordering::Relaxed);
    r
}
