//! Small hand-built nets that several test files run.
#![allow(dead_code)] // each test file uses its own part of it

use smx_graph::NetGraph;
use smx_runtime::{Link, NetBuilder};

/// `Src.Snk` (`smx_src_rand` into `smx_snk_null`) over one channel of `link`.
pub fn src_snk(link: Link) -> NetGraph {
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
    net.connect_with(src, "data", snk, "data", link);
    net.build()
}
