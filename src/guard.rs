//! A last line of defence: the Parquet reader can panic on some corrupt files. Such a panic
//! becomes an error that names the file, never a crash with a backtrace.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

static QUIET: Once = Once::new();

/// Run `f`, turning a panic into `Err(message)`. The default panic hook is silenced (once) so
/// that nothing is printed for a caught panic.
pub fn no_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    QUIET.call_once(|| std::panic::set_hook(Box::new(|_| {})));
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown failure".into());
        format!("the Parquet reader failed ({msg})")
    })
}
