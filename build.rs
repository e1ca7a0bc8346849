//! Link the binary as a fixed-address (non-PIE) executable on x86_64 Linux: a PIE binary of
//! this size has tens of thousands of relocations that the loader applies at every start, a
//! large share of a short command's time (BENCHMARKS.md, "The fixed-address binary"). Nothing
//! is recompiled for it: position-independent code links into a fixed-address executable as it
//! is. The trade: the binary's own image is not placed at a random address (its libraries and
//! heap still are).
fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    // A static build (`+crt-static`) links as static-pie: left as it is.
    let crt_static = std::env::var("CARGO_CFG_TARGET_FEATURE")
        .unwrap_or_default()
        .split(',')
        .any(|f| f == "crt-static");
    if os == "linux" && arch == "x86_64" && env == "gnu" && !crt_static {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
