//! Exports the C ABI of `smx-cbox` (the `smx_*` functions) from the `smxrun` executable, so
//! that the box libraries it loads with `--boxes` find them: Rust does not put the
//! `#[no_mangle]` functions of a library crate into an executable's dynamic symbol table.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic-symbol=smx_*");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
