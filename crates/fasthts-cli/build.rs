//! Keeps the fasthts binary from exporting the symbols of the static
//! libraries it links (the bundled libdeflate above all): libhts, linked
//! dynamically, would otherwise bind its `libdeflate_*` calls to that copy
//! instead of the system libdeflate it was built with, and CRAM written
//! through it would differ in bytes from samtools' (another deflate).
fn main() {
    println!("cargo:rustc-link-arg-bins=-Wl,--exclude-libs,ALL");
}
