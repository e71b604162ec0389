//! Source text to syntax tree: the pest grammar (`grammar/streamix.pest`), the Pratt parser
//! for the four operators, and lowering to the typed [`ast`].

pub mod ast;
