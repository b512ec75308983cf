//! The component's stack: a shell nests (functions, subshells, command
//! substitutions, up to the depth budget), and wasm's default stack of 1 MiB
//! is too small for bashkit's interpreter at that depth. 16 MiB is set at
//! link time; the host's memory cap counts it.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg=-zstack-size=16777216");
    }
}
