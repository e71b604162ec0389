//! The pest parser generated from `grammar/streamix.pest`.

/// Parser for whole `.smx` files (start rule [`Rule::file`]).
#[derive(pest_derive::Parser)]
#[grammar = "../grammar/streamix.pest"]
pub(crate) struct StreamixParser;
