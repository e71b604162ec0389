//! `smx-example-boxes`: the whole `smxrun` command line, with this crate's boxes beside the
//! built-in ones.

fn main() {
    std::process::exit(smxrun::main_with_boxes(smx_example_boxes::specs()));
}
